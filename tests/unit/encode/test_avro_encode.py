"""Avro encoding: compiled kernel ≡ per-record reference, byte for byte; fastavro and our decoder read it back."""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import pickle
import uuid

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions, build_decoder
from connector.formats.avro._schema import parse_avro, union_kind
from connector.formats import EncodeError, EncodeOptions, build_encoder
from registry import Schema, SchemaType
from tests.unit.encode.encode_helpers import Spec, top_schema, value
from wireformat import frame_payloads, parse_frames

REF = EncodeOptions(fast_path=False)


def _encoders(schema):
    spec = Spec("avro", schema)
    return build_encoder(spec), build_encoder(spec, options=REF)


def _decode_ours(schema, payloads):
    text = json.dumps(schema)
    dec = build_decoder(Spec("avro", text), options=DecodeOptions())
    frames = parse_frames(frame_payloads(payloads, "confluent", 1).values, "confluent")
    reg = Schema(SchemaType.AVRO, text, id=1)
    return dec.decode(frames, lambda key: reg)


def _fastavro_form(node, v):
    """What fastavro.schemaless_reader returns for our Arrow-side value ``v``."""
    if v is None:
        return None
    k = node.kind
    if k == "union":
        uk = union_kind(node)
        if uk == "struct":
            i = next(i for i in range(len(node.nonnull)) if v[f"member{i}"] is not None)
            return _fastavro_form(node.nonnull[i], v[f"member{i}"])
        if uk in ("long", "double"):
            return v
        return _fastavro_form(node.nonnull[0], v)
    if k == "record":
        return {f.name: _fastavro_form(f.type, v[f.name]) for f in node.fields}
    if k == "array":
        return [_fastavro_form(node.items, x) for x in v]
    if k == "map":
        return {key: _fastavro_form(node.items, x) for key, x in v}
    lg = node.logical
    if lg == "time-millis":
        return (dt.datetime.min + dt.timedelta(milliseconds=v)).time()
    if lg == "time-micros":
        return (dt.datetime.min + dt.timedelta(microseconds=v)).time()
    if lg == "uuid":
        return uuid.UUID(v)
    return v


def _norm(x):
    if isinstance(x, uuid.UUID):
        return str(x)
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_norm(v) for v in x]
    return x


@st.composite
def schema_and_rows(draw):
    schema = draw(top_schema())
    node, _ = parse_avro(json.dumps(schema))
    rows = draw(st.lists(st.one_of(value(node), st.none()) if draw(st.booleans()) else value(node),
                         max_size=6))
    return schema, node, rows


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema_and_rows())
def test_vectorized_equals_reference_and_round_trips(case):
    schema, node, rows = case
    fast, ref = _encoders(schema)
    arr = pa.array(rows, fast.arrow_type)
    got, want = fast.encode(arr), ref.encode(arr)
    assert got.errors.to_pylist() == want.errors.to_pylist() == [None] * len(rows)
    assert got.payloads.to_pylist() == want.payloads.to_pylist()
    # independent reader: fastavro
    parsed = fastavro.parse_schema(schema)
    for r, p in zip(rows, got.payloads.to_pylist()):
        if r is None:
            assert p is None  # tombstone
            continue
        bio = io.BytesIO(p)
        back = fastavro.schemaless_reader(bio, parsed)
        assert bio.tell() == len(p)
        assert _norm(back) == _norm(_fastavro_form(node, r))
    # the project's decoder
    res = _decode_ours(schema, got.payloads)
    assert res.values.to_pylist() == arr.to_pylist()


FLAT = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "qty", "type": "int"},
    {"name": "name", "type": "string"}, {"name": "price", "type": "double"},
    {"name": "ok", "type": "boolean"}, {"name": "note", "type": ["null", "string"]}]}


def test_interface_and_tombstones():
    enc = build_encoder(Spec("avro", FLAT))
    assert enc.arrow_type == build_decoder(Spec("avro", FLAT)).arrow_type
    enc2 = pickle.loads(pickle.dumps(enc))
    rows = [{"id": 1, "qty": 2, "name": "a", "price": 1.5, "ok": True, "note": None}, None]
    res = enc2.encode(pa.array(rows, enc.arrow_type))
    assert res.errors.to_pylist() == [None, None]
    assert res.payloads[1].as_py() is None
    assert fastavro.schemaless_reader(io.BytesIO(res.payloads[0].as_py()), fastavro.parse_schema(FLAT)) == rows[0]


