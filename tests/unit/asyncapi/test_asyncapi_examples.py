"""The three public example documents: each parses, and every Kafka channel plans as expected."""
from __future__ import annotations

import pathlib
import pickle
import re

import pytest

from connector.asyncapi import describe, load_document, plan_read
from connector.asyncapi._document import list_channels
from connector.errors import AsyncApiDocumentError, ConfigError

EXAMPLES = pathlib.Path("/work/shared/asyncapi-examples")
pytestmark = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="shared AsyncAPI examples not available")

SL26 = EXAMPLES / "streetlights-kafka-2.6.yml"
SL31 = EXAMPLES / "streetlights-kafka-3.1.yml"
ADEO = EXAMPLES / "adeo-kafka-request-reply-3.1.yml"

SCRAM = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}
MTLS = {"security.protocol": "SSL"}

# (2.6 channel key, 3.1 channel key, topic template, receive/send operation, message name)
STREETLIGHTS = [
    ("smartylighting.streetlights.1.0.event.{streetlightId}.lighting.measured", "lightingMeasured",
     "smartylighting.streetlights.1.0.event.{}.lighting.measured", "receiveLightMeasurement", "lightMeasured"),
    ("smartylighting.streetlights.1.0.action.{streetlightId}.turn.on", "lightTurnOn",
     "smartylighting.streetlights.1.0.action.{}.turn.on", "turnOn", "turnOnOff"),
    ("smartylighting.streetlights.1.0.action.{streetlightId}.turn.off", "lightTurnOff",
     "smartylighting.streetlights.1.0.action.{}.turn.off", "turnOff", "turnOnOff"),
    ("smartylighting.streetlights.1.0.action.{streetlightId}.dim", "lightsDim",
     "smartylighting.streetlights.1.0.action.{}.dim", "dimLight", "dimLight"),
]


@pytest.mark.parametrize("path", [SL26, SL31, ADEO], ids=lambda p: p.name)
def test_example_parses_and_describes(path):
    doc = load_document(path)
    summary = describe(doc)
    assert summary["asyncapi"] == doc.version
    assert [c["name"] for c in summary["channels"]] == list(doc.channels)
    assert all(s["kafka"] for s in summary["servers"])


def test_streetlights_26_model():
    doc = load_document(SL26)
    assert doc.major == 2
    assert list(doc.servers) == ["scram-connections", "mtls-connections"]
    assert [c for c, *_ in STREETLIGHTS] == list(doc.channels)
    ops = {name: (op.action, op.channel) for name, op in doc.operations.items()}
    # 2.x publish = the application receives; subscribe = it sends
    assert ops["receiveLightMeasurement"] == ("receive", STREETLIGHTS[0][0])
    assert ops["turnOn"][0] == "send"


@pytest.mark.parametrize("version", ["2.6", "3.1"])
@pytest.mark.parametrize("row", STREETLIGHTS, ids=lambda r: r[1])
@pytest.mark.parametrize("server,bootstrap,config,secrets", [
    ("scram-connections", "test.mykafkacluster.org:18092", SCRAM, ("sasl.username", "sasl.password")),
    ("mtls-connections", "test.mykafkacluster.org:28092", MTLS, ("ssl.certificate.location", "ssl.key.location")),
])
def test_streetlights_every_channel(version, row, server, bootstrap, config, secrets):
    key26, key31, template, op_name, _ = row
    doc = load_document(SL26 if version == "2.6" else SL31)
    plan = plan_read(doc, channel=key26 if version == "2.6" else key31, server=server)
    assert plan.topics == ()
    expected = "^" + re.escape(template).replace(r"\{\}", "(?P<streetlightId>[A-Za-z0-9_-]+)") + "$"
    assert plan.topic_pattern == expected
    assert plan.param_names == ("streetlightId",)
    assert plan.topic_params(template.format("lamp-42")) == {"streetlightId": "lamp-42"}
    assert not plan.matches(template.format("a.b"))  # a parameter is one dot-free segment
    assert plan.bootstrap_servers == bootstrap
    assert dict(plan.kafka_config) == config
    assert plan.required_secrets == secrets
    assert plan.registry_url is None and plan.framing() == "none"
    assert plan.client_id == "my-app-id" and plan.group_id is None
    assert plan.operation == op_name
    assert len(plan.value_messages) == 1
    msg = plan.value_messages[0]
    assert msg.payload.format == "json"
    assert msg.content_type == "application/json"
    assert '"sentAt":{"type":"string","format":"date-time"' in msg.payload.text  # local $ref inlined
    assert "$ref" not in msg.payload.text
    assert '"my-app-header"' in msg.headers.text  # from the message trait
    assert pickle.loads(pickle.dumps(plan)) == plan


def test_streetlights_turn_on_enum_stays_strings():
    # YAML 1.1 would read the unquoted on/off of the 2.6 file as booleans
    plan = plan_read(load_document(SL26), channel=STREETLIGHTS[1][0], server="mtls-connections")
    assert '"enum":["on","off"]' in plan.value_messages[0].payload.text


