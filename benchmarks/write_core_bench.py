"""The sink's per-task core without Spark (``connector.write``), and an A/B of it against another commit.

Same run, same librdkafka mock cluster, same records: the realistic order schema
(``spark_bench.ORDER_V2``: nested records, a map, decimals, enums, nullable fields; Avro, Confluent
framing, the id registered by the setup), in Arrow batches of 10,000 rows (Spark's batch size):

* **encode_batch**: each batch's topics, key, encoded and framed value, headers (no Kafka);
* **write_batches**: a write task's whole work (encode, ``BatchProducer.produce``, every delivery
  report checked before it returns);
* baseline, **raw produce loop**: confluent-kafka's ``produce()`` per record on the same values
  already encoded and framed, then ``flush()``, with the same producer guarantees.

Wall-clock rates and CPU rates (the encoding thread's ``thread_time``; the process's
``process_time``, librdkafka's threads included) are medians of ``--runs``.

``--ab REF``: the same measure in fresh processes, alternating this tree and ``REF`` (exported with
``git archive`` into a temporary directory), ``--pairs`` times, then the medians and the ratios
this/REF. A ``REF`` from before ``connector.write`` existed is measured through the Spark layer's
modules of that time (the same code, where it lived).

Run: ``python -m benchmarks.write_core_bench [--rows N] [--runs R] [--ab main --pairs 8]``.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve()
BATCH = 10_000
ENCODE, WRITE, RAW = "encode_batch (no Kafka)", "write_batches (encode + produce, every report)", \
    "raw produce loop, pre-encoded, idempotent"


def _core():
    """(build_write_setup taking an Arrow schema, encode_batch, write_batches) of the tree imported."""
    try:
        from connector.write import build_write_setup, encode_batch, write_batches
        return build_write_setup, encode_batch, write_batches
    except ImportError:  # a tree from before connector.write: the same code in the Spark layer
        from pyspark.sql.pandas.types import from_arrow_schema

        from connector.spark._write import build_write_setup as spark_setup
        from connector.spark._write_task import encode_batch, write_batches

        return (lambda opts, schema: spark_setup(opts, from_arrow_schema(schema))), encode_batch, write_batches


def measure(n: int = 200_000, runs: int = 5) -> dict:
    """Rates (records/s) of the core and the baseline, wall and CPU, in this process."""
    import pyarrow as pa

    from benchmarks.spark_bench import order_records
    from benchmarks.spark_write_bench import _document, raw_produce
    from connector.options._parse import parse_options
    from connector.testing import EmbeddedKafka, RegistryServer

    build_write_setup, encode_batch, write_batches = _core()
    out: dict = {}
    with RegistryServer() as registry, EmbeddedKafka() as kafka:
        topic = "core-orders"
        doc = _document(kafka.bootstrap_servers, registry.url, topic)
        opts = parse_options({"asyncapi": doc, "channel": "orders", "auto.register.schemas": "true"},
                             direction="write")
        # the value column's type: the one the channel's encoder takes
        from connector.read import load_plan, registry_config
        from connector.schema import SchemaRequest, value_writer

        plan = load_plan(opts, sending=True)
        vtype = value_writer(SchemaRequest.from_options(opts), plan=plan, registry=registry_config(opts, plan),
                             framing=plan.framing(), topic=topic).encoder.arrow_type
        schema = pa.schema([("key", pa.string()), ("value", vtype)])
        setup = build_write_setup(opts, schema)
        recs = order_records(min(n, BATCH), 2)
        batch = pa.record_batch([pa.array([r["orderId"] for r in recs]), pa.array(recs, vtype)], schema=schema)
        batches = [batch] * max(1, n // BATCH)
        total = len(batches) * batch.num_rows
        encoded = encode_batch(setup, batch)[1].to_pylist()
        raw_values = [encoded[i % len(encoded)] for i in range(total)]
        conf = {**setup.kafka_conf(warn=False), "enable.idempotence": "true", "acks": "all"}

        cases = {ENCODE: (lambda: [encode_batch(setup, b) for b in batches], time.thread_time),
                 WRITE: (lambda: write_batches(setup, iter(batches)), time.process_time),
                 RAW: (lambda: raw_produce(conf, topic, raw_values), time.process_time)}
        for fn, _ in cases.values():
            fn()  # warm-up: compiles, connections, the topic's metadata
        wall: dict = {k: [] for k in cases}
        cpu: dict = {k: [] for k in cases}
        for _ in range(runs):  # alternating the cases within each run
            for name, (fn, clock) in cases.items():
                t, c = time.perf_counter(), clock()
                fn()
                wall[name].append(time.perf_counter() - t)
                cpu[name].append(clock() - c)
        for name in cases:
            out[name] = total / statistics.median(wall[name])
            out[f"{name} (CPU)"] = total / statistics.median(cpu[name])
        out[f"ratio {WRITE} / {RAW}"] = out[WRITE] / out[RAW]
    return out


def ab(ref: str, n: int, runs: int, pairs: int) -> dict:
    """Alternating fresh processes of this tree and ``ref``: the medians of each rate and this/ref."""
    root = HERE.parents[1]
    with tempfile.TemporaryDirectory(prefix="write-core-ab-") as tmp:
        other = pathlib.Path(tmp) / "ref"
        other.mkdir()
        archive = subprocess.run(["git", "archive", ref], cwd=root, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(other)], input=archive, check=True)
        got: dict[str, list[dict]] = {"this": [], ref: []}
        loads = []
        for i in range(pairs):
            for label, tree in ((("this", root), (ref, other)) if i % 2 == 0 else ((ref, other), ("this", root))):
                loads.append(os.getloadavg()[0])
                proc = subprocess.run([sys.executable, str(HERE), "--rows", str(n), "--runs", str(runs), "--json"],
                                      cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True,
                                      capture_output=True, text=True)
                got[label].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out: dict = {}
    for key in got["this"][0]:
        if key.startswith("ratio"):
            continue
        this = statistics.median(r[key] for r in got["this"])
        base = statistics.median(r[key] for r in got[ref])
        out[f"{key}: this"], out[f"{key}: {ref}"], out[f"ratio {key}: this / {ref}"] = this, base, this / base
    out["load (1-min) min"], out["load (1-min) max"] = min(loads), max(loads)
    return out


def show(res: dict) -> None:
    width = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{width}}  {v:>12.2f}" if "ratio" in k or "load" in k else f"{k:<{width}}  {v:>12,.0f} records/s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ab", metavar="REF", help="A/B against this git ref (alternating fresh processes)")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--json", action="store_true", help="print the rates as one JSON line (for --ab)")
    args = ap.parse_args(argv)
    if args.json:
        print(json.dumps(measure(args.rows, args.runs)))
        return 0
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    show(ab(args.ab, args.rows, args.runs, args.pairs) if args.ab else measure(args.rows, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
