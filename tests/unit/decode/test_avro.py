"""Avro: type mapping, fast path ≡ reference path, evolution, corrupt and hostile payloads."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import pickle
import uuid

import pyarrow as pa
import pytest
from tests.unit.decode.decode_helpers import FAST, REFERENCE, Spec, avro_bytes, binary, framed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions, build_decoder
from connector.formats.avro._decode import AvroCodec
from connector.errors import SchemaMappingError

UTC = dt.timezone.utc
SUB = {"type": "record", "name": "S", "fields": [{"name": "x", "type": "int"},
                                                 {"name": "y", "type": ["null", "string"]}]}
ALL = {"type": "record", "name": "R", "namespace": "ns", "fields": [
    {"name": "id", "type": "long"}, {"name": "i", "type": "int"},
    {"name": "name", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "fl", "type": "float"}, {"name": "b", "type": "boolean"},
    {"name": "by", "type": "bytes"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ltsm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "d", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "fdec", "type": {"type": "fixed", "name": "FD", "size": 8, "logicalType": "decimal",
                              "precision": 12, "scale": 3}},
    {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
    {"name": "cat", "type": {"type": "enum", "name": "C", "symbols": ["A", "B", "C"]}},
    {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}},
    {"name": "arr", "type": {"type": "array", "items": ["null", "int"]}},
    {"name": "recs", "type": {"type": "array", "items": SUB}},
    {"name": "opt", "type": ["null", "string"]},
    {"name": "sub", "type": ["null", "S"]},
]}
ALL_ARROW = pa.struct([
    ("id", pa.int64()), ("i", pa.int32()), ("name", pa.string()), ("amount", pa.float64()),
    ("fl", pa.float32()), ("b", pa.bool_()), ("by", pa.binary()),
    ("ts", pa.timestamp("us", "UTC")), ("tsm", pa.timestamp("us", "UTC")),
    ("lts", pa.timestamp("us")), ("ltsm", pa.timestamp("us")), ("d", pa.date32()),
    ("tm", pa.int32()), ("tu", pa.int64()), ("u", pa.string()), ("dec", pa.decimal128(10, 2)),
    ("fdec", pa.decimal128(12, 3)), ("dur", pa.binary()), ("cat", pa.string()), ("f", pa.binary()),
    ("arr", pa.list_(pa.field("element", pa.int32()))),
    ("recs", pa.list_(pa.field("element", pa.struct([("x", pa.int32()), ("y", pa.string())])))),
    ("opt", pa.string()), ("sub", pa.struct([("x", pa.int32()), ("y", pa.string())])),
])


def rec(i: int) -> dict:
    return {"id": i - 3, "i": -i, "name": f"n{i}", "amount": i / 3, "fl": 1.5, "b": i % 2 == 0,
            "by": bytes([i % 256]) * (i % 7),
            "ts": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=i),
            "tsm": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=i),
            "lts": dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=i),
            "ltsm": dt.datetime(2024, 1, 1, 0, 0, 1), "d": dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "tm": dt.time(1, 2, 3, 4000), "tu": dt.time(1, 2, 3, 4), "u": uuid.UUID(int=i),
            "dec": decimal.Decimal(i * 37 - 500) / 100, "fdec": decimal.Decimal("-1.280"),
            "dur": b"\x01" * 12, "cat": "ABC"[i % 3], "f": b"xyz", "arr": [1, None, i],
            "recs": [{"x": i, "y": None}, {"x": 2, "y": "q"}] if i % 2 else [],
            "opt": None if i % 3 else "o", "sub": None if i % 4 else {"x": 1, "y": "s"}}


def codec(writer, reader=None, options=FAST):
    from connector.formats.avro._schema import parse_avro
    r = parse_avro(json.dumps(reader))[0] if reader else None
    return AvroCodec(json.dumps(writer), r, json.dumps(reader) if reader else None, options)


def test_type_mapping_is_what_spark_expects():
    assert codec(ALL).arrow_type == ALL_ARROW


def test_every_type_round_trips_through_fast_path_and_equals_reference():
    payloads = binary([avro_bytes(ALL, rec(i)) for i in range(40)])
    a, ea = codec(ALL).decode(payloads, "1")
    b, eb = codec(ALL, options=REFERENCE).decode(payloads, "1")
    assert ea == eb == [None] * 40
    assert a.type == ALL_ARROW and a.equals(b)
    row = a.to_pylist()[1]
    assert row["u"] == str(uuid.UUID(int=1)) and row["tm"] == 3723004 and row["tu"] == 3723000004
    assert row["tsm"] == dt.datetime(2024, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)
    assert row["ltsm"] == dt.datetime(2024, 1, 1, 0, 0, 1) and row["dec"] == decimal.Decimal("-4.63")
    assert row["recs"] == [{"x": 1, "y": None}, {"x": 2, "y": "q"}] and row["sub"] is None


MAPS = {"type": "record", "name": "M", "fields": [
    {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "u", "type": ["null", "int", "string", SUB]},
    {"name": "w", "type": ["int", "long"]}]}


def test_maps_and_multi_type_unions_use_reference_path():
    c = codec(MAPS)
    assert c.arrow_type == pa.struct([
        ("m", pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int64()))),
        ("u", pa.struct([("member0", pa.int32()), ("member1", pa.string()),
                         ("member2", pa.struct([("x", pa.int32()), ("y", pa.string())]))])),
        ("w", pa.int64())])
    recs = [{"m": {"a": 1, "b": None}, "u": 5, "w": 1}, {"m": {}, "u": "s", "w": 2},
            {"m": {"z": 3}, "u": {"x": 1, "y": None}, "w": 3}, {"m": {}, "u": None, "w": 4}]
    vals, errs = c.decode(binary([avro_bytes(MAPS, r) for r in recs]), "2")
    assert errs == [None] * 4
    out = vals.to_pylist()
    assert out[0]["m"] == [("a", 1), ("b", None)]
    assert out[0]["u"] == {"member0": 5, "member1": None, "member2": None}
    assert out[1]["u"]["member1"] == "s" and out[2]["u"]["member2"] == {"x": 1, "y": None}
    assert out[3]["u"] is None and [o["w"] for o in out] == [1, 2, 3, 4]


V1 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "int"}, {"name": "score", "type": "float"},
    {"name": "old", "type": "string"},
    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}}]}
V2 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"}, {"name": "score", "type": "double"},
    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B", "C"]}},
    {"name": "added", "type": "string", "default": "dflt"},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["t"]}]}


@pytest.mark.parametrize("options", [FAST, REFERENCE], ids=["fast", "reference"])
def test_v1_writer_v2_reader_promotes_adds_defaults_and_drops(options):
    c = codec(V1, V2, options)
    vals, errs = c.decode(binary([avro_bytes(V1, {"id": i, "score": 0.5, "old": "x",
                                                  "kind": "B"}) for i in range(3)]), "1")
    assert errs == [None] * 3
    assert vals.type == pa.struct([("id", pa.int64()), ("score", pa.float64()), ("kind", pa.string()),
                                   ("added", pa.string()),
                                   ("tags", pa.list_(pa.field("element", pa.string())))])
    assert vals.to_pylist()[2] == {"id": 2, "score": 0.5, "kind": "B", "added": "dflt", "tags": ["t"]}


def test_v2_writer_v1_reader_is_refused_per_row_where_avro_refuses():
    # long → int is not an Avro promotion: every row fails with a message naming the schema id
    c = codec(V2, V1)
    vals, errs = c.decode(binary([avro_bytes(V2, {"id": 1, "score": 1.0, "kind": "A",
                                                  "added": "a", "tags": []})]), "12")
    assert vals.null_count == 1 and errs[0].startswith("avro decode failed for schema id 12")


def test_reverse_evolution_drops_added_field_and_uses_reader_default():
    w = {"type": "record", "name": "T", "fields": [{"name": "a", "type": "int"},
                                                   {"name": "new", "type": "string"}]}
    r = {"type": "record", "name": "T", "fields": [
        {"name": "a", "type": "int"}, {"name": "gone", "type": ["null", "int"], "default": None}]}
    for opts in (FAST, REFERENCE):
        vals, errs = codec(w, r, opts).decode(binary([avro_bytes(w, {"a": 1, "new": "n"})]), "3")
        assert vals.to_pylist() == [{"a": 1, "gone": None}] and errs == [None]


def test_alias_and_enum_default_resolution():
    w = {"type": "record", "name": "T", "fields": [
        {"name": "old_name", "type": "int"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "NEW"]}}]}
    r = {"type": "record", "name": "T", "fields": [
        {"name": "new_name", "aliases": ["old_name"], "type": "int"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "UNK"], "default": "UNK"}}]}
    c = codec(w, r)  # enum symbol not in reader: the reader's enum default applies
    vals, _ = c.decode(binary([avro_bytes(w, {"old_name": 4, "e": "NEW"}),
                               avro_bytes(w, {"old_name": 5, "e": "X"})]), "1")
    assert vals.to_pylist() == [{"new_name": 4, "e": "UNK"}, {"new_name": 5, "e": "X"}]


def test_corrupt_payloads_fail_alone():
    good = [avro_bytes(ALL, rec(i)) for i in range(6)]
    payloads = [good[0], good[1][:-3], good[2], b"\xff" * 40, good[3] + b"\x00junk", good[4], b""]
    for opts in (FAST, REFERENCE):
        vals, errs = codec(ALL, options=opts).decode(binary(payloads), "7")
        ok = [e is None for e in errs]
        # trailing junk after a valid record is a row error (it used to decode: issue 14)
        assert ok == [True, False, True, False, False, True, False], errs
        assert "trailing bytes" in errs[4]
        assert all(e.startswith("avro decode failed for schema id 7: ") for e in errs if e)
        assert vals.to_pylist()[2] == codec(ALL).decode(binary([good[2]]), "7")[0].to_pylist()[0]
        assert vals.to_pylist()[4] is None and vals.to_pylist()[5]["name"] == "n4"


def test_hostile_array_count_is_refused_quickly():
    h = {"type": "record", "name": "H", "fields": [{"name": "a", "type": {"type": "array", "items": "long"}}]}
    hn = {"type": "record", "name": "H",
          "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]}
    bad = bytes([0x80 | 0, 0x80 | 0x12, 0x80 | 0x62, 0x04]) + b"\x02"  # claims 5,000,000 items
    for schema in (h, hn):
        for opts in (FAST, REFERENCE):
            vals, errs = codec(schema, options=opts).decode(binary([bad, avro_bytes(schema, {"a": []})]), "5")
            assert errs[0] is not None and errs[1] is None and vals.to_pylist()[1] == {"a": []}
    import tracemalloc
    tracemalloc.start()
    try:
        _, errs = codec(hn, options=REFERENCE).decode(binary([bad]), "5")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "max_collection_items" in errs[0]
    assert peak < 5_000_000  # refused before 5,000,000 items were materialized


def test_recursive_schema_refused_or_cut():
    node = {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"], "default": None}]}
    with pytest.raises(SchemaMappingError, match="Node"):
        build_decoder(Spec("avro", node), options=DecodeOptions())
    d = build_decoder(Spec("avro", node), options=DecodeOptions(max_recursion_depth=2))
    assert d.arrow_type == pa.struct([("v", pa.int32()), ("next", pa.struct([
        ("v", pa.int32()), ("next", pa.struct([("v", pa.int32())]))]))])
    payload = avro_bytes(node, {"v": 1, "next": {"v": 2, "next": {"v": 3, "next": {"v": 4, "next": None}}}})
    vals, errs = d.decode_group(binary([payload]), None, (), "1")
    assert vals.to_pylist() == [{"v": 1, "next": {"v": 2, "next": {"v": 3}}}] and errs == [None]


def test_decoder_orders_mixed_schema_ids_and_reports_all_errors(registry):
    registry.add(1, V1)
    registry.add(2, V2)
    d = build_decoder(Spec("avro", V2), options=DecodeOptions())
    rows = [(2, avro_bytes(V2, {"id": 10, "score": 1.0, "kind": "C", "added": "x", "tags": []})),
            (1, avro_bytes(V1, {"id": 11, "score": 2.0, "old": "o", "kind": "A"})),
            b"\x07bad-magic",
            (2, b"\x01"),
            (1, avro_bytes(V1, {"id": 12, "score": 3.0, "old": "o", "kind": "B"})),
            (99, b"\x00")]
    res = d.decode(framed(rows), registry.lookup)
    assert res.values.type == d.arrow_type and len(res) == 6
    assert [v and v["id"] for v in res.values.to_pylist()] == [10, 11, None, None, 12, None]
    errs = res.errors.to_pylist()
    assert errs[0] is None and errs[1] is None and errs[4] is None
    assert errs[2] and errs[3].startswith("avro decode failed for schema id 2")
    assert "schema lookup failed for schema id 99" in errs[5]
    assert res.schema_ids.to_pylist()[:2] == ["2", "1"]
    assert pickle.loads(pickle.dumps(d)).decode(framed(rows), registry.lookup).values.equals(res.values)


def test_confluent_avro_serializer_interop(registry):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": "mock://decode-avro"})
    schema = {"type": "record", "name": "Pay", "fields": [
        {"name": "id", "type": "long"}, {"name": "who", "type": "string"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "map", "values": "int"}}]}
    ser = AvroSerializer(client, json.dumps(schema))
    ctx = SerializationContext("pay", MessageField.VALUE)
    at = dt.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)
    values = [ser({"id": i, "who": f"w{i}", "at": at, "tags": {"k": i}}, ctx) for i in range(3)]
    sid = client.get_latest_version("pay-value").schema_id
    registry.add(sid, schema)
    d = build_decoder(Spec("avro", schema), options=DecodeOptions())
    res = d.decode(framed(values), registry.lookup)
    assert res.errors.null_count == 3
    assert res.values.to_pylist()[2] == {"id": 2, "who": "w2", "at": at, "tags": [("k", 2)]}


# -- fast path ≡ reference path on generated records ---------------------------------------
_i32 = st.integers(-2**31, 2**31 - 1)
_i64 = st.integers(-2**63, 2**63 - 1)
_text = st.text(max_size=8)
GEN = {"type": "record", "name": "G", "fields": [
    {"name": "a", "type": "long"}, {"name": "b", "type": "int"}, {"name": "c", "type": "string"},
    {"name": "d", "type": ["null", "double"]}, {"name": "e", "type": "bytes"},
    {"name": "f", "type": {"type": "array", "items": ["null", "string"]}},
    {"name": "g", "type": ["null", {"type": "record", "name": "In", "fields": [
        {"name": "x", "type": "boolean"}, {"name": "y", "type": {"type": "array", "items": "long"}}]}]},
    {"name": "h", "type": {"type": "enum", "name": "H", "symbols": ["P", "Q"]}},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "k", "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 4}}]}
records = st.fixed_dictionaries({
    "a": _i64, "b": _i32, "c": _text, "d": st.none() | st.floats(allow_nan=False),
    "e": st.binary(max_size=8), "f": st.lists(st.none() | _text, max_size=4),
    "g": st.none() | st.fixed_dictionaries({"x": st.booleans(), "y": st.lists(_i64, max_size=3)}),
    "h": st.sampled_from(["P", "Q"]), "t": st.integers(-2**53, 2**53),
    "k": st.integers(-10**17, 10**17).map(lambda v: decimal.Decimal(v).scaleb(-4))})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, min_size=1, max_size=30), st.data())
def test_fast_path_equals_reference_on_generated_records(recs, data):
    payloads = [avro_bytes(GEN, r) for r in recs]
    damaged = None
    if data.draw(st.booleans()):  # sometimes damage one payload
        damaged = data.draw(st.integers(0, len(payloads) - 1))
        cut = data.draw(st.integers(0, len(payloads[damaged])))
        payloads[damaged] = payloads[damaged][:cut] + data.draw(st.binary(max_size=3))
    a, ea = codec(GEN).decode(binary(payloads), "1")
    b, eb = codec(GEN, options=REFERENCE).decode(binary(payloads), "1")
    if damaged is None:
        assert ea == eb == [None] * len(payloads)
        assert a.equals(b)
        return
    keep = [i for i in range(len(payloads)) if i != damaged]
    assert [ea[i] for i in keep] == [eb[i] for i in keep] == [None] * len(keep)
    idx = pa.array(keep, pa.int64())
    assert a.take(idx).equals(b.take(idx))  # the damaged row never shifts its neighbours
    # errors only ever come from the reference decoder; the fast path is at most as lenient
    # as Java's reader on invalid bytes (boolean byte 2, out-of-range union index)
    assert ea[damaged] is None or eb[damaged] is not None
