"""Shared fixtures: real peers on loopback.

- ``kafka``: a librdkafka mock cluster (a real Kafka protocol peer on 127.0.0.1), or the
  cluster named by ``KAFKA_BOOTSTRAP_SERVERS``.
- ``registry_server``: our embedded Confluent-compatible REST registry, or the one named by
  ``SCHEMA_REGISTRY_URL`` (read-only tests only).
- ``spark``: one ``local[2]`` SparkSession per test session, Python workers on this interpreter.
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


@pytest.fixture(scope="session")
def kafka():
    """A Kafka cluster: the in-process librdkafka mock cluster unless KAFKA_BOOTSTRAP_SERVERS is set."""
    from connector.kafka import EmbeddedKafka

    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    cluster = EmbeddedKafka(bootstrap_servers=external) if external else EmbeddedKafka()
    yield cluster
    cluster.close()


@pytest.fixture()
def registry_server():
    """A fresh embedded Confluent-compatible registry per test (so request counts are exact)."""
    from registry import RegistryServer

    with RegistryServer() as server:
        yield server
