"""The Spark Declarative Pipelines example (``examples/pipelines``) run as a user runs it:
``spark-pipelines run`` in its directory, against the embedded Kafka and registry loaded with the
shop's orders (``asyncapi-kafka sandbox``'s). The streaming table must hold every order, and the
sink must have published every paid order, once, with its key and value.

``spark-pipelines`` starts a Spark Connect server (a JVM) and runs the pipeline's Python
definitions as its client; the data source runs in the server's Python workers, found by name.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.jvm, pytest.mark.timeout(1200)]

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _localize(path: pathlib.Path, box, storage: str) -> None:
    text = path.read_text(encoding="utf-8")
    text = (text.replace("http://localhost:8081", box.registry.url)
            .replace("localhost:9092", box.kafka.bootstrap_servers)
            .replace("file:///tmp/asyncapi-kafka-pipeline/storage", storage))
    path.write_text(text, encoding="utf-8")


def _records(doc: pathlib.Path, channel: str, ref_root: pathlib.Path) -> dict[str, dict]:
    import connector

    table = connector.peek(str(doc), channel, n=10_000, options={"asyncapi.refRoot": str(ref_root)})
    rows = table.select(["key", "value", "_error"]).to_pylist()
    assert all(r["_error"] is None for r in rows), rows
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)), f"{channel}: a record written twice"
    return {r["key"]: r["value"] for r in rows}


def test_spark_pipelines_run_reads_a_channel_into_a_table_and_writes_a_sink(tmp_path):
    from connector.cli._sandbox import Sandbox

    spark_pipelines = pathlib.Path(sys.executable).parent / "spark-pipelines"
    assert spark_pipelines.exists(), "the pyspark wheel ships bin/spark-pipelines (PySpark 4.1+)"
    with Sandbox(str(ROOT / "examples" / "shop.yaml"), messages=30) as box:
        examples = tmp_path / "examples"
        shutil.copytree(ROOT / "examples", examples)
        pipeline = examples / "pipelines"
        for name in ("shop.yaml", "pipelines/orders.yaml", "pipelines/spark-pipeline.yml"):
            _localize(examples / name, box, (tmp_path / "storage").as_uri())

        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        done = subprocess.run([str(spark_pipelines), "run"], cwd=pipeline, env=env, capture_output=True,
                              text=True, timeout=1100)
        assert done.returncode == 0, done.stdout[-4000:] + "\n" + done.stderr[-6000:]
        assert "Run is COMPLETED" in done.stdout + done.stderr

        placed = _records(examples / "shop.yaml", "orders", examples)
        paid = {k: v for k, v in placed.items() if v["status"] == "PAID"}
        assert paid and len(paid) < len(placed)
        published = _records(pipeline / "orders.yaml", "paidOrders", examples)
        assert published == paid

    # The streaming table (in the pipeline's warehouse, next to the spec) holds every order.
    table = pq.read_table(pipeline / "spark-warehouse" / "orders")
    assert sorted(json.loads(json.dumps(k)) for k in table.column("key").to_pylist()) == sorted(placed)
