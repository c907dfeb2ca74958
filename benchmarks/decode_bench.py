"""Decode throughput: our vectorized decoders vs the per-record loops Python users write.

Run: ``/work/venv/bin/python benchmarks/decode_bench.py [--records N]``. Prints a table of
records/s (median of 3 runs) and PASS / FALL SHORT against the goals; never fails.
Per-message baselines that are slow (confluent deserializers) run on a subset and are
reported as rates.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.resources
import io
import json
import statistics
import sys
import tempfile
import time
import traceback

import fastavro
import orjson
import pyarrow as pa
from registry import Schema, SchemaType
from wireformat import encode_frame, encode_protobuf_indexes, parse_frames

from connector.formats import DecodeOptions, build_decoder

AVRO = {"type": "record", "name": "Payment", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "active", "type": "boolean"},
    {"name": "category", "type": {"type": "enum", "name": "Cat", "symbols": ["A", "B", "C", "D"]}}]}
JSON_SCHEMA = {"title": "Payment", "type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "amount": {"type": "number"},
    "ts": {"type": "string", "format": "date-time"}, "active": {"type": "boolean"},
    "category": {"enum": ["A", "B", "C", "D"]}}}
PROTO = """syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Payment {
  enum Cat { A = 0; B = 1; C = 2; D = 3; }
  int64 id = 1; string name = 2; double amount = 3; google.protobuf.Timestamp ts = 4;
  bool active = 5; Cat category = 6;
}
"""


class Spec:
    def __init__(self, fmt, text, message_name=None):
        self.format, self.text, self.message_name = fmt, text, message_name


def median_rate(fn, n, runs=3):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return n / statistics.median(times)


def confluent_loop(deser, ctx, framed, slow_n):
    """The loop Python users write today: one confluent-kafka deserializer call per record."""
    def run():
        for v in framed[:slow_n]:
            deser(v, ctx)
    return run


def our_path(dec, values, n, schema, *, protobuf_indexes=False):
    """Our decode path, as executors run it: header parse + grouped decode, Arrow out.
    Asserts every row decoded, so a benchmark can never time a failing path."""
    def run():
        res = dec.decode(parse_frames(values, "confluent", protobuf_indexes=protobuf_indexes),
                         lambda key: schema)
        assert res.errors.null_count == n, res.errors.drop_null()[:1]
    return run


def records(n):
    base = 1_700_000_000_000_000
    return [{"id": i, "name": f"customer-{i % 5000}", "amount": i * 0.25, "ts": base + i,
             "active": i % 2 == 0, "category": "ABCD"[i % 4]} for i in range(n)]


def bench_avro(n, slow_n, rows, out):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": "mock://bench-avro"})
    ctx = SerializationContext("payments", MessageField.VALUE)
    ser = AvroSerializer(client, json.dumps(AVRO))
    first = ser(dict(rows[0], ts=rows[0]["ts"]), ctx)  # registers the schema
    sid = int.from_bytes(first[1:5], "big")
    parsed_schema = fastavro.parse_schema(AVRO)
    payloads = []
    for r in rows:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed_schema, r)
        payloads.append(b.getvalue())
    framed = [encode_frame("confluent", sid, p) for p in payloads]
    values = pa.array(framed, pa.binary())
    print(f"avro record: {sum(map(len, payloads)) / n:.1f} bytes on average")
    deser = AvroDeserializer(client)

    confluent = confluent_loop(deser, ctx, framed, slow_n)

    def fa_loop():
        for v in framed:
            fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed_schema)

    def fa_pylist():
        pa.RecordBatch.from_pylist([fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed_schema)
                                    for v in framed])

    schema = Schema(schema_type=SchemaType.AVRO, text=json.dumps(AVRO), id=sid)
    dec = build_decoder(Spec("avro", json.dumps(AVRO)), options=DecodeOptions())

    ours = our_path(dec, values, n, schema)

    ours()  # warm the per-process caches (schema parse) like a reused worker
    out["avro: confluent AvroDeserializer loop"] = median_rate(confluent, slow_n)
    out["avro: fastavro schemaless_reader loop (dicts)"] = median_rate(fa_loop, n)
    out["avro: fastavro loop + RecordBatch.from_pylist"] = median_rate(fa_pylist, n)
    out["avro: ours (parse_frames + Decoder.decode)"] = median_rate(ours, n)


def bench_json(n, slow_n, rows, out):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    docs = [dict(r, ts=f"2023-11-14T22:13:{r['id'] % 60:02d}.{r['id'] % 999999:06d}Z") for r in rows]
    payloads = [orjson.dumps(d) for d in docs]
    client = SchemaRegistryClient.new_client({"url": "mock://bench-json"})
    ctx = SerializationContext("payments", MessageField.VALUE)
    first = JSONSerializer(json.dumps(JSON_SCHEMA), client)(docs[0], ctx)  # registers the schema
    sid = int.from_bytes(first[1:5], "big")
    framed = [encode_frame("confluent", sid, p) for p in payloads]
    values = pa.array(framed, pa.binary())
    deser = JSONDeserializer(json.dumps(JSON_SCHEMA), schema_registry_client=client)

    def stdlib():
        pa.RecordBatch.from_pylist([json.loads(v[5:]) for v in framed])

    def orj():
        pa.RecordBatch.from_pylist([orjson.loads(v[5:]) for v in framed])

    confluent = confluent_loop(deser, ctx, framed, slow_n)

    dec = build_decoder(Spec("json", json.dumps(JSON_SCHEMA)), options=DecodeOptions())

    ours = our_path(dec, values, n, None)

    ours()
    out["json: json.loads loop + from_pylist"] = median_rate(stdlib, n)
    out["json: orjson loop + from_pylist"] = median_rate(orj, n)
    try:
        out["json: confluent JSONDeserializer loop"] = median_rate(confluent, slow_n)
    except Exception as e:
        print(f"confluent JSONDeserializer baseline failed: {e!r}")
    out["json: ours (parse_frames + Decoder.decode)"] = median_rate(ours, n)


def bench_protobuf(n, slow_n, rows, out):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from grpc_tools import protoc

    tmp = tempfile.mkdtemp(prefix="decode-bench-")
    with open(f"{tmp}/bench_payment.proto", "w") as f:
        f.write(PROTO)
    wkt = str(importlib.resources.files("grpc_tools") / "_proto")
    protoc.main(["protoc", f"-I{tmp}", f"-I{wkt}", f"--python_out={tmp}", f"{tmp}/bench_payment.proto"])
    sys.path.insert(0, tmp)
    mod = importlib.import_module("bench_payment_pb2")
    framed = []
    for r in rows:
        m = mod.Payment(id=r["id"], name=r["name"], amount=r["amount"], active=r["active"],
                        category="ABCD".index(r["category"]))
        m.ts.FromMicroseconds(r["ts"])
        framed.append(encode_frame("confluent", 1, encode_protobuf_indexes([0]) + m.SerializeToString()))
    client = SchemaRegistryClient.new_client({"url": "mock://bench-pb"})
    ctx = SerializationContext("payments", MessageField.VALUE)
    ser = ProtobufSerializer(mod.Payment, client, {"use.deprecated.format": False})
    first = ser(mod.Payment(id=0), ctx)  # registers the schema; the frames carry its id
    sid = int.from_bytes(first[1:5], "big")
    framed = [sid.to_bytes(4, "big").join([b"\x00", f[5:]]) for f in framed]
    values = pa.array(framed, pa.binary())
    deser = ProtobufDeserializer(mod.Payment, {"use.deprecated.format": False}, client)

    confluent = confluent_loop(deser, ctx, framed, slow_n)

    schema = Schema(schema_type=SchemaType.PROTOBUF, text=PROTO, id=sid)
    dec = build_decoder(Spec("protobuf", PROTO, "bench.Payment"), options=DecodeOptions())

    ours = our_path(dec, values, n, schema, protobuf_indexes=True)

    ours()
    out["protobuf: confluent ProtobufDeserializer loop"] = median_rate(confluent, slow_n)
    out["protobuf: ours (parse_frames + Decoder.decode)"] = median_rate(ours, n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--slow-records", type=int, default=50_000,
                    help="records for the slow per-message confluent baselines")
    args = ap.parse_args()
    n, slow_n = args.records, min(args.slow_records, args.records)
    rows = records(n)
    out: dict[str, float] = {}
    for part in (bench_avro, bench_json, bench_protobuf):
        try:
            part(n, slow_n, rows, out)
        except Exception:
            traceback.print_exc()
    print(f"\n{n:,} records (confluent baselines on {slow_n:,}), median of 3 runs\n")
    w = max(map(len, out)) + 2
    print(f"{'path':<{w}}{'records/s':>14}")
    for k, v in out.items():
        print(f"{k:<{w}}{v:>14,.0f}")

    def goal(label, ours_key, base_key, ratio, absolute=None):
        if ours_key not in out or base_key not in out:
            print(f"{label}: not measured")
            return
        r = out[ours_key] / out[base_key]
        ok = r >= ratio and (absolute is None or out[ours_key] >= absolute)
        extra = f", {out[ours_key]:,.0f} rec/s vs goal {absolute:,}" if absolute else ""
        print(f"{label}: {r:.1f}x (goal {ratio}x{extra}) -> {'PASS' if ok else 'FALL SHORT'}")

    print()
    goal("Avro vs AvroDeserializer", "avro: ours (parse_frames + Decoder.decode)",
         "avro: confluent AvroDeserializer loop", 30, 1_000_000)
    goal("Avro vs fastavro loop + from_pylist", "avro: ours (parse_frames + Decoder.decode)",
         "avro: fastavro loop + RecordBatch.from_pylist", 1)
    goal("JSON vs json.loads loop", "json: ours (parse_frames + Decoder.decode)",
         "json: json.loads loop + from_pylist", 3)
    goal("JSON vs orjson loop", "json: ours (parse_frames + Decoder.decode)",
         "json: orjson loop + from_pylist", 1)
    goal("Protobuf vs ProtobufDeserializer", "protobuf: ours (parse_frames + Decoder.decode)",
         "protobuf: confluent ProtobufDeserializer loop", 5)


if __name__ == "__main__":
    main()
