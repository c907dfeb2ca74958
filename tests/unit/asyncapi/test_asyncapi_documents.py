"""The project's own test documents: Avro/JSON Schema/Protobuf, with and without a registry."""
from __future__ import annotations

import json
import pathlib
import pickle

import pytest

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError, ConfigError

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "asyncapi"
USERS = DATA / "users-avro-2.6.yml"
SENSORS = DATA / "sensors-3.0.yml"


def test_registry_backed_avro_26():
    plan = plan_read(load_document(USERS), channel="user/signedup")
    assert plan.server == "prod"  # the channel's servers list narrows the choice to one
    assert plan.topics == ("prod.users.signedup.v1",)  # binding topic beats the channel key
    assert plan.bootstrap_servers == "broker-1.example.com:9092,broker-2.example.com:9092"
    assert dict(plan.kafka_config) == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                       "ssl.endpoint.identification.algorithm": "https",
                                       "client.rack": "eu-west-1a"}
    assert "must-never-be-used" not in repr(plan)
    assert dict(plan.ignored_settings)["sasl.password"].startswith("secret")
    assert (plan.registry_url, plan.registry_vendor) == ("https://registry.example.com", "confluent")
    assert (plan.schema_id_location, plan.schema_id_payload_encoding) == ("payload", "confluent")
    assert plan.schema_lookup_strategy == "TopicRecordNameStrategy"
    assert plan.key_schema_lookup_strategy == "TopicNameStrategy"
    assert plan.framing() == "confluent"
    assert plan.group_id == "users-projection"  # const
    assert plan.client_id == "projection-1"  # first of several enum values
    assert plan.operation == "onUserSignedUp"  # 2.x publish: the application receives
    assert plan.partitions == 12 and plan.replicas == 3
    assert dict(plan.topic_configuration)["cleanup.policy"] == "delete,compact"
    (msg,) = plan.value_messages  # publish and subscribe share the message: listed once
    assert msg.name == "userSignedUp" and msg.message_name == "UserSignedUp"
    assert msg.title == "A user signed up"  # the message's own field beats the trait's
    assert msg.content_type == "application/vnd.apache.avro"  # from the trait
    schema = json.loads(msg.payload.text)
    assert msg.payload.format == "avro"
    assert schema["fields"][2]["type"]["name"] == "Address"  # address.avsc inlined once...
    assert schema["fields"][3]["type"] == ["null", "com.example.users.Address"]  # ...then named
    assert json.loads(plan.key_schema.text)["name"] == "UserKey" and plan.key_schema.format == "avro"
    assert pickle.loads(pickle.dumps(plan)) == plan


def test_registry_backed_avro_26_send_operation():
    plan = plan_read(load_document(USERS), operation="emitUserSignedUp")
    assert plan.operation == "emitUserSignedUp" and plan.client_id == "emitter" and plan.group_id is None


def test_pulsar_channel_refused_for_kafka_reading():
    doc = load_document(USERS)
    assert doc.channels["audit"].pulsar.retention_time == 7
    assert doc.servers["events-pulsar"].pulsar.tenant == "contoso"
    with pytest.raises(AsyncApiDocumentError, match="'events-pulsar' \\(pulsar\\+ssl\\).*no Kafka server|"
                                                    "no Kafka server.*'events-pulsar' \\(pulsar\\+ssl\\)"):
        plan_read(doc, channel="audit")
    with pytest.raises(AsyncApiDocumentError, match="'events-pulsar' uses protocol 'pulsar\\+ssl': not a Kafka"):
        plan_read(doc, channel="user/signedup", server="events-pulsar")


def test_channel_found_by_topic_name():
    assert plan_read(load_document(USERS), channel="prod.users.signedup.v1").channel == "user/signedup"


def test_templated_json_and_protobuf_30():
    doc = load_document(SENSORS)
    plan = plan_read(doc, channel="readings", server="local")
    assert plan.bootstrap_servers == "localhost:9092"  # server variable default
    assert dict(plan.kafka_config) == {"security.protocol": "PLAINTEXT"} and plan.required_secrets == ()
    assert plan.topic_pattern == r"^sensors\.(?P<site>north|south)\.(?P<sensorId>[A-Za-z0-9_-]+)\.readings$"
    assert plan.topic_params("sensors.south.t-1.readings") == {"site": "south", "sensorId": "t-1"}
    with pytest.raises(ConfigError):
        plan.topic_params("sensors.east.t-1.readings")
    # no operation named: the receive operation gives the ids; its trait gives groupId
    assert plan.operation == "consumeReadings"
    assert (plan.group_id, plan.client_id) == ("sensor-readers", "readings-reader")
    # all messages of the channel are kept; a decoder tells them apart by schema id
    assert [m.name for m in plan.value_messages] == ["reading", "calibration"]
    reading, calibration = plan.value_messages
    assert reading.payload.format == "json" and json.loads(reading.payload.text)["required"] == ["sensor_id", "value"]
    assert calibration.payload.format == "protobuf"
    assert calibration.payload.message_name == "Calibration"  # by the message name, nested ones ignored
    assert "message Reading" in calibration.payload.text
    assert plan.key_schema.format == "json" and json.loads(plan.key_schema.text) == {"type": "string"}
    assert plan.framing() == "none"


def test_message_filter_and_operation_messages():
    doc = load_document(SENSORS)
    plan = plan_read(doc, channel="readings", server="local", message="calibration")
    assert [m.name for m in plan.value_messages] == ["calibration"]
    plan = plan_read(doc, operation="consumeReadings", server="local")
    assert [m.name for m in plan.value_messages] == ["reading"]
    with pytest.raises(AsyncApiDocumentError, match="no message 'calibraton'.*did you mean 'calibration'"):
        plan_read(doc, channel="readings", server="local", message="calibraton")


def test_partial_params_and_apicurio_oauth_server():
    plan = plan_read(load_document(SENSORS), channel="readings", server="cloud", params={"site": "north"})
    assert plan.topic_pattern == r"^sensors\.north\.(?P<sensorId>[A-Za-z0-9_-]+)\.readings$"
    assert plan.topic_params("sensors.north.x.readings") == {"site": "north", "sensorId": "x"}
    assert dict(plan.kafka_config) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "https://auth.example.com/token",
        "sasl.oauthbearer.scope": "kafka"}
    assert plan.required_secrets == ("sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret")
    assert plan.registry_vendor == "apicurio"
    assert plan.framing() == "header-apicurio-global"  # Apicurio serdes default: id in headers


def test_recursive_json_schema_keeps_a_ref():
    plan = plan_read(load_document(SENSORS), channel="tree")
    assert plan.server == "local"  # channel restricted to one server
    schema = json.loads(plan.value_messages[0].payload.text)
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}


def test_bad_param_values():
    doc = load_document(SENSORS)
    with pytest.raises(ConfigError, match="unknown address parameter 'room'"):
        plan_read(doc, channel="readings", server="local", params={"room": "1"})
    with pytest.raises(ConfigError, match="not allowed in Kafka topic names"):
        plan_read(doc, channel="readings", server="local", params={"sensorId": "a/b"})


def test_text_and_dict_sources(tmp_path):
    text = SENSORS.read_text()
    with pytest.raises(AsyncApiDocumentError, match="needs the document's directory"):
        plan_read(load_document(text), channel="readings", server="local")
    doc = load_document(text, base_dir=DATA)
    assert plan_read(doc, channel="readings", server="local").value_messages[1].payload.format == "protobuf"
    import yaml
    doc = load_document(yaml.safe_load(text), base_dir=str(DATA))
    assert list(doc.channels) == ["readings", "tree"]