ERR = {"type": "record", "name": "E", "fields": [
    {"name": "i", "type": "int"},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}},
    {"name": "e", "type": {"type": "enum", "name": "Sym", "symbols": ["A", "B"]}},
    {"name": "f", "type": {"type": "fixed", "name": "F2", "size": 2}},
    {"name": "u", "type": ["null", "int", "string"]},
    {"name": "l", "type": {"type": "array", "items": "int"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}}]}
GOOD = {"i": 1, "d": decimal.Decimal("12.34"), "e": "A", "f": b"xy", "u": {"member0": 1, "member1": None},
        "l": [1], "id": "00000000-0000-0000-0000-000000000001"}


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("change, needle", [
    ({"i": None}, "value.i: null for a non-nullable"),
    ({"e": "Z"}, "'Z' is not a symbol of enum Sym"),
    ({"f": b"xyz"}, "value.f: fixed(2) needs 2 bytes"),
    ({"u": {"member0": 1, "member1": "x"}}, "value.u: union value sets several members"),
    ({"l": [1, None]}, "value.l["),
    ({"id": "nope"}, "'nope' is not a UUID"),
])
def test_row_errors(fast, change, needle):
    enc = build_encoder(Spec("avro", ERR), options=EncodeOptions(fast_path=fast))
    rows = [GOOD, {**GOOD, **change}, GOOD]
    res = enc.encode(pa.array(rows, enc.arrow_type))
    errs = res.errors.to_pylist()
    assert errs[0] is None and errs[2] is None
    assert errs[1].startswith("avro encode failed: ") and needle in errs[1], errs[1]
    assert res.payloads[1].as_py() is None and res.payloads[0].as_py() is not None
    assert res.payloads[0].as_py() == res.payloads[2].as_py()


def test_decimal_overflow_and_int_range_from_wider_spark_types():
    enc = build_encoder(Spec("avro", ERR))
    t = pa.struct([(f.name, f.type) for f in enc.arrow_type])
    spark = pa.struct([("i", pa.int64()), ("d", pa.decimal128(38, 18))] +
                      [(f.name, f.type) for f in t][2:])
    rows = [{**GOOD, "i": 5}, {**GOOD, "i": 1 << 40}, {**GOOD, "d": decimal.Decimal("123.45")},
            {**GOOD, "d": decimal.Decimal("1.005")}]
    res = enc.encode(pa.array(rows, spark))
    errs = res.errors.to_pylist()
    assert errs[0] is None
    assert "'value.i'" in errs[1] and "int32" in errs[1]
    assert "'value.d'" in errs[2] and "'value.d'" in errs[3]
    assert res.payloads.to_pylist()[1:] == [None, None, None]


def test_coerce_spark_shapes_and_structural_errors():
    enc = build_encoder(Spec("avro", FLAT))
    spark = pa.array([{"note": "n", "ok": True, "price": 1.0, "name": "a", "qty": 3, "id": 9}],
                     pa.struct([("note", pa.large_string()), ("ok", pa.bool_()), ("price", pa.float64()),
                                ("name", pa.large_string()), ("qty", pa.int64()), ("id", pa.int64())]))
    c = enc.coerce(spark)
    assert c.type == enc.arrow_type
    assert c.to_pylist() == [{"id": 9, "qty": 3, "name": "a", "price": 1.0, "ok": True, "note": "n"}]
    with pytest.raises(EncodeError, match=r"lacks field\(s\) \['note'\]"):
        enc.coerce(pa.array([{"id": 1, "qty": 1, "name": "a", "price": 1.0, "ok": True}]))
    with pytest.raises(EncodeError, match=r"has field\(s\) \['extra'\]"):
        enc.coerce(pa.array([{**spark.to_pylist()[0], "extra": 1}]))
    with pytest.raises(EncodeError, match="'value.qty' has type string"):
        enc.coerce(pa.array([{**spark.to_pylist()[0], "qty": "3"}]))
    with pytest.raises(EncodeError, match="'value.qty'"):
        enc.coerce(pa.array([{**spark.to_pylist()[0], "qty": 1 << 40}]))


