"""Credentials embedded in URLs (``user:secret@``): never printed, never taken from a document.

Kafka bootstrap lists (``kafka://user:secret@host:9092`` in a document or in the option
``kafka.bootstrap.servers``), registry URLs and remote ``$ref`` URLs must not show their
userinfo in errors, logs, ``inspect``/``check`` output or ``explain()``. A document's server
credentials are ignored (secrets come from options only), with one warning naming the
document path and the options to use instead.
"""
from __future__ import annotations

import argparse
import json
import logging

import pytest

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError, KafkaReadError
from registry import redact_servers, redact_text, redact_url, strip_userinfo

from tests.reliability.conftest import SASL_PASSWORD, closed_port

SECRET = SASL_PASSWORD


# ------------------------------------------------------------------ the one redaction module
@pytest.mark.parametrize("text,expected", [
    (f"kafka://alice:{SECRET}@b1:9092", "kafka://b1:9092"),
    (f"alice:{SECRET}@b1:9092,alice:{SECRET}@b2:9092", "b1:9092,b2:9092"),
    (f"against alice:{SECRET}@127.0.0.1:9092 within 2s", "against 127.0.0.1:9092 within 2s"),
    (f"'http://alice:{SECRET}@reg:8081/subjects'", "'http://reg:8081/subjects'"),
    (f"see https://a:p@ss{SECRET}@h/x and [alice:{SECRET}@[::1]:9092]", "see https://h/x and [[::1]:9092]"),
    ("no credentials here: broker:9092, http://reg:8081", "no credentials here: broker:9092, http://reg:8081"),
])
def test_redact_text(text, expected):
    assert redact_text(text) == expected


def test_redact_servers_and_urls():
    assert redact_servers(f"kafka://alice:{SECRET}@b1:9092, alice:{SECRET}@b2:9092") == "kafka://b1:9092,b2:9092"
    assert strip_userinfo(f"u:{SECRET}@b1:9092,b2:9092") == ("b1:9092,b2:9092", True)
    assert strip_userinfo("b1:9092") == ("b1:9092", False)
    assert SECRET not in redact_url(f"https://alice:{SECRET}@reg:8081/x?token={SECRET}")


# ------------------------------------------------------------------ documents never give credentials
def _doc2(url: str, registry: str | None = None) -> dict:
    server = {"url": url, "protocol": "kafka"}
    if registry:
        server["bindings"] = {"kafka": {"schemaRegistryUrl": registry}}
    return {"asyncapi": "2.6.0", "info": {"title": "t", "version": "1"}, "servers": {"prod": server},
            "channels": {"orders": {"subscribe": {"message": {"payload": {"type": "string"}}}}}}


def _doc3(host: str) -> dict:
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "servers": {"prod": {"host": host, "protocol": "kafka"}},
            "channels": {"orders": {"address": "orders", "messages": {"m": {"payload": {"type": "string"}}}}}}


@pytest.mark.parametrize("doc,where", [
    (_doc2(f"kafka://alice:{SECRET}@b1:9092,alice:{SECRET}@b2:9092"), "servers.prod.url"),
    (_doc3(f"alice:{SECRET}@b1:9092,b2:9092"), "servers.prod.host"),
])
def test_document_server_credentials_are_ignored_with_one_warning(doc, where, caplog):
    caplog.set_level(logging.WARNING)
    plans = [plan_read(load_document(doc), channel="orders") for _ in range(2)]
    assert plans[0].bootstrap_servers == "b1:9092,b2:9092"
    assert any(path == where for path, _ in plans[0].ignored_settings)
    warnings = [r.getMessage() for r in caplog.records if where in r.getMessage()]
    assert len(warnings) == 1  # once, not per plan
    assert "kafka.sasl.username" in warnings[0] and "kafka.sasl.password" in warnings[0]
    assert SECRET not in caplog.text and SECRET not in repr(plans[0])


def test_document_registry_url_credentials_are_not_used_as_basic_auth(caplog):
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    caplog.set_level(logging.WARNING)
    doc = _doc2("kafka://b1:9092", registry=f"http://bob:{SECRET}@127.0.0.1:8081")
    plan = plan_read(load_document(doc), channel="orders")
    assert plan.registry_url == "http://127.0.0.1:8081"
    setup = build_setup(parse_options({"asyncapi": json.dumps(doc), "channel": "orders"}))
    assert setup.registry_config.basic_auth is None
    assert "servers.prod.bindings.kafka.schemaRegistryUrl" in caplog.text and SECRET not in caplog.text


