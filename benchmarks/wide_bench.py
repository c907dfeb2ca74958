"""Decode throughput on a WIDE record (50 fields: nested struct, arrays, a map, a multi-type union).

polars' Avro reader handles neither maps nor unions of several non-null types (FACTS.md), so
this record takes the decoder's checked fallback path: the number is reported as measured.
The same data is also framed as JSON (JSON Schema) and Protobuf.

Run: ``/work/venv/bin/python benchmarks/wide_bench.py [--records N]``.
"""
from __future__ import annotations

import argparse
import base64
import importlib
import importlib.resources
import io
import json
import sys
import tempfile

import fastavro
import orjson
import pyarrow as pa

from benchmarks.decode_bench import Spec, confluent_loop, median_rate, our_path
from connector.formats import DecodeOptions, build_decoder
from registry import Schema, SchemaType
from wireformat import encode_frame, encode_protobuf_indexes

_LONGS, _INTS, _DOUBLES, _FLOATS, _STRINGS, _BOOLS = range(0, 10), range(10, 15), range(15, 22), \
    range(22, 25), range(25, 35), range(35, 39)


def _f(i: int) -> str:
    return f"f{i:02d}"


def avro_schema() -> dict:
    fields = [{"name": _f(i), "type": "long"} for i in _LONGS]
    fields += [{"name": _f(i), "type": "int"} for i in _INTS]
    fields += [{"name": _f(i), "type": "double"} for i in _DOUBLES]
    fields += [{"name": _f(i), "type": "float"} for i in _FLOATS]
    fields += [{"name": _f(i), "type": "string"} for i in _STRINGS]
    fields += [{"name": _f(i), "type": "boolean"} for i in _BOOLS]
    fields += [
        {"name": "f39", "type": "bytes"},
        {"name": "f40", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "f41", "type": {"type": "enum", "name": "Level", "symbols": ["LOW", "MID", "HIGH"]}},
        {"name": "f42", "type": ["null", "string"], "default": None},
        {"name": "f43", "type": ["null", "long"], "default": None},
        {"name": "f44", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "a", "type": "long"}, {"name": "b", "type": "string"}, {"name": "c", "type": "double"}]}},
        {"name": "f45", "type": {"type": "array", "items": "long"}},
        {"name": "f46", "type": {"type": "map", "values": "long"}},
        {"name": "f47", "type": ["null", "long", "string"], "default": None},
        {"name": "f48", "type": {"type": "array", "items": "string"}},
        {"name": "f49", "type": {"type": "record", "name": "Inner2", "fields": [
            {"name": "x", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}},
    ]
    assert len(fields) == 50
    return {"type": "record", "name": "Wide", "namespace": "bench", "fields": fields}


def json_schema() -> dict:
    props = {}
    for i in _LONGS:
        props[_f(i)] = {"type": "integer"}
    for i in _INTS:
        props[_f(i)] = {"type": "integer"}
    for i in list(_DOUBLES) + list(_FLOATS):
        props[_f(i)] = {"type": "number"}
    for i in _STRINGS:
        props[_f(i)] = {"type": "string"}
    for i in _BOOLS:
        props[_f(i)] = {"type": "boolean"}
    props.update({
        "f39": {"type": "string", "contentEncoding": "base64"},
        "f40": {"type": "string", "format": "date-time"},
        "f41": {"enum": ["LOW", "MID", "HIGH"]},
        "f42": {"type": ["string", "null"]}, "f43": {"type": ["integer", "null"]},
        "f44": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                                 "c": {"type": "number"}}},
        "f45": {"type": "array", "items": {"type": "integer"}},
        "f46": {"type": "object", "additionalProperties": {"type": "integer"}},
        "f47": {"type": ["integer", "string", "null"]},
        "f48": {"type": "array", "items": {"type": "string"}},
        "f49": {"type": "object", "properties": {"x": {"type": "integer"},
                                                 "tags": {"type": "array", "items": {"type": "string"}}}},
    })
    return {"title": "Wide", "type": "object", "properties": props}


