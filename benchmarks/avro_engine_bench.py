"""The Avro engine vs the per-record loops, on four schema shapes (flat, wide, Debezium, nested).

Run: ``PYTHONPATH=. /work/venv/bin/python -m benchmarks.avro_engine_bench [--records N]``.
Prints records/s (median of 3) of: the confluent-kafka ``AvroDeserializer`` loop (what users
write today; on a subset, reported as a rate), the fastavro ``schemaless_reader`` loop, and our
path (``parse_frames`` + ``Decoder.decode``, Arrow out), and the ratio ours / confluent. No
assertion on speed; never fails on a shortfall (the goal, ≥ 10×, is printed beside the ratio).
"""
from __future__ import annotations

import argparse
import io
import json

import fastavro
import pyarrow as pa

from benchmarks.decode_bench import AVRO as FLAT
from benchmarks.decode_bench import Spec, confluent_loop, median_rate, our_path
from benchmarks.decode_bench import records as flat_records
from benchmarks.wide_bench import avro_schema as wide_schema
from benchmarks.wide_bench import records as wide_records
from connector.formats import DecodeOptions, build_decoder
from registry import Schema, SchemaType
from wireformat import encode_frame

ROW = {"type": "record", "name": "Value", "namespace": "dbserver1.inventory.customers", "fields": [
    {"name": "id", "type": "int"}, {"name": "first_name", "type": "string"},
    {"name": "last_name", "type": "string"}, {"name": "email", "type": "string"},
    {"name": "balance", "type": ["null", {"type": "bytes", "logicalType": "decimal",
                                          "precision": 12, "scale": 2}], "default": None},
    {"name": "updated", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}],
     "default": None}]}
DEBEZIUM = {"type": "record", "name": "Envelope", "namespace": "dbserver1.inventory.customers",
            "fields": [
                {"name": "before", "type": ["null", ROW], "default": None},
                {"name": "after", "type": ["null", "Value"], "default": None},
                {"name": "source", "type": {"type": "record", "name": "Source",
                                            "namespace": "io.debezium.connector.mysql", "fields": [
                    {"name": "version", "type": "string"}, {"name": "connector", "type": "string"},
                    {"name": "name", "type": "string"}, {"name": "ts_ms", "type": "long"},
                    {"name": "snapshot", "type": [{"type": "string", "connect.default": "false"},
                                                  "null"], "default": "false"},
                    {"name": "db", "type": "string"}, {"name": "table", "type": ["null", "string"],
                                                       "default": None},
                    {"name": "server_id", "type": "long"}, {"name": "file", "type": "string"},
                    {"name": "pos", "type": "long"}, {"name": "row", "type": "int"}]}},
                {"name": "op", "type": {"type": "enum", "name": "Op", "symbols": ["c", "u", "d", "r"]}},
                {"name": "ts_ms", "type": ["null", "long"], "default": None}]}
NESTED = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "attrs", "type": {"type": "map", "values": {"type": "array", "items": "string"}}}]}}},
    {"name": "totals", "type": {"type": "map", "values": "double"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}}]}


def debezium_records(n: int) -> list[dict]:
    import decimal
    out = []
    for j in range(min(n, 2000)):
        row = {"id": j, "first_name": f"first{j % 97}", "last_name": f"last{j % 89}",
               "email": f"user{j}@example.com", "balance": decimal.Decimal(j * 13 - 900) / 100,
               "updated": 1_700_000_000_000_000 + j if j % 3 else None}
        op = "curd"[j % 4]
        out.append({"before": None if op in "cr" else dict(row, email="old@example.com"),
                    "after": None if op == "d" else row,
                    "source": {"version": "2.5.0", "connector": "mysql", "name": "dbserver1",
                               "ts_ms": 1_700_000_000_000 + j, "snapshot": "false", "db": "inventory",
                               "table": "customers", "server_id": 223344, "file": "mysql-bin.000003",
                               "pos": 154 + j, "row": 0},
                    "op": op, "ts_ms": 1_700_000_000_100 + j})
    return [out[i % len(out)] for i in range(n)]


def nested_records(n: int) -> list[dict]:
    import decimal
    out = []
    for j in range(min(n, 2000)):
        out.append({"id": j, "lines": [
            {"sku": f"sku-{j % 50}-{k}", "qty": k + 1, "price": decimal.Decimal(j % 1000 + k) / 100,
             "attrs": {f"a{m}": [f"v{m}"] * (m % 3) for m in range(k % 3)}} for k in range(j % 4)],
            "totals": {"net": j * 1.5, "tax": j * 0.2}, "status": ["NEW", "PAID", "SHIPPED"][j % 3]})
    return [out[i % len(out)] for i in range(n)]


SHAPES = {"flat": (FLAT, flat_records), "wide": (wide_schema(), wide_records),
          "debezium": (DEBEZIUM, debezium_records), "nested": (NESTED, nested_records)}


def bench(name: str, n: int, slow_n: int, out: dict) -> None:
    from confluent_kafka.schema_registry import Schema as CSchema
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    schema, gen = SHAPES[name]
    text = json.dumps(schema)
    client = SchemaRegistryClient.new_client({"url": f"mock://avro-engine-{name}"})
    sid = client.register_schema(f"{name}-value", CSchema(text, "AVRO"))
    parsed = fastavro.parse_schema(schema)
    framed = []
    cache: dict = {}
    for r in gen(n):
        key = id(r)
        if key not in cache:
            b = io.BytesIO()
            fastavro.schemaless_writer(b, parsed, r)
            cache[key] = encode_frame("confluent", sid, b.getvalue())
        framed.append(cache[key])
    values = pa.array(framed, pa.binary())
    ctx = SerializationContext(name, MessageField.VALUE)
    confluent = confluent_loop(AvroDeserializer(client), ctx, framed, slow_n)

    def fa_loop():
        for v in framed[:slow_n]:
            fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed)

    dec = build_decoder(Spec("avro", text), options=DecodeOptions())
    ours = our_path(dec, values, n, Schema(schema_type=SchemaType.AVRO, text=text, id=sid))
    ours()  # warm the per-process plan cache, as a reused worker would be
    c, f, o = median_rate(confluent, slow_n), median_rate(fa_loop, slow_n), median_rate(ours, n)
    size = sum(map(len, framed[:2000])) / min(n, 2000) - 5
    out[name] = (size, c, f, o)
    print(f"{name:9s} {size:7.0f} B  confluent {c:>10,.0f}/s  fastavro {f:>10,.0f}/s  "
          f"ours {o:>11,.0f}/s  ours/confluent {o / c:6.1f}x (goal 10x)", flush=True)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--slow", type=int, default=20_000, help="records for the per-record loops")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    a = ap.parse_args(argv)
    out: dict = {}
    for name in a.shapes.split(","):
        bench(name, a.records, min(a.slow, a.records), out)
    return out


if __name__ == "__main__":
    main()
