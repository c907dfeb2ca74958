"""Protobuf encoding: the column-wise wire encoder ≡ upb serialization of the same values
(parsed messages equal), the project's decoder reads it back, errors are per row."""
from __future__ import annotations

import datetime as dt
import decimal
import functools

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions, build_decoder
from connector.formats.protobuf._schema import compile_proto
from connector.formats import EncodeOptions, build_encoder
from tests.unit.encode.encode_helpers import UTC, Spec
from wireformat import frame_payloads, parse_frames

PROTO3 = """syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
message Sub { string s = 1; repeated sint32 zs = 2; }
message All {
  enum Kind { K0 = 0; K1 = 1; NEG = -3; }
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10; float fl = 11;
  double db = 12; bool b = 13; string str = 14; bytes by = 15; Kind kind = 16;
  optional int32 oi = 17; optional string os = 18; Sub sub = 19;
  repeated int64 ri = 20; repeated string rs = 21; repeated Sub rsub = 22; repeated Kind rk = 23;
  repeated double rd = 24;
  map<string, int32> mi = 25; map<int64, Sub> msub = 26;
  oneof pick { string a = 27; int64 n = 28; Sub sb = 29; }
  google.protobuf.Timestamp ts = 30; google.protobuf.Duration du = 31;
  google.protobuf.Int64Value w64 = 32; google.protobuf.StringValue ws = 33;
}
"""
PROTO2 = """syntax = "proto2";
package t2;
message P { optional int32 a = 1 [default = 5]; repeated int32 r = 2; repeated int32 pk = 3 [packed = true];
            required string s = 4; }
"""


def _value(t: pa.DataType, name: str = ""):
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: st.one_of(st.none(), _value(f.type, f.name)) for f in t})
    if pa.types.is_map(t):
        return st.lists(st.tuples(_value(t.key_type), _value(t.item_type)), max_size=3,
                        unique_by=lambda kv: kv[0])
    if pa.types.is_list(t):
        return st.lists(_value(t.value_type, name), max_size=3)
    if pa.types.is_decimal(t):
        return st.integers(0, (1 << 64) - 1).map(decimal.Decimal)
    if pa.types.is_timestamp(t):
        return st.integers(-10**15, 10**15).map(lambda us: dt.datetime(1970, 1, 1, tzinfo=UTC)
                                                + dt.timedelta(microseconds=us))
    if pa.types.is_int32(t):
        return st.integers(-(1 << 31), (1 << 31) - 1)
    if pa.types.is_int64(t):
        if name in ("u32", "f32"):
            return st.integers(0, (1 << 32) - 1)
        return st.integers(-(1 << 63), (1 << 63) - 1)
    if pa.types.is_float32(t):
        return st.floats(width=32, allow_nan=False)
    if pa.types.is_float64(t):
        return st.floats(allow_nan=False)
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_binary(t):
        return st.binary(max_size=5)
    if pa.types.is_string(t):
        if name in ("kind", "rk"):
            return st.sampled_from(["K0", "K1", "NEG"])
        return st.text(max_size=5)
    raise AssertionError(t)


@functools.cache
def _setup(text, message):
    spec = Spec("protobuf", text, message)
    fast, ref = build_encoder(spec), build_encoder(spec, options=EncodeOptions(fast_path=False))
    compiled = compile_proto(text)
    return spec, fast, ref, compiled.message_class(compiled.find(message))


def _one_oneof_member(draw, vals):
    """At most one member of the oneof (a, n, sb) set per row, as protobuf allows."""
    for v in vals:
        if v is not None:
            keep = draw(st.sampled_from(["a", "n", "sb"]))
            for k in ("a", "n", "sb"):
                if k != keep:
                    v[k] = None
    return vals


