"""The Avro engine equals the scalar reference on random values of real-world schema shapes,
picks union members by the encoded index, and resolves writer → reader schemas per the spec."""
from __future__ import annotations

import decimal
import json

import pyarrow as pa
from wireformat import Limits
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions
from connector.formats.avro._decode import AvroCodec
from connector.formats.avro._schema import arrow_type_of
from tests.unit.decode.test_avro_reference import (
    Names,
    encode,
    expected,
    raw_pylist,
    reader_tree,
    same,
    values,
)


def engine(writer, payloads, reader=None, *, refs=(), max_depth=0, max_collection_items=None, **opts):
    if max_collection_items is not None:
        opts["limits"] = Limits(max_collection_items=max_collection_items)
    tree = reader_tree(reader, refs, max_depth) if reader is not None else None
    codec = AvroCodec(json.dumps(writer), tree, json.dumps(reader) if reader is not None else None,
                      DecodeOptions(max_recursion_depth=max_depth, **opts),
                      writer_refs=tuple(json.dumps(r) for r in refs),
                      reader_refs=tuple(json.dumps(r) for r in refs))
    vals, errs = codec.decode(pa.array(payloads, pa.binary()), "9")
    assert vals.type == codec.arrow_type and len(vals) == len(payloads)
    return vals, errs


# -- schemas -------------------------------------------------------------------------------
FLAT = {"type": "record", "name": "Payment", "namespace": "t", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "active", "type": "boolean"},
    {"name": "cat", "type": {"type": "enum", "name": "Cat", "symbols": ["A", "B", "C"]}}]}

_KINDS = ["long", "int", "double", "float", "string", "boolean", "bytes"]
WIDE = {"type": "record", "name": "Wide", "namespace": "t", "fields": [
    {"name": f"f{i:02d}", "type": _KINDS[i % len(_KINDS)]} for i in range(44)] + [
    {"name": "m", "type": {"type": "map", "values": "long"}},
    {"name": "u", "type": ["null", "long", "string"], "default": None},
    {"name": "o", "type": ["null", "string"], "default": None},
    {"name": "a", "type": {"type": "array", "items": "string"}},
    {"name": "r", "type": {"type": "record", "name": "In", "fields": [
        {"name": "x", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "long"}}]}},
    {"name": "e", "type": {"type": "enum", "name": "Lvl", "symbols": ["LOW", "MID", "HIGH"]}}]}

ROW = {"type": "record", "name": "Value", "fields": [
    {"name": "id", "type": "int"}, {"name": "email", "type": "string"},
    {"name": "balance", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 12,
                                          "scale": 2}], "default": None}]}
SOURCE = {"type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql", "fields": [
    {"name": "version", "type": "string"}, {"name": "ts_ms", "type": "long"},
    {"name": "snapshot", "type": [{"type": "string"}, "null"], "default": "false"},
    {"name": "table", "type": ["null", "string"], "default": None}, {"name": "pos", "type": "long"}]}
DEBEZIUM = {"type": "record", "name": "Envelope", "namespace": "db.inv.customers", "fields": [
    {"name": "before", "type": ["null", ROW], "default": None},
    {"name": "after", "type": ["null", "Value"], "default": None},
    {"name": "source", "type": "io.debezium.connector.mysql.Source"},
    {"name": "op", "type": {"type": "enum", "name": "Op", "symbols": ["c", "u", "d", "r"]}},
    {"name": "ts_ms", "type": ["null", "long"], "default": None}]}

EVENTS = [
    {"type": "record", "name": "Created", "namespace": "ev", "fields": [
        {"name": "id", "type": "string"}, {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]},
    {"type": "record", "name": "Moved", "namespace": "ev", "fields": [
        {"name": "id", "type": "string"}, {"name": "to", "type": {"type": "array", "items": "double"}}]},
    {"type": "record", "name": "Deleted", "namespace": "ev", "fields": [
        {"name": "id", "type": "string"}, {"name": "why", "type": ["null", "string"]}]}]

NESTED = {"type": "record", "name": "Order", "namespace": "t", "fields": [
    {"name": "id", "type": "long"},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
        {"name": "attrs", "type": {"type": "map", "values": {"type": "array", "items": ["null", "string"]}}},
        {"name": "sub", "type": {"type": "array", "items": {"type": "array", "items": "int"}}}]}}},
    {"name": "totals", "type": {"type": "map", "values": "double"}},
    {"name": "nulls", "type": {"type": "array", "items": "null"}},
    {"name": "bools", "type": {"type": "array", "items": "boolean"}},
    {"name": "fx", "type": {"type": "array", "items": {"type": "fixed", "name": "F2", "size": 2}}}]}

