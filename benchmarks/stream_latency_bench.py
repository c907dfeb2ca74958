"""Streaming latency: produce at a steady rate, read with ``readStream`` (default trigger).

A producer thread in this process writes Confluent-framed realistic orders (``spark_bench``'s
record) at ``rate`` records/s to one topic of 4 partitions on the librdkafka mock cluster,
each record stamped with its produce time (Kafka ``CreateTime``, ms). A ``readStream`` of the
channel with the default trigger (the next micro-batch starts as soon as the previous one
ends) writes to a ``foreachBatch`` sink that collects each micro-batch's ``timestamp`` column
to the driver (what the memory sink does) and notes the time: the latency of a record is that
time minus its produce time. The same query over Spark's built-in ``rate`` source (whose
``timestamp`` is the time the row was generated) at the same rate is the baseline: Spark's
own cost of a micro-batch query.

Reported per source and rate, after a warm-up: p50 and p99 latency, micro-batches, and the
median micro-batch duration (``triggerExecution`` of ``StreamingQueryProgress``) with its
largest parts: the per-micro-batch overhead.

Run: ``python -m benchmarks.stream_latency_bench [--seconds S] [--rates 1000,20000]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

TOPIC = "orders.live"


class Producer(threading.Thread):
    """Produces ``rate`` records/s until stopped, each timestamped with its produce time."""

    def __init__(self, bootstrap: str, values: list[bytes], rate: int):
        super().__init__(daemon=True)
        self.bootstrap, self.values, self.rate = bootstrap, values, rate
        self.stop_event = threading.Event()
        self.sent = 0

    def run(self) -> None:
        from confluent_kafka import Producer as KafkaProducer

        p = KafkaProducer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "log_level": 3})
        t0 = time.monotonic()
        n = len(self.values)
        while not self.stop_event.is_set():
            due = int((time.monotonic() - t0) * self.rate)
            while self.sent < due:
                p.produce(TOPIC, self.values[self.sent % n], partition=self.sent % 4,
                          timestamp=int(time.time() * 1000))
                self.sent += 1
            p.poll(0)
            time.sleep(0.002)
        p.flush(10)


def _percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def measure(spark, df, *, seconds: float, warmup: float, start_load=None, stop_load=None) -> dict:
    """Run ``df`` to a collecting foreachBatch sink for ``warmup + seconds``; latencies of rows
    whose timestamp falls after the warm-up."""
    from pyspark.sql import functions as F

    lat: list[float] = []
    since = [float("inf")]

    def sink(batch, _batch_id):
        micros = [r[0] for r in batch.select(F.unix_micros("timestamp")).collect()]
        now = time.time()
        lat.extend(now - m / 1e6 for m in micros if m / 1e6 >= since[0])

    with tempfile.TemporaryDirectory() as ckpt:
        query = df.writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).start()
        try:
            deadline = time.monotonic() + 120
            while not query.recentProgress and time.monotonic() < deadline:  # first (empty) batch done
                time.sleep(0.05)
            if start_load:
                start_load()
            time.sleep(warmup)
            since[0] = time.time()
            first = len(query.recentProgress)
            time.sleep(seconds)
            progress = query.recentProgress[first:]
        finally:
            if stop_load:
                stop_load()
            query.stop()
    durations = [p["durationMs"] for p in progress if p.get("numInputRows", 0) > 0]
    trig = [d.get("triggerExecution", 0) for d in durations]
    parts = {k: statistics.median(d.get(k, 0) for d in durations)
             for k in ("latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets")} if durations else {}
    return {"rows": len(lat), "p50_ms": 1000 * _percentile(lat, 0.5), "p99_ms": 1000 * _percentile(lat, 0.99),
            "batches": len(durations), "batch_ms": statistics.median(trig) if trig else float("nan"),
            "rows_per_batch": statistics.median(p["numInputRows"] for p in progress if p.get("numInputRows"))
            if durations else 0, "parts_ms": parts}


def run(spark, rates=(1000, 20_000), seconds: float = 20.0, warmup: float = 5.0, variants: bool = True,
        out: dict | None = None) -> dict:
    """Latency figures per (source, rate); ``out`` gets them keyed by a label."""
    from benchmarks.spark_bench import ORDER_V2, _order_frames, _orders_document
    from connector.testing import EmbeddedKafka, RegistryServer

    out = {} if out is None else out
    import pyspark_asyncapi_kafka  # noqa: F401

    with RegistryServer() as registry, EmbeddedKafka() as kafka:
        sid = registry.register("orders-value", json.dumps(ORDER_V2))
        values = _order_frames(5000, sid, ORDER_V2, 2)
        kafka.create_topic(TOPIC, partitions=4)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(_orders_document(kafka.bootstrap_servers, registry.url))
            doc = f.name
        try:
            for rate in rates:
                sources = {"rate source": None, "asyncapi-kafka": {}}
                if variants:
                    sources["asyncapi-kafka, one task per partition"] = {"minRecordsPerPartition": "0"}
                for name, options in sources.items():
                    if options is None:
                        df = spark.readStream.format("rate").option("rowsPerSecond", rate) \
                            .option("numPartitions", 4).load()
                        res = measure(spark, df, seconds=seconds, warmup=warmup)
                    else:
                        reader = spark.readStream.format("asyncapi-kafka").option("asyncapi", doc) \
                            .option("channel", "orders").option("channel.param.region", "live")
                        for k, v in options.items():
                            reader = reader.option(k, v)
                        producer = Producer(kafka.bootstrap_servers, values, rate)

                        def stop(producer=producer):
                            producer.stop_event.set()
                            producer.join(30)

                        res = measure(spark, reader.load(), seconds=seconds, warmup=warmup,
                                      start_load=producer.start, stop_load=stop)
                    out[f"stream latency {rate:,}/s: {name}"] = res
                    parts = ", ".join(f"{k} {v:.0f}" for k, v in res["parts_ms"].items())
                    print(f"  {rate:>6,}/s {name:<40} p50 {res['p50_ms']:7.0f} ms  p99 {res['p99_ms']:7.0f} ms  "
                          f"{res['batches']:3d} batches of ~{res['rows_per_batch']:,.0f} rows, "
                          f"{res['batch_ms']:.0f} ms each ({parts}); {res['rows']:,} rows timed", flush=True)
        finally:
            os.unlink(doc)
    return out


def main() -> None:
    from benchmarks.spark_bench import spark_session

    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--rates", default="1000,20000")
    ap.add_argument("--no-variants", action="store_true", help="skip the one-task-per-partition variant")
    args = ap.parse_args()
    spark = spark_session()
    try:
        print(f"streaming latency, local[2], mock cluster (4 partitions), load {os.getloadavg()[0]:.1f}")
        run(spark, tuple(int(r) for r in args.rates.split(",")), args.seconds, args.warmup, not args.no_variants)
    finally:
        spark.stop()
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
