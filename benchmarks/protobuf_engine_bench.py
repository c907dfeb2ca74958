"""Protobuf decode engine: ours vs confluent's ``ProtobufDeserializer`` loop, four shapes.

Run: ``/work/venv/bin/python -m benchmarks.protobuf_engine_bench [--records N]``. Prints, for
a flat, a wide (~40 fields: repeated, map, oneof, enum, Timestamp…), a nested (OTLP-like:
resource → scopes → spans → attributes of an AnyValue oneof) and a recursive message, the
records/s of confluent's per-message loop and of our path (``parse_frames`` +
``Decoder.decode``), each the median of 3 runs, and their ratio against the goal (5×).
Never fails; speed is not asserted anywhere.

The schemas and the record generator are shared with the unit tests
(``tests/unit/decode/test_protobuf_engine.py``).
"""
from __future__ import annotations

import argparse
import random
import traceback

import pyarrow as pa

FLAT = """syntax = "proto3";
package bench.flat;
import "google/protobuf/timestamp.proto";
message Payment {
  enum Cat { A = 0; B = 1; C = 2; D = 3; }
  int64 id = 1; string name = 2; double amount = 3; google.protobuf.Timestamp ts = 4;
  bool active = 5; Cat category = 6;
}
"""

WIDE = """syntax = "proto3";
package bench.wide;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
message Wide {
  enum Level { LOW = 0; MID = 1; HIGH = 2; }
  message Addr { string street = 1; string city = 2; int32 zip = 3; repeated string tags = 4; }
  int64 f_int64 = 1; int32 f_int32 = 2; uint32 f_uint32 = 3; uint64 f_uint64 = 4;
  sint32 f_sint32 = 5; sint64 f_sint64 = 6; fixed32 f_fixed32 = 7; fixed64 f_fixed64 = 8;
  sfixed32 f_sfixed32 = 9; sfixed64 f_sfixed64 = 10; float f_float = 11; double f_double = 12;
  bool f_bool = 13; string f_string = 14; bytes f_bytes = 15; Level level = 16;
  optional int32 o_int32 = 17; optional string o_string = 18; optional double o_double = 19;
  google.protobuf.Timestamp created = 20; google.protobuf.Duration took = 21;
  google.protobuf.Int64Value w_int64 = 22; google.protobuf.StringValue w_string = 23;
  google.protobuf.BoolValue w_bool = 24;
  Addr home = 25; repeated Addr others = 26;
  repeated int64 r_int64 = 27; repeated string r_string = 28; repeated double r_double = 29;
  repeated Level r_level = 30; repeated bool r_bool = 31;
  map<string, string> labels = 32; map<int32, Addr> by_zip = 33; map<string, int64> counts = 34;
  oneof choice { string c_text = 35; int64 c_num = 36; Addr c_addr = 37; }
  map<string, double> scores = 38; string note = 39; int64 seq = 40;
  repeated google.protobuf.Timestamp stamps = 41;
}
"""

NESTED = """syntax = "proto3";
package bench.otlp;
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; }
message Span {
  enum SpanKind { SPAN_KIND_UNSPECIFIED = 0; SPAN_KIND_INTERNAL = 1; SPAN_KIND_SERVER = 2;
                  SPAN_KIND_CLIENT = 3; }
  message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4;
  string name = 5; SpanKind kind = 6; fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9; repeated Event events = 11;
}
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
"""

RECURSIVE = """syntax = "proto3";
package bench.tree;
message Node {
  string name = 1; int64 value = 2; repeated Node children = 3; Node left = 4;
  map<string, string> tags = 5;
}
"""

# (schema text, reader message, recursion depth for DecodeOptions)
SHAPES = {
    "flat": (FLAT, "bench.flat.Payment", 0),
    "wide": (WIDE, "bench.wide.Wide", 0),
    "nested": (NESTED, "bench.otlp.ResourceSpans", 3),
    "recursive": (RECURSIVE, "bench.tree.Node", 3),
}


def _fill(m, rnd: random.Random, depth: int, budget: list) -> None:
    """Set random values on every field of ``m`` (bounded by ``depth`` and ``budget``)."""
    from google.protobuf.descriptor import FieldDescriptor as FD

    desc = m.DESCRIPTOR
    name = desc.full_name
    if name == "google.protobuf.Timestamp" or name == "google.protobuf.Duration":
        m.seconds = rnd.randrange(0, 2_000_000_000)
        m.nanos = rnd.randrange(0, 1_000_000_000)
        return
    if name == "google.protobuf.Struct":
        m.update({"k": rnd.randrange(100), "s": "x" * rnd.randrange(4)})
        return
    for oneof in desc.oneofs:
        if not oneof.name.startswith("_") or len(oneof.fields) > 1:
            if rnd.random() < 0.2:
                continue
            f = rnd.choice(oneof.fields)
            _set(m, f, rnd, depth, budget)
    for f in desc.fields:
        if f.containing_oneof is not None and (not f.containing_oneof.name.startswith("_")
                                               or len(f.containing_oneof.fields) > 1):
            continue
        if budget[0] <= 0 or (f.type == FD.TYPE_MESSAGE and depth <= 0):
            continue
        if f.has_presence and rnd.random() < 0.3:
            continue
        _set(m, f, rnd, depth, budget)