def proto_text() -> str:
    lines = ['syntax = "proto3";', "package benchwide;", 'import "google/protobuf/timestamp.proto";',
             "message Inner { int64 a = 1; string b = 2; double c = 3; }",
             "message Inner2 { int32 x = 1; repeated string tags = 2; }",
             "message Wide {", "  enum Level { LOW = 0; MID = 1; HIGH = 2; }"]
    kinds = {**{i: "int64" for i in _LONGS}, **{i: "int32" for i in _INTS}, **{i: "double" for i in _DOUBLES},
             **{i: "float" for i in _FLOATS}, **{i: "string" for i in _STRINGS}, **{i: "bool" for i in _BOOLS}}
    for i, k in kinds.items():
        lines.append(f"  {k} {_f(i)} = {i + 1};")
    lines += ["  bytes f39 = 40;", "  google.protobuf.Timestamp f40 = 41;", "  Level f41 = 42;",
              "  optional string f42 = 43;", "  optional int64 f43 = 44;", "  Inner f44 = 45;",
              "  repeated int64 f45 = 46;", "  map<string, int64> f46 = 47;",
              "  oneof f47 { int64 f47_long = 48; string f47_str = 49; }",
              "  repeated string f48 = 50;", "  Inner2 f49 = 51;", "}"]
    return "\n".join(lines) + "\n"


def records(n: int, distinct: int = 2000) -> list[dict]:
    """``n`` records cycling over ``distinct`` generated ones (decode cost does not depend on
    repetition; generating and encoding is what would dominate otherwise)."""
    base = 1_700_000_000_000_000
    out = []
    for j in range(min(n, distinct)):
        r = {_f(i): j * 7 + i for i in _LONGS}
        r.update({_f(i): (j + i) % 100000 for i in _INTS})
        r.update({_f(i): j * 0.5 + i for i in _DOUBLES})
        r.update({_f(i): float(j % 1000) + 0.25 for i in _FLOATS})
        r.update({_f(i): f"s{i}-{j % 997}" for i in _STRINGS})
        r.update({_f(i): (j + i) % 2 == 0 for i in _BOOLS})
        r.update({"f39": bytes([j % 256, 1, 2]), "f40": base + j, "f41": ["LOW", "MID", "HIGH"][j % 3],
                  "f42": None if j % 3 == 0 else f"opt{j}", "f43": None if j % 4 == 0 else j,
                  "f44": {"a": j, "b": f"b{j % 50}", "c": j / 3},
                  "f45": list(range(j % 5)), "f46": {f"k{m}": m for m in range(j % 4)},
                  "f47": (j if j % 2 else f"u{j}") if j % 5 else None,
                  "f48": [f"t{m}" for m in range(j % 3)], "f49": {"x": j % 100, "tags": ["a", "b"][: j % 3]}})
        out.append(r)
    return [out[i % len(out)] for i in range(n)]


def _tile(framed_distinct: list[bytes], n: int) -> list[bytes]:
    return [framed_distinct[i % len(framed_distinct)] for i in range(n)]


def bench_avro(n: int, slow_n: int, out: dict) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    schema = avro_schema()
    text = json.dumps(schema)
    client = SchemaRegistryClient.new_client({"url": "mock://bench-wide-avro"})
    sid = client.register_schema("wide-value", __import__(
        "confluent_kafka.schema_registry", fromlist=["Schema"]).Schema(text, "AVRO"))
    parsed_schema = fastavro.parse_schema(schema)
    distinct = records(2000)
    framed_d = []
    for r in distinct:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed_schema, r)
        framed_d.append(encode_frame("confluent", sid, b.getvalue()))
    framed = _tile(framed_d, n)
    values = pa.array(framed, pa.binary())
    print(f"wide avro record: {sum(map(len, framed_d)) / len(framed_d):.0f} bytes on average")
    ctx = SerializationContext("wide", MessageField.VALUE)
    deser = AvroDeserializer(client)

    confluent = confluent_loop(deser, ctx, framed, slow_n)

    def fa_loop():  # dicts only: from_pylist cannot take the long|string union column
        for v in framed[:slow_n]:
            fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed_schema)

    reg = Schema(schema_type=SchemaType.AVRO, text=text, id=sid)
    dec = build_decoder(Spec("avro", text), options=DecodeOptions())

    ours = our_path(dec, values, n, reg)

    ours()
    out["wide avro: confluent AvroDeserializer loop"] = median_rate(confluent, slow_n)
    out["wide avro: fastavro schemaless_reader loop (dicts)"] = median_rate(fa_loop, slow_n)
    out["wide avro: ours (parse_frames + Decoder.decode)"] = median_rate(ours, n)


