"""Shared fixtures: real peers on loopback.

- ``kafka``: a librdkafka mock cluster (a real Kafka protocol peer on 127.0.0.1), or the
  cluster named by ``KAFKA_BOOTSTRAP_SERVERS``.
- ``registry_server``: our embedded Confluent-compatible REST registry, or the one named by
  ``SCHEMA_REGISTRY_URL`` (read-only tests only).
- ``spark``: one ``local[2]`` SparkSession per test session, Python workers on this interpreter.
- ``karapace``: Karapace 3.16, a real Confluent-compatible registry, on tansu, once per session
  (skipped where its virtual environment is absent); ``registry_peer``: the stand-in and
  Karapace in turn, for the registry-facing tests (:mod:`tests.registry_peers`).

The quick subset is ``python -m pytest -m "not jvm"``: every test that starts a JVM carries the
``jvm`` marker (added here to every test that uses the ``spark`` fixture or is marked ``cluster``;
the modules that start Spark in other processes mark themselves). When a run deselects ``jvm``,
``java`` is replaced by a stub for the whole session (``JAVA_HOME`` and ``PATH``) that records who
called it and refuses to start; the session fails if anything tried, naming the test.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import sys
import tempfile

import pytest

# Spark starts Python workers with `python3` from PATH unless told otherwise; inside a
# virtual environment that is the wrong interpreter (FACTS.md).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

#: Fixtures that start a JVM: a test using one (directly or through another fixture) is ``jvm``.
JVM_FIXTURES = frozenset({"spark"})
#: Markers that imply a JVM (a Spark standalone cluster or a Spark Connect server).
JVM_MARKERS = frozenset({"cluster"})


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m deselection reads the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if JVM_FIXTURES & set(getattr(item, "fixturenames", ())) or any(
                item.get_closest_marker(m) for m in JVM_MARKERS):
            item.add_marker(pytest.mark.jvm)


def _deselects_jvm(config) -> bool:
    """Whether ``-m`` leaves out every ``jvm`` test, whatever its other markers (``-m "not jvm"``,
    ``-m "not jvm and not slow"`` ...); ``-m karapace`` keeps the Spark tests marked karapace."""
    expr = (config.option.markexpr or "").strip()
    if not expr:
        return False
    try:
        import itertools
        import re

        from _pytest.mark.expression import Expression

        compiled = Expression.compile(expr)
        others = sorted(set(re.findall(r"[A-Za-z_][\w-]*", expr)) - {"and", "or", "not", "jvm"})[:12]
        for values in itertools.product((False, True), repeat=len(others)):
            on = {n for n, v in zip(others, values) if v} | {"jvm"}
            if compiled.evaluate(lambda name, on=on, **kwargs: name in on):
                return False
        return True
    except Exception:  # a private API of pytest: fall back to reading the expression
        return "not jvm" in expr


_NO_JVM: dict[str, pathlib.Path] = {}


def pytest_configure(config):
    if not _deselects_jvm(config) or os.environ.get("ASYNCAPI_KAFKA_ALLOW_JVM") == "1":
        return
    home = pathlib.Path(tempfile.mkdtemp(prefix="asyncapi-kafka-no-jvm-"))
    (home / "bin").mkdir()
    log = home / "attempts.log"
    stub = home / "bin" / "java"
    stub.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\t%s\\n' \"${{PYTEST_CURRENT_TEST:-?}}\" \"$*\" >> '{log}'\n"
        "echo 'asyncapi-kafka tests: this run deselects jvm tests, but a JVM was started' >&2\n"
        "exit 97\n")
    stub.chmod(0o755)
    os.environ["JAVA_HOME"] = str(home)
    os.environ["PATH"] = f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    _NO_JVM.update(home=home, log=log)


def pytest_sessionfinish(session, exitstatus):
    if not _NO_JVM:
        return
    log = _NO_JVM["log"]
    attempts = log.read_text().splitlines() if log.exists() else []
    gateway = getattr(sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context"),
                      "SparkContext", None)
    launched = gateway is not None and getattr(gateway, "_gateway", None) is not None
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
    if attempts or launched:
        if reporter is not None:
            reporter.write_line(f"no-JVM subset: {len(attempts)} JVM start(s) attempted "
                                f"(pyspark gateway launched: {launched}); mark these tests jvm:", red=True)
            for line in attempts:
                reporter.write_line(f"  {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif reporter is not None:
        reporter.write_line("no-JVM subset: no JVM was started (java stubbed for the whole session)")
    shutil.rmtree(_NO_JVM["home"], ignore_errors=True)


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
