"""Filter pushdown: the last 1% of a topic by a timestamp filter, pushdown on vs off.

``spark.read.format("asyncapi-kafka")...where("timestamp >= T")`` into a ``noop`` sink over the
realistic order record of ``spark_bench`` (nested records, a map, a decimal, enums; unframed
Avro), 8 partitions (noida-db stops serving fetches from a partition of ~100 MB: 2 partitions of
1M such records stalled), where T
is the time of the record at 99% of the topic, with ``spark.sql.python.filterPushdown.enabled``
off (Spark reads and decodes every record, then filters) and on (each partition's range starts
at the broker's offsets-for-times answer), alternating, medians of ``runs``, same session,
same broker, same data. The row counts of both are checked equal before timing. Spark's floor
for such a query is timed in the same rounds: a trivial Python data source that takes the same
filter and yields one row (off / floor is the most any source could reach on this machine).

Broker: noida-db (``connector.testing.NoidaBroker``), the only local peer that looks offsets up
by timestamp: the librdkafka mock cluster answers "no match" for every time (so pushdown cannot
narrow there: the reader detects it and reads everything) and tansu answers offset 0. noida keeps
every record of a topic created with retention -1 (the mock keeps ~5 MB per partition).

Run: ``python benchmarks/pushdown_bench.py [--records N] [--runs R]``.
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

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

SETTING = "spark.sql.python.filterPushdown.enabled"
OFF = "pushdown: last 1% by timestamp, pushdown off (Spark filters)"
ON = "pushdown: last 1% by timestamp, pushdown on"
ON_UNPACKED = "pushdown: last 1% by timestamp, pushdown on, one task per range (minRecordsPerPartition=0)"
FLOOR = "pushdown: Spark's floor, a trivial Python data source taking the same filter (one row)"
BASE_MS = 1_767_225_600_000


def _payloads(distinct: int = 5000) -> list[bytes]:
    import fastavro

    from benchmarks.spark_bench import ORDER_V2, order_records

    parsed = fastavro.parse_schema(ORDER_V2)
    out = []
    for r in order_records(distinct, 2):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        out.append(buf.getvalue())
    return out


def _document(bootstrap: str, topic: str) -> str:
    from benchmarks.spark_bench import ORDER_V2

    return json.dumps({
        "asyncapi": "3.0.0", "info": {"title": "Pushdown bench", "version": "1.0.0"},
        "servers": {"local": {"host": bootstrap, "protocol": "kafka"}},
        "channels": {"payments": {"address": topic, "messages": {"payment": {"$ref": "#/components/messages/P"}}}},
        "operations": {"read": {"action": "receive", "channel": {"$ref": "#/channels/payments"}}},
        "components": {"messages": {"P": {"name": "Payment", "payload": {
            "schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": ORDER_V2}}}}})


def produce(bootstrap: str, topic: str, total: int, partitions: int) -> None:
    """``total`` records round-robin over ``partitions``, record i at ``BASE_MS + i`` ms."""
    from confluent_kafka import Producer

    values = _payloads()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1_000_000, "log_level": 3})
    for i in range(total):
        while True:
            try:
                p.produce(topic, values[i % len(values)], partition=i % partitions, timestamp=BASE_MS + i)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(300) != 0:
        raise RuntimeError("records left undelivered")


def _floor_source():
    """A Python data source that takes every filter pushed to it and yields one row: what Spark
    itself charges for a pushed query, whatever the source does."""
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class _Reader(DataSourceReader):
        def pushFilters(self, filters):
            return iter(())

        def read(self, partition):
            yield (1, None)

    class FloorSource(DataSource):
        @classmethod
        def name(cls):
            return "bench-pushdown-floor"

        def schema(self):
            return "x int, timestamp timestamp"

        def reader(self, schema):
            return _Reader()

    return FloorSource


def run(spark, total: int = 2_000_000, partitions: int = 8, runs: int = 3, out: dict | None = None) -> dict:
    """records/s (of the whole topic) of the query with pushdown off and on; ``out`` gets both."""
    from connector.kafka import KafkaOffsetReader
    from connector.testing import NoidaBroker

    out = {} if out is None else out
    topic = "payments"
    with NoidaBroker() as broker:
        broker.create_topic(topic, partitions=partitions)
        t0 = time.perf_counter()
        produce(broker.bootstrap_servers, topic, total, partitions)
        print(f"  produced {total:,} records to noida-db in {time.perf_counter() - t0:.1f} s", flush=True)
        with KafkaOffsetReader(broker.conf) as r:
            tps = r.partitions_for([topic])
            ends, lows = r.latest(tps), r.earliest(tps)
        if any(lows.values()) or sum(ends.values()) != total:
            raise RuntimeError(f"broker kept {sum(ends.values()) - sum(lows.values())} of {total} records")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(_document(broker.bootstrap_servers, topic))
            path = f.name
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime((BASE_MS + int(total * 0.99)) / 1000))
        since += f".{(BASE_MS + int(total * 0.99)) % 1000:03d}"
        where = f"timestamp >= '{since}'"

        spark.dataSource.register(_floor_source())

        def floor():
            spark.conf.set(SETTING, "true")
            spark.read.format("bench-pushdown-floor").load().where(where).write.format("noop").mode("overwrite").save()

        def lookup():  # what the broker takes to answer the planner's question
            with KafkaOffsetReader(broker.conf) as r:
                r.first_offsets_at(tps, BASE_MS + int(total * 0.99))

        def query(on, **options):
            spark.conf.set(SETTING, "true" if on else "false")
            # a fresh DataFrame per query: PySpark 4.1-4.3 keep a pushed plan on a reused one
            reader = spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "payments")
            for k, v in options.items():
                reader = reader.option(k, v)
            return reader.load().where(where)

        try:
            counts = {on: query(on).count() for on in (False, True)}  # warm-up: workers, consumers
            if counts[False] != counts[True] or not 0 < counts[True] <= total // 100 + partitions:
                raise RuntimeError(f"row counts differ or are off: {counts}")
            # the pushed query as planned before small ranges shared tasks: one task per partition
            unpacked = {"minRecordsPerPartition": "0"}
            query(True, **unpacked).count()
            floor()
            times: dict = {False: [], True: [], "unpacked": [], "floor": [], "lookup": []}
            for _ in range(runs):
                for side in (False, True, "unpacked", "floor", "lookup"):
                    t0 = time.perf_counter()
                    if side == "lookup":
                        lookup()
                    elif side == "floor":
                        floor()
                    else:
                        query(side is not False, **(unpacked if side == "unpacked" else {})) \
                            .write.format("noop").mode("overwrite").save()
                    times[side].append(time.perf_counter() - t0)
        finally:
            spark.conf.unset(SETTING)
            os.unlink(path)
    off, on = statistics.median(times[False]), statistics.median(times[True])
    unpacked_s = statistics.median(times["unpacked"])
    floor_s = statistics.median(times["floor"])
    print(f"  {counts[True]:,} rows of {total:,}; off {['%.2f' % t for t in times[False]]} s, "
          f"on {['%.2f' % t for t in times[True]]} s: {off / on:.1f}x; on with one task per range "
          f"{['%.2f' % t for t in times['unpacked']]} s: {off / unpacked_s:.1f}x; Spark's floor (a trivial "
          f"source taking the filter) {['%.2f' % t for t in times['floor']]} s: off / floor {off / floor_s:.1f}x "
          f"is the most any source can reach here; ours is {floor_s / on:.2f}x the floor; the broker's "
          f"offsets-for-times answer alone {['%.2f' % t for t in times['lookup']]} s", flush=True)
    out[OFF] = total / off
    out[ON] = total / on
    out[ON_UNPACKED] = total / unpacked_s
    out[FLOOR] = total / floor_s
    return out


def main() -> None:
    from benchmarks.spark_bench import spark_session

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    spark = spark_session()
    try:
        got = run(spark, args.records, args.partitions, args.runs)
    finally:
        spark.stop()
    print(f"load average {os.getloadavg()[0]:.1f}; pushdown on / off: {got[ON] / got[OFF]:.1f}x (goal 20x); "
          f"Spark's floor / off: {got[FLOOR] / got[OFF]:.1f}x")


if __name__ == "__main__":
    main()