def test_int_long_union_writes_the_branch_that_fits():
    s = {"type": "record", "name": "IL", "fields": [{"name": "v", "type": ["int", "long"]}]}
    enc = build_encoder(Spec("avro", s))
    res = enc.encode(pa.array([{"v": 1}, {"v": 1 << 40}], enc.arrow_type)).payloads.to_pylist()
    assert res[0] == b"\x00\x02"  # branch 0 (int)
    assert res[1][0] == 2  # branch 1 (long)


def test_sliced_and_chunked_input():
    enc = build_encoder(Spec("avro", ERR))
    arr = pa.array([GOOD, {**GOOD, "l": [1, 2, 3]}, {**GOOD, "l": []}] * 3, enc.arrow_type)
    full = enc.encode(arr).payloads.to_pylist()
    assert enc.encode(arr.slice(2, 5)).payloads.to_pylist() == full[2:7]
    assert enc.encode(pa.chunked_array([arr.slice(0, 4), arr.slice(4)])).payloads.to_pylist() == full


def test_recursive_avro_schema_is_written_cut_at_the_readers_depth():
    """What the reader cuts at ``max_recursion_depth`` is written as the one value the cut
    place can hold (null, an empty array): every record is complete for any Avro reader
    (issue 24: recursive schemas were refused, though we read them)."""
    import io

    import fastavro

    from connector.errors import SchemaMappingError

    lst = {"type": "record", "name": "Node", "fields": [{"name": "v", "type": "long"},
                                                         {"name": "next", "type": ["null", "Node"]}]}
    tree = {"type": "record", "name": "T", "fields": [{"name": "v", "type": "long"},
                                                       {"name": "kids", "type": {"type": "array", "items": "T"}}]}
    for schema, row, want in [
        (lst, {"v": 1, "next": {"v": 2, "next": {"v": 3}}},
         {"v": 1, "next": {"v": 2, "next": {"v": 3, "next": None}}}),
        (tree, {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]},
         {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3, "kids": []}]}]}),
    ]:
        for fast in (True, False):
            enc = build_encoder(Spec("avro", schema), options=EncodeOptions(max_recursion_depth=2, fast_path=fast))
            res = enc.encode(pa.array([row], enc.arrow_type))
            assert res.error_count == 0
            got = fastavro.schemaless_reader(io.BytesIO(res.payloads[0].as_py()), fastavro.parse_schema(schema))
            assert got == want
    with pytest.raises(SchemaMappingError, match="max_recursion_depth"):
        build_encoder(Spec("avro", lst))
    endless = {"type": "record", "name": "E", "fields": [{"name": "e", "type": "E"}]}
    with pytest.raises(SchemaMappingError, match="no representable type"):
        build_encoder(Spec("avro", endless), options=EncodeOptions(max_recursion_depth=2))


@pytest.mark.parametrize("schema, rows", [
    ("string", ["a", None, ""]),
    ({"type": "array", "items": "long"}, [[1, 2], None, []]),
    ({"type": "map", "values": ["null", "int"]}, [[("k", 1), ("z", None)], None]),
    (["null", "long", "string"], [{"member0": 3, "member1": None}, None, {"member0": None, "member1": "x"}]),
    (["int", "long"], [1, 1 << 40, None]),
    ({"type": "enum", "name": "Top", "symbols": ["X", "Y"]}, ["Y", None]),
])
def test_top_level_non_record_schemas(schema, rows):
    fast, ref = _encoders(json.dumps(schema))
    arr = pa.array(rows, fast.arrow_type)
    got, want = fast.encode(arr), ref.encode(arr)
    assert got.payloads.to_pylist() == want.payloads.to_pylist()
    assert got.errors.null_count == len(rows)
    parsed = fastavro.parse_schema(schema)
    node, _ = parse_avro(json.dumps(schema))
    for r, p in zip(rows, got.payloads.to_pylist()):
        assert (p is None) == (r is None)  # a null row is a tombstone
        if p is not None:
            assert _norm(fastavro.schemaless_reader(io.BytesIO(p), parsed)) == _norm(_fastavro_form(node, r))


