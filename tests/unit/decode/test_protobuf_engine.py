"""The ptars-based Protobuf engine against protobuf's ``ParseFromString`` + the reference
conversion (``DecodeOptions(fast_path=False)``), on random and on hostile bytes."""
from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from wireformat import Limits

from benchmarks.protobuf_engine_bench import SHAPES, random_message
from connector.formats import DecodeOptions, build_decoder
from tests.unit.decode.decode_helpers import Spec, binary
from tests.unit.decode.test_protobuf import PROTO, PROTO2

# name -> (schema text, message, max_recursion_depth, random nesting depth)
SCHEMAS = {name: (text, msg, depth, 8 if name in ("nested", "recursive") else 3)
           for name, (text, msg, depth) in SHAPES.items()}
SCHEMAS["order"] = (PROTO, "shop.Order", 0, 3)       # Struct (JSON text), wrappers, Duration, uint64
SCHEMAS["legacy"] = (PROTO2, "legacy.Item", 0, 1)     # proto2 presence and defaults
WKT = """syntax = "proto3";
package w;
import "google/protobuf/struct.proto";
import "google/protobuf/any.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Doc {
  google.protobuf.Struct top = 1; repeated google.protobuf.Value values = 2;
  map<string, google.protobuf.ListValue> lists = 3; Inner inner = 4;
  oneof pick { google.protobuf.Struct s = 5; google.protobuf.Int64Value n = 6;
               google.protobuf.Timestamp at = 7; string text = 8; }
  map<string, google.protobuf.StringValue> labels = 9; repeated google.protobuf.Any anys = 10;
  google.protobuf.Any any = 11;
}
message Inner { google.protobuf.Value v = 1; repeated google.protobuf.Struct ss = 2; Doc back = 3; }
"""
# JSON-text types anywhere (issue 27), wrappers and Timestamps in a oneof and a map; recursion
SCHEMAS["wkt"] = (WKT, "w.Doc", 2, 3)

_DECODERS: dict = {}


def decoders(name):
    """(engine decoder, reference decoder, message class) for one test schema."""
    if name not in _DECODERS:
        text, msg, depth, _ = SCHEMAS[name]
        fast = build_decoder(Spec("protobuf", text, msg),
                             options=DecodeOptions(max_recursion_depth=depth))
        ref = build_decoder(Spec("protobuf", text, msg),
                            options=DecodeOptions(max_recursion_depth=depth, fast_path=False))
        _DECODERS[name] = (fast, ref, fast._state().reader.codec.cls)
    return _DECODERS[name]


def norm(v):
    """Maps compare as sets of entries (their order carries no meaning)."""
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return sorted(((repr(k), norm(x)) for k, x in v), key=repr)
        return [norm(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def run(name, payloads):
    fast, ref, _ = decoders(name)
    a, ea = fast.decode_group(binary(payloads), None, (), "5")
    b, eb = ref.decode_group(binary(payloads), None, (), "5")
    assert a.type == b.type == fast.arrow_type
    return a.to_pylist(), ea, b.to_pylist(), eb


def test_every_schema_takes_the_engine():
    for name in SCHEMAS:
        fast = decoders(name)[0]
        codec = fast._state().reader.codec
        assert codec._engine_ok, name
        fast.decode_group(binary([b""]), None, (), "1")
        assert codec._engine is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SCHEMAS)), st.lists(st.tuples(st.integers(0, 2**32), st.booleans()),
                                                  min_size=1, max_size=12))
# valid 10-byte varints (negative ints) where a later copy of the field replaced the first: the
# reference path's old overflow heuristic refused the row, the engine decoded it
@example(name="order", seeds=[(411618, True)])
def test_engine_equals_reference_on_random_messages(name, seeds):
    """Random messages of each schema, some sent as two messages back to back (a valid
    merge: last scalar wins, sub-messages merge, a oneof or map key may appear twice)."""
    _, _, cls = decoders(name)
    depth = SCHEMAS[name][3]
    payloads = []
    for seed, twice in seeds:
        rnd = random.Random(seed)
        p = random_message(cls, rnd, depth=rnd.randint(0, depth)).SerializePartialToString()
        if twice:
            p += random_message(cls, rnd, depth=rnd.randint(0, depth)).SerializePartialToString()
        payloads.append(p)
    a, ea, b, eb = run(name, payloads)
    for i in range(len(payloads)):
        assert (ea[i] is None) == (eb[i] is None), (i, ea[i], eb[i])
        if ea[i] is None:
            assert norm(a[i]) == norm(b[i]), i
        else:
            assert ea[i].startswith("protobuf decode failed for schema id 5")


