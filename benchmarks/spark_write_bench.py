"""Spark write end to end (``local[2]``) on the realistic order schema: ours vs Spark's floor and a raw produce loop.

Same run, same librdkafka mock broker, same records (``spark_bench.ORDER_V2``: nested customer and
address records, a ``map<int>``, two decimals, three enums, nullable fields), interleaved runs:

* **ours**: a cached DataFrame of typed rows (built by Spark SQL, two partitions) written with
  ``df.write.format("asyncapi-kafka")`` (encode Avro, frame Confluent, idempotent produce, every
  delivery checked);
* **Spark floor**: the same DataFrame through ``mapInArrow`` with a function that only counts rows
  (what moving rows from the JVM into Python workers costs before any encoding or producing);
* **raw loop**: one Python loop calling ``Producer.produce`` on the same records *already encoded
  and framed* (fastavro), then ``flush()``, with the same producer guarantees
  (``enable.idempotence=true``, ``acks=all``);
* for the breakdown, **encode only**: the same ``mapInArrow`` running our encode core
  (``encode_column``) on each batch, without Kafka, and **Spark's trivial Python sink**: a
  ``DataSourceArrowWriter`` that only counts rows (Spark's own cost of a Python data source write);
* **produce only** (``--produce-only``), no Spark, the mock cluster in a child process: the
  sink's producer (``BatchProducer``, the batch handed to librdkafka by one compiled loop)
  against confluent-kafka's ``produce()`` loop, on the same pre-encoded bytes in batches of
  10,000 (Spark's Arrow batch size), with the producing thread's CPU time
  (``time.thread_time``) and the process's (librdkafka's threads included) beside the wall time.

The goal (issue 24) is ours ≥ 0.9× Spark's floor (medians of ``--runs``). It also times the
first write of the session against the later ones, with Spark's own first write through a
trivial Python sink for scale. The mock broker keeps only ~5 MB per partition (FACTS.md): older
records are dropped, which does not matter for writes.

``--exactly-once`` compares ``deliveryGuarantee=exactly-once`` with the default at-least-once
(issue 38; goal ≥ 0.8×), same DataFrame, alternating runs, medians, on the mock cluster and on
noida-db.

Run: ``python -m benchmarks.spark_write_bench [--rows N ...] [--runs R] [--produce-only | --exactly-once]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from benchmarks.spark_bench import ORDER_V2, _order_frames, spark_session

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

OURS = "df.write.format('asyncapi-kafka')"
FLOOR = "Spark floor: mapInArrow counting rows"
RAW = "raw produce loop, pre-encoded, idempotent"
ENCODE = "mapInArrow running encode_column only (no Kafka)"
TRIVIAL = "Spark's trivial Python sink (counts rows)"
BOUND = "trivial Python sink + our produce step (pre-encoded, no encoding)"

# The order record (ORDER_V2) as Spark SQL over spark.range: the same shapes as
# spark_bench.order_records (nulls every 5th email, 3rd note, 2nd discount; 0..3 map items).
ORDER_SQL = [
    "concat('o-2-', lpad(cast(id as string), 8, '0')) AS orderId",
    "named_struct('id', 10000 + id % 977, 'name', concat('customer ', cast(id % 977 as string)), "
    "'email', CASE WHEN id % 5 = 0 THEN NULL ELSE concat('c', cast(id % 977 as string), '@example.com') END) "
    "AS customer",
    "map_from_entries(slice(array(named_struct('k', concat('sku-', cast(id % 50 as string)), 'v', 1), "
    "named_struct('k', concat('sku-', cast((id + 1) % 50 as string)), 'v', 2), "
    "named_struct('k', concat('sku-', cast((id + 2) % 50 as string)), 'v', 3)), 1, cast(id % 4 as int))) AS items",
    "cast((id % 100000) / 100 as decimal(12, 2)) AS total",
    "element_at(array('EUR', 'USD', 'GBP'), cast(id % 3 + 1 as int)) AS currency",
    "element_at(array('PLACED', 'PAID', 'SHIPPED'), cast(id % 3 + 1 as int)) AS status",
    "timestamp_millis(1700000000000 + id) AS createdAt",
    "named_struct('street', concat(cast(id % 200 as string), ' Main St'), "
    "'city', element_at(array('Lyon', 'Zürich', 'Köln', 'Porto', 'Malmö'), cast(id % 5 + 1 as int)), "
    "'zip', lpad(cast(id % 99999 as string), 5, '0'), 'country', 'FR') AS shipTo",
    "CASE WHEN id % 3 = 0 THEN 'leave at door' ELSE NULL END AS notes",
    "id % 7 = 0 AS express",
    "element_at(array('WEB', 'APP', 'STORE'), cast(id % 3 + 1 as int)) AS channel",
    "CASE WHEN id % 2 = 1 THEN NULL ELSE cast((id % 5000) / 100 as decimal(5, 2)) END AS discount",
]


def _document(bootstrap: str, registry_url: str, topic: str) -> str:
    return json.dumps({
        "asyncapi": "3.0.0", "info": {"title": "Write bench", "version": "1.0.0"},
        "servers": {"local": {"host": bootstrap, "protocol": "kafka", "bindings": {"kafka": {
            "schemaRegistryUrl": registry_url, "schemaRegistryVendor": "confluent", "bindingVersion": "0.5.0"}}}},
        "channels": {"orders": {"address": topic, "messages": {"order": {"$ref": "#/components/messages/Order"}}}},
        "operations": {"sendOrders": {"action": "send", "channel": {"$ref": "#/channels/orders"}}},
        "components": {"messages": {"Order": {
            "name": "Order",
            "payload": {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": ORDER_V2},
            "bindings": {"kafka": {"schemaIdLocation": "payload", "bindingVersion": "0.5.0"}}}}},
    })


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


def native_produce(conf: dict, topic: str, batches: list) -> None:
    """The sink's producer on Arrow batches of pre-encoded bytes (what a write task does after
    encoding), every delivery checked."""
    from connector.kafka._produce import BatchProducer

    bp = BatchProducer(conf)
    try:
        for b in batches:
            bp.produce(topic, b)
        bp.finish(120)
    finally:
        bp.close()


def produce_only(bootstrap: str, sizes=(200_000, 1_000_000), runs: int = 3) -> dict:
    """Wall, thread-CPU and process-CPU seconds of the native batch produce vs the confluent loop
    (the broker runs in another process, so the process CPU is the producer's, librdkafka's
    threads included)."""
    import pyarrow as pa

    from connector.kafka._produce import BatchProducer

    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"}
    out: dict = {}
    warm = BatchProducer({"bootstrap.servers": bootstrap})  # compile / load the kernel once
    warm.produce("bench-produce-warm", [b"x"])
    warm.finish(30)
    warm.close()
    for n in sizes:
        values = _order_frames(n, 1, ORDER_V2, 2)
        arr = pa.array(values, pa.binary())
        batches = [arr.slice(i, 10_000) for i in range(0, n, 10_000)]
        topic = f"bench-produce-{n}"
        raw_produce(conf, topic, values[:1000])
        got: dict[str, list[tuple[float, float, float]]] = {"native": [], "confluent": []}
        for _ in range(runs):  # alternating
            for name, fn in (("native", lambda: native_produce(conf, topic, batches)),
                             ("confluent", lambda: raw_produce(conf, topic, values))):
                c0, p0, t0 = time.thread_time(), time.process_time(), time.perf_counter()
                fn()
                got[name].append((time.perf_counter() - t0, time.thread_time() - c0, time.process_time() - p0))
        med = {name: [statistics.median(x[i] for x in xs) for i in range(3)] for name, xs in got.items()}
        for name, (wall, thread, proc) in med.items():
            out[f"{n:,}: produce only, {name}: wall (s)"] = wall
            out[f"{n:,}: produce only, {name}: thread CPU (s)"] = thread
            out[f"{n:,}: produce only, {name}: process CPU (s)"] = proc
        for i, what in enumerate(("wall", "thread CPU", "process CPU")):
            out[f"{n:,}: ratio produce only, confluent / native, {what}"] = med["confluent"][i] / med["native"][i]
    out["load average"] = os.getloadavg()[0]
    return out


def _broker_process():
    """A librdkafka mock cluster in a child process (its CPU is not the producer's): (process, bootstrap)."""
    import subprocess

    code = ("import sys, time\nfrom connector.testing import EmbeddedKafka\nk = EmbeddedKafka()\n"
            "print(k.bootstrap_servers, flush=True)\nsys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def count_rows(batches):
    import pyarrow as pa

    yield pa.record_batch([pa.array([sum(b.num_rows for b in batches)])], names=["n"])


def _encode_only(schema_text: str, sid: int):
    def encode(batches):
        import pyarrow as pa

        from connector.formats import build_encoder, encode_column
        from wireformat import Framing

        class Spec:
            format, text = "avro", schema_text

        enc = build_encoder(Spec())
        n = 0
        for b in batches:
            values = pa.StructArray.from_arrays(b.columns, names=b.schema.names)
            out = encode_column(values, encoder=enc, framing=Framing.CONFLUENT, schema_id=sid)
            assert out.error_count == 0
            n += b.num_rows
        yield pa.record_batch([pa.array([n])], names=["n"])
    return encode


class _TrivialSink:
    """A Python data source whose writer only counts rows: Spark's own cost of a Python sink."""

    @staticmethod
    def register(spark) -> None:
        from dataclasses import dataclass

        from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

        @dataclass
        class Counted(WriterCommitMessage):
            n: int

        class Writer(DataSourceArrowWriter):
            def write(self, iterator):
                return Counted(sum(b.num_rows for b in iterator))

        class Sink(DataSource):
            @classmethod
            def name(cls):
                return "bench-trivial-sink"

            def writer(self, schema, overwrite):
                return Writer()

        spark.dataSource.register(Sink)


class _ProduceSink:
    """A Python data source whose writer produces, for every row it is given, a pre-encoded record
    with our sink's producer (``producer_for``, every delivery checked): Spark's Python sink plus
    our produce step, no encoding. The bound an encoder of zero cost would reach."""

    @staticmethod
    def register(spark) -> None:
        from dataclasses import dataclass

        from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

        @dataclass
        class Produced(WriterCommitMessage):
            n: int

        class Writer(DataSourceArrowWriter):
            def __init__(self, options):
                self.options = options

            def write(self, iterator):
                import pyarrow as pa

                from connector.kafka import producer_for

                with pa.memory_map(self.options["path"]) as src:
                    values = pa.ipc.open_file(src).read_all().column(0).combine_chunks()
                conf = json.loads(self.options["conf"])
                bp = producer_for(conf)
                n = 0
                try:
                    for b in iterator:
                        done = 0
                        while done < b.num_rows:
                            k = min(b.num_rows - done, len(values))
                            bp.produce(self.options["topic"], values.slice(0, k))
                            done += k
                        n += b.num_rows
                    bp.finish()
                except BaseException:
                    bp.abandon()
                    raise
                return Produced(n)

        class Sink(DataSource):
            @classmethod
            def name(cls):
                return "bench-produce-sink"

            def writer(self, schema, overwrite):
                return Writer(self.options)

        spark.dataSource.register(Sink)


def _frames_file(values: list[bytes]) -> str:
    """The first 10,000 ``values`` as an Arrow IPC file of one binary column (for :class:`_ProduceSink`)."""
    import pyarrow as pa

    fd, path = tempfile.mkstemp(suffix=".arrow")
    os.close(fd)
    batch = pa.record_batch([pa.array(values[:10_000], pa.binary())], names=["value"])
    with pa.OSFile(path, "wb") as f, pa.ipc.new_file(f, batch.schema) as w:
        w.write_batch(batch)
    return path


def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(sizes=(200_000, 1_000_000), runs: int = 3, spark=None) -> dict:
    """records/s of each path per size, the ratios, and the first-write figures."""
    from connector.testing import EmbeddedKafka, RegistryServer

    own = spark is None
    spark = spark or spark_session()
    out: dict = {}
    try:
        with RegistryServer() as registry, EmbeddedKafka() as kafka:
            sid = registry.register("bench-write-value", json.dumps(ORDER_V2))
            guarded = {**kafka.conf, "enable.idempotence": True, "acks": "all"}
            _TrivialSink.register(spark)
            _ProduceSink.register(spark)
            for i, n in enumerate(sizes):
                df = spark.range(n).selectExpr(*ORDER_SQL).repartition(2).cache()
                assert df.count() == n
                values = _order_frames(n, sid, ORDER_V2, 2)
                topic = f"bench-write-orders-{n}"
                with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                    f.write(_document(kafka.bootstrap_servers, registry.url, topic))
                    doc = f.name

                def ours() -> None:
                    (df.write.format("asyncapi-kafka").mode("append").option("asyncapi", doc)
                     .option("channel", "orders").option("auto.register.schemas", "true").save())

                def floor() -> None:
                    df.mapInArrow(count_rows, "n long").write.format("noop").mode("overwrite").save()

                def encode_only() -> None:
                    (df.mapInArrow(_encode_only(json.dumps(ORDER_V2), sid), "n long").write.format("noop")
                     .mode("overwrite").save())

                if i == 0:  # the session's first Python sink write, then ours, then a later one of ours
                    trivial = _seconds(lambda: df.write.format("bench-trivial-sink").mode("append").save())
                    first = _seconds(ours)
                    later = statistics.median(_seconds(ours) for _ in range(3))
                    out["first write: Spark's trivial Python sink (s)"] = trivial
                    out["first write: ours (s)"] = first
                    out["later writes: ours, median of 3 (s)"] = later
                else:
                    ours()
                raw_produce(guarded, f"{topic}-raw", values[:1000])
                floor()
                encode_only()
                def trivial_sink() -> None:
                    df.write.format("bench-trivial-sink").mode("append").save()

                frames = _frames_file(values)
                # the producer settings our sink derives for this write (idempotent, acks=all, ...)
                from connector.spark._source import AsyncApiKafkaDataSource

                sink_conf = (AsyncApiKafkaDataSource({"asyncapi": doc, "channel": "orders",
                                                      "auto.register.schemas": "true"})
                             .writer(df.schema, False).setup.kafka_conf(warn=False))

                def produce_sink() -> None:
                    (df.write.format("bench-produce-sink").mode("append").option("path", frames)
                     .option("topic", f"{topic}-bound").option("conf", json.dumps(sink_conf)).save())

                produce_sink()
                times: dict[str, list[float]] = {OURS: [], FLOOR: [], RAW: [], ENCODE: [], TRIVIAL: [], BOUND: []}
                for _ in range(runs):  # interleaved: the machine's load drifts
                    times[RAW].append(_seconds(lambda: raw_produce(guarded, f"{topic}-raw", values)))
                    times[FLOOR].append(_seconds(floor))
                    times[ENCODE].append(_seconds(encode_only))
                    times[TRIVIAL].append(_seconds(trivial_sink))
                    times[BOUND].append(_seconds(produce_sink))
                    times[OURS].append(_seconds(ours))
                os.unlink(frames)
                for k, ts in times.items():
                    out[f"{n:,}: {k}"] = n / statistics.median(ts)
                out[f"{n:,}: ratio ours / Spark floor"] = statistics.median(times[FLOOR]) / statistics.median(times[OURS])
                out[f"{n:,}: ratio ours / raw loop"] = statistics.median(times[RAW]) / statistics.median(times[OURS])
                out[f"{n:,}: ratio ours / trivial Python sink"] = (
                    statistics.median(times[TRIVIAL]) / statistics.median(times[OURS]))
                out[f"{n:,}: ratio trivial Python sink / Spark floor"] = (
                    statistics.median(times[FLOOR]) / statistics.median(times[TRIVIAL]))
                out[f"{n:,}: ratio trivial sink + our produce step / Spark floor"] = (
                    statistics.median(times[FLOOR]) / statistics.median(times[BOUND]))
                df.unpersist()
                os.unlink(doc)
    finally:
        if own:
            spark.stop()
    out["load average"] = os.getloadavg()[0]
    return out


ALO = "ours, deliveryGuarantee=at-least-once"
EOS = "ours, deliveryGuarantee=exactly-once"


def exactly_once(sizes=(200_000, 1_000_000), runs: int = 5, spark=None, brokers=("mock", "noida-db")) -> dict:
    """Exactly-once against at-least-once (issue 38): the same cached DataFrame (two partitions,
    so two tasks and two transactions per write) written both ways, alternating, medians. On the
    librdkafka mock cluster (transactions work, but it keeps no transactional offsets: each task
    still fences, looks its marker up and commits it) and on noida-db when installed (a broker
    that implements transactions and markers in full)."""
    import uuid

    from connector.testing import EmbeddedKafka, NoidaBroker, RegistryServer

    own = spark is None
    spark = spark or spark_session()
    out: dict = {}
    try:
        for name in brokers:
            if name == "noida-db" and not NoidaBroker.available():
                continue
            with RegistryServer() as registry, (EmbeddedKafka() if name == "mock" else NoidaBroker()) as kafka:
                registry.register("bench-eos-value", json.dumps(ORDER_V2))
                for n in sizes:
                    topic = f"bench-eos-{n}"
                    if name != "mock":
                        kafka.create_topic(topic, partitions=2)
                    df = spark.range(n).selectExpr(*ORDER_SQL).repartition(2).cache()
                    assert df.count() == n
                    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                        f.write(_document(kafka.bootstrap_servers, registry.url, topic))
                        doc = f.name

                    def write(guarantee: str) -> None:
                        w = (df.write.format("asyncapi-kafka").mode("append").option("asyncapi", doc)
                             .option("channel", "orders").option("auto.register.schemas", "true")
                             .option("deliveryGuarantee", guarantee))
                        if guarantee == "exactly-once":
                            w = w.option("writeId", f"bench-{uuid.uuid4().hex[:12]}")
                        w.save()

                    write("at-least-once")
                    write("exactly-once")
                    times: dict[str, list[float]] = {ALO: [], EOS: []}
                    for _ in range(runs):  # alternating: the machine's load drifts
                        times[ALO].append(_seconds(lambda: write("at-least-once")))
                        times[EOS].append(_seconds(lambda: write("exactly-once")))
                    for k, ts in times.items():
                        out[f"{name}, {n:,}: {k}"] = n / statistics.median(ts)
                    out[f"{name}, {n:,}: ratio exactly-once / at-least-once"] = (
                        statistics.median(times[ALO]) / statistics.median(times[EOS]))
                    out[f"{name}, {n:,}: load average"] = os.getloadavg()[0]
                    df.unpersist()
                    os.unlink(doc)
    finally:
        if own:
            spark.stop()
    return out


def show(res: dict) -> None:
    width = max(len(k) for k in res)
    for k, v in res.items():
        if "(s)" in k:
            print(f"{k:<{width}}  {v:>12.2f} s")
        elif "ratio" in k or "load" in k:
            print(f"{k:<{width}}  {v:>12.2f}")
        else:
            print(f"{k:<{width}}  {v:>12,.0f} records/s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[200_000, 1_000_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--produce-only", action="store_true",
                    help="only the in-process produce comparison (no Spark)")
    ap.add_argument("--exactly-once", action="store_true",
                    help="only exactly-once against at-least-once (mock cluster, and noida-db when installed)")
    args = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    if args.exactly_once:
        show(exactly_once(tuple(args.rows), args.runs))
        return 0
    if args.produce_only:
        broker, bootstrap = _broker_process()
        try:
            show(produce_only(bootstrap, tuple(args.rows), args.runs))
        finally:
            broker.kill()
            broker.wait()
        return 0
    show(run(tuple(args.rows), args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