@st.composite
def schema_and_loose_rows(draw):
    schema = draw(top_schema())
    node, _ = parse_avro(json.dumps(schema))
    return schema, draw(st.lists(value(node, loose=True), max_size=6))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema_and_loose_rows())
def test_row_errors_match_the_reference(case):
    """Nulls anywhere, unknown symbols, wrong fixed sizes, several union members: the same rows
    fail on both paths (only live positions count), the others encode to the same bytes."""
    schema, rows = case
    fast, ref = _encoders(schema)
    arr = pa.array(rows, fast.arrow_type)
    got, want = fast.encode(arr), ref.encode(arr)
    assert [e is None for e in got.errors.to_pylist()] == [e is None for e in want.errors.to_pylist()], \
        (got.errors.to_pylist(), want.errors.to_pylist())
    assert got.payloads.to_pylist() == want.payloads.to_pylist()


def test_full_name_for_subject_strategies():
    assert build_encoder(Spec("avro", FLAT)).full_name == "Order"
    assert build_encoder(Spec("avro", {**ERR, "namespace": "n.s"})).full_name == "n.s.E"


def test_values_that_do_not_fit_are_found_row_by_row_in_a_big_batch():
    s = {"type": "record", "name": "I", "fields": [{"name": "v", "type": "int"}]}
    enc = build_encoder(Spec("avro", s))
    vals = list(range(1000))
    bad = {3, 500, 501, 999}
    for i in bad:
        vals[i] = 1 << 40
    res = enc.encode(pa.array([{"v": v} for v in vals], pa.struct([("v", pa.int64())])))
    errs = res.errors.to_pylist()
    assert {i for i, e in enumerate(errs) if e is not None} == bad
    assert res.payloads[4].as_py() == b"\x08"  # zigzag(4)


def _corpus_avro():
    from benchmarks.corpus._gen import cases

    return [c for c in cases() if c.fmt == "avro"]


@pytest.mark.parametrize("case", _corpus_avro(), ids=lambda c: c.name)
def test_every_corpus_schema_goes_through_the_kernel_byte_for_byte(case):
    """Each corpus schema's records (nulls, unions, maps, recursion cut at the reader's depth)
    are encoded by the compiled kernel (the autouse fixture fails on a fallback) to the
    reference's bytes, header included."""
    from benchmarks.corpus._gen import generate
    from wireformat import parse_frames as frames

    batch = generate(case, 60, seed=3)
    rows = build_decoder(case.spec, options=case.options).decode(frames(batch.values, "confluent"),
                                                               batch.lookup).values
    opts = dict(max_recursion_depth=case.options.max_recursion_depth)
    fast = build_encoder(case.spec, options=EncodeOptions(**opts))
    ref = build_encoder(case.spec, options=EncodeOptions(fast_path=False, **opts))
    got, want = fast.encode(rows, prefix=b"\x00\x00\x00\x00\x07"), ref.encode(rows, prefix=b"\x00\x00\x00\x00\x07")
    assert [e is None for e in got.errors.to_pylist()] == [e is None for e in want.errors.to_pylist()]
    assert got.payloads.to_pylist() == want.payloads.to_pylist()


def test_output_buffer_grows_mid_batch_for_rows_larger_than_the_last_batch():
    """The buffer is sized from the previous batch's bytes per row; a batch of much larger rows
    (a long string, a long array, a wide map) refills it from the row that did not fit."""
    s = {"type": "record", "name": "G", "fields": [
        {"name": "s", "type": "string"}, {"name": "a", "type": {"type": "array", "items": "long"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "bytes"]}}]}
    fast, ref = _encoders(s)
    small = pa.array([{"s": "x", "a": [], "m": []}] * 50, fast.arrow_type)
    assert fast.encode(small).payloads.to_pylist() == ref.encode(small).payloads.to_pylist()
    big = [{"s": "é" * (i * 5000), "a": list(range(i * 300)),
            "m": [(f"k{j}", None if j % 3 else b"v" * j) for j in range(i * 40)]} for i in range(12)]
    arr = pa.array(big, fast.arrow_type).slice(1)
    got, want = fast.encode(arr, prefix=b"\x00\x00\x00\x00\x02"), ref.encode(arr, prefix=b"\x00\x00\x00\x00\x02")
    assert got.error_count == 0
    assert got.payloads.to_pylist() == want.payloads.to_pylist()


