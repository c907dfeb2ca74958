"""librdkafka configuration checks: owned settings refused, secrets redacted, TLS warnings."""
from __future__ import annotations

import logging

import pytest

from connector.errors import ConfigError
from connector.kafka import is_secret_setting, kafka_conf_from_options
from connector.kafka._conf import OWNED_KAFKA_SETTINGS, SECRET_KAFKA_SETTINGS, redact_conf


@pytest.mark.parametrize("setting", sorted(OWNED_KAFKA_SETTINGS))
def test_owned_settings_are_refused_with_a_reason(setting):
    with pytest.raises(ConfigError) as info:
        kafka_conf_from_options({f"kafka.{setting}": "x"}, bootstrap_servers="b:9092")
    assert setting in str(info.value)
    assert OWNED_KAFKA_SETTINGS[setting] in str(info.value)
    # also when they come from the document
    with pytest.raises(ConfigError):
        kafka_conf_from_options({}, bootstrap_servers="b:9092", plan_config=[(setting, "x")])


def test_group_id_only_when_allowed():
    conf = kafka_conf_from_options({"group.id": "acl-group"}, bootstrap_servers="b:9092",
                                   allow_group_id=True)
    assert conf["group.id"] == "acl-group"


def test_merge_order_and_prefix_stripping():
    conf = kafka_conf_from_options(
        {"kafka.security.protocol": "SASL_SSL", "Kafka.Client.Id": "me",
         "isolation.level": "read_uncommitted"},
        bootstrap_servers="doc:9092",
        plan_config=[("security.protocol", "SSL"), ("sasl.mechanism", "PLAIN")])
    assert conf == {"bootstrap.servers": "doc:9092", "security.protocol": "SASL_SSL",
                    "sasl.mechanism": "PLAIN", "client.id": "me",
                    "isolation.level": "read_uncommitted"}
    user = kafka_conf_from_options({"bootstrap.servers": "user:9092"},
                                   bootstrap_servers="doc:9092")
    assert user["bootstrap.servers"] == "user:9092"


def test_bootstrap_required():
    with pytest.raises(ConfigError, match="bootstrap"):
        kafka_conf_from_options({})


def test_native_code_settings_not_from_documents():
    with pytest.raises(ConfigError, match="plugin.library.paths"):
        kafka_conf_from_options({}, bootstrap_servers="b:1",
                                plan_config=[("plugin.library.paths", "/tmp/evil.so")])
    conf = kafka_conf_from_options({"plugin.library.paths": "monitoring-interceptor"},
                                   bootstrap_servers="b:1")
    assert conf["plugin.library.paths"] == "monitoring-interceptor"


def test_secrets_are_recognised_and_redacted():
    for name in SECRET_KAFKA_SETTINGS:
        assert is_secret_setting(name)
    assert is_secret_setting("ssl.some.future.password")
    assert not is_secret_setting("sasl.username")
    red = redact_conf({"sasl.password": "hunter2", "sasl.username": "bob"})
    assert red == {"sasl.password": "***", "sasl.username": "bob"}


def test_disabling_tls_verification_warns_every_time(caplog):
    opts = {"ssl.endpoint.identification.algorithm": "none"}
    with caplog.at_level(logging.WARNING, logger="connector.kafka"):
        kafka_conf_from_options(opts, bootstrap_servers="b:1")
        kafka_conf_from_options(opts, bootstrap_servers="b:1")
        kafka_conf_from_options({"enable.ssl.certificate.verification": "false"},
                                bootstrap_servers="b:1")
    msgs = [r.getMessage() for r in caplog.records]
    assert sum("hostname verification is disabled" in m for m in msgs) == 2
    assert sum("certificate verification is disabled" in m for m in msgs) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="connector.kafka"):
        kafka_conf_from_options({}, bootstrap_servers="b:1")
    assert not caplog.records


DOC_SECURITY = [("security.protocol", "SASL_SSL"), ("sasl.mechanism", "SCRAM-SHA-256"),
                ("ssl.ca.location", "/etc/ca.pem"), ("client.id", "shop")]


@pytest.mark.parametrize("proto, kept", [
    ("PLAINTEXT", {"client.id"}),
    ("plaintext", {"client.id"}),
    ("SSL", {"client.id", "ssl.ca.location"}),
    ("SASL_PLAINTEXT", {"client.id", "sasl.mechanism"}),
    ("SASL_SSL", {"client.id", "sasl.mechanism", "ssl.ca.location"}),
])
def test_user_security_protocol_drops_the_documents_other_security_settings(proto, kept):
    """Issue 17: pointing a read at a local cluster takes one option, not one per document setting."""
    conf = kafka_conf_from_options({"kafka.bootstrap.servers": "localhost:9092", "kafka.security.protocol": proto},
                                   bootstrap_servers="prod:9093", plan_config=DOC_SECURITY)
    assert conf["security.protocol"] == proto and conf["bootstrap.servers"] == "localhost:9092"
    assert set(conf) - {"security.protocol", "bootstrap.servers"} == kept


def test_explicit_user_security_settings_survive_and_without_override_the_document_applies():
    conf = kafka_conf_from_options({"security.protocol": "PLAINTEXT", "sasl.mechanism": "PLAIN"},
                                   bootstrap_servers="b:1", plan_config=DOC_SECURITY)
    assert conf["sasl.mechanism"] == "PLAIN" and "ssl.ca.location" not in conf
    conf = kafka_conf_from_options({}, bootstrap_servers="b:1", plan_config=DOC_SECURITY)
    assert conf["sasl.mechanism"] == "SCRAM-SHA-256" and conf["security.protocol"] == "SASL_SSL"


def test_librdkafka_confwarn_lines_reach_the_log_once_per_process():
    from connector.kafka._conf import CONFWARN_ONCE

    def rec(client):
        return logging.LogRecord("connector.kafka._consume", logging.WARNING, __file__, 1,
                                 f"CONFWARN [rdkafka#consumer-{client}] [thrd:app]: property `x` unique-{id(rec)}",
                                 None, None)
    assert CONFWARN_ONCE.filter(rec(1)) is True
    assert CONFWARN_ONCE.filter(rec(2)) is False  # same warning from the next consumer
    other = logging.LogRecord("connector.kafka._consume", logging.WARNING, __file__, 1, "FAIL broker down",
                              None, None)
    assert CONFWARN_ONCE.filter(other) and CONFWARN_ONCE.filter(other)
    assert CONFWARN_ONCE in logging.getLogger("connector.kafka._consume").filters