def _json_ready(r: dict) -> dict:
    import datetime as dt

    r = dict(r)
    r["f39"] = base64.b64encode(r["f39"]).decode()
    r["f40"] = dt.datetime.fromtimestamp(r["f40"] / 1e6, dt.timezone.utc).isoformat()
    return r


def bench_json(n: int, slow_n: int, out: dict) -> None:
    text = json.dumps(json_schema())
    framed = _tile([encode_frame("confluent", 1, orjson.dumps(_json_ready(r))) for r in records(2000)], n)
    values = pa.array(framed, pa.binary())
    dec = build_decoder(Spec("json", text), options=DecodeOptions())

    def loads():  # dicts only: from_pylist cannot take the integer|string union column
        for v in framed[:slow_n]:
            json.loads(v[5:])

    ours = our_path(dec, values, n, None)

    ours()
    out["wide json: json.loads loop (dicts)"] = median_rate(loads, slow_n)
    out["wide json: ours (parse_frames + Decoder.decode)"] = median_rate(ours, n)


def bench_protobuf(n: int, slow_n: int, out: dict) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from grpc_tools import protoc

    text = proto_text()
    tmp = tempfile.mkdtemp(prefix="wide-bench-")
    with open(f"{tmp}/bench_wide.proto", "w") as f:
        f.write(text)
    wkt = str(importlib.resources.files("grpc_tools") / "_proto")
    protoc.main(["protoc", f"-I{tmp}", f"-I{wkt}", f"--python_out={tmp}", f"{tmp}/bench_wide.proto"])
    sys.path.insert(0, tmp)
    mod = importlib.import_module("bench_wide_pb2")
    client = SchemaRegistryClient.new_client({"url": "mock://bench-wide-pb"})
    ctx = SerializationContext("wide", MessageField.VALUE)
    ser = ProtobufSerializer(mod.Wide, client, {"use.deprecated.format": False})
    sid = int.from_bytes(ser(mod.Wide(), ctx)[1:5], "big")
    framed_d = []
    for r in records(2000):
        m = mod.Wide(**{k: v for k, v in r.items() if k not in ("f40", "f41", "f44", "f46", "f47", "f49")
                        and v is not None})
        m.f40.FromMicroseconds(r["f40"])
        m.f41 = ["LOW", "MID", "HIGH"].index(r["f41"])
        m.f44.a, m.f44.b, m.f44.c = r["f44"]["a"], r["f44"]["b"], r["f44"]["c"]
        m.f46.update(r["f46"])
        if isinstance(r["f47"], int):
            m.f47_long = r["f47"]
        elif r["f47"] is not None:
            m.f47_str = r["f47"]
        m.f49.x = r["f49"]["x"]
        m.f49.tags.extend(r["f49"]["tags"])
        # Wide is the file's third message: index path [2]
        framed_d.append(encode_frame("confluent", sid, encode_protobuf_indexes([2]) + m.SerializeToString()))
    framed = _tile(framed_d, n)
    values = pa.array(framed, pa.binary())
    deser = ProtobufDeserializer(mod.Wide, {"use.deprecated.format": False}, client)

    confluent = confluent_loop(deser, ctx, framed, slow_n)

    reg = Schema(schema_type=SchemaType.PROTOBUF, text=text, id=sid)
    dec = build_decoder(Spec("protobuf", text, "benchwide.Wide"), options=DecodeOptions())

    ours = our_path(dec, values, n, reg, protobuf_indexes=True)

    ours()
    out["wide protobuf: confluent ProtobufDeserializer loop"] = median_rate(confluent, slow_n)
    out["wide protobuf: ours (parse_frames + Decoder.decode)"] = median_rate(ours, n)


def main() -> None:
    import traceback

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--slow-records", type=int, default=10_000)
    args = ap.parse_args()
    out: dict[str, float] = {}
    for part in (bench_avro, bench_json, bench_protobuf):
        try:
            part(args.records, min(args.slow_records, args.records), out)
        except Exception:
            traceback.print_exc()
    for k, v in out.items():
        print(f"{k:<55}{v:>14,.0f} rec/s")


if __name__ == "__main__":
    main()