DEC = {"type": "record", "name": "D", "fields": [
    {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 4}},
    {"name": "f3", "type": {"type": "fixed", "name": "F3", "size": 3, "logicalType": "decimal",
                            "precision": 6, "scale": 0}},
    {"name": "f20", "type": {"type": "fixed", "name": "F20", "size": 20, "logicalType": "decimal",
                             "precision": 38, "scale": 0}},
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "lms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "d", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}}]}


@pytest.mark.parametrize("b, f3, f20", [
    ("9999999999999999999999999999999999.9999", 999999, 10 ** 38 - 1),  # precision limits
    ("-9999999999999999999999999999999999.9999", -999999, -(10 ** 38) + 1),
    ("0", 0, 0), ("-0.0001", -1, -1), ("0.0128", 127, 128), ("-0.0129", -128, -129), ("0.0255", 255, -256),
])
def test_decimals_and_timestamps_at_their_limits_match_the_reference(b, f3, f20):
    fast, ref = _encoders(DEC)
    utc = dt.timezone.utc
    row = {"b": decimal.Decimal(b), "f3": decimal.Decimal(f3), "f20": decimal.Decimal(f20),
           "ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=utc),  # floor to -1 ms
           "lms": dt.datetime(1, 1, 1), "d": dt.date(1, 1, 1), "tm": 86_399_999}
    arr = pa.array([row], fast.arrow_type)
    got, want = fast.encode(arr), ref.encode(arr)
    assert got.errors.to_pylist() == want.errors.to_pylist()
    assert got.payloads.to_pylist() == want.payloads.to_pylist()
    if got.error_count == 0:
        back = fastavro.schemaless_reader(io.BytesIO(got.payloads[0].as_py()), fastavro.parse_schema(DEC))
        assert back["b"] == row["b"] and back["f20"] == row["f20"] and back["ms"] == row["ms"].replace(microsecond=999_000)


@pytest.mark.parametrize("change, needle", [
    ({"f3": decimal.Decimal(8388608)}, "value.f3: decimal does not fit fixed(3)"),
    ({"f3": decimal.Decimal(-8388609)}, "value.f3: decimal does not fit fixed(3)"),
    ({"b": -(10 ** 38)}, "value.b: decimal -10000000000000000000000000000000000.0000 overflows precision 38"),
])
def test_decimal_refusals_name_the_field_like_the_reference(change, needle):
    """A precision wider than the fixed holds (fastavro refuses such a schema; we write what fits)."""
    wide = json.loads(json.dumps(DEC).replace('"precision": 6', '"precision": 8'))
    fast, ref = _encoders(wide)
    base = {"b": decimal.Decimal(1), "f3": decimal.Decimal(1), "f20": decimal.Decimal(1), "ms": 0, "lms": 0,
            "d": 0, "tm": 0}
    t = fast.arrow_type
    arr = pa.array([base, {**base, **change} if "b" not in change else base], t)
    if "b" in change:  # past the precision: only unchecked Arrow buffers hold such a value
        unscaled = [10 ** 4, change["b"]]
        data = b"".join(u.to_bytes(16, "little", signed=True) for u in unscaled)
        b = pa.Array.from_buffers(t.field("b").type, 2, [None, pa.py_buffer(data)])
        arr = pa.StructArray.from_arrays([b if f.name == "b" else arr.field(f.name) for f in t], fields=list(t))
    got = fast.encode(arr).errors.to_pylist()
    want = ref.encode(arr).errors.to_pylist()
    assert got[0] is None and needle in got[1], got
    assert [e is None for e in got] == [e is None for e in want]


@pytest.mark.parametrize("fast", [True, False])
def test_a_uuid_with_a_trailing_newline_is_refused_on_both_paths(fast):
    """``$`` in a Python regex matches before a final newline: the reference accepted
    ``"<uuid>\\n"``, which no UUID reader accepts and the compiled path refuses."""
    enc = build_encoder(Spec("avro", ERR), options=EncodeOptions(fast_path=fast))
    rows = [GOOD, {**GOOD, "id": GOOD["id"] + "\n"}]
    errs = enc.encode(pa.array(rows, enc.arrow_type)).errors.to_pylist()
    assert errs[0] is None and "is not a UUID" in errs[1], errs
