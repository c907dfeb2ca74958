"""Encode throughput: our vectorized encoders + framing vs confluent-kafka's serializer loops.

Run: ``/work/venv/bin/python benchmarks/encode_bench.py [--records N]``. Prints records/s
(median of 3 runs, measured in this run) and the ratio against confluent-kafka's
``AvroSerializer`` / ``JSONSerializer`` / ``ProtobufSerializer`` called once per record, as a
Python producer does today. Both sides talk to the project's embedded
``connector.testing.RegistryServer`` (``auto.register.schemas`` true; the schema is registered
before timing, so both sides time the cached steady state).

"Ours" is what a write task runs per Arrow batch: ``Encoder.encode`` (Arrow column → one
payload per row) + ``wireformat.frame_payloads`` (Confluent framing) on the same records as
one Arrow ``StructArray`` (Spark hands the writer Arrow batches). The baselines start from
Python dicts (what a Python producer holds). Never fails.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib
import importlib.resources
import json
import os
import sys
import tempfile
import traceback

import pyarrow as pa

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks.decode_bench import AVRO, JSON_SCHEMA, Spec, median_rate, records  # noqa: E402
from benchmarks.decode_bench import PROTO as _DECODE_PROTO  # noqa: E402

# Same message in a package of its own: decode_bench registers bench.Payment in protobuf's
# default pool when both run in one process (python -m benchmarks).
PROTO = _DECODE_PROTO.replace("package bench;", "package benchenc;")

AVRO_OURS = "encode avro: ours (Encoder.encode + frame_payloads)"
AVRO_CONFLUENT = "encode avro: confluent AvroSerializer loop"
JSON_OURS = "encode json: ours (Encoder.encode + frame_payloads)"
JSON_CONFLUENT = "encode json: confluent JSONSerializer loop"
PB_OURS = "encode protobuf: ours (Encoder.encode + frame_payloads)"
PB_CONFLUENT = "encode protobuf: confluent ProtobufSerializer loop"
BASELINES = {"encode avro: ": AVRO_CONFLUENT, "encode json: ": JSON_CONFLUENT,
             "encode protobuf: ": PB_CONFLUENT}
_UTC = dt.timezone.utc


def _client(url):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    return SchemaRegistryClient({"url": url})


def _ctx():
    from confluent_kafka.serialization import MessageField, SerializationContext
    return SerializationContext("payments", MessageField.VALUE)


def _ours(enc, arr, sid, n, message_indexes=None):
    from wireformat import frame_payloads

    def run():
        res = enc.encode(arr)
        assert res.errors.null_count == n, res.errors.drop_null()[:1]
        frame_payloads(res.payloads, "confluent", sid, message_indexes=message_indexes)
    return run


def _loop(ser, docs):
    ctx = _ctx()

    def run():
        for d in docs:
            ser(d, ctx)
    return run


def arrow_rows(rows, enc):
    t = enc.arrow_type
    cols = {f.name: [r[f.name] for r in rows] for f in t}
    if pa.types.is_timestamp(t.field("ts").type):
        cols["ts"] = pa.array(cols["ts"], pa.int64()).cast(t.field("ts").type)
    return pa.StructArray.from_arrays([pa.array(cols[f.name], f.type) if not isinstance(cols[f.name], pa.Array)
                                       else cols[f.name] for f in t], fields=list(t))


def bench_avro(url, n, slow_n, rows, out):
    from confluent_kafka.schema_registry.avro import AvroSerializer

    from connector.formats import build_encoder

    client = _client(url)
    ser = AvroSerializer(client, json.dumps(AVRO), conf={"auto.register.schemas": True})
    first = ser(rows[0], _ctx())  # registers the schema
    sid = int.from_bytes(first[1:5], "big")
    enc = build_encoder(Spec("avro", json.dumps(AVRO)))
    arr = arrow_rows(rows, enc)
    ours = _ours(enc, arr, sid, n)
    ours()  # warm the per-process caches like a reused worker
    out[AVRO_CONFLUENT] = median_rate(_loop(ser, rows[:slow_n]), slow_n)
    out[AVRO_OURS] = median_rate(ours, n)


def bench_json(url, n, slow_n, rows, out):
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    from connector.formats import build_encoder

    docs = [dict(r, ts=dt.datetime.fromtimestamp(r["ts"] / 1e6, _UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
            for r in rows]
    client = _client(url)
    ser = JSONSerializer(json.dumps(JSON_SCHEMA), client, conf={"auto.register.schemas": True})
    first = ser(docs[0], _ctx())
    sid = int.from_bytes(first[1:5], "big")
    enc = build_encoder(Spec("json", json.dumps(JSON_SCHEMA)))
    arr = arrow_rows(rows, enc)
    ours = _ours(enc, arr, sid, n)
    ours()
    out[JSON_CONFLUENT] = median_rate(_loop(ser, docs[:slow_n]), slow_n)
    out[JSON_OURS] = median_rate(ours, n)


def bench_protobuf(url, n, slow_n, rows, out):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from grpc_tools import protoc

    from connector.formats import build_encoder

    tmp = tempfile.mkdtemp(prefix="encode-bench-")
    with open(f"{tmp}/bench_payment_enc.proto", "w") as f:
        f.write(PROTO)
    wkt = str(importlib.resources.files("grpc_tools") / "_proto")
    protoc.main(["protoc", f"-I{tmp}", f"-I{wkt}", f"--python_out={tmp}", f"{tmp}/bench_payment_enc.proto"])
    sys.path.insert(0, tmp)
    mod = importlib.import_module("bench_payment_enc_pb2")

    def msg(r):
        m = mod.Payment(id=r["id"], name=r["name"], amount=r["amount"], active=r["active"],
                        category="ABCD".index(r["category"]))
        m.ts.FromMicroseconds(r["ts"])
        return m

    msgs = [msg(r) for r in rows[:slow_n]]  # the baseline is handed ready messages (its best case)
    client = _client(url)
    ser = ProtobufSerializer(mod.Payment, client, {"use.deprecated.format": False,
                                                   "auto.register.schemas": True})
    first = ser(msgs[0], _ctx())
    sid = int.from_bytes(first[1:5], "big")
    enc = build_encoder(Spec("protobuf", PROTO, "benchenc.Payment"))
    arr = arrow_rows(rows, enc)
    ours = _ours(enc, arr, sid, n, message_indexes=enc.message_indexes)
    ours()
    out[PB_CONFLUENT] = median_rate(_loop(ser, msgs), slow_n)
    out[PB_OURS] = median_rate(ours, n)


def run(n, slow_n, out):
    """Every section against one embedded registry; fills ``out`` with records/s."""
    from connector.testing import RegistryServer

    rows = records(n)
    with RegistryServer() as srv:
        for part in (bench_avro, bench_json, bench_protobuf):
            try:
                part(srv.url, n, slow_n, rows, out)
            except Exception:
                traceback.print_exc()


def ratio(key, out):
    for prefix, base in BASELINES.items():
        if key.startswith(prefix) and base in out:
            return "baseline" if key == base else f"{out[key] / out[base]:.1f}x"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--slow-records", type=int, default=20_000,
                    help="records for the slow per-record confluent baselines")
    args = ap.parse_args()
    n, slow_n = args.records, min(args.slow_records, args.records)
    out: dict[str, float] = {}
    run(n, slow_n, out)
    print(f"\n{n:,} records (confluent baselines on {slow_n:,}), median of 3 runs, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    w = max(map(len, out)) + 2 if out else 20
    print(f"{'path':<{w}}{'records/s':>14}  {'vs baseline':>11}")
    for k, v in out.items():
        print(f"{k:<{w}}{v:>14,.0f}  {ratio(k, out):>11}")
    if AVRO_OURS in out and AVRO_CONFLUENT in out:
        r = out[AVRO_OURS] / out[AVRO_CONFLUENT]
        print(f"\nAvro vs AvroSerializer: {r:.1f}x (goal 10x) -> {'PASS' if r >= 10 else 'FALL SHORT'}")


if __name__ == "__main__":
    main()
