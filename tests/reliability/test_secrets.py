"""Planted secrets never leak: logs, exception text, reprs, pickled partitions, Spark plans.

Mirrors Spark's ``RedactionSuite``/``DataSourceV2Suite`` option redaction
(``spark.redaction.regex`` = ``(?i)secret|password|token|access[.]?key``), Spark's Kafka
source ``KafkaRedactionUtil`` (``sasl.jaas.config`` redacted in logs) and confluent-kafka's
``SchemaRegistryClient`` never echoing ``basic.auth.user.info``.
"""
from __future__ import annotations

import json
import logging
import pickle

import pytest

from tests.reliability.conftest import (AWS_SECRET, PLANTED, REGISTRY_PASSWORD, SASL_PASSWORD, assert_no_secret,
                                        fast_registry_config)

ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]}


def _doc(bootstrap: str, registry_url: str, topic: str) -> dict:
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "servers": {"k": {"host": bootstrap, "protocol": "kafka", "bindings": {"kafka": {
                "schemaRegistryUrl": registry_url, "schemaRegistryVendor": "confluent"}}}},
            "channels": {"c": {"address": topic, "messages": {"m": {
                "payload": {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": ORDER},
                "bindings": {"kafka": {"schemaIdLocation": "payload", "schemaIdPayloadEncoding": "confluent"}}}}}}}


def _secret_options(path: str) -> dict:
    return {
        "asyncapi": path, "channel": "c",
        "schema.registry.basic.auth.username": "alice",
        "schema.registry.basic.auth.password": REGISTRY_PASSWORD,
        # SASL settings pass through to librdkafka; PLAINTEXT ignores them, the value is still held.
        "kafka.sasl.username": "bob", "kafka.sasl.password": SASL_PASSWORD,
        "schema.registry.glue.secret.access.key": AWS_SECRET,
        "schema.registry.max.retries": "0",
    }


@pytest.fixture()
def planted(kafka, registry_server, write_doc):
    """A topic with 6 Confluent-framed Avro records and a registry that needs the planted password."""
    import io

    import fastavro
    from wireformat import encode_frame

    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("secrets")
    sid = registry_server.register(f"{topic}-value", json.dumps(ORDER))
    registry_server.require_basic_auth("alice", REGISTRY_PASSWORD)
    for i in range(6):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(ORDER), {"id": i, "note": None})
        kafka.produce(topic, encode_frame("confluent", sid, buf.getvalue()), partition=i % 2)
    kafka.flush()
    path = write_doc(json.dumps(_doc(kafka.bootstrap_servers, registry_server.url, topic)))
    return topic, path, _secret_options(path)


def _all_text(obj) -> str:
    return f"{obj!r} {obj!s}"


