"""Framing mapping, address templates, security mapping, YAML dialect and operation-binding values."""
from __future__ import annotations

import pytest
from registry import Vendor

from connector.asyncapi import ReadPlan, load_document, plan_read
from connector.asyncapi._bindings import pick_schema_value
from connector.asyncapi._params import expand_address
from connector.asyncapi._model import Parameter
from connector.asyncapi._schema import classify_schema_format, top_level_messages
from connector.errors import AsyncApiDocumentError, ConfigError


def _plan(**kw) -> ReadPlan:
    base = dict(channel="c", topics=("t",), topic_pattern=None, param_names=(), bootstrap_servers=None,
                kafka_config=(), registry_url="http://r", registry_vendor=None, schema_id_location=None,
                schema_id_payload_encoding=None, schema_lookup_strategy=None, value_messages=(),
                key_schema=None, group_id=None, client_id=None)
    base.update(kw)
    return ReadPlan(**base)


@pytest.mark.parametrize("url,vendor,location,encoding,expected", [
    (None, None, None, None, "none"),
    ("http://r", None, None, None, "confluent"),
    ("http://r", "confluent", "payload", "confluent", "confluent"),
    ("http://r", "confluent", "payload", "4", "confluent"),
    ("http://r", None, "payload", "apicurio-legacy", "apicurio-legacy"),
    ("http://r", None, "payload", "apicurio-new", "apicurio-new"),
    ("http://r", "apicurio", "payload", None, "apicurio-legacy"),
    ("http://r", "apicurio", "payload", "4", "apicurio-new"),
    ("http://r", "apicurio", None, None, "header-apicurio-global"),
    ("http://r", "apicurio", "header", None, "header-apicurio-global"),
    ("http://r", "apicurio", "header", "apicurio-new", "header-apicurio-content"),
    ("http://r", "confluent", "header", None, "header-confluent"),
    ("http://r", None, "header", None, "header-confluent"),
    ("http://r", "aws-glue", None, None, "glue"),
    ("http://r", "aws-glue", "payload", None, "glue"),
    ("http://r", None, "payload", "16", "confluent-guid"),
    (None, None, "payload", "confluent", "confluent"),  # no server in the document: bindings still say
])
def test_framing_mapping(url, vendor, location, encoding, expected):
    plan = _plan(registry_url=url, registry_vendor=Vendor.parse(vendor) if vendor else None, schema_id_location=location,
                 schema_id_payload_encoding=encoding)
    assert plan.framing() == expected


def test_framing_unknown_encoding_is_a_config_error():
    with pytest.raises(ConfigError, match="set the framing option"):
        _plan(schema_id_location="payload", schema_id_payload_encoding="zigzag").framing()


def test_framing_is_wireformat_enum_when_available():
    wireformat = pytest.importorskip("wireformat")
    if not hasattr(wireformat, "Framing"):
        pytest.skip("wireformat.Framing not there yet")
    assert isinstance(_plan().framing(), wireformat.Framing)


def test_address_parameters():
    params = {"a": Parameter("a", pattern="^[0-9]+$"), "b-c": Parameter("b-c", enum=("x.y", "z"))}
    topics, pattern, names, groups, fixed = expand_address("t.{a}.{b-c}.{a}", params, None, "p")
    assert names == ("a", "b-c") and topics == ()
    assert pattern == r"^t\.(?P<a>[0-9]+)\.(?P<p1>x\.y|z)\.(?P=a)$"
    assert groups == (("a", "a"), ("p1", "b-c"))
    plan = _plan(topics=(), topic_pattern=pattern, param_names=names, param_groups=groups)
    assert plan.topic_params("t.12.x.y.12") == {"a": "12", "b-c": "x.y"}
    assert not plan.matches("t.12.x.y.13")  # a repeated parameter repeats its value
    with pytest.raises(ConfigError, match="does not match pattern"):
        expand_address("t.{a}", params, {"a": "x"}, "p")
    topics, pattern, *_ = expand_address("t.{a}.{b-c}.{a}", params, {"a": 7, "b-c": "z"}, "p")
    assert topics == ("t.7.z.7",) and pattern is None


def test_topic_name_checks():
    with pytest.raises(AsyncApiDocumentError, match="not a valid Kafka topic name"):
        expand_address("x" * 250, {}, None, "p")
    assert expand_address("a_b-c.d", {}, None, "p")[0] == ("a_b-c.d",)


@pytest.mark.parametrize("fmt,expected", [
    (None, "json"), ("application/vnd.aai.asyncapi+json;version=3.0.0", "json"),
    ("application/schema+json;version=draft-07", "json"), ("application/schema+yaml;version=draft-07", "json"),
    ("application/vnd.apache.avro;version=1.9.0", "avro"), ("application/vnd.apache.avro+yaml;version=1.9.0", "avro"),
    ("Application/VND.Apache.Avro+JSON; version=1.9.0", "avro"),
    ("application/vnd.google.protobuf;version=3", "protobuf"),
    ("application/vnd.oai.openapi;version=3.0.0", "json"),
])
def test_schema_formats(fmt, expected):
    assert classify_schema_format(fmt) == expected


