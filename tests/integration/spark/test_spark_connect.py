"""A read over Spark Connect: a local Connect server (``SparkSession.builder.remote("local[2]")``)
and ``spark.dataSource.register(...)`` from the Connect client.

It runs in a child process so the Connect server's JVM cannot collide with the classic
``local[2]`` session the other tests share; the Kafka cluster and registry live in this
process and are reached over loopback, as executors on a cluster would reach real ones."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.integration.spark.helpers import avro_doc, produce_orders, unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.jvm]

CHILD = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from connector.spark import AsyncApiKafkaDataSource
    path, bootstrap = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    spark.dataSource.register(AsyncApiKafkaDataSource)
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders")
          .option("kafka.bootstrap.servers", bootstrap).load())
    rows = df.select("value.id", "value.customer").collect()
    print("RESULT " + json.dumps(sorted([r.id, r.customer] for r in rows)))
    spark.stop()
""")


def test_read_over_spark_connect(kafka, registry_server, write_doc, tmp_path):
    pytest.importorskip("grpc_status", reason="pyspark[connect] extras (pip install asyncapi-kafka[connect])")
    pytest.importorskip("zstandard", reason="pyspark[connect] extras (pip install asyncapi-kafka[connect])")



    topic = unique_topic("connect")
    expected = produce_orders(kafka, registry_server, topic, 12)
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run([sys.executable, str(script), path, kafka.bootstrap_servers], capture_output=True,
                          text=True, timeout=240, env=env, cwd=os.getcwd())
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    assert json.loads(lines[0][len("RESULT "):]) == expected