def test_bootstrap_option_credentials_are_stripped_with_a_warning(caplog):
    from connector.options._parse import parse_options

    caplog.set_level(logging.WARNING)
    opts = parse_options({"asyncapi": json.dumps(_doc3("b9:9092")), "channel": "orders",
                          "kafka.bootstrap.servers": f"alice:{SECRET}@b1:9092"})
    assert opts.kafka_settings()["bootstrap.servers"] == "b1:9092"
    assert "kafka.sasl.password" in caplog.text and SECRET not in caplog.text + repr(opts)


# ------------------------------------------------------------------ errors, reprs, CLI
@pytest.mark.timeout(60)
def test_kafka_read_error_names_servers_without_userinfo():
    """The issue's case: "fetching topic metadata failed against Kafka bootstrap servers
    user:secret@…". Given directly to the driver's reader (no option parsing in between)."""
    from connector.kafka import KafkaOffsetReader

    port = closed_port()
    with KafkaOffsetReader({"bootstrap.servers": f"alice:{SECRET}@127.0.0.1:{port}"}, timeout_s=1.5) as r:
        assert SECRET not in repr(r) + str(r.describe())
        with pytest.raises(KafkaReadError) as ei:
            r.partitions_for(["orders"])
    assert f"127.0.0.1:{port}" in str(ei.value) and SECRET not in str(ei.value) and "alice" not in str(ei.value)


def test_remote_ref_url_credentials_are_not_in_document_errors():
    doc = _doc3("b1:9092")
    doc["channels"]["orders"]["messages"]["m"]["payload"] = {"$ref": f"https://alice:{SECRET}@schemas.example/o.json"}
    with pytest.raises(AsyncApiDocumentError) as ei:
        plan_read(load_document(doc), channel="orders")
    assert "schemas.example" in str(ei.value) and SECRET not in str(ei.value)


def test_inspect_output_has_no_userinfo(capsys, tmp_path):
    from connector.cli._inspect import add_inspect_arguments, inspect_command

    path = tmp_path / "doc.json"
    path.write_text(json.dumps(_doc2(f"kafka://alice:{SECRET}@b1:9092",
                                     registry=f"http://bob:{SECRET}@reg.example:8081")))
    for extra in ([], ["--json"]):
        parser = argparse.ArgumentParser()
        add_inspect_arguments(parser)
        code = inspect_command(parser.parse_args([str(path), *extra]))
        out = capsys.readouterr()
        assert code == 0, out.err
        assert "b1:9092" in out.out and SECRET not in out.out + out.err and "alice" not in out.out


@pytest.mark.slow
@pytest.mark.kafka
def test_datasource_reads_a_document_with_server_credentials_and_shows_none(spark, kafka, write_doc, capfd):
    """A 2.x document ``url: kafka://alice:secret@<mock broker>``: the read works (the
    credentials are ignored, not sent), and neither ``explain()`` nor the output shows them."""
    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("creds")
    for i in range(3):
        kafka.produce(topic, b"v%d" % i, partition=0)
    kafka.flush()
    doc = _doc2(f"kafka://alice:{SECRET}@{kafka.bootstrap_servers}")
    doc["channels"] = {topic: {"subscribe": {"message": {"name": "M"}}}}
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", write_doc(json.dumps(doc)))
          .option("channel", topic).load())
    assert sorted(r.value for r in df.collect()) == [b"v0", b"v1", b"v2"]
    df.explain(True)
    plans = df._jdf.queryExecution().toString()
    out, err = capfd.readouterr()
    assert SECRET not in plans + out + err


@pytest.mark.slow
@pytest.mark.kafka
def test_datasource_bootstrap_option_with_credentials_reads_and_shows_none(spark, kafka, write_doc, capfd):
    """``kafka.bootstrap.servers=alice:secret@<mock broker>`` as a reader option: stripped
    (with a warning) before any client sees it, so the read works and nothing prints it."""
    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("creds-opt")
    kafka.produce(topic, b"v", partition=0)
    kafka.flush()
    doc = _doc3("127.0.0.1:9")
    doc["channels"] = {"c": {"address": topic, "messages": {"m": {"name": "M"}}}}
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", write_doc(json.dumps(doc)))
          .option("channel", "c").option("kafka.bootstrap.servers", f"alice:{SECRET}@{kafka.bootstrap_servers}")
          .load())
    assert [r.value for r in df.collect()] == [b"v"]
    df.explain(True)
    plans = df._jdf.queryExecution().toString()
    out, err = capfd.readouterr()
    assert SECRET not in plans + out + err