LOGICAL = {"type": "record", "name": "L", "namespace": "t", "fields": [
    {"name": "d", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ltsm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 4}},
    {"name": "dec9", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 0}},
    {"name": "fdec", "type": {"type": "fixed", "name": "FD", "size": 9, "logicalType": "decimal",
                              "precision": 20, "scale": 3}},
    {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
    {"name": "odec", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1}]}]}

ENUMS = {"type": "record", "name": "En", "namespace": "t", "fields": [
    {"name": "a", "type": {"type": "enum", "name": "A", "symbols": ["X", "Y", "Z"], "default": "X"}},
    {"name": "f", "type": {"type": "fixed", "name": "F16", "size": 16}},
    {"name": "f0", "type": {"type": "fixed", "name": "F0", "size": 0}},
    {"name": "ea", "type": {"type": "array", "items": "A"}},
    {"name": "em", "type": {"type": "map", "values": ["null", "A", "F16"]}}]}

TREE = {"type": "record", "name": "Tree", "namespace": "t", "fields": [
    {"name": "v", "type": "int"},
    {"name": "kids", "type": {"type": "array", "items": "Tree"}},
    {"name": "next", "type": ["null", "Tree"], "default": None}]}

UNIONS = {"type": "record", "name": "U", "namespace": "t", "fields": [
    {"name": "nils", "type": ["null", "int", "long", "string"]},
    {"name": "fds", "type": ["float", "double", "string"]},
    {"name": "se", "type": ["string", {"type": "enum", "name": "E1", "symbols": ["P", "Q"]}]},
    {"name": "ee", "type": [{"type": "enum", "name": "E2", "symbols": ["P", "Q"]},
                            {"type": "enum", "name": "E3", "symbols": ["Q", "P"]}]},
    {"name": "bf", "type": ["bytes", {"type": "fixed", "name": "F3", "size": 3}]},
    {"name": "il", "type": ["int", "long"]},
    {"name": "fd", "type": ["null", "float", "double"]},
    {"name": "recs", "type": ["null", {"type": "record", "name": "R1", "fields": [{"name": "x", "type": "int"}]},
                              {"type": "record", "name": "R2", "fields": [{"name": "x", "type": "int"}]}]}]}

CASES = {"flat": (FLAT, (), 0), "wide": (WIDE, (), 0), "debezium": (DEBEZIUM, (SOURCE,), 0),
         "events": (EVENTS, (), 0), "nested": (NESTED, (), 0), "logical": (LOGICAL, (), 0),
         "enums": (ENUMS, (), 0), "tree": (TREE, (), 2), "unions": (UNIONS, (), 0)}


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_engine_equals_reference_on_random_values(name, data):
    schema, refs, depth = CASES[name]
    names = Names(schema, refs)
    vals = data.draw(st.lists(values(schema, refs=refs, max_depth=4, names=names), min_size=1, max_size=12))
    rnd = data.draw(st.randoms(use_true_random=False))
    payloads = [encode(schema, v, names=names, rnd=rnd) for v in vals]
    out, errs = engine(schema, payloads, refs=refs, max_depth=depth)
    assert errs == [None] * len(vals)
    tree = reader_tree(schema, refs, depth)
    assert out.type == arrow_type_of(tree)
    got = raw_pylist(out)
    for g, v in zip(got, vals):
        assert same(g, expected(v, tree)), (g, expected(v, tree))


