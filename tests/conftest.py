"""Shared fixtures: real peers on loopback.

- ``kafka``: a librdkafka mock cluster (a real Kafka protocol peer on 127.0.0.1), or the
  cluster named by ``KAFKA_BOOTSTRAP_SERVERS``.
- ``registry_server``: our embedded Confluent-compatible REST registry, or the one named by
  ``SCHEMA_REGISTRY_URL`` (read-only tests only).
- ``spark``: one ``local[2]`` SparkSession per test session, Python workers on this interpreter.
- ``karapace``: Karapace 3.16, a real Confluent-compatible registry, on tansu, once per session
  (skipped where its virtual environment is absent); ``registry_peer``: the stand-in and
  Karapace in turn, for the registry-facing tests (:mod:`tests.registry_peers`).
"""
from __future__ import annotations

import os
import sys

import pytest

# Spark starts Python workers with `python3` from PATH unless told otherwise; inside a
# virtual environment that is the wrong interpreter (FACTS.md).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("asyncapi-kafka-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _testcontainers_peers():
    """Real Apache Kafka + Confluent Schema Registry through testcontainers, when asked for with
    ASYNCAPI_KAFKA_PEERS=testcontainers. Skips cleanly where no Docker engine answers (as here)."""
    try:
        import docker

        docker.from_env().ping()
    except Exception as e:
        pytest.skip(f"ASYNCAPI_KAFKA_PEERS=testcontainers but no Docker engine is reachable: {e}")
    from testcontainers.kafka import KafkaContainer

    return KafkaContainer("confluentinc/cp-kafka:7.9.0")


@pytest.fixture(scope="session")
def kafka():
    """A Kafka cluster: the in-process librdkafka mock cluster (a real Kafka protocol peer on
    loopback), or the cluster named by KAFKA_BOOTSTRAP_SERVERS, or a testcontainers broker."""
    from connector.testing import EmbeddedKafka

    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    container = None
    if not external and os.environ.get("ASYNCAPI_KAFKA_PEERS") == "testcontainers":
        container = _testcontainers_peers().start()
        external = container.get_bootstrap_server()
    cluster = EmbeddedKafka(bootstrap_servers=external) if external else EmbeddedKafka()
    yield cluster
    cluster.close()
    if container is not None:
        container.stop()


class ExternalRegistry:
    """The slice of RegistryServer's API that works against any Confluent-compatible registry
    (SCHEMA_REGISTRY_URL); fault injection and request counting skip the test instead."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def register(self, subject: str, text: str, schema_type: str = "AVRO", references=()) -> int:
        import requests

        body = {"schema": text, "schemaType": schema_type,
                "references": [dict(r) if isinstance(r, dict) else {"name": r[0], "subject": r[1], "version": r[2]}
                               for r in references]}
        resp = requests.post(f"{self.url}/subjects/{subject}/versions", json=body, timeout=30)
        resp.raise_for_status()
        return int(resp.json()["id"])

    def __getattr__(self, name):
        pytest.skip(f"RegistryServer.{name} is not available against an external registry")


@pytest.fixture()
def registry_server():
    """A fresh embedded Confluent-compatible registry per test (so request counts are exact), or
    the registry named by SCHEMA_REGISTRY_URL."""
    external = os.environ.get("SCHEMA_REGISTRY_URL")
    if external:
        yield ExternalRegistry(external)
        return
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


@pytest.fixture(scope="session")
def karapace():
    """Karapace (a real registry) with its tansu broker, started once per session, stopped at its end."""
    from connector.testing import KarapaceServer

    from tests.registry_peers import KARAPACE_MISSING

    if not KarapaceServer.available():
        pytest.skip(KARAPACE_MISSING)
    server = KarapaceServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["stand-in", "karapace"])
def registry_peer(request):
    """The stand-in (fresh per test) and Karapace (shared: name things with ``peer.unique``)."""
    from tests.registry_peers import RegistryPeer

    if request.param == "karapace":
        yield RegistryPeer(request.getfixturevalue("karapace").url, "karapace")
        return
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield RegistryPeer(server.url, "stand-in", server)


@pytest.fixture()
def write_doc(tmp_path):
    """Write an AsyncAPI document (text) under tmp_path and return its path."""
    def _write(text: str, name: str = "doc.yaml") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return _write