def test_streetlights_concrete_topic_with_params():
    plan = plan_read(load_document(SL31), channel="lightsDim", server="scram-connections",
                     params={"streetlightId": "s1"})
    assert plan.topics == ("smartylighting.streetlights.1.0.action.s1.dim",)
    assert plan.topic_pattern is None
    assert plan.topic_params("smartylighting.streetlights.1.0.action.s1.dim") == {"streetlightId": "s1"}


def test_streetlights_several_servers_needs_a_choice():
    with pytest.raises(ConfigError, match="scram-connections.*mtls-connections"):
        plan_read(load_document(SL31), channel="lightsDim")


def test_streetlights_operation_selects_channel():
    plan = plan_read(load_document(SL31), operation="receiveLightMeasurement", server="mtls-connections")
    assert plan.channel == "lightingMeasured"
    assert [m.name for m in plan.value_messages] == ["lightMeasured"]


@pytest.mark.parametrize("server,bootstrap", [("production", "prod.url:9092"), ("staging", "staging.url:9092"),
                                              ("dev", "dev.url:9092")])
def test_adeo_request_channel(server, bootstrap):
    doc = load_document(ADEO)  # loads although payloads are remote: they are resolved per plan
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(doc, channel="costingRequestChannel", server=server)
    assert "CostingRequestPayload.avsc" in str(e.value) and "allow_remote_refs=True" in str(e.value)
    assert e.value.path == "channels.costingRequestChannel.messages.CostingRequest.payload.schema"

    plan = plan_read(doc, channel="costingRequestChannel", server=server, require_schemas=False)
    assert plan.topic_pattern == (r"^adeo\-(?P<env>dev|sit|uat1|preprod|prod)\-case\-study\-COSTING\-REQUEST\-"
                                  r"(?P<version>[A-Za-z0-9_-]+)$")
    assert plan.topic_params("adeo-uat1-case-study-COSTING-REQUEST-V1") == {"env": "uat1", "version": "V1"}
    assert not plan.matches("adeo-qa-case-study-COSTING-REQUEST-V1")  # env is an enum
    assert plan.bootstrap_servers == bootstrap
    # x- settings of the security scheme win over what protocol "kafka" alone implies
    assert dict(plan.kafka_config) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                       "ssl.endpoint.identification.algorithm": "https"}
    assert ("sasl.jaas.config" in dict(plan.ignored_settings))
    assert "CLUSTER_API_SECRET" not in repr(plan)
    assert plan.required_secrets == ("sasl.username", "sasl.password")
    assert plan.registry_url == "https://schema-registry.prod.url/"
    assert plan.registry_vendor is None and plan.framing() == "confluent"
    assert plan.partitions == 3 and plan.replicas == 3
    assert dict(plan.topic_configuration) == {"cleanup.policy": "delete", "retention.ms": "60000000"}
    assert plan.operation == "receiveACostingRequest" and plan.group_id is None  # groupId has no value
    (msg,) = plan.value_messages
    assert msg.name == "CostingRequest" and msg.payload is None
    assert plan.unresolved_schemas[0][0] == "channels.costingRequestChannel.messages.CostingRequest.payload.schema"
    assert '"REPLY_TOPIC":{"type":"string"' in msg.headers.text


def test_adeo_request_channel_with_params():
    plan = plan_read(load_document(ADEO), channel="costingRequestChannel", server="dev",
                     params={"env": "dev", "version": "V1"}, require_schemas=False)
    assert plan.topics == ("adeo-dev-case-study-COSTING-REQUEST-V1",)
    with pytest.raises(ConfigError, match="not one of dev, sit, uat1, preprod, prod"):
        plan_read(load_document(ADEO), channel="costingRequestChannel", server="dev", params={"env": "qa"},
                  require_schemas=False)


def test_adeo_response_channel_has_dynamic_address():
    doc = load_document(ADEO)
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(doc, channel="costingResponseChannel", server="production")
    assert e.value.path == "channels.costingResponseChannel.address"
    plan = plan_read(doc, channel="costingResponseChannel", server="production",
                     topic="adeo-case-study-COSTING-RESPONSE-V1", require_schemas=False)
    assert plan.topics == ("adeo-case-study-COSTING-RESPONSE-V1",)
    assert plan.operation is None and plan.group_id is None
    assert [m.name for m in plan.value_messages] == ["costingResponse"]


def test_adeo_needs_a_server_choice():
    with pytest.raises(ConfigError, match="'production' \\(kafka\\), 'staging' \\(kafka\\), 'dev' \\(kafka\\)"):
        plan_read(load_document(ADEO), channel="costingRequestChannel", require_schemas=False)


def test_adeo_extensions_kept_for_callers():
    doc = load_document(ADEO)
    ch = doc.channels["costingResponseChannel"]
    assert set(ch.kafka.extensions) == {"x-key.subject.name.strategy", "x-value.subject.name.strategy"}
    scheme = doc.servers["production"].security[0][0]
    assert scheme.extensions["x-security.protocol"] == "SASL_SSL"


def test_list_channels_does_not_fetch():
    channels = {c["name"]: c for c in list_channels(ADEO)}
    assert channels["costingRequestChannel"]["messages"][0]["format"] == "avro"
    assert channels["costingResponseChannel"]["topic"] is None
