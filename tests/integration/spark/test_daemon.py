"""``spark.python.daemon.module=connector.spark.daemon``: PySpark's workers are forked from a
daemon that already imported the connector, and reads through it are the same reads.

The session runs in a child process (the daemon module is fixed when the SparkContext starts,
so the suite's shared session cannot take it); the broker and the registry live here and the
child's workers reach them over loopback, as a notebook's workers would.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.integration.spark.helpers import avro_doc, produce_orders, unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

_CHILD = textwrap.dedent("""
    import json, os, sys
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSource, DataSourceReader

    doc = sys.argv[1]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.python.daemon.module", "connector.spark.daemon").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    class Probe(DataSourceReader):
        def read(self, partition):
            # what the worker holds before anything of this task imported it
            import sys, os
            mods = ["connector.spark._batch", "connector.kafka._native", "connector.formats.avro._vm", "numba"]
            with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
                parent = f.read().replace(b"\\0", b" ").decode()
            vm = sys.modules.get("connector.formats.avro._vm")
            yield (json.dumps({"loaded": [m for m in mods if m in sys.modules], "parent": parent,
                               "avro kernels": len(vm.rows.overloads) if vm else 0}),)

    class ProbeSource(DataSource):
        @classmethod
        def name(cls):
            return "probe-worker"

        def schema(self):
            return "facts string"

        def reader(self, schema):
            return Probe()

    spark.dataSource.register(ProbeSource)
    facts = json.loads(spark.read.format("probe-worker").load().collect()[0][0])
    df = spark.read.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "orders").load()
    rows = sorted([r["id"], r["customer"]] for r in df.select("value.id", "value.customer").collect())
    first = df.limit(2).collect()  # a LIMIT ends its worker: the next query forks a warm one
    again = df.select("value.id").count()
    print("RESULT " + json.dumps({"facts": facts, "rows": rows, "limited": len(first), "count": again}))
    spark.stop()
""")


def test_workers_forked_from_the_daemon_hold_the_connector_and_read_the_same(kafka, registry_server, tmp_path):
    topic = unique_topic("daemon")
    expected = produce_orders(kafka, registry_server, topic, 12, partitions=2)
    doc = tmp_path / "doc.yaml"
    doc.write_text(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))
    # the kernels this read needs, compiled (or loaded) here into the disk cache the workers share
    from connector.read import peek

    assert peek(str(doc), "orders", n=1).num_rows == 1
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(doc)], capture_output=True, text=True, timeout=600,
                          env=env, cwd=root)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-5000:]
    got = json.loads(lines[0][len("RESULT "):])
    # the worker was forked by our daemon and had the read path loaded before its task ran
    assert "connector.spark.daemon" in got["facts"]["parent"], got["facts"]
    assert got["facts"]["loaded"] == ["connector.spark._batch", "connector.kafka._native",
                                      "connector.formats.avro._vm", "numba"], got["facts"]
    assert got["facts"]["avro kernels"] >= 1, got["facts"]  # loaded by the daemon from the disk cache
    assert got["rows"] == expected
    assert got["limited"] == 2 and got["count"] == 12