def _mutate(rnd: random.Random, p: bytes) -> bytes:
    b = bytearray(p)
    for _ in range(rnd.randint(1, 3)):
        op = rnd.random()
        if not b or op < 0.15:
            b += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
        elif op < 0.45:
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        elif op < 0.65:
            del b[rnd.randrange(len(b)):]
        elif op < 0.85:
            b.insert(rnd.randrange(len(b) + 1), rnd.randrange(256))
        else:  # a 10-byte varint whose last byte overflows 64 bits
            at = rnd.randrange(len(b) + 1)
            b[at:at] = b"\xff" * 9 + bytes([rnd.randint(2, 0x7F)])
    return bytes(b)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SCHEMAS)), st.lists(st.integers(0, 2**32), min_size=1, max_size=10))
# proto2: the required field's tag comes with the wrong wire type (an unknown field): absent
@example(name="legacy", seeds=[21853])
def test_hostile_bytes_never_give_a_value_the_reference_does_not(name, seeds):
    """Mutated payloads: a row is either an error or exactly the reference's value; what the
    reference refuses the engine refuses; the batch never loses or shifts rows. A proto2
    required field that is absent is an error on both paths."""
    _, _, cls = decoders(name)
    payloads = []
    for seed in seeds:
        rnd = random.Random(seed)
        payloads.append(_mutate(rnd, random_message(cls, rnd, depth=2).SerializePartialToString()))
    a, ea, b, eb = run(name, payloads)
    assert len(a) == len(ea) == len(payloads)
    for i in range(len(payloads)):
        if _lacks_required(cls, payloads[i]):
            assert ea[i] is not None and eb[i] is not None, (i, payloads[i].hex())
        if eb[i] is not None:
            assert ea[i] is not None, (i, payloads[i].hex())
        if ea[i] is None:
            assert norm(a[i]) == norm(b[i]), (i, payloads[i].hex())


def _lacks_required(cls, p: bytes) -> bool:
    """protobuf parses ``p`` (its parser does not check ``required``) but a required field is
    absent."""
    try:
        return not cls.FromString(p).IsInitialized()
    except Exception:  # protobuf's DecodeError and kin: not this question
        return False


T = """syntax = "proto3";
package h;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
message M {
  int64 i = 1; bytes b = 2; string s = 3; repeated int64 r = 4; int32 small = 5;
  google.protobuf.Timestamp at = 6; google.protobuf.Duration took = 7;
  map<string, int32> m = 8; repeated string names = 9;
}
"""


def _one(payloads, max_collection_items=None, **opts):
    if max_collection_items is not None:
        opts["limits"] = Limits(max_collection_items=max_collection_items)
    d = build_decoder(Spec("protobuf", T, "h.M"), options=DecodeOptions(**opts))
    vals, errs = d.decode_group(binary(payloads), None, (), "9")
    return vals.to_pylist(), errs


@pytest.mark.parametrize("fast_path", [True, False])
def test_overflowing_and_overlong_varints_are_row_errors(fast_path):
    """protobuf's parsers drop bits above the 64th (so `ff×9 7f` reads as -1); such a
    varint — as a value, packed item, tag or length — is an error, never a value. Bytes
    that merely look like one inside bytes/string data are fine."""
    rows = [b"\x08" + b"\xff" * 9 + b"\x7f",                 # int64 value
            b"\x08" + b"\xff" * 9 + b"\x01",                 # -1, canonical: fine
            b"\x12\x0a" + b"\xff" * 9 + b"\x05",             # inside bytes: fine
            b"\x22\x0a" + b"\xff" * 9 + b"\x05",             # packed repeated item
            b"\x88\x80\x80\x80\x80\x80\x80\x80\x80\x02\x05",  # tag
            b"\x08" + b"\xff" * 10 + b"\x01",                # 11 bytes
            b"\x28" + b"\xff" * 9 + b"\x03"]                 # int32 field
    vals, errs = _one(rows, fast_path=fast_path)
    assert [e is None for e in errs] == [False, True, True, False, False, False, False]
    assert vals[1]["i"] == -1 and vals[2]["b"] == b"\xff" * 9 + b"\x05"
    assert all(e.startswith("protobuf decode failed for schema id 9") for e in errs if e)