def _scalar(f, rnd: random.Random):
    from google.protobuf.descriptor import FieldDescriptor as FD

    t = f.type
    if t == FD.TYPE_ENUM:
        return rnd.choice(f.enum_type.values).number
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return rnd.choice([0, 1, -1, rnd.randrange(-2**63, 2**63)])
    if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return rnd.choice([0, 7, -7, rnd.randrange(-2**31, 2**31)])
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return rnd.randrange(0, 2**32)
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return rnd.randrange(0, 2**64)
    if t in (FD.TYPE_FLOAT,):
        return rnd.choice([0.0, 0.5, -2.25, 1e10])
    if t == FD.TYPE_DOUBLE:
        return rnd.random() * 1e6
    if t == FD.TYPE_BOOL:
        return rnd.random() < 0.5
    if t == FD.TYPE_STRING:
        return rnd.choice(["", "a", "héllo", "GET /api/v1/orders", "x" * rnd.randrange(30)])
    return bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 8, 16])))


def _set(m, f, rnd, depth, budget) -> None:
    from google.protobuf.descriptor import FieldDescriptor as FD

    budget[0] -= 1
    is_msg = f.type == FD.TYPE_MESSAGE
    if is_msg and f.message_type.GetOptions().map_entry:
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        target = getattr(m, f.name)
        for _ in range(rnd.randrange(4)):
            k = _scalar(kf, rnd)
            if vf.type == FD.TYPE_MESSAGE:
                _fill(target[k], rnd, depth - 1, budget)
            else:
                target[k] = _scalar(vf, rnd)
        return
    if f.is_repeated:
        target = getattr(m, f.name)
        for _ in range(rnd.randrange(4)):
            if is_msg:
                _fill(target.add(), rnd, depth - 1, budget)
            else:
                target.append(_scalar(f, rnd))
        return
    if is_msg:
        sub = getattr(m, f.name)
        sub.SetInParent()
        _fill(sub, rnd, depth - 1, budget)
        return
    setattr(m, f.name, _scalar(f, rnd))


def random_message(cls, rnd: random.Random, depth: int = 4, budget: int = 400):
    """A message of ``cls`` with random values in (nearly) every field, nesting ≤ ``depth``."""
    m = cls()
    _fill(m, rnd, depth, [budget])
    return m


def compiled(shape: str):
    """(Decoder, message class) for one shape."""
    from tests.unit.decode.decode_helpers import Spec

    from connector.formats import DecodeOptions, build_decoder

    text, message, depth = SHAPES[shape]
    dec = build_decoder(Spec("protobuf", text, message),
                        options=DecodeOptions(max_recursion_depth=depth))
    return dec, dec._state().reader_proto.cls


def bench_shape(shape: str, n: int, slow_n: int, out: dict) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from registry import Schema, SchemaType
    from wireformat import encode_protobuf_indexes

    from benchmarks.decode_bench import confluent_loop, median_rate, our_path

    dec, cls = compiled(shape)
    text, _, depth = SHAPES[shape]
    rnd = random.Random(7)
    msgs = [random_message(cls, rnd, depth=max(depth, 3)) for _ in range(min(n, 2000))]
    payloads = [m.SerializeToString() for m in msgs]
    payloads = (payloads * (n // len(payloads) + 1))[:n]
    client = SchemaRegistryClient.new_client({"url": f"mock://pb-engine-{shape}"})
    ctx = SerializationContext(f"t-{shape}", MessageField.VALUE)
    first = ProtobufSerializer(cls, client, {"use.deprecated.format": False})(cls(), ctx)
    sid = int.from_bytes(first[1:5], "big")
    # the message index of the reader message inside its file
    idx = [m.name for m in cls.DESCRIPTOR.file.message_types_by_name.values()].index(cls.DESCRIPTOR.name)
    head = b"\x00" + sid.to_bytes(4, "big") + encode_protobuf_indexes([idx])
    framed = [head + p for p in payloads]
    values = pa.array(framed, pa.binary())
    print(f"{shape}: {sum(map(len, payloads)) / n:.0f} bytes/message on average")
    deser = ProtobufDeserializer(cls, {"use.deprecated.format": False}, client)
    schema = Schema(schema_type=SchemaType.PROTOBUF, text=text, id=sid)
    ours = our_path(dec, values, n, schema, protobuf_indexes=True)
    ours()  # warm per-process caches like a reused worker
    out[(shape, "confluent ProtobufDeserializer loop")] = median_rate(
        confluent_loop(deser, ctx, framed, slow_n), slow_n)
    out[(shape, "ours (parse_frames + Decoder.decode)")] = median_rate(ours, n)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--slow-records", type=int, default=10_000)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args(argv)
    n, slow_n = args.records, min(args.slow_records, args.records)
    out: dict = {}
    for shape in args.shapes.split(","):
        try:
            bench_shape(shape, n, slow_n, out)
        except Exception:
            traceback.print_exc()
    print(f"\n{n:,} records (confluent loop on {slow_n:,}), median of 3 runs\n")
    print(f"{'shape':<10}{'confluent rec/s':>17}{'ours rec/s':>14}{'ratio':>8}  goal 5x")
    for shape in args.shapes.split(","):
        base = out.get((shape, "confluent ProtobufDeserializer loop"))
        ours = out.get((shape, "ours (parse_frames + Decoder.decode)"))
        if base and ours:
            r = ours / base
            print(f"{shape:<10}{base:>17,.0f}{ours:>14,.0f}{r:>7.1f}x  "
                  f"{'PASS' if r >= 5 else 'FALL SHORT'}")
        else:
            print(f"{shape:<10} not measured")


if __name__ == "__main__":
    main()
