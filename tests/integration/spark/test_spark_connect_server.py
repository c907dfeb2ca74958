"""Spark Connect with the server and the client in different processes, as deployed: the server
started from the pyspark wheel (``sbin/start-connect-server.sh --wait``), the client a plain
Python process that connects with ``SparkSession.builder.remote("sc://127.0.0.1:PORT")``.

Data sources run in the server's Python, so the package must be installed in the environment
named by the server's ``PYSPARK_PYTHON`` (here a fresh venv with ``pip install .``). The client
reads once with ``spark.dataSource.register(AsyncApiKafkaDataSource)`` and once with no
``register`` call (the server found ``pyspark_asyncapi_kafka`` itself). Kafka and the registry
live in this process (loopback)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import textwrap
import time

import pytest

from tests.integration.cluster.standalone import SPARK_HOME, free_port, spark_env
from tests.integration.install.venvs import (
    clean_env,
    copy_project,
    make_venv,
    pip_install,
)
from tests.integration.spark.helpers import avro_doc, produce_orders, unique_topic

# Generous: on a quiet 2-core machine the module takes about 3 minutes; on a loaded one, many more.
pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.cluster, pytest.mark.timeout(1500)]

CLIENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    url, path = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.remote(url).getOrCreate()
    def read():
        df = spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders").load()
        return sorted([r.id, r.customer] for r in df.select("value.id", "value.customer").collect())
    print("STATIC " + json.dumps(read()), flush=True)
    from connector.spark import AsyncApiKafkaDataSource
    spark.dataSource.register(AsyncApiKafkaDataSource)
    print("REGISTERED " + json.dumps(read()), flush=True)
""")


def _wait_listening(port: int, proc: subprocess.Popen, log, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Connect server exited ({proc.returncode}):\n{log.read_text()[-4000:]}")
        with socket.socket() as s:
            s.settimeout(2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)  # polling the server's port; each probe is a real readiness check
    raise TimeoutError(f"Connect server not listening after {timeout}s:\n{log.read_text()[-4000:]}")


def test_client_process_reads_through_a_connect_server(kafka, registry_server, tmp_path):
    pytest.importorskip("grpc_status", reason="pyspark[connect] extras (pip install '.[connect]')")


    topic = unique_topic("connect-server")
    expected = produce_orders(kafka, registry_server, topic, 9)
    doc = tmp_path / "doc.yaml"
    doc.write_text(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))

    python = make_venv(tmp_path / "venv")
    pip_install(python, str(copy_project(tmp_path / "src")))
    port = free_port()
    log = tmp_path / "connect-server.log"
    server_env = spark_env(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python),
                           SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_PID_DIR=str(tmp_path))
    with open(log, "wb") as out:
        # Its own process group: the script runs spark-submit (a JVM) under bash.
        server = subprocess.Popen([str(SPARK_HOME / "sbin" / "start-connect-server.sh"), "--wait",
                                   "--master", "local[2]", "--conf", f"spark.connect.grpc.binding.port={port}",
                                   "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                                   "--conf", "spark.ui.enabled=false", "--conf", "spark.log.level=WARN"],
                                  stdout=out, stderr=subprocess.STDOUT, env=server_env, cwd=tmp_path,
                                  start_new_session=True)
    try:
        _wait_listening(port, server, log)
        outside = tmp_path / "client"
        outside.mkdir()
        (outside / "client.py").write_text(CLIENT)
        proc = subprocess.run([str(python), "client.py", f"sc://127.0.0.1:{port}", str(doc)], capture_output=True,
                              text=True, timeout=300, cwd=outside, env=clean_env())
        out = {ln.split(" ", 1)[0]: json.loads(ln.split(" ", 1)[1]) for ln in proc.stdout.splitlines()
               if ln.startswith(("STATIC ", "REGISTERED "))}
        assert proc.returncode == 0, proc.stderr[-4000:] + log.read_text()[-3000:]
        assert out == {"STATIC": expected, "REGISTERED": expected}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