@pytest.mark.kafka
def test_driver_objects_reprs_logs_and_pickled_partitions_hold_no_secret(planted, caplog):
    """The objects Spark prints or ships: ``repr``/``str`` of the DataSource, the parsed
    options, the ``ReadSetup``, every log record at DEBUG, and ``pickle.dumps`` of every
    ``InputPartition`` the batch reader plans (Spark serialises those into task closures)."""
    from connector.spark._batch import BatchReader
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup
    from connector.spark._source import AsyncApiKafkaDataSource

    _topic, _path, options = planted
    with caplog.at_level(logging.DEBUG):
        source = AsyncApiKafkaDataSource(options)
        assert_no_secret("repr/str(DataSource)", _all_text(source))
        opts = parse_options(options)
        assert_no_secret("repr/str(SourceOptions)", _all_text(opts))
        assert opts.kafka_settings()["sasl.password"] == SASL_PASSWORD  # held, just not shown
        setup = build_setup(opts)
        assert_no_secret("repr/str(ReadSetup)", _all_text(setup))
        assert_no_secret("repr(RegistryConfig)", _all_text(setup.registry_config))
        reader = BatchReader(setup)
        parts = reader.partitions()
        assert sum(len(p.ranges) for p in parts) == 2
        for p in parts:
            assert_no_secret(f"pickle.dumps({p!r})", pickle.dumps(p))
            assert_no_secret("repr(partition)", _all_text(p))
        rows = sum(b.num_rows for p in parts for b in reader.read(p))  # executor code, in-process
        assert rows == 6
    assert_no_secret("log records", "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records))


@pytest.mark.kafka
def test_failing_reads_name_no_secret(planted, kafka, registry_server, write_doc):
    """Exception text of failing reads (missing topic, refused registry credentials, a
    registry URL carrying ``user:password@``) never contains the secrets."""
    from connector.errors import KafkaReadError
    from connector.spark._batch import BatchReader
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup
    from registry import RegistryAuthError, client_for

    topic, path, options = planted
    missing = write_doc(json.dumps(_doc(kafka.bootstrap_servers, registry_server.url, topic + "-missing")),
                        name="missing.yaml")
    with pytest.raises(KafkaReadError) as ei:
        BatchReader(build_setup(parse_options({**options, "asyncapi": missing}))).partitions()
    assert_no_secret("KafkaReadError", f"{ei.value!s} {ei.value!r} {ei.value.__cause__!r}")

    registry_server.require_basic_auth("alice", "another-password")
    with pytest.raises(RegistryAuthError) as ei:
        build_setup(parse_options({**options, "schema.id": "1"}))
    assert_no_secret("RegistryAuthError", f"{ei.value!s} {ei.value!r} {ei.value.url}")

    url = registry_server.url.replace("http://", f"http://alice:{REGISTRY_PASSWORD}@")
    with pytest.raises(RegistryAuthError) as ei:
        client_for(fast_registry_config(url)).get_schema_by_id(1)
    assert_no_secret("RegistryAuthError (URL credentials)", f"{ei.value!s} {ei.value!r} {ei.value.url}")


def _capture_driver_log(spark, path: str):
    """Add a log4j2 file appender to the driver's root logger (the JVM's console output is
    not on this process's file descriptors, so capfd cannot see it); returns a detach()."""
    jvm = spark._jvm
    ctx = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    config = ctx.getConfiguration()
    layout = jvm.org.apache.logging.log4j.core.layout.PatternLayout.newBuilder().withPattern(
        "%p %c: %m%n").build()
    appender = (jvm.org.apache.logging.log4j.core.appender.FileAppender.newBuilder()
                .withFileName(path).setName("reliability-secrets").setLayout(layout).build())
    appender.start()
    config.addAppender(appender)
    config.getRootLogger().addAppender(appender, None, None)
    ctx.updateLoggers()

    def detach():
        config.getRootLogger().removeAppender("reliability-secrets")
        ctx.updateLoggers()
        appender.stop()

    return detach


@pytest.mark.slow
@pytest.mark.kafka
def test_spark_plans_logs_and_errors_hold_no_secret(spark, planted, capfd, kafka, registry_server, write_doc,
                                                    tmp_path):
    """A Spark batch read with all three secrets planted: the analyzed/optimized/physical
    plans (``queryExecution().toString()``, ``explain(True)``), the driver and Python worker
    output at INFO, and a failing read's exception text."""
    topic, path, options = planted
    reader = spark.read.format("asyncapi-kafka")
    for k, v in options.items():
        reader = reader.option(k, v)
    log_file = tmp_path / "driver.log"
    detach = _capture_driver_log(spark, str(log_file))
    spark.sparkContext.setLogLevel("INFO")
    try:
        df = reader.load()
        assert sorted(r.value.id for r in df.collect()) == list(range(6))
        plans = df._jdf.queryExecution().toString()
        df.explain(True)
        df.explain("formatted")
        missing = write_doc(json.dumps(_doc(kafka.bootstrap_servers, registry_server.url, topic + "-gone")),
                            name="gone.yaml")
        bad = spark.read.format("asyncapi-kafka")
        for k, v in {**options, "asyncapi": missing}.items():
            bad = bad.option(k, v)
        with pytest.raises(Exception) as ei:
            bad.load().collect()
        assert topic + "-gone" in str(ei.value)
    finally:
        spark.sparkContext.setLogLevel("ERROR")
        detach()
    out, err = capfd.readouterr()
    driver_log = log_file.read_text()
    assert "INFO org.apache.spark" in driver_log  # the capture works
    assert_no_secret("Spark driver log (log4j, INFO)", driver_log)
    assert "asyncapi" in plans.lower() or "PythonDataSource" in plans or "BatchScan" in plans
    assert_no_secret("queryExecution().toString()", plans)
    assert_no_secret("explain() output / driver and worker logs", out + err)
    assert_no_secret("failing read exception", str(ei.value))


@pytest.mark.slow
@pytest.mark.kafka
def test_registry_url_with_userinfo_is_not_shown_in_plans(spark, planted, capfd):
    """A user writes the credentials into ``schema.registry.url`` (the Confluent client
    accepts ``https://user:pass@host``). Spark's redaction works on option *names*, so the
    source must not put that URL into anything Spark prints."""
    topic, path, options = planted
    opts = {k: v for k, v in options.items() if not k.startswith("schema.registry.basic")}
    url = f"http://alice:{REGISTRY_PASSWORD}@{planted_registry_host(path)}"
    reader = spark.read.format("asyncapi-kafka")
    for k, v in {**opts, "schema.registry.url": url}.items():
        reader = reader.option(k, v)
    df = reader.load()
    assert df.count() == 6
    df.explain(True)
    plans = df._jdf.queryExecution().toString()
    out, err = capfd.readouterr()
    assert_no_secret("plans with URL userinfo", plans + out, secrets=(REGISTRY_PASSWORD,))


OAUTH_SECRET = "oauth-cs-Wk73PqZ1"


@pytest.mark.slow
@pytest.mark.kafka
def test_oauth_client_secret_and_tokens_are_never_shown(spark, kafka, registry_server, write_doc, capfd, caplog,
                                                        tmp_path):
    """Registry OAuth (issue 34): the client secret and every access token the endpoint issued
    (to the driver and to each Python worker) stay out of the driver objects, pickled partitions,
    Spark's plans and logs, and the text of a refused read."""
    import io

    import fastavro

    from connector.options._parse import parse_options
    from connector.spark._batch import BatchReader
    from connector.spark._setup import build_setup
    from connector.testing import TokenServer
    from wireformat import encode_frame

    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("oauth-secrets")
    sid = registry_server.register(f"{topic}-value", json.dumps(ORDER))
    for i in range(6):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(ORDER), {"id": i, "note": None})
        kafka.produce(topic, encode_frame("confluent", sid, buf.getvalue()), partition=i % 2)
    kafka.flush()
    path = write_doc(json.dumps(_doc(kafka.bootstrap_servers, registry_server.url, topic)))
    with TokenServer("spark-app", OAUTH_SECRET, expires_in=600) as idp:
        registry_server.require_bearer_from(idp.valid)
        options = {"asyncapi": path, "channel": "c", "schema.registry.max.retries": "0",
                   "schema.registry.bearer.auth.credentials.source": "OAUTHBEARER",
                   "schema.registry.bearer.auth.issuer.endpoint.url": idp.url,
                   "schema.registry.bearer.auth.client.id": "spark-app",
                   "schema.registry.bearer.auth.client.secret": OAUTH_SECRET}
        texts = []
        with caplog.at_level(logging.DEBUG):
            setup = build_setup(parse_options(options))
            reader = BatchReader(setup)
            parts = reader.partitions()
            texts += [_all_text(setup), _all_text(setup.registry_config)]
            texts += [pickle.dumps(p).decode("latin-1") + _all_text(p) for p in parts]
            assert sum(b.num_rows for p in parts for b in reader.read(p)) == 6
        # (py4j logs every command at DEBUG, our own .option() calls included: only the connector's
        # in-process logs are captured at DEBUG, as in the test above; Spark's output below)
        texts.append("\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records))
        with caplog.at_level(logging.INFO):
            spark_reader = spark.read.format("asyncapi-kafka")
            for k, v in options.items():
                spark_reader = spark_reader.option(k, v)
            df = spark_reader.load()
            assert sorted(r.value.id for r in df.collect()) == list(range(6))
            texts.append(df._jdf.queryExecution().toString())
            df.explain(True)
            wrong = spark.read.format("asyncapi-kafka")
            for k, v in {**options, "schema.registry.bearer.auth.client.secret": OAUTH_SECRET + "-x",
                         "schema.id": str(sid)}.items():
                wrong = wrong.option(k, v)
            with pytest.raises(Exception) as ei:
                wrong.load()
            assert "invalid_client" in str(ei.value)
            texts.append(f"{ei.value!s} {ei.value!r}")
        texts.append("\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records))
        out, err = capfd.readouterr()
        texts.append(out + err)
        assert idp.issued >= 2  # the driver's token and the workers' own
        secrets = (OAUTH_SECRET, *idp.tokens)
        for where, text in zip(("setup", "registry config", *(f"partition {i}" for i in range(len(parts))),
                                "log records (in-process, DEBUG)", "plans", "refused read", "log records (INFO)",
                                "explain() and worker output"), texts):
            assert_no_secret(where, text, secrets=secrets)


def planted_registry_host(path: str) -> str:
    with open(path) as f:
        doc = json.load(f)
    return doc["servers"]["k"]["bindings"]["kafka"]["schemaRegistryUrl"].split("://", 1)[1]


def test_planted_values_are_distinct_and_not_redaction_markers():
    """Guard for the guards: every planted value is distinct and would be found if leaked."""
    assert len(set(PLANTED)) == 3 and all(len(s) > 10 and "*" not in s for s in PLANTED)
    with pytest.raises(AssertionError):
        assert_no_secret("self-test", f"x{SASL_PASSWORD}y")