@st.composite
def rows3(draw):
    spec, fast, _, _ = _setup(PROTO3, "t.All")
    return _one_oneof_member(draw, draw(st.lists(st.one_of(st.none(), _value(fast.arrow_type)), max_size=5)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows3())
def test_wire_encoder_equals_upb_and_decodes_back(rows):
    spec, fast, ref, cls = _setup(PROTO3, "t.All")
    assert fast._state().proto.vectorized
    arr = pa.array(rows, fast.arrow_type)
    got, want = fast.encode(arr), ref.encode(arr)
    assert got.errors.to_pylist() == [None] * len(rows) == want.errors.to_pylist()
    for g, w in zip(got.payloads.to_pylist(), want.payloads.to_pylist()):
        assert (g is None) == (w is None)
        if g is not None:
            assert cls.FromString(g) == cls.FromString(w)
    dec = build_decoder(spec, options=DecodeOptions())
    d = lambda p: dec.decode(parse_frames(frame_payloads(p, "none", None).values, "none"),
                             lambda key: None).values.to_pylist()
    assert _unordered_maps(d(got.payloads)) == _unordered_maps(d(want.payloads))


def _unordered_maps(rows):
    """Protobuf maps have no order: compare them sorted."""
    return [None if r is None else {k: sorted(v, key=repr) if k in ("mi", "msub") and v else v
                                    for k, v in r.items()} for r in rows]


def test_bytes_match_upb_on_a_flat_message():
    spec, fast, ref, cls = _setup(PROTO3, "t.All")
    row = {f.name: None for f in fast.arrow_type}
    row.update(i32=-1, i64=5, u64=decimal.Decimal(2**64 - 1), str="x", kind="NEG", ri=[1, 2], fl=-0.0,
               ts=dt.datetime(2024, 1, 1, 0, 0, 0, 5, tzinfo=UTC), du=-1_500_001, w64=0, mi=[("k", 0)])
    arr = pa.array([row], fast.arrow_type)
    assert fast.encode(arr).payloads[0].as_py() == ref.encode(arr).payloads[0].as_py()


def test_proto2_presence_and_packing():
    spec, fast, ref, cls = _setup(PROTO2, "t2.P")
    arr = pa.array([{"a": 0, "r": [1, 2], "pk": [3], "s": ""}, {"a": None, "r": [], "pk": [], "s": "z"}],
                   fast.arrow_type)
    got = fast.encode(arr).payloads.to_pylist()
    assert got == ref.encode(arr).payloads.to_pylist()
    m = cls.FromString(got[0])
    assert m.HasField("a") and m.a == 0 and list(m.r) == [1, 2] and m.HasField("s")
    assert not cls.FromString(got[1]).HasField("a")


@pytest.mark.parametrize("fast_path", [True, False])
def test_row_errors(fast_path):
    spec = Spec("protobuf", PROTO3, "t.All")
    enc = build_encoder(spec, options=EncodeOptions(fast_path=fast_path))
    base = {f.name: None for f in enc.arrow_type}
    rows = [dict(base, kind="K1"), dict(base, kind="NOPE"), dict(base, u32=1 << 33), dict(base, ri=[1, None]),
            dict(base, mi=[("k", None)]), dict(base, str="ok")]
    if fast_path:
        rows.append(dict(base, a="x", n=1))  # two oneof members set
    errs = enc.encode(pa.array(rows, enc.arrow_type)).errors.to_pylist()
    assert errs[0] is None and errs[5] is None
    assert "'NOPE' is not a value of enum t.All.Kind" in errs[1]
    assert errs[2] is not None and errs[3] is not None and errs[4] is not None
    if fast_path:
        assert "oneof pick" in errs[6]


def test_any_struct_schemas_use_the_per_record_path():
    text = 'syntax = "proto3"; package s; import "google/protobuf/struct.proto"; ' \
           'message M { google.protobuf.Struct doc = 1; int32 n = 2; }'
    enc = build_encoder(Spec("protobuf", text, "s.M"))
    assert not enc._state().proto.vectorized
    res = enc.encode(pa.array([{"doc": '{"a": 1}', "n": 2}], enc.arrow_type))
    dec = build_decoder(Spec("protobuf", text, "s.M"))
    back = dec.decode(parse_frames(res.payloads, "none"), lambda k: None).values.to_pylist()
    assert back[0]["n"] == 2 and '"a"' in back[0]["doc"]


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_wrappers_and_defaults_mixed_in_one_batch():
    spec, fast, ref, cls = _setup(PROTO3, "t.All")
    base = {f.name: None for f in fast.arrow_type}
    rows = [dict(base, w64=0, ws="", du=0, i32=0), dict(base, w64=5, ws="x", du=7, i32=3),
            dict(base, sub={"s": "", "zs": []}), dict(base, sub={"s": "q", "zs": [-1]})]
    arr = pa.array(rows, fast.arrow_type)
    got = fast.encode(arr).payloads.to_pylist()
    want = ref.encode(arr).payloads.to_pylist()
    assert [cls.FromString(g) for g in got] == [cls.FromString(w) for w in want]
    m = cls.FromString(got[0])
    assert m.HasField("w64") and m.w64.value == 0 and m.HasField("du")


def _loose(t: pa.DataType, name: str = ""):
    """Like _value, with nulls inside lists and maps, unknown enum names, uint32 out of range."""
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: st.one_of(st.none(), _loose(f.type, f.name)) for f in t})
    if pa.types.is_map(t):
        return st.lists(st.tuples(_value(t.key_type), st.one_of(st.none(), _loose(t.item_type))),
                        max_size=3, unique_by=lambda kv: kv[0])
    if pa.types.is_list(t):
        return st.lists(st.one_of(st.none(), _loose(t.value_type, name)), max_size=3)
    if name in ("kind", "rk"):
        return st.sampled_from(["K0", "NEG", "BAD", "7"])
    if name in ("u32", "f32"):
        return st.integers(-2, (1 << 33))
    return _value(t, name)


