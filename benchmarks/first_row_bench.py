"""Time to first row through Spark, cold (a fresh process) and warm, against Spark's own cost.

Each scenario runs in a fresh Python process (``--child``), alternating, medians of ``runs``:

* ``ours``: ``SparkSession`` start, the first ``spark.read.format("asyncapi-kafka").load()`` of a
  50-record Confluent-framed Avro channel (document, registry look-up, schema), the first
  ``limit(5).toPandas()``; then the same load and action again (warm, same session).
* ``spark``: the same steps with a trivial Python data source that yields one row: Spark's own
  cost for a Python data source (planner workers, Python worker start, task scheduling).
* ``inproc``: our own part without Spark, in a fresh interpreter: importing the package as
  Spark's lookup does, building the read (``schema()``: document, registry, decoders), planning
  it (``partitions()``: metadata and offsets) and reading every partition (consume + decode).

The broker (librdkafka mock cluster) and the registry live in the parent process; children
connect over loopback. Run: ``python -m benchmarks.first_row_bench [--runs N]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STEPS = ("session", "load", "first_action", "warm_load", "warm_action")


def _session():
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[2]").appName("first-row")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
            .config("spark.pyspark.python", sys.executable).getOrCreate())


def _one_row_source():
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class OneRowReader(DataSourceReader):
        def read(self, partition):
            yield (1, "one")

    class OneRow(DataSource):
        @classmethod
        def name(cls):
            return "bench-one-row"

        def schema(self):
            return "id int, name string"

        def reader(self, schema):
            return OneRowReader()

    return OneRow


def child(kind: str, doc: str) -> dict[str, float]:
    """One cold scenario in this (fresh) process: seconds per step."""
    t: dict[str, float] = {}
    t0 = time.perf_counter()
    if kind == "inproc":
        import pyspark_asyncapi_kafka  # noqa: F401  (what Spark's data source lookup imports)
        t["import"] = time.perf_counter() - t0
        from connector.spark._source import AsyncApiKafkaDataSource

        t1 = time.perf_counter()
        ds = AsyncApiKafkaDataSource({"asyncapi": doc, "channel": "orders"})
        schema = ds.schema()
        t["schema"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        reader = ds.reader(schema)
        parts = reader.partitions()
        t["partitions"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        rows = sum(b.num_rows for p in parts for b in reader.read(p))
        t["read"] = time.perf_counter() - t1
        assert rows == 50, rows
        return t
    spark = _session()
    spark.sparkContext.setLogLevel("ERROR")
    t["session"] = time.perf_counter() - t0

    def load():
        if kind == "spark":
            return spark.read.format("bench-one-row").load()
        return spark.read.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "orders").load()

    if kind == "spark":
        spark.dataSource.register(_one_row_source())
    for prefix in ("", "warm_"):
        t1 = time.perf_counter()
        df = load()
        t[prefix + "load"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        got = df.limit(5).toPandas()
        t[prefix + ("action" if prefix else "first_action")] = time.perf_counter() - t1
        assert len(got) == (1 if kind == "spark" else 5), got
    spark.stop()
    return t


def _setup(kafka, registry) -> str:
    """A 50-record channel of Confluent-framed Avro orders; returns the document's path."""
    import io

    import fastavro

    from benchmarks.spark_bench import ORDER_V2, _orders_document, order_records

    sid = registry.register("orders.eu-value", json.dumps(ORDER_V2))
    parsed = fastavro.parse_schema(ORDER_V2)
    for i, r in enumerate(order_records(50, 2)):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        kafka.produce("orders.eu", b"\x00" + sid.to_bytes(4, "big") + buf.getvalue(), partition=i % 4)
    kafka.flush()
    text = json.loads(_orders_document(kafka.bootstrap_servers, registry.url))
    text["channels"]["orders"]["address"] = "orders.eu"
    text["channels"]["orders"].pop("parameters")
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(text, f)
    return path


def run(runs: int = 3, out: dict | None = None) -> dict:
    """Medians (s) per scenario and step; ``out`` gets ``{"first row: <kind> <step>": seconds}``."""
    from connector.testing import EmbeddedKafka, RegistryServer

    out = {} if out is None else out
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    samples: dict[str, dict[str, list[float]]] = {}
    with RegistryServer() as registry, EmbeddedKafka() as kafka:
        doc = _setup(kafka, registry)
        try:
            for _ in range(runs):
                for kind in ("ours", "spark", "inproc"):
                    t0 = time.perf_counter()
                    res = subprocess.run([sys.executable, "-m", "benchmarks.first_row_bench", "--child", kind, doc],
                                         cwd=_ROOT, env=env, capture_output=True, text=True, timeout=600)
                    wall = time.perf_counter() - t0
                    if res.returncode != 0:
                        raise RuntimeError(f"{kind} child failed: {res.stderr[-2000:]}")
                    got = json.loads(res.stdout.strip().splitlines()[-1])
                    got["process"] = wall
                    for k, v in got.items():
                        samples.setdefault(kind, {}).setdefault(k, []).append(v)
        finally:
            os.unlink(doc)
    for kind, steps in samples.items():
        for step, values in steps.items():
            out[f"first row: {kind} {step}"] = statistics.median(values)
    return out


def report(out: dict) -> None:
    def g(kind, step):
        return out.get(f"first row: {kind} {step}", float("nan"))

    print(f"  {'step (median s)':<34}{'ours':>8}{'Spark one-row DS':>18}")
    for step in STEPS:
        print(f"  {step:<34}{g('ours', step):>8.2f}{g('spark', step):>18.2f}")
    cold = g("ours", "load") + g("ours", "first_action")
    cold_spark = g("spark", "load") + g("spark", "first_action")
    warm = g("ours", "warm_load") + g("ours", "warm_action")
    warm_spark = g("spark", "warm_load") + g("spark", "warm_action")
    inproc = sum(g("inproc", s) for s in ("import", "schema", "partitions", "read"))
    print(f"  cold load + first action: ours {cold:.2f} s, Spark's one-row source {cold_spark:.2f} s")
    print(f"  warm load + action:       ours {warm:.2f} s, Spark's one-row source {warm_spark:.2f} s")
    print("  ours in-process, no Spark: import {:.2f} + schema {:.2f} + partitions {:.2f} + read {:.2f} = {:.2f} s"
          .format(g("inproc", "import"), g("inproc", "schema"), g("inproc", "partitions"), g("inproc", "read"),
                  inproc))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", nargs=2, metavar=("KIND", "DOC"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    load = os.getloadavg()
    out = run(args.runs)
    report(out)
    print(f"  load average {load[0]:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
