"""One registry-config builder and one librdkafka-config builder for the read, the write and the CLI."""
from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest
from registry import Vendor

from connector.errors import ConfigError
from connector.options import registry_config_for
from connector.options._parse import parse_options


def _plan(**kw):
    base = dict(registry_vendor=None, registry_url=None, registry_name=None, registry_region=None)
    return SimpleNamespace(**{**base, **kw})


def test_no_registry_anywhere_is_none():
    assert registry_config_for({}, _plan()) is None
    assert registry_config_for({}) is None


def test_glue_endpoint_region_and_name_come_from_the_document():
    cfg = registry_config_for({}, _plan(registry_vendor=Vendor.AWS_GLUE, registry_url="http://127.0.0.1:4566/?x=1",
                                        registry_name="reg", registry_region="eu-west-1"))
    assert (cfg.vendor, cfg.glue_endpoint_url, cfg.glue_registry_name, cfg.glue_region) == (
        "aws-glue", "http://127.0.0.1:4566", "reg", "eu-west-1")
    assert cfg.urls == ()


def test_options_override_the_document_and_basic_auth_pair_is_accepted():
    opts = parse_options({"asyncapi": "x", "channel": "c", "schema.registry.url": "http://127.0.0.1:2",
                          "schema.registry.basic.auth.username": "alice",
                          "schema.registry.basic.auth.password": "s3cret"})
    cfg = registry_config_for(opts.registry_options(), _plan(registry_url="http://127.0.0.1:1",
                                                             registry_vendor=Vendor.CONFLUENT))
    assert cfg.urls == ("http://127.0.0.1:2",) and cfg.basic_auth.get() == "alice:s3cret"
    assert "s3cret" not in repr(cfg)


DOC = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
       "servers": {"k": {"host": "broker.example:9093", "protocol": "kafka-secure",
                         "bindings": {"kafka": {"schemaRegistryUrl": "http://127.0.0.1:8081"}}}},
       "channels": {"c": {"address": "t", "messages": {"m": {"name": "M", "payload": {"type": "string"}}}}},
       "operations": {"send": {"action": "send", "channel": {"$ref": "#/channels/c"}}}}


def _read(**options):
    from connector.spark._setup import build_setup

    return build_setup(parse_options({"asyncapi": json.dumps(DOC), "channel": "c", **options}))


def _write(**options):
    import pyarrow as pa

    from connector.write import build_write_setup

    schema = pa.schema([("value", pa.string())])
    return build_write_setup(parse_options({"asyncapi": json.dumps(DOC), "channel": "c", "wireFormat": "none",
                                            **options}, direction="write"), schema)


@pytest.mark.parametrize("make", [_read, _write], ids=["read", "write"])
def test_read_and_write_share_the_conf_builder(make, caplog):
    setup = make(**{"kafka.bootstrap.servers": "alice:pw@localhost:9092", "kafka.security.protocol": "PLAINTEXT",
                    "kafka.ssl.endpoint.identification.algorithm": "none", "kafka.sasl.password": "pw2"})
    caplog.clear()  # the write setup builds (and warns about) its conf once on the driver
    with caplog.at_level(logging.WARNING, logger="connector.kafka"):
        conf = setup.kafka_conf()
        quiet = setup.kafka_conf(warn=False)
    assert conf == quiet
    assert conf["bootstrap.servers"] == "localhost:9092" and conf["security.protocol"] == "PLAINTEXT"
    assert conf["sasl.password"] == "pw2"
    assert sum("hostname verification is disabled" in r.getMessage() for r in caplog.records) == 1
    if hasattr(setup, "registry_config"):
        assert setup.registry_config.urls == ("http://127.0.0.1:8081",)


def test_bootstrap_missing_names_the_channel():
    doc = dict(DOC, servers={})
    from connector.spark._setup import build_setup

    setup = build_setup(parse_options({"asyncapi": json.dumps(doc), "channel": "c"}))
    with pytest.raises(ConfigError, match="channel 'c' gives none; set the option 'kafka.bootstrap.servers'"):
        setup.kafka_conf()


def test_producer_owned_settings_refused_by_the_builder():
    from connector.kafka import OWNED_PRODUCER_SETTINGS, kafka_conf_from_options

    with pytest.raises(ConfigError, match="'kafka.acks' is not supported"):
        kafka_conf_from_options({"acks": "1"}, bootstrap_servers="b:1", owned=OWNED_PRODUCER_SETTINGS)
    assert kafka_conf_from_options({"group.id": "g"}, bootstrap_servers="b:1",
                                   owned=OWNED_PRODUCER_SETTINGS)["group.id"] == "g"


def test_datasource_parses_once_and_fails_bad_offsets_at_load(monkeypatch):
    import connector.options as options
    from connector.spark._source import AsyncApiKafkaDataSource

    with pytest.raises(ConfigError, match="startingoffsets"):
        AsyncApiKafkaDataSource({"asyncapi": json.dumps(DOC), "channel": "c", "startingOffsets": "bogus"}).schema()
    calls = []
    real = options.parse_any  # _source imports it when parsing (not at import: Spark's lookup stays cheap)
    monkeypatch.setattr(options, "parse_any", lambda *a, **k: calls.append(1) or real(*a, **k))
    ds = AsyncApiKafkaDataSource({"asyncapi": json.dumps(DOC), "channel": "c", "kafka.bootstrap.servers": "b:1"})
    ds.schema()
    batch, stream = ds._setup_for(False), ds._setup_for(True)
    assert len(calls) == 1
    assert batch.options.starting.kind == "earliest" and batch.options.ending.kind == "latest"
    assert stream.options.starting.kind == "latest" and stream.options.ending is None