def test_proto_top_level_messages_ignore_nested_comments_and_strings():
    src = 'message A { message B {} string s = 1 [default = "message X {"]; }\n// message C {}\n' \
          '/* message D {} */ enum E { V = 0; }\nmessage F {}'
    assert top_level_messages(src) == ["A", "F"]


@pytest.mark.parametrize("schema,expected", [
    ({"type": "string", "const": "c", "enum": ["e"], "default": "d"}, "c"),
    ({"enum": ["only"], "default": "d"}, "only"),
    ({"enum": ["a", "b"], "default": "d"}, "d"),
    ({"enum": ["a", "b"]}, "a"),
    ({"type": "string", "description": "free text"}, None),
    ("plain-string", "plain-string"),
    (None, None),
])
def test_operation_binding_value_choice(schema, expected):
    assert pick_schema_value(schema, "p") == expected


def _server_doc(protocol: str, scheme: dict | None) -> dict:
    doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "servers": {"s": {"host": "h:9092", "protocol": protocol}},
           "channels": {"c": {"address": "t"}}}
    if scheme is not None:
        doc["servers"]["s"]["security"] = [{"$ref": "#/components/securitySchemes/x"}]
        doc["components"] = {"securitySchemes": {"x": scheme}}
    return doc


@pytest.mark.parametrize("protocol,scheme,config,secrets", [
    ("kafka", None, {"security.protocol": "PLAINTEXT"}, ()),
    ("kafka-secure", None, {"security.protocol": "SSL"}, ()),
    ("kafka", {"type": "scramSha512"}, {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"},
     ("sasl.username", "sasl.password")),
    ("kafka-secure", {"type": "gssapi", "x-sasl.kerberos.service.name": "kafka"},
     {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.kerberos.service.name": "kafka"},
     ("sasl.kerberos.principal", "sasl.kerberos.keytab")),
    ("kafka-secure", {"type": "openIdConnect", "openIdConnectUrl": "https://idp/.well-known/openid-configuration"},
     {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc"},
     ("sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret")),
    ("kafka", {"type": "X509"}, {"security.protocol": "SSL"}, ("ssl.certificate.location", "ssl.key.location")),
    ("kafka-secure", {"type": "plain", "x-ssl.endpoint.identification.algorithm": "none",
                      "x-enable.ssl.certificate.verification": "false", "x-ssl.key.password": "p"},
     {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, ("sasl.username", "sasl.password")),
])
def test_security_mapping(protocol, scheme, config, secrets):
    plan = plan_read(load_document(_server_doc(protocol, scheme)), channel="c")
    assert dict(plan.kafka_config) == config
    assert plan.required_secrets == secrets
    assert "'p'" not in repr(plan)


def test_tls_weakening_settings_are_ignored_with_reasons():
    plan = plan_read(load_document(_server_doc("kafka-secure", {
        "type": "plain", "x-ssl.endpoint.identification.algorithm": "none",
        "x-enable.ssl.certificate.verification": "false"})), channel="c")
    ignored = dict(plan.ignored_settings)
    assert "hostname verification" in ignored["ssl.endpoint.identification.algorithm"]
    assert "enable.ssl.certificate.verification" in ignored


def test_yaml_12_scalars():
    doc = load_document("asyncapi: 3.0.0\ninfo: {title: t, version: '1'}\nx-a: [on, off, yes, no, true, 2024-01-02]\n")
    assert doc.raw["x-a"] == ["on", "off", "yes", "no", True, "2024-01-02"]


def test_json_text_and_bytes():
    assert load_document('{"asyncapi": "2.6.0", "channels": {}}').version == "2.6.0"
    assert load_document(b'asyncapi: "3.0.0"\n').version == "3.0.0"


def test_not_a_mapping():
    with pytest.raises(AsyncApiDocumentError, match="mapping at the top level"):
        load_document("- a\n- b\n")
    with pytest.raises(AsyncApiDocumentError, match="cannot read"):
        load_document("missing-file.yaml")


def test_channel_servers_restriction_picks_the_only_one():
    doc = _server_doc("kafka", None)
    doc["servers"]["other"] = {"host": "o:9092", "protocol": "kafka"}
    doc["channels"]["c"]["servers"] = [{"$ref": "#/servers/other"}]
    assert plan_read(load_document(doc), channel="c").bootstrap_servers == "o:9092"
    doc["channels"]["c"]["servers"] = [{"$ref": "#/servers/nope"}]
    with pytest.raises(AsyncApiDocumentError, match="nothing at /servers/nope"):
        load_document(doc)


def test_server_variables():
    doc = _server_doc("kafka", None)
    doc["servers"]["s"]["host"] = "{region}.kafka.example.com:{port}"
    doc["servers"]["s"]["variables"] = {"region": {"enum": ["eu", "us"]}, "port": {"default": 9093}}
    assert plan_read(load_document(doc), channel="c").bootstrap_servers == "eu.kafka.example.com:9093"
    doc["servers"]["s"]["variables"] = {}
    with pytest.raises(AsyncApiDocumentError, match="variable 'region' has no default"):
        plan_read(load_document(doc), channel="c")


def test_newer_binding_version_keeps_unknown_fields():
    doc = _server_doc("kafka", None)
    doc["channels"]["c"]["bindings"] = {"kafka": {"bindingVersion": "0.6.0", "futureField": 1, "partitions": 2}}
    ch = load_document(doc).channels["c"]
    assert ch.kafka.extensions == {"futureField": 1} and ch.kafka.partitions == 2


def test_operation_and_channel_must_agree():
    doc = load_document(_server_doc("kafka", None))
    doc2 = _server_doc("kafka", None)
    doc2["channels"]["d"] = {"address": "u"}
    doc2["operations"] = {"r": {"action": "receive", "channel": {"$ref": "#/channels/c"}}}
    loaded = load_document(doc2)
    assert plan_read(loaded, operation="r", channel="c").operation == "r"
    assert plan_read(loaded, operation="r", channel="t").channel == "c"  # by address
    with pytest.raises(ConfigError, match="uses channel 'c', not 'd'"):
        plan_read(loaded, operation="r", channel="d")
    with pytest.raises(ConfigError, match="choose one with channel="):
        plan_read(loaded)
    assert plan_read(doc).channel == "c"  # a single channel needs no name


def _payload_doc(payload: dict, schemas: dict, schema_format: str | None = None) -> dict:
    if schema_format:
        payload = {"schemaFormat": schema_format, "schema": payload}
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "channels": {"c": {"address": "t", "messages": {"m": {"payload": payload}}}},
            "components": {"schemas": schemas}}


def test_json_pointer_escapes():
    doc = _payload_doc({"$ref": "#/components/schemas/a~1b~0c"}, {"a/b~c": {"type": "integer"}})
    assert plan_read(load_document(doc)).value_messages[0].payload.text == '{"type":"integer"}'
    doc = _payload_doc({"$ref": "#/components/schemas/a%7E1b~0c"}, {"a/b~c": {"type": "integer"}})
    assert plan_read(load_document(doc)).value_messages[0].payload.text == '{"type":"integer"}'


def test_recursive_avro_via_ref_becomes_a_name():
    node = {"type": "record", "name": "Node", "namespace": "ex",
            "fields": [{"name": "next", "type": ["null", {"$ref": "#/components/schemas/Node"}]}]}
    doc = _payload_doc({"$ref": "#/components/schemas/Node"}, {"Node": node},
                       "application/vnd.apache.avro;version=1.9.0")
    import json
    schema = json.loads(plan_read(load_document(doc)).value_messages[0].payload.text)
    assert schema["fields"][0]["type"] == ["null", "ex.Node"]


def test_recursive_non_named_avro_is_refused():
    doc = _payload_doc({"$ref": "#/components/schemas/A"},
                       {"A": {"type": "array", "items": {"$ref": "#/components/schemas/A"}}},
                       "application/vnd.apache.avro;version=1.9.0")
    with pytest.raises(AsyncApiDocumentError, match="does not designate a named Avro type"):
        plan_read(load_document(doc))


def test_2x_one_of_messages_all_kept():
    import pathlib
    import yaml
    data = pathlib.Path(__file__).resolve().parents[2] / "data" / "asyncapi" / "skeleton-2.6.yml"
    plan = plan_read(load_document(yaml.safe_load(data.read_text())), channel="a.{id}")
    assert [m.payload.format for m in plan.value_messages] == ["avro", "json"]
    assert plan.topic_pattern == r"^a\.(?P<id>x|y)$"  # 2.x parameter schema enum
    assert plan.group_id == "g" and dict(plan.kafka_config)["sasl.mechanism"] == "SCRAM-SHA-512"


def test_pure_ref_cycle_in_2x_payload():
    doc = {"asyncapi": "2.6.0", "info": {"title": "t", "version": "1"},
           "channels": {"t": {"publish": {"message": {"payload": {"$ref": "#/components/schemas/A"}}}}},
           "components": {"schemas": {"A": {"$ref": "#/components/schemas/B"},
                                      "B": {"$ref": "#/components/schemas/A"}}}}
    with pytest.raises(AsyncApiDocumentError, match="cycle") as e:
        plan_read(load_document(doc))
    assert e.value.path == "channels.t.publish.message.payload"
