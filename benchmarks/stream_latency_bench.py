"""Streaming latency: produce-to-sink p50/p99 and per-micro-batch overhead, against ``rate``.

A producer thread in this process sends realistic order records (``spark_bench.ORDER_V2``,
Confluent-framed Avro, schema in the embedded registry) at a steady rate (1k and 20k records/s)
to one topic of the librdkafka mock cluster (4 partitions, round robin). A
``spark.readStream.format("asyncapi-kafka")`` query with the default trigger (the next
micro-batch starts as soon as the previous one ends and there is new data) writes into a
``foreachBatch`` sink. The baselines are the same query over Spark's ``rate`` source with
``rowsPerSecond`` set to the same rate (the JVM's cheapest source), and over a trivial Python
streaming data source that generates the same rows (``pyfloor``: Spark's own cost for any Python
stream source, 4 partitions per micro-batch like the 4 Kafka partitions, no Kafka, no decoding).

How latency is measured, per row:

* **produce time**: the Kafka timestamp (CreateTime), which the producer sets explicitly to the
  wall clock at its ``produce()`` call (milliseconds). For ``rate``, its ``timestamp`` column.
* **sink time**: the wall clock on the driver when the micro-batch's rows have reached the sink:
  the ``foreachBatch`` function collects the batch (``toArrow()`` of the timestamp column, plus a
  decoded field so the payload is really decoded) and stamps the time the collect returns. Every
  row of a batch gets that one sink time.
* latency = sink time − produce time, over the rows produced inside the measurement window
  (after a warm-up of ``warmup_s`` seconds *and* at least 3 non-empty batches, which absorbs the
  first batch's Python worker start), for ``measure_s`` seconds. p50/p99 are over rows.

All clocks are this machine's wall clock (driver, producer and executors are local).

Caveat on the baseline: the ``rate`` source advances its offset in whole seconds since the query
started, and gives the rows of second *s* timestamps spread evenly over *s*; they only become
visible once *s* has ended. Its latency therefore includes about 0.5 s (up to 1 s) of its own
design before any Spark cost; the per-batch durations are the fairer comparison of fixed costs,
and ``pyfloor`` (offsets in milliseconds, rows visible as soon as their time has passed) is the
fair latency floor for a Python source.

Per-micro-batch overhead comes from ``query.recentProgress``: medians over the batches that read
rows of ``durationMs`` (``latestOffset``, ``queryPlanning``, ``getBatch``, ``addBatch``,
``walCommit``, ``commitOffsets``, ``triggerExecution``). Then :func:`own_costs` times our own
part without Spark, in this process, on the same topic: the stream reader's ``latestOffset`` and
``partitions`` (what Spark asks the planner process per trigger) and ``read`` of one
partition's share of a one-second range (what one task does).

``--sources traced`` adds a diagnostic case: ``ours`` with each executor ``read()`` timed inside
Spark's Python workers (:func:`task_trace`).

Run: ``python -m benchmarks.stream_latency_bench [--quick] [--runs N] [--rates 1000,20000]
[--sources ours,rate,pyfloor,traced]`` (or ``python -m benchmarks --sections latency``).
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
import uuid

import numpy as np

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers on this interpreter (FACTS.md)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

RATES = (1_000, 20_000)
#: ours; Spark's rate source (the issue's baseline); a trivial Python stream source (Spark's floor)
SOURCES = ("ours", "rate", "pyfloor")
DURATIONS = ("latestOffset", "queryPlanning", "getBatch", "addBatch", "walCommit", "commitOffsets",
             "triggerExecution")


# ---------------------------------------------------------------------------- pure parts (tested)
def latency_stats(sink_s: np.ndarray, produced_s: np.ndarray, lo: float, hi: float) -> dict:
    """Produce-to-sink latency of the rows produced in ``[lo, hi)``.

    Parameters
    ----------
    sink_s, produced_s : numpy.ndarray
        Per row, seconds since the epoch: when the row reached the sink, when it was produced.
    lo, hi : float
        The measurement window, on produce time.

    Returns
    -------
    dict
        ``rows``, ``p50_ms``, ``p99_ms``, ``max_ms`` (``None`` values when no row is in the window).

    Examples
    --------
    >>> import numpy as np
    >>> produced = np.array([0.0, 0.2, 0.5, 1.0, 9.0])
    >>> sink = np.array([1.0, 1.0, 1.0, 2.0, 9.1])
    >>> latency_stats(sink, produced, 0.0, 2.0)
    {'rows': 4, 'p50_ms': 900.0, 'p99_ms': 1000.0, 'max_ms': 1000.0}
    """
    sink_s, produced_s = np.asarray(sink_s, dtype=np.float64), np.asarray(produced_s, dtype=np.float64)
    if sink_s.shape != produced_s.shape:
        raise ValueError("one sink time per produced time")
    inside = (produced_s >= lo) & (produced_s < hi)
    lat_ms = (sink_s[inside] - produced_s[inside]) * 1000.0
    if not lat_ms.size:
        return {"rows": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    p50, p99 = np.percentile(lat_ms, [50, 99])
    return {"rows": int(lat_ms.size), "p50_ms": round(float(p50), 1), "p99_ms": round(float(p99), 1),
            "max_ms": round(float(lat_ms.max()), 1)}


def batch_overhead(progresses: list[dict], first_batch: int = 0) -> dict:
    """Medians of the ``durationMs`` parts over the micro-batches that read rows.

    Progress events of idle triggers (no new data: ``numInputRows`` 0, no ``addBatch``) and
    batches before ``first_batch`` (warm-up) are left out; one event per batch id (the last).

    Examples
    --------
    >>> ps = [{"batchId": 0, "numInputRows": 5, "durationMs": {"addBatch": 900, "triggerExecution": 1000}},
    ...       {"batchId": 1, "numInputRows": 5, "durationMs": {"addBatch": 90, "triggerExecution": 100}},
    ...       {"batchId": 1, "numInputRows": 0, "durationMs": {"latestOffset": 3, "triggerExecution": 3}},
    ...       {"batchId": 2, "numInputRows": 7, "durationMs": {"addBatch": 110, "triggerExecution": 140}}]
    >>> r = batch_overhead(ps, first_batch=1)
    >>> r["batches"], r["rows_per_batch"], r["addBatch"], r["triggerExecution"], r["outside_addBatch"]
    (2, 6.0, 100.0, 120.0, 20.0)
    """
    by_id: dict[int, dict] = {}
    for p in progresses:
        d = p.get("durationMs") or {}
        if p.get("numInputRows", 0) > 0 and "addBatch" in d and p["batchId"] >= first_batch:
            by_id[p["batchId"]] = p
    rows = list(by_id.values())
    out: dict = {"batches": len(rows)}
    if not rows:
        return out
    out["rows_per_batch"] = statistics.median(p["numInputRows"] for p in rows)
    for k in DURATIONS:
        vals = [p["durationMs"][k] for p in rows if k in p["durationMs"]]
        if vals:
            out[k] = statistics.median(vals)
    out["outside_addBatch"] = statistics.median(
        p["durationMs"]["triggerExecution"] - p["durationMs"]["addBatch"] for p in rows
        if "triggerExecution" in p["durationMs"])
    return out


# ---------------------------------------------------------------------------- moving parts
class Sink:
    """``foreachBatch`` function: per batch, the rows' produce times and the sink time."""

    def __init__(self, decoded_field: str | None):
        self.decoded_field = decoded_field
        self.sink_s: list[np.ndarray] = []
        self.produced_s: list[np.ndarray] = []
        self.batches = 0
        self.undecoded = 0

    def __call__(self, df, batch_id) -> None:
        from pyspark.sql import functions as F

        cols = [F.unix_micros("timestamp").alias("ts")]
        if self.decoded_field:  # a decoded value: the payload must really be decoded
            cols.append(F.col(self.decoded_field).isNull().alias("undecoded"))
        got = df.select(*cols).toArrow()
        now = time.time()
        if not got.num_rows:
            return
        ts = got.column("ts").to_numpy() / 1e6
        self.produced_s.append(ts)
        self.sink_s.append(np.full(ts.shape, now))
        self.batches += 1
        if self.decoded_field:
            self.undecoded += int(np.count_nonzero(got.column("undecoded").to_numpy(zero_copy_only=False)))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.sink_s:
            return np.empty(0), np.empty(0)
        return np.concatenate(self.sink_s), np.concatenate(self.produced_s)

    def seen_until(self) -> float:
        """Newest produce time the sink has seen (0 before any row)."""
        return float(max(a.max() for a in self.produced_s)) if self.produced_s else 0.0


