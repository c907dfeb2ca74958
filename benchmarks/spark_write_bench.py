"""Spark write end to end (``local[2]``): ``df.write.format("asyncapi-kafka")`` vs a raw produce loop.

Same run, same librdkafka mock broker, same records (the flat 6-field Avro ``Payment``):

* **ours**: a cached DataFrame of typed rows written with ``df.write.format("asyncapi-kafka")``
  (encode Avro, frame Confluent, idempotent produce, every delivery checked) in two tasks;
* **baseline**: one Python loop calling ``Producer.produce`` on the same records *already encoded
  and framed*, then ``flush()``, with the same producer guarantees (``enable.idempotence=true``,
  ``acks=all``). The loop without idempotence is printed too, for scale;
* **Spark floor**: the same DataFrame through ``mapInArrow`` with a function that only counts rows
  (what moving rows from the JVM into a Python worker costs before any encoding or producing).

The goal (issue 16) is ours ≥ 0.5× the baseline. Medians of ``--runs`` runs. The mock broker keeps
only ~5 MB per partition (FACTS.md): older records are dropped, which does not matter for writes.

Run: ``/work/venv/bin/python benchmarks/spark_write_bench.py [--rows N] [--runs R]``.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time

import fastavro

from benchmarks.decode_bench import AVRO, records
from benchmarks.spark_bench import spark_session

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _document(bootstrap: str, registry_url: str, topic: str) -> str:
    return json.dumps({
        "asyncapi": "3.0.0", "info": {"title": "Bench", "version": "1.0.0"},
        "servers": {"local": {"host": bootstrap, "protocol": "kafka", "bindings": {"kafka": {
            "schemaRegistryUrl": registry_url, "schemaRegistryVendor": "confluent", "bindingVersion": "0.5.0"}}}},
        "channels": {"payments": {"address": topic, "messages": {"payment": {"$ref": "#/components/messages/P"}}}},
        "operations": {"sendPayments": {"action": "send", "channel": {"$ref": "#/channels/payments"}}},
        "components": {"messages": {"P": {
            "name": "Payment",
            "payload": {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": AVRO},
            "bindings": {"kafka": {"schemaIdLocation": "payload", "bindingVersion": "0.5.0"}}}}},
    })


def _framed(recs: list[dict], sid: int) -> list[bytes]:
    parsed = fastavro.parse_schema(AVRO)
    out = []
    for r in recs:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed, r)
        out.append(b"\x00" + sid.to_bytes(4, "big") + b.getvalue())
    return out


def raw_produce(conf: dict, topic: str, values: list[bytes]) -> None:
    """The baseline: what a Python user writes with confluent-kafka, bytes already encoded."""
    from confluent_kafka import Producer

    p = Producer(conf)
    produce, poll = p.produce, p.poll
    for v in values:
        try:
            produce(topic, v)
        except BufferError:
            while True:
                poll(0.05)
                try:
                    produce(topic, v)
                    break
                except BufferError:
                    continue
    if p.flush(120):
        raise RuntimeError("raw loop: records left undelivered")


def _median_s(fn, runs: int) -> float:
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(rows: int = 200_000, runs: int = 3) -> dict:
    import datetime as dt

    from connector.testing import EmbeddedKafka, RegistryServer

    spark = spark_session()
    out: dict = {}
    with RegistryServer() as registry, EmbeddedKafka() as kafka:
        sid = registry.register("bench-write-ours-value", json.dumps(AVRO))
        recs = records(rows)
        values = _framed(recs, sid)
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        typed = [(r["id"], r["name"], r["amount"], epoch + dt.timedelta(microseconds=r["ts"]), r["active"],
                  r["category"]) for r in recs]
        df = spark.createDataFrame(typed, "id long, name string, amount double, ts timestamp, active boolean, "
                                          "category string").repartition(2).cache()
        assert df.count() == rows
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(_document(kafka.bootstrap_servers, registry.url, "bench-write-ours"))
            doc = f.name

        def ours(i: int) -> None:
            (df.write.format("asyncapi-kafka").mode("append").option("asyncapi", doc)
             .option("channel", "payments").option("auto.register.schemas", "true").save())

        def count_rows(batches):
            import pyarrow as pa

            yield pa.record_batch([pa.array([sum(b.num_rows for b in batches)])], names=["n"])

        def floor(i: int) -> None:
            df.mapInArrow(count_rows, "n long").write.format("noop").mode("overwrite").save()

        guarded = {**kafka.conf, "enable.idempotence": True, "acks": "all"}
        ours(-1)  # warm-up: Python workers, encoders, producers, the topic
        raw_produce(guarded, "bench-write-raw", values[:1000])
        t_raw = _median_s(lambda i: raw_produce(guarded, "bench-write-raw", values), runs)
        t_plain = _median_s(lambda i: raw_produce(kafka.conf, "bench-write-plain", values), runs)
        floor(-1)
        t_floor = _median_s(floor, runs)
        t_ours = _median_s(ours, runs)
        out["raw produce loop, pre-encoded, idempotent (baseline)"] = rows / t_raw
        out["raw produce loop, pre-encoded, not idempotent"] = rows / t_plain
        out["Spark floor: mapInArrow counting rows, local[2]"] = rows / t_floor
        out["df.write.format('asyncapi-kafka') local[2]"] = rows / t_ours
        out["ratio ours / baseline"] = t_raw / t_ours
        os.unlink(doc)
    spark.stop()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    res = run(args.rows, args.runs)
    width = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{width}}  {v:>12,.2f}" if "ratio" in k else f"{k:<{width}}  {v:>12,.0f} records/s")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