@st.composite
def loose_rows(draw):
    spec, fast, _, _ = _setup(PROTO3, "t.All")
    return _one_oneof_member(draw, draw(st.lists(st.one_of(st.none(), _loose(fast.arrow_type)), max_size=5)))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(loose_rows())
def test_row_errors_match_the_reference(rows):
    spec, fast, ref, cls = _setup(PROTO3, "t.All")
    arr = pa.array(rows, fast.arrow_type)
    got, want = fast.encode(arr), ref.encode(arr)
    assert [e is None for e in got.errors.to_pylist()] == [e is None for e in want.errors.to_pylist()], \
        (got.errors.to_pylist(), want.errors.to_pylist())
    for g, w in zip(got.payloads.to_pylist(), want.payloads.to_pylist()):
        assert (g is None) == (w is None)
        if g is not None:
            assert cls.FromString(g) == cls.FromString(w)


@pytest.mark.parametrize("fmt", ["protobuf", "avro"])
def test_schema_without_text_is_a_mapping_error(fmt):
    # found by mypy: a Protobuf spec with no text failed with AttributeError on None.encode
    from connector.errors import SchemaMappingError

    class NoText:  # e.g. a registry schema whose text was not fetched
        format, text = fmt, None

    with pytest.raises(SchemaMappingError, match="no text"):
        build_encoder(NoText())


@pytest.mark.parametrize("fast_path", [True, False])
def test_null_in_a_proto2_required_field_is_a_row_error(fast_path):
    """A message without its required field does not parse (confluent's deserializer refuses
    it): the row is an error naming the field, the other rows are written."""
    text = 'syntax = "proto2"; package t3; message In { required string id = 1; optional int32 n = 2; } ' \
           'message R { required string name = 1; optional In inner = 2; }'
    enc = build_encoder(Spec("protobuf", text, "t3.R"), options=EncodeOptions(fast_path=fast_path))
    rows = [{"name": "a", "inner": {"id": "x", "n": None}}, {"name": None, "inner": None},
            {"name": "b", "inner": {"id": None, "n": 1}}]
    res = enc.encode(pa.array(rows, enc.arrow_type))
    errs = res.errors.to_pylist()
    assert errs[0] is None and res.payloads[0].as_py() is not None
    assert "value.name: null for a required field" in errs[1]
    assert "value.inner.id: null for a required field" in errs[2]
    assert res.payloads[1].as_py() is None and res.payloads[2].as_py() is None


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows3(), st.integers(0, 4))
def test_sliced_batches_and_framing_prefix(rows, start):
    """The compiled encoder reads every column at its own offset (a slice of a batch encodes as
    the same rows of the whole batch) and writes the framing prefix in the same pass."""
    spec, fast, ref, cls = _setup(PROTO3, "t.All")
    arr = pa.array(rows, fast.arrow_type)
    start = min(start, len(arr))
    whole = fast.encode(arr).payloads.to_pylist()
    assert fast.encode(arr.slice(start)).payloads.to_pylist() == whole[start:]
    prefix = b"\x00\x00\x00\x00\x07\x00"
    assert fast.encode(arr, prefix=prefix).payloads.to_pylist() == [None if p is None else prefix + p
                                                                      for p in whole]


