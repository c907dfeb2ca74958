"""Protobuf: dynamic compile, every mapping rule, presence, message indexes, bad rows, interop."""
from __future__ import annotations

import datetime as dt
import pickle
import sys

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.decode.decode_helpers import Spec, binary, framed
from wireformat import encode_frame, encode_protobuf_indexes

from connector.formats import DecodeOptions, EnumRepr, build_decoder, build_multi_decoder
from connector.errors import SchemaMappingError

UTC = dt.timezone.utc
PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/duration.proto";

message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  string customer = 2;
  optional int32 priority = 3;
  Line first = 4;
  repeated Line lines = 5;
  map<string, Line> by_sku = 6;
  map<int32, string> labels = 7;
  Status status = 8;
  oneof payment { string card = 9; int64 voucher = 10; }
  google.protobuf.Timestamp at = 11;
  google.protobuf.Int32Value discount = 12;
  google.protobuf.Struct meta = 13;
  uint64 big = 14;
  uint32 small = 15;
  google.protobuf.Duration took = 16;
  repeated double weights = 17;
  bytes raw = 18;
  float ratio = 19;
}
message Refund { int64 order_id = 1; message Reason { string text = 1; } Reason reason = 2; }
"""
PROTO2 = """
syntax = "proto2";
package legacy;
message Item { optional int32 a = 1; required string b = 2; optional string c = 3 [default = "x"]; }
"""


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """Classes generated at test time with grpc_tools.protoc (an independent producer)."""
    from grpc_tools import protoc
    import importlib.resources
    d = tmp_path_factory.mktemp("pbgen")
    (d / "shop_test.proto").write_text(PROTO)
    (d / "legacy_test.proto").write_text(PROTO2)
    wkt = str(importlib.resources.files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{d}", f"-I{wkt}", f"--python_out={d}",
                        str(d / "shop_test.proto"), str(d / "legacy_test.proto")]) == 0
    sys.path.insert(0, str(d))
    try:
        return importlib.import_module("shop_test_pb2"), importlib.import_module("legacy_test_pb2")
    finally:
        sys.path.remove(str(d))


def order(pb, i):
    o = pb[0].Order(id=i, customer=f"c{i}", status=i % 2, big=2**64 - 1 - i, small=2**32 - 1,
                    weights=[0.5, i], raw=b"\x00\x01", ratio=0.25)
    if i % 2:
        o.priority = 0  # explicitly set to the default: present, not null
        o.card = "visa"
        o.discount.value = 0
    else:
        o.voucher = 7
    o.first.sku, o.first.qty = "s", i
    o.lines.add(sku="a", qty=1)
    o.lines.add(sku="b", qty=2)
    o.by_sku["k"].qty = 3
    o.labels[5] = "five"
    o.at.FromDatetime(dt.datetime(2024, 1, 2, 3, 4, 5, 678901))
    o.meta.update({"x": 1, "y": "z"})
    o.took.FromMicroseconds(1_500_000)
    return o


def test_every_rule(pb):
    d = build_decoder(Spec("protobuf", PROTO, "shop.Order"), options=DecodeOptions())
    line = pa.struct([("sku", pa.string()), ("qty", pa.int32())])
    assert d.arrow_type == pa.struct([
        ("id", pa.int64()), ("customer", pa.string()), ("priority", pa.int32()), ("first", line),
        ("lines", pa.list_(pa.field("element", line))),
        ("by_sku", pa.map_(pa.field("key", pa.string(), False), pa.field("value", line))),
        ("labels", pa.map_(pa.field("key", pa.int32(), False), pa.field("value", pa.string()))),
        ("status", pa.string()), ("card", pa.string()), ("voucher", pa.int64()),
        ("at", pa.timestamp("us", "UTC")), ("discount", pa.int32()), ("meta", pa.string()),
        ("big", pa.decimal128(20, 0)), ("small", pa.int64()), ("took", pa.int64()),
        ("weights", pa.list_(pa.field("element", pa.float64()))), ("raw", pa.binary()),
        ("ratio", pa.float32())])
    empty = pb[0].Order()
    vals, errs = d.decode_group(binary([order(pb, 1).SerializeToString(), order(pb, 2).SerializeToString(),
                                        empty.SerializeToString()]), None, (), "1")
    assert errs == [None] * 3
    one, two, nothing = vals.to_pylist()
    assert one["priority"] == 0 and two["priority"] is None           # proto3 optional presence
    assert one["card"] == "visa" and one["voucher"] is None            # oneof
    assert two["card"] is None and two["voucher"] == 7
    assert one["discount"] == 0 and two["discount"] is None            # wrapper presence
    assert one["status"] == "PAID" and two["status"] == "NEW"
    assert one["first"] == {"sku": "s", "qty": 1} and one["lines"][1] == {"sku": "b", "qty": 2}
    assert one["by_sku"] == [("k", {"sku": "", "qty": 3})] and one["labels"] == [(5, "five")]
    assert one["at"] == dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert one["took"] == 1_500_000 and one["big"] == 2**64 - 2 and one["small"] == 2**32 - 1
    assert one["meta"] == '{"x":1.0,"y":"z"}' and one["weights"] == [0.5, 1.0]  # keys sorted
    # proto3 scalars without `optional` are never null; messages and wrappers are
    assert nothing["id"] == 0 and nothing["customer"] == "" and nothing["first"] is None
    assert nothing["at"] is None and nothing["lines"] == [] and nothing["status"] == "NEW"


def test_enum_as_int_and_proto2_presence(pb):
    d = build_decoder(Spec("protobuf", PROTO, "Order"), options=DecodeOptions(enum_as=EnumRepr.INT))
    vals, _ = d.decode_group(binary([order(pb, 1).SerializeToString()]), None, (), "1")
    assert d.arrow_type.field("status").type == pa.int32() and vals.to_pylist()[0]["status"] == 1
    d2 = build_decoder(Spec("protobuf", PROTO2), options=DecodeOptions())
    vals, errs = d2.decode_group(binary([pb[1].Item(b="q").SerializeToString(),
                                         pb[1].Item(a=0, b="r", c="x").SerializeToString()]), None, (), "1")
    assert vals.to_pylist() == [{"a": None, "b": "q", "c": None}, {"a": 0, "b": "r", "c": "x"}]


def test_message_indexes_select_types_and_bad_rows_fail_alone(pb, registry):
    registry.add(3, PROTO, "PROTOBUF")
    refund = pb[0].Refund(order_id=9)
    refund.reason.text = "late"
    reason = pb[0].Refund.Reason(text="nested")
    frame = lambda idx, msg: encode_frame("confluent", 3, encode_protobuf_indexes(idx) + msg)
    rows = [frame([0], order(pb, 1).SerializeToString()), frame([1], refund.SerializeToString()),
            frame([0], b"\xff\xff\xff"), frame([1, 0], reason.SerializeToString()),
            frame([0], order(pb, 4).SerializeToString())]
    parsed = framed(rows, protobuf_indexes=True)
    res = build_decoder(Spec("protobuf", PROTO, "shop.Order"), options=DecodeOptions()).decode(
        parsed, registry.lookup)
    errs = res.errors.to_pylist()
    assert errs[0] is None and errs[4] is None
    assert "shop.Refund does not match" in errs[1] and "shop.Refund.Reason" in errs[3]
    assert errs[2].startswith("protobuf decode failed for schema id 3")
    assert [v and v["id"] for v in res.values.to_pylist()] == [1, None, None, None, 4]
    multi = build_multi_decoder({"order": Spec("protobuf", PROTO, "shop.Order"),
                                 "refund": Spec("protobuf", PROTO, "shop.Refund"),
                                 "reason": Spec("protobuf", PROTO, "shop.Refund.Reason")})
    res = pickle.loads(pickle.dumps(multi)).decode(parsed, registry.lookup)
    out = res.values.to_pylist()
    assert out[0]["order"]["id"] == 1 and out[0]["refund"] is None
    assert out[1]["refund"] == {"order_id": 9, "reason": {"text": "late"}} and out[1]["order"] is None
    assert out[3]["reason"] == {"text": "nested"} and res.errors.to_pylist()[2] is not None


def test_recursive_message_refused():
    with pytest.raises(SchemaMappingError, match="Tree"):
        build_decoder(Spec("protobuf", 'syntax="proto3"; message Tree { repeated Tree kids = 1; }'),
                      options=DecodeOptions())
    with pytest.raises(SchemaMappingError, match="compile"):
        build_decoder(Spec("protobuf", "message {"), options=DecodeOptions())


def _b64_file(name: str, *deps: str) -> str:
    import base64

    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto(name=name, dependency=list(deps), syntax="proto3")
    return base64.b64encode(fdp.SerializeToString()).decode()


def test_descriptor_import_cycle_and_deep_chain_refused():
    from connector.formats.protobuf._schema import compile_proto

    # base64 descriptors (what Confluent registers) whose references import each other
    refs = (("b.proto", _b64_file("b.proto", "a.proto")), ("a.proto", _b64_file("a.proto", "b.proto")))
    with pytest.raises(SchemaMappingError, match="cycle"):
        compile_proto(_b64_file("a.proto", "b.proto"), refs)
    n = sys.getrecursionlimit() + 10  # each file imports the next: deeper than Python's stack
    chain = tuple((f"f{i}.proto", _b64_file(f"f{i}.proto", f"f{i + 1}.proto")) for i in range(1, n)) \
        + ((f"f{n}.proto", _b64_file(f"f{n}.proto")),)
    with pytest.raises(SchemaMappingError, match="does not load"):
        compile_proto(_b64_file("f0.proto", "f1.proto"), chain)


def test_confluent_protobuf_serializer_interop(pb, registry):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": "mock://decode-pb"})
    ser = ProtobufSerializer(pb[0].Refund.Reason, client, {"use.deprecated.format": False})
    ctx = SerializationContext("refunds", MessageField.VALUE)
    values = [ser(pb[0].Refund.Reason(text=f"r{i}"), ctx) for i in range(3)]
    registered = client.get_latest_version("refunds-value")
    # the writer schema as Confluent's serializer registered it (a base64 descriptor)
    registry.add(registered.schema_id, registered.schema.schema_str, "PROTOBUF")
    d = build_decoder(Spec("protobuf", PROTO, "shop.Refund.Reason"), options=DecodeOptions())
    res = d.decode(framed(values, protobuf_indexes=True), registry.lookup)
    assert res.errors.to_pylist() == [None] * 3
    assert res.values.to_pylist() == [{"text": "r0"}, {"text": "r1"}, {"text": "r2"}]


TIMES = """
syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
message Ev {
  int64 id = 1;
  google.protobuf.Timestamp at = 2;
  google.protobuf.Duration took = 3;
  oneof o { google.protobuf.Timestamp when = 4; string label = 5; }
  enum K { Z = 0; ONE = 1; }
  K k = 6;
}
"""


@settings(max_examples=40, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "id": st.integers(-2**63, 2**63 - 1),
    "at": st.none() | st.tuples(st.integers(-62135596800, 253402300799), st.integers(0, 999_999_999)),
    "took": st.none() | st.tuples(st.integers(-10**10, 10**10), st.integers(-999_999_999, 999_999_999)),
    "when": st.none() | st.integers(0, 10**10), "k": st.integers(0, 3)}), min_size=1, max_size=15),
    st.booleans())
def test_fast_path_equals_per_row_reference(evs, corrupt):
    fast = build_decoder(Spec("protobuf", TIMES, "t.Ev"), options=DecodeOptions())
    ref = build_decoder(Spec("protobuf", TIMES, "t.Ev"), options=DecodeOptions(fast_path=False))
    cls = fast._state().reader.codec.cls
    payloads = []
    for e in evs:
        m = cls(id=e["id"], k=e["k"])
        if e["at"] is not None:
            m.at.seconds, m.at.nanos = e["at"]
        if e["took"] is not None:
            m.took.seconds, m.took.nanos = e["took"]
        if e["when"] is not None:
            m.when.seconds = e["when"]
        payloads.append(m.SerializeToString())
    if corrupt:
        payloads[len(payloads) // 2] += b"\x12\x05\x08"  # an `at` field that is cut short
    a, ea = fast.decode_group(binary(payloads), None, (), "1")
    b, eb = ref.decode_group(binary(payloads), None, (), "1")
    assert [e is None for e in ea] == [e is None for e in eb]
    assert a.equals(b)


@pytest.mark.parametrize("fmt", ["protobuf", "avro"])
def test_reader_schema_without_text_is_a_schema_mapping_error(fmt):
    from connector.formats import DecodeOptions, build_decoder
    from connector.errors import SchemaMappingError

    class Spec:
        format, text = fmt, None

    with pytest.raises(SchemaMappingError, match="no text"):
        build_decoder(Spec(), options=DecodeOptions())


@given(st.lists(st.tuples(st.integers(-62_135_596_800, 253_402_300_799), st.integers(0, 999_999_999),
                          st.integers(0, 3)), min_size=1, max_size=20))
@settings(max_examples=150, deadline=None)
def test_timestamp_bytes_vectorized_match_protobuf(rows):
    """The vectorized Timestamp reader (varints bounded by each row's end) against protobuf's
    own parser, on valid messages and on ones cut short (a varint must not run into the next row)."""
    import pyarrow as pa
    from google.protobuf import timestamp_pb2

    from connector.formats.protobuf._decode import _time_from_bytes

    vals, want = [], []
    for secs, nanos, cut in rows:
        raw = timestamp_pb2.Timestamp(seconds=secs, nanos=nanos).SerializeToString()
        if cut and len(raw) > cut:
            raw = raw[:-cut]
        vals.append(raw)
        try:
            m = timestamp_pb2.Timestamp.FromString(raw)
            want.append(m.seconds * 1_000_000 + m.nanos // 1000)
        except Exception:  # protobuf refuses the cut message
            want.append(None)
    if None in want:
        with pytest.raises(ValueError):
            _time_from_bytes(vals, None, pa.timestamp("us", tz="UTC"))
        return
    got = _time_from_bytes(vals, None, pa.timestamp("us", tz="UTC"))
    assert got.cast(pa.int64()).to_pylist() == want