class SteadyProducer(threading.Thread):
    """Produces ``values`` round robin over ``partitions`` at ``rate`` records/s, in 5 ms ticks,
    each record stamped (Kafka CreateTime) with the wall clock at its ``produce()`` call."""

    TICK_S = 0.005

    def __init__(self, kafka, topic: str, values: list[bytes], rate: int, partitions: int = 4):
        super().__init__(daemon=True)
        self.kafka, self.topic, self.values, self.rate, self.partitions = kafka, topic, values, rate, partitions
        self.stop_event = threading.Event()
        self.sent = 0
        self.stamps: list[tuple[float, int]] = []  # (time, records sent so far), once a second
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            producer = self.kafka._producer  # the mock cluster's own client (EmbeddedKafka owns it)
            t0 = time.perf_counter()
            n_values, last_stamp = len(self.values), 0.0
            while not self.stop_event.is_set():
                due = int((time.perf_counter() - t0) * self.rate)
                while self.sent < due:
                    i = self.sent
                    try:
                        producer.produce(self.topic, self.values[i % n_values], partition=i % self.partitions,
                                         timestamp=int(time.time() * 1000))
                    except BufferError:
                        producer.poll(0.01)
                        continue
                    self.sent += 1
                producer.poll(0)
                now = time.time()
                if now - last_stamp >= 1.0:
                    self.stamps.append((now, self.sent))
                    last_stamp = now
                time.sleep(self.TICK_S)
            producer.flush(30)
        except BaseException as e:
            self.error = e