# -- union members come from the encoded index (each of these was wrong before issue 14) ------
def _u(**kw):
    base = {"nils": (0, None), "fds": (2, ""), "se": (0, ""), "ee": (0, "P"), "bf": (0, b""),
            "il": (0, 0), "fd": (0, None), "recs": (0, None)}
    base.update(kw)
    return encode(UNIONS, base)


def test_union_member_is_the_encoded_branch():
    rows = [_u(nils=(2, 5)), _u(nils=(2, 2**40)), _u(nils=(1, 5)), _u(fds=(1, 0.1)), _u(fds=(0, 0.5)),
            _u(se=(1, "P")), _u(ee=(1, "P")), _u(bf=(1, b"abc")), _u(recs=(2, {"x": 1})),
            _u(il=(1, 2**40)), _u(fd=(2, 0.1))]
    out, errs = engine(UNIONS, rows)
    assert errs == [None] * len(rows)
    o = out.to_pylist()
    assert o[0]["nils"] == {"member0": None, "member1": 5, "member2": None}
    assert o[1]["nils"] == {"member0": None, "member1": 2**40, "member2": None}
    assert o[2]["nils"] == {"member0": 5, "member1": None, "member2": None}
    assert o[3]["fds"] == {"member0": None, "member1": 0.1, "member2": None}  # not rounded to float32
    assert o[4]["fds"] == {"member0": 0.5, "member1": None, "member2": None}
    assert o[5]["se"] == {"member0": None, "member1": "P"}
    assert o[6]["ee"] == {"member0": None, "member1": "P"}
    assert o[7]["bf"] == {"member0": None, "member1": b"abc"}
    assert o[8]["recs"] == {"member0": None, "member1": {"x": 1}}
    assert o[9]["il"] == 2**40 and o[10]["fd"] == 0.1


# -- writer → reader resolution --------------------------------------------------------------
W1 = {"type": "record", "name": "User", "namespace": "v1", "fields": [
    {"name": "id", "type": "int"}, {"name": "score", "type": "float"}, {"name": "n", "type": "long"},
    {"name": "s", "type": "string"}, {"name": "b", "type": "bytes"},
    {"name": "gone", "type": {"type": "array", "items": {"type": "map", "values": ["null", {
        "type": "record", "name": "W", "fields": [{"name": "q", "type": "string"}]}, "string"]}}},
    {"name": "old_name", "type": ["null", "int"]},
    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B", "NEW"]}},
    {"name": "w", "type": "W"}]}