def _encode_from_one_byte(monkeypatch, fast, arr):
    """``fast``'s kernel encoding ``arr`` into an output buffer that starts at one byte:
    (payloads, errors, the sizes each growth asked for)."""
    from connector.formats.protobuf import _encode_program as E

    grows: list = []
    new, grown = E.Out.new, E._grown
    monkeypatch.setattr(E.Out, "new", staticmethod(lambda n, nbytes, depth, n_oneof: new(n, 1, depth, n_oneof)))
    monkeypatch.setattr(E, "_grown", lambda out, pos, need: grows.append(need) or grown(out, pos, need))
    got, errors = fast._state().proto.program.encode(arr)
    return got, errors, grows


def test_output_buffer_growth_redoes_the_row(monkeypatch):
    """Starting from a one-byte output buffer, the kernel stops at each row that does not fit,
    the caller grows the buffer (keeping what is written) and the row is redone: the same bytes."""
    spec, fast, ref, cls = _setup(PROTO3, "t.All")
    base = {f.name: None for f in fast.arrow_type}
    rows = [dict(base, str="x" * k, rsub=[{"s": "y" * k, "zs": list(range(k))}] * 3, ri=list(range(k)))
            for k in range(0, 300, 7)]
    arr = pa.array(rows, fast.arrow_type)
    got, errors, grows = _encode_from_one_byte(monkeypatch, fast, arr)
    assert errors is None and len(grows) > 3
    assert got.to_pylist() == ref.encode(arr).payloads.to_pylist()


def test_oneofs_stay_apart_across_buffer_growth(monkeypatch):
    """A oneof remembers which message instance set it; the instance ids go on counting across
    the kernel's calls (after each growth), so a redone row never looks like the one before it
    (a reused id reads as a second member set: a false row error)."""
    spec, fast, ref, cls = _setup(PROTO3, "t.All")
    base = {f.name: None for f in fast.arrow_type}
    rows = [dict(base, str="x" * (k % 5 * 40), sub={"s": "s"} if k % 3 else None, a="o",
                 rsub=[{"s": "y"}] * (k % 4)) for k in range(120)]
    arr = pa.array(rows, fast.arrow_type)
    got, errors, grows = _encode_from_one_byte(monkeypatch, fast, arr)
    assert len(grows) > 3
    assert errors is None, [e for e in errors if e][:3]
    assert got.to_pylist() == ref.encode(arr).payloads.to_pylist()


def _corpus_protobuf():
    from benchmarks.corpus._gen import cases
    return [c for c in cases() if c.fmt == "protobuf"]


@pytest.mark.parametrize("case", _corpus_protobuf(), ids=lambda c: c.name)
def test_corpus_bytes_equal_upb(case):
    """On every corpus schema: the compiled encoder (no fallback) writes upb's bytes; map entries
    may come in another order (upb's follows its hash table), nothing else differs. Struct,
    Value, ListValue and Any schemas have no program and are written per record."""
    from benchmarks.corpus._gen import generate
    from connector.formats.core._encode_options import FALLBACKS

    batch = generate(case, 120, seed=1)
    rows = build_decoder(case.spec, options=case.options).decode(
        parse_frames(batch.values, "confluent", protobuf_indexes=True), batch.lookup).values
    depth = case.options.max_recursion_depth
    fast = build_encoder(case.spec, options=EncodeOptions(max_recursion_depth=depth))
    ref = build_encoder(case.spec, options=EncodeOptions(max_recursion_depth=depth, fast_path=False))
    proto = fast._state().proto
    json_like = any(w in case.text for w in ("google.protobuf.Struct", "google.protobuf.Value",
                                             "google.protobuf.Any", "google.protobuf.ListValue"))
    assert (proto.program is None) == json_like
    before = FALLBACKS["protobuf"]
    got, want = fast.encode(rows), ref.encode(rows)
    assert FALLBACKS["protobuf"] == before
    assert got.errors.to_pylist() == want.errors.to_pylist()
    for g, w in zip(got.payloads.to_pylist(), want.payloads.to_pylist()):
        if g != w:
            mg, mw = proto.cls.FromString(g), proto.cls.FromString(w)
            assert len(g) == len(w) and mg == mw
            assert mg.SerializeToString(deterministic=True) == mw.SerializeToString(deterministic=True)