@pytest.mark.parametrize("fast_path", [True, False])
def test_malformed_wire_data_is_a_row_error_and_neighbours_survive(fast_path):
    good = b"\x08\x07"
    bad = [b"\x12\x05ab", b"\x0f\x01", b"\x0b", b"\x0c", b"\x08\xff", b"\x1a\x02\xff\xfe",
           b"\x00\x01", b"\x12\xff\xff\xff\xff\x0f", b"\x4a\x02\xc3\x28"]
    rows = [x for b_ in bad for x in (good, b_)] + [good]
    vals, errs = _one(rows, fast_path=fast_path)
    assert [e is None for e in errs] == [i % 2 == 0 for i in range(len(rows))]
    assert [v["i"] for v, e in zip(vals, errs) if e is None] == [7] * (len(bad) + 1)


@pytest.mark.parametrize("fast_path", [True, False])
def test_groups_and_odd_map_entries_follow_protobuf(fast_path):
    """ptars accepts an end-group tag that does not match its start (protobuf refuses it);
    a well-formed unknown group is skipped; a map entry holding an unknown field is dropped
    whole by protobuf, and so here."""
    rows = [b"\x08\x07\x13\x74",                       # SGROUP 2 … EGROUP 14
            b"\x08\x07\x13\x08\x01\x14",                # unknown group, well formed
            b"\x08\x07\x14",                           # stray end-group
            b"\x08\x07\x13",                           # unterminated group
            b"\x42\x07\x0a\x01k\x10\x01\x78\x05" + b"\x42\x05\x0a\x01j\x10\x02"]
    vals, errs = _one(rows, fast_path=fast_path)
    assert [e is None for e in errs] == [False, True, False, False, True]
    assert vals[1]["i"] == 7 and vals[4]["m"] == [("j", 2)]


@pytest.mark.parametrize("fast_path", [True, False])
def test_timestamps_and_durations_out_of_range_are_row_errors(fast_path):
    d = build_decoder(Spec("protobuf", T, "h.M"), options=DecodeOptions())
    cls = d._state().reader.codec.cls
    m = [cls(), cls(), cls(), cls()]
    m[0].at.seconds = 2**62                       # wrapped/saturated before: now an error
    m[1].took.seconds = -(2**62)
    m[2].at.seconds, m[2].at.nanos = 253402300799, 999_999_999   # 9999-12-31T23:59:59.999999
    m[3].took.seconds, m[3].took.nanos = -5, -1500                # -5.0000015 s
    vals, errs = _one([x.SerializePartialToString() for x in m], fast_path=fast_path)
    assert errs[0] is not None and "out of range" in errs[0] and errs[1] is not None
    assert errs[2] is None and vals[2]["at"].year == 9999
    assert errs[3] is None and vals[3]["took"] == -5_000_001  # truncated toward zero, as Spark


@pytest.mark.parametrize("fast_path", [True, False])
def test_collections_over_the_cap_are_row_errors(fast_path):
    rows = [b"\x22\x03\x01\x02\x03", b"\x22\x02\x01\x02", b"\x4a\x01a" * 3,
            b"\x42\x05\x0a\x01k\x10\x01" + b"\x42\x05\x0a\x01j\x10\x01" + b"\x42\x05\x0a\x01l\x10\x01"]
    vals, errs = _one(rows, fast_path=fast_path, max_collection_items=2)
    assert [e is None for e in errs] == [False, True, False, False]
    assert "max_collection_items" in errs[0] and vals[1]["r"] == [1, 2]


TREE = 'syntax = "proto3"; package t; message Node { string name = 1; repeated Node kids = 2; Node left = 3; }'


def _tree(cls, depth, kids_field="kids"):
    root = node = cls(name="0")
    for i in range(1, depth):
        node = getattr(node, kids_field).add(name=str(i)) if kids_field == "kids" else node.left
        node.name = str(i)
    return root