def _document(bootstrap: str, registry_url: str, topic: str) -> str:
    from benchmarks.spark_bench import ORDER_V2

    doc = {
        "asyncapi": "3.0.0", "info": {"title": "Latency bench", "version": "1.0.0"},
        "servers": {"local": {"host": bootstrap, "protocol": "kafka", "bindings": {"kafka": {
            "schemaRegistryUrl": registry_url, "schemaRegistryVendor": "confluent", "bindingVersion": "0.5.0"}}}},
        "channels": {"orders": {"address": topic, "messages": {"order": {"$ref": "#/components/messages/Order"}}}},
        "operations": {"readOrders": {"action": "receive", "channel": {"$ref": "#/channels/orders"}}},
        "components": {"messages": {"Order": {
            "name": "Order",
            "payload": {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": ORDER_V2},
            "bindings": {"kafka": {"schemaIdLocation": "payload", "schemaIdPayloadEncoding": "confluent",
                                   "bindingVersion": "0.5.0"}}}}},
    }
    return json.dumps(doc)


def _python_floor_source():
    """A trivial Python streaming data source: ``rate``'s rows through Spark's Python data
    source path, without Kafka or decoding (Spark's floor for any Python stream source).

    Offsets are milliseconds since the epoch, so rows are visible as soon as their time has
    passed (no whole-second steps as in ``rate``); row *k* has timestamp ``k / rate`` s;
    every micro-batch is split into 4 partitions like the 4 Kafka partitions of ``ours``."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class FloorReader(DataSourceStreamReader):
        def __init__(self, rate: int):
            self.rate = rate
            self.start_ms: int | None = None

        def _index(self, ms: int) -> int:  # rows whose time is before ms
            return -(-ms * self.rate // 1000)

        def initialOffset(self):
            if self.start_ms is None:  # asked twice on a fresh query (FACTS.md): answer once
                self.start_ms = int(time.time() * 1000)
            return {"ms": self.start_ms}

        def latestOffset(self):
            return {"ms": int(time.time() * 1000)}

        def partitions(self, start, end):
            lo, hi = self._index(start["ms"]), self._index(end["ms"])
            cuts = np.linspace(lo, hi, 5).astype(np.int64)
            return [InputPartition((int(a), int(b))) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]

        def read(self, partition):
            a, b = partition.value
            k = np.arange(a, b, dtype=np.int64)  # row k's time: k / rate seconds since the epoch
            # (k // rate) s + (k % rate) / rate s, in µs: k * 1e6 alone overflows int64
            ts = k // self.rate * 1_000_000 + k % self.rate * 1_000_000 // self.rate
            yield pa.RecordBatch.from_arrays(
                [pa.array(ts, pa.timestamp("us", tz="UTC")), pa.array(k)], names=["timestamp", "value"])

        def commit(self, end):
            pass

    class FloorSource(DataSource):
        @classmethod
        def name(cls):
            return "bench-stream-floor"

        def schema(self):
            return "timestamp timestamp, value long"

        def streamReader(self, schema):
            return FloorReader(int(self.options["rowspersecond"]))

    return FloorSource


def _traced_source(trace_path: str):
    """``asyncapi-kafka`` with each executor ``read()`` timed into ``trace_path`` (one JSON line
    per task: pid, call, first batch out, end, rows): our work per task inside Spark's worker.
    Diagnostic only (``--trace``): the measured cases use the real ``asyncapi-kafka`` format."""
    from connector.spark import AsyncApiKafkaDataSource
    from connector.spark._stream import StreamReader

    class TracedReader(StreamReader):
        def read(self, partition):
            t_call, t_first, rows = time.time(), None, 0
            for batch in super().read(partition):
                if t_first is None:
                    t_first = time.time()
                rows += batch.num_rows
                yield batch
            with open(trace_path, "a") as f:
                f.write(json.dumps({"pid": os.getpid(), "call": t_call, "first": t_first or time.time(),
                                    "end": time.time(), "rows": rows}) + "\n")

    class TracedSource(AsyncApiKafkaDataSource):
        @classmethod
        def name(cls):
            return "asyncapi-kafka-traced"

        def streamReader(self, schema):
            return TracedReader(super().streamReader(schema).setup)

    return TracedSource


def task_trace(path: str, lo: float) -> dict:
    """Medians (ms) over the traced tasks that started at or after ``lo``: from ``read()`` called
    to its first batch out (consumer, fetch, decode: ours) and from there to the end (Spark taking
    the batch while the generator waits, then our clean-up)."""
    with open(path) as f:
        tasks = [t for t in map(json.loads, f) if t["call"] >= lo]
    if not tasks:
        return {"tasks": 0}
    return {"tasks": len(tasks), "pids": len({t["pid"] for t in tasks}),
            "rows_per_task": statistics.median(t["rows"] for t in tasks),
            "to_first_batch_ms": round(statistics.median(t["first"] - t["call"] for t in tasks) * 1000, 1),
            "first_batch_to_end_ms": round(statistics.median(t["end"] - t["first"] for t in tasks) * 1000, 1)}


def _wait(cond, timeout_s: float, what: str, query=None) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if query is not None and query.exception() is not None:
            raise RuntimeError(f"query failed while waiting for {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout_s:.0f} s")
        time.sleep(0.05)


def run_case(spark, env: dict, source: str, rate: int, warmup_s: float, measure_s: float) -> dict:
    """One query (``source``: one of :data:`SOURCES`) at ``rate`` records/s: latency and
    per-batch overhead over the measurement window."""
    ck = tempfile.mkdtemp(prefix="latency-ck-")
    producer = None
    trace = os.path.join(ck, "trace.jsonl")
    if source in ("ours", "traced"):
        topic = f"latency-{rate}-{uuid.uuid4().hex[:8]}"
        env["kafka"].create_topic(topic)
        doc = os.path.join(ck, "doc.json")
        with open(doc, "w") as f:
            f.write(_document(env["kafka"].bootstrap_servers, env["registry"].url, topic))
        fmt = "asyncapi-kafka"
        if source == "traced":
            spark.dataSource.register(_traced_source(trace))
            fmt = "asyncapi-kafka-traced"
        df = (spark.readStream.format(fmt).option("asyncapi", doc).option("channel", "orders")
              .option("startingOffsets", "earliest").load())
        sink = Sink("value.orderId")
        producer = SteadyProducer(env["kafka"], topic, env["values"], rate)
        # One seed record first; the steady producer starts once it has reached the sink: a cold
        # first batch (Python workers starting, 10 s and more on a busy machine) would otherwise
        # plan a backlog the mock broker (~5 MB per partition) drops before it is read.
        env["kafka"].produce(topic, env["values"][0], partition=0)
        env["kafka"].flush()
    elif source == "rate":
        df = spark.readStream.format("rate").option("rowsPerSecond", str(rate)).load()
        sink = Sink(None)
    else:
        spark.dataSource.register(_python_floor_source())
        df = spark.readStream.format("bench-stream-floor").option("rowsPerSecond", str(rate)).load()
        sink = Sink(None)
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", ck).start()
    try:
        if producer is not None:
            _wait(lambda: sink.batches >= 1, 300, "the seed record", query)
            producer.start()
        t_start = time.time()
        # warm-up: at least warmup_s and 3 non-empty batches (the first starts Python workers)
        _wait(lambda: sink.batches >= 3 and time.time() - t_start >= warmup_s, warmup_s + 120,
              "3 batches after warm-up", query)
        lo = time.time()
        registry_before = env["registry"].request_count() if producer is not None else 0
        first_batch = query.lastProgress["batchId"] + 1 if query.lastProgress else 0
        hi = lo + measure_s
        _wait(lambda: sink.seen_until() >= hi, measure_s + 120, "rows past the window", query)
        registry_in_window = env["registry"].request_count() - registry_before if producer is not None else 0
        progresses = list(query.recentProgress)
    finally:
        query.stop()
        if producer is not None:
            producer.stop_event.set()
            producer.join(60)
    if producer is not None and producer.error is not None:
        raise RuntimeError(f"producer failed: {producer.error!r}")
    sink_s, produced_s = sink.arrays()
    out = latency_stats(sink_s, produced_s, lo, hi)
    out["overhead"] = batch_overhead(progresses, first_batch)
    inside = int(np.count_nonzero((produced_s >= lo) & (produced_s < hi)))
    out["rate_in_window"] = round(inside / measure_s)
    if source == "traced":
        out["tasks"] = task_trace(trace, lo)
    if producer is not None:
        if sink.undecoded:
            raise RuntimeError(f"{sink.undecoded} rows reached the sink without a decoded value")
        stamps = [(t, n) for t, n in producer.stamps if lo <= t < hi]
        if len(stamps) >= 2:
            out["produced_rate"] = round((stamps[-1][1] - stamps[0][1]) / (stamps[-1][0] - stamps[0][0]))
        out["topic"], out["doc"] = topic, doc
        out["registry_requests_in_window"] = registry_in_window
    return out


def own_costs(env: dict, doc: str, rate: int, repeats: int = 20) -> dict:
    """Our per-trigger and per-task work without Spark, in this process, warm (medians, ms):
    the stream reader's ``latestOffset`` and ``partitions``, and ``read`` of one partition's
    share of one second of records (``rate / 4``), each with a fresh consumer as on executors."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from connector.spark import AsyncApiKafkaDataSource
    from connector.spark import _offsets as off

    ds = AsyncApiKafkaDataSource({"asyncapi": doc, "channel": "orders", "startingOffsets": "earliest"})
    reader = ds.streamReader(ds.schema())
    start = reader.initialOffset()
    latest, parts = [], []
    end = start
    for _ in range(repeats):
        t0 = time.perf_counter()
        end = reader.latestOffset(start, ReadAllAvailable())
        latest.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        reader.partitions(start, end)
        parts.append(time.perf_counter() - t0)
    ends = off.from_json(end)
    tp = min(ends)
    span = max(1, rate // 4)
    lo = max(0, ends[tp] - span)  # the newest records: older ones may have aged out of the mock
    (part,) = reader.partitions(off.to_json({tp: lo}), off.to_json({tp: lo + span}))
    reads, rows = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows = sum(b.num_rows for b in reader.read(part))
        reads.append(time.perf_counter() - t0)
    reader.stop()
    ms = lambda xs: round(statistics.median(xs) * 1000, 1)
    return {"latestOffset_ms": ms(latest), "partitions_ms": ms(parts), f"read_{rows}_rows_ms": ms(reads)}


def spark_session():
    from benchmarks.spark_bench import spark_session as session

    spark = session()
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    return spark


def run(rates=RATES, runs: int = 3, warmup_s: float = 10.0, measure_s: float = 30.0,
        out: dict | None = None, sources=SOURCES) -> dict:
    """Every (rate, source) case ``runs`` times, alternating; medians per case."""
    import fastavro  # noqa: F401  (fail early when the bench's own dependencies are missing)

    from benchmarks.spark_bench import ORDER_V2, _order_frames
    from connector.testing import EmbeddedKafka, RegistryServer

    out = {} if out is None else out
    spark = spark_session()
    import pyspark_asyncapi_kafka  # noqa: F401  (auto-registration, as PySpark does it)
    raw: dict[tuple[int, str], list[dict]] = {}
    own: dict[int, dict] = {}
    failed: dict[tuple[int, str], list[str]] = {}
    try:
        with RegistryServer() as registry, EmbeddedKafka() as kafka:
            sid = registry.register("orders-value", json.dumps(ORDER_V2))
            env = {"kafka": kafka, "registry": registry, "values": _order_frames(5000, sid, ORDER_V2, 2)}
            for r in range(runs):
                for rate in rates:
                    for source in sources:
                        try:
                            got = run_case(spark, env, source, rate, warmup_s, measure_s)
                        except Exception as e:  # a busy machine can stall a query: say so, go on
                            print(f"  run {r + 1}/{runs} {source:>4} @ {rate:>6,}/s FAILED: "
                                  f"{type(e).__name__}: {str(e)[:300]}", flush=True)
                            failed.setdefault((rate, source), []).append(f"{type(e).__name__}: {str(e)[:300]}")
                            continue
                        raw.setdefault((rate, source), []).append(got)
                        print(f"  run {r + 1}/{runs} {source:>4} @ {rate:>6,}/s: p50 {got['p50_ms']} ms, "
                              f"p99 {got['p99_ms']} ms, {got['overhead'].get('batches')} batches, "
                              f"load {os.getloadavg()[0]:.1f}", flush=True)
                        if source == "ours" and r == runs - 1:
                            try:
                                own[rate] = own_costs(env, got["doc"], rate)
                            except Exception as e:
                                print(f"  own costs @ {rate:,}/s FAILED: {type(e).__name__}: {e}", flush=True)
    finally:
        spark.stop()
    for (rate, source), cases in raw.items():
        med = lambda k, cs=cases: statistics.median(c[k] for c in cs if c.get(k) is not None)
        ov = {k: statistics.median(c["overhead"][k] for c in cases if k in c["overhead"])
              for k in cases[0]["overhead"]}
        out[f"{source} @ {rate}/s"] = {"p50_ms": med("p50_ms"), "p99_ms": med("p99_ms"), "max_ms": med("max_ms"),
                                        "rows": med("rows"), "overhead_ms": ov, "runs": len(cases),
                                        "own_costs_ms": own.get(rate) if source == "ours" else None,
                                        "failed_runs": failed.get((rate, source), [])}
        if source in ("ours", "traced"):
            out[f"{source} @ {rate}/s"]["registry_requests_in_window"] = max(
                c["registry_requests_in_window"] for c in cases)
        if source == "traced":
            out[f"{source} @ {rate}/s"]["tasks"] = cases[-1]["tasks"]
    for (rate, source), errors in failed.items():
        out.setdefault(f"{source} @ {rate}/s", {"failed_runs": errors})
    return out


def report(results: dict) -> None:
    print(f"\n{'case':<18}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'rows/batch':>11}{'batch ms':>10}"
          f"{'addBatch':>9}{'latestOff':>10}{'planning':>9}{'wal+commit':>11}")
    for name, r in results.items():
        if "p50_ms" not in r:
            print(f"{name:<18} every run failed")
            continue
        o = r["overhead_ms"]
        wal = o.get("walCommit", 0) + o.get("commitOffsets", 0)
        print(f"{name:<18}{r['p50_ms']:>9}{r['p99_ms']:>9}{r['max_ms']:>9}{o.get('rows_per_batch', 0):>11.0f}"
              f"{o.get('triggerExecution', 0):>10.0f}{o.get('addBatch', 0):>9.0f}{o.get('latestOffset', 0):>10.0f}"
              f"{o.get('queryPlanning', 0) + o.get('getBatch', 0):>9.0f}{wal:>11.0f}")
    for name, r in results.items():
        if r.get("own_costs_ms"):
            print(f"our own work per trigger/task, no Spark ({name}): {r['own_costs_ms']}")
        if "registry_requests_in_window" in r:
            print(f"registry requests during the measurement window ({name}): {r['registry_requests_in_window']}")
        if r.get("failed_runs"):
            print(f"failed runs ({name}): {r['failed_runs']}")
        if r.get("tasks"):
            print(f"our read() per task inside Spark's workers ({name}): {r['tasks']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one run, 5 s warm-up, 8 s window")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rates", default=",".join(map(str, RATES)))
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=30.0, help="measurement window per case")
    ap.add_argument("--sources", default=",".join(SOURCES),
                    help="comma list of " + ",".join(SOURCES) + ",traced (ours with executor reads timed)")
    args = ap.parse_args(argv)
    rates = tuple(int(x) for x in args.rates.split(","))
    print(f"load average at start: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    sources = tuple(x.strip() for x in args.sources.split(",") if x.strip())
    if args.quick:
        results = run(rates, runs=1, warmup_s=5, measure_s=8, sources=sources)
    else:
        results = run(rates, runs=args.runs, warmup_s=args.warmup, measure_s=args.seconds, sources=sources)
    report(results)
    print(f"load average at end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