R1 = {"type": "record", "name": "User", "namespace": "v2", "fields": [
    {"name": "id", "type": "long"}, {"name": "score", "type": "double"}, {"name": "n", "type": "double"},
    {"name": "s", "type": "bytes"}, {"name": "b", "type": "string"},
    {"name": "renamed", "aliases": ["old_name"], "type": ["null", "long"]},
    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B", "OTHER"], "default": "OTHER"}},
    {"name": "w", "type": {"type": "record", "name": "Wnew", "aliases": ["W"], "fields": [
        {"name": "q", "type": "string"}, {"name": "extra", "type": "int", "default": 7}]}},
    {"name": "added", "type": {"type": "record", "name": "Add", "fields": [
        {"name": "x", "type": "int"}, {"name": "y", "type": ["string", "null"]}]},
     "default": {"x": 3, "y": "why"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["t"]},
    {"name": "opt", "type": ["string", "null"], "default": "dflt"},
    {"name": "cnt", "type": "int", "default": 42}]}


def test_evolution_promotes_renames_defaults_and_skips():
    v = {"id": 5, "score": 1.5, "n": 2**40, "s": "héllo", "b": b"b",
         "gone": [[("k", (1, {"q": "skip me"})), ("j", (2, "x"))], []],
         "old_name": (1, 9), "kind": "NEW", "w": {"q": "keep"}}
    v2 = dict(v, kind="B", old_name=(0, None), gone=[])
    out, errs = engine(W1, [encode(W1, v), encode(W1, v2)], R1)
    assert errs == [None, None]
    assert out.to_pylist()[0] == {
        "id": 5, "score": 1.5, "n": float(2**40), "s": "héllo".encode(), "b": "b",
        "renamed": 9, "kind": "OTHER", "w": {"q": "keep", "extra": 7},
        "added": {"x": 3, "y": "why"}, "tags": ["t"], "opt": "dflt", "cnt": 42}
    assert out.to_pylist()[1]["kind"] == "B" and out.to_pylist()[1]["renamed"] is None


def test_enum_symbol_unknown_to_a_reader_without_default_fails_only_its_rows():
    w = {"type": "enum", "name": "K", "symbols": ["A", "B", "NEW"]}
    r = {"type": "enum", "name": "K", "symbols": ["A", "B"]}
    out, errs = engine(w, [encode(w, "A"), encode(w, "NEW"), encode(w, "B")], r)
    assert out.to_pylist() == ["A", None, "B"] and errs[0] is None and errs[2] is None
    assert errs[1].startswith("avro decode failed for schema id 9: enum symbol unknown")


def test_union_and_non_union_resolve_both_ways():
    out, errs = engine("int", [encode("int", 3)], ["null", "long"])
    assert out.to_pylist() == [3] and out.type == pa.int64()
    out, errs = engine(["null", "int"], [encode(["null", "int"], (1, 4)), encode(["null", "int"], (0, None))], "long")
    assert out.to_pylist() == [4, None] and errs[0] is None and "cannot be read" in errs[1]
    w = ["null", "string", "int"]
    out, errs = engine(w, [encode(w, (1, "s")), encode(w, (2, 1)), encode(w, (0, None))], ["null", "string"])
    assert out.to_pylist() == ["s", None, None] and errs[0] is None and errs[2] is None
    assert "matches no branch" in errs[1]


def test_named_types_match_by_unqualified_name_and_missing_field_without_default_fails():
    w = {"type": "record", "name": "a.X", "fields": [{"name": "f", "type": "int"}]}
    r = {"type": "record", "name": "b.X", "fields": [{"name": "f", "type": "int"}]}
    assert engine(w, [encode(w, {"f": 1})], r)[0].to_pylist() == [{"f": 1}]
    r2 = {"type": "record", "name": "X", "fields": [{"name": "f", "type": "int"}, {"name": "g", "type": "int"}]}
    out, errs = engine(w, [encode(w, {"f": 1})], r2)
    assert out.to_pylist() == [None] and "'g' is missing" in errs[0]
    r3 = {"type": "record", "name": "Y", "fields": [{"name": "f", "type": "int"}]}
    assert "cannot be read" in engine(w, [encode(w, {"f": 1})], r3)[1][0]


def test_long_to_int_is_refused_per_row():
    out, errs = engine("long", [encode("long", 1)], "int")
    assert out.to_pylist() == [None] and errs[0].startswith("avro decode failed for schema id 9: ")


def test_recursion_is_cut_at_max_recursion_depth_and_deeper_data_is_skipped():
    def chain(n):
        v = (0, None)
        for i in range(n):
            v = (1, {"v": i, "kids": [], "next": v})
        return v[1]
    out, errs = engine(TREE, [encode(TREE, chain(50)), encode(TREE, chain(1))], max_depth=2)
    assert errs == [None, None]
    assert out.to_pylist()[0] == {"v": 49, "kids": [], "next": {"v": 48, "kids": [], "next": {"v": 47}}}
    assert out.to_pylist()[1] == {"v": 0, "kids": [], "next": None}


def test_writer_references_define_named_types_used_twice():
    row = {"id": 1, "email": "e", "balance": (1, 12345)}
    v = {"before": (1, row), "after": (1, dict(row, id=2, balance=(0, None))),
         "source": {"version": "2", "ts_ms": 3, "snapshot": (0, "true"), "table": (0, None), "pos": 4},
         "op": "u", "ts_ms": (1, 9)}
    out, errs = engine(DEBEZIUM, [encode(DEBEZIUM, v, refs=(SOURCE,))], refs=(SOURCE,))
    o = out.to_pylist()[0]
    assert errs == [None] and o["before"]["balance"] == decimal.Decimal("123.45")
    assert o["after"] == {"id": 2, "email": "e", "balance": None} and o["source"]["snapshot"] == "true"