@pytest.mark.parametrize("fast_path", [True, False])
def test_data_below_the_recursion_cut_is_dropped_and_hostile_depth_is_a_row_error(fast_path):
    """recursionDepth 2 keeps 3 levels of Node and drops what lies below (as documented, and as
    Spark's from_protobuf and our Avro and JSON decoders do); 10,000 levels is a row error,
    without recursion driven by the data."""
    d = build_decoder(Spec("protobuf", TREE, "t.Node"),
                      options=DecodeOptions(max_recursion_depth=2, fast_path=fast_path))
    cls = d._state().reader.codec.cls
    deep = b""
    for _ in range(10_000):
        deep = b"\x1a" + _len(len(deep)) + deep
    rows = [_tree(cls, 3).SerializePartialToString(), _tree(cls, 4).SerializePartialToString(),
            _tree(cls, 3, "left").SerializePartialToString(), _tree(cls, 4, "left").SerializePartialToString(), deep]
    vals, errs = d.decode_group(binary(rows), None, (), "4")
    assert [e is None for e in errs] == [True, True, True, True, False]
    v = vals.to_pylist()
    assert v[0]["kids"][0]["kids"][0]["name"] == "2" and v[2]["left"]["left"]["name"] == "2"
    assert v[1]["kids"][0]["kids"][0]["name"] == "2" and v[3]["left"]["left"]["name"] == "2"
    assert v[1] == v[0] and v[3] == v[2]  # the 4th level is cut, the first three are exact


def _len(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_several_messages_need_a_name():
    from connector.errors import SchemaMappingError

    with pytest.raises(SchemaMappingError, match=r"several messages \(shop.Order, shop.Refund\).*"
                                                 r"schema.message"):
        build_decoder(Spec("protobuf", PROTO), options=DecodeOptions())
    d = build_decoder(Spec("protobuf", PROTO), message="shop.Refund")
    assert d.full_name == "shop.Refund"
    assert build_decoder(Spec("protobuf", PROTO2), options=DecodeOptions()).full_name == "legacy.Item"


def test_records_of_the_chosen_message_decode_others_are_row_errors(registry):
    from tests.unit.decode.decode_helpers import framed
    from wireformat import encode_frame, encode_protobuf_indexes

    registry.add(3, PROTO, "PROTOBUF")
    d = build_decoder(registry.by_id[3], message="shop.Refund")
    cls = d._state().reader.codec.cls
    rows = [encode_frame("confluent", 3, encode_protobuf_indexes([1]) + cls(order_id=4).SerializePartialToString()),
            encode_frame("confluent", 3, encode_protobuf_indexes([0]) + b"\x08\x01")]
    res = d.decode(framed(rows, protobuf_indexes=True), registry.lookup)
    assert res.values.to_pylist()[0] == {"order_id": 4, "reason": None}
    errs = res.errors.to_pylist()
    assert errs[0] is None and "shop.Order does not match the reader's shop.Refund" in errs[1]


@pytest.mark.parametrize("name", ["recursive", "nested"])
def test_per_level_route_equals_reference(name, monkeypatch):
    """Schemas too bushy to unroll decode recursive fields one level per ptars call."""
    import connector.formats.protobuf._arrow as engine

    monkeypatch.setattr(engine, "unrolled_pool", lambda desc, t: None)
    text, msg, depth, nest = SCHEMAS[name]
    # options no other test uses: a fresh per-process decoder state, built under the patch
    fast = build_decoder(Spec("protobuf", text, msg),
                         options=DecodeOptions(max_recursion_depth=depth, limits=Limits(max_collection_items=999_999)))
    _, ref, cls = decoders(name)
    rnd = random.Random(11)
    payloads = [random_message(cls, rnd, depth=rnd.randint(0, nest)).SerializePartialToString()
                for _ in range(60)]
    payloads += [payloads[i] + payloads[i + 1] for i in range(0, 20, 2)]  # merges
    a, ea = fast.decode_group(binary(payloads), None, (), "5")
    b, eb = ref.decode_group(binary(payloads), None, (), "5")
    assert fast._state().reader.codec._engine._cut  # the per-level route ran
    assert [e is None for e in ea] == [e is None for e in eb]
    assert [norm(x) for x in a.to_pylist()] == [norm(x) for x in b.to_pylist()]
