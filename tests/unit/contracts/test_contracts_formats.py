"""The rules' per-record path and dead-letter records in every format: each format hands the rules
its records as objects (``PayloadFormat.record_form``) and confluent-kafka's serde of its kind,
and the result must be what confluent-kafka's own serializers and deserializers make of the same
records (issue 36: the rules no longer know which format they run on)."""
from __future__ import annotations

import copy
import json

import pytest

from tests.unit.contracts.contract_helpers import (
    ROWS,
    Fmt,
    cel_rule,
    confluent_client,
    ctx,
    encrypt_rule,
    read,
    rule_registry,
    settings,
    write,
)

from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.serialization import SerializationError

from connector.schema import SchemaRequest
from connector.schema._request import Registration
from connector.testing import RegistryServer

FORMATS = ["avro", "json", "protobuf"]
# outside the Arrow subset (a regex): the rows go per record through confluent-kafka's serdes
PER_RECORD = "message.name.matches('^[a-z]+$') && message.age >= 18"


@pytest.fixture()
def server():
    with RegistryServer() as srv:
        yield srv


def _serialize_each(ser, fmt, rows):
    """confluent-kafka's bytes per row, or None where its serializer refused the row."""
    out = []
    for r in rows:
        try:
            out.append(ser(fmt.obj(copy.deepcopy(r)), ctx("t")))
        except SerializationError:
            out.append(None)
    return out


@pytest.mark.parametrize("name", FORMATS)
def test_a_per_record_read_condition_fails_what_confluent_fails(server, name):
    fmt = Fmt(name)
    client = confluent_client(server.url)
    fmt.register(client, "t-value", [cel_rule("adults", PER_RECORD)])
    values = [fmt.serializer(client)(fmt.obj(r), ctx("t")) for r in ROWS[name]]
    deser = fmt.deserializer(client)
    theirs = []
    for v in values:
        try:
            theirs.append(fmt.plain(deser(v, ctx("t"))))
        except SerializationError:
            theirs.append(None)
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    errors = res.errors.to_pylist()
    assert [e is not None for e in errors] == [t is None for t in theirs] == [False, True, False]
    assert "adults" in errors[1]
    assert res.values.to_pylist() == theirs


@pytest.mark.parametrize("name", FORMATS)
def test_a_per_record_write_condition_writes_confluents_bytes(server, name):
    fmt = Fmt(name)
    client = confluent_client(server.url)
    fmt.register(client, "t-value", [cel_rule("adults", PER_RECORD, mode=RuleMode.WRITE)])
    theirs = _serialize_each(fmt.serializer(client), fmt, ROWS[name])
    out, _ = write(server.url, ROWS[name], request=SchemaRequest(registration=Registration.LATEST,
                                                                 subject="t-value", contract=settings()))
    assert out.values.to_pylist() == theirs
    assert [e is not None for e in out.errors.to_pylist()] == [t is None for t in theirs] == [False, True, False]


@pytest.mark.kafka
@pytest.mark.parametrize("name", FORMATS)
def test_dlq_records_on_write_are_the_records_as_json_with_encrypted_fields_redacted(server, kafka, name):
    from confluent_kafka.schema_registry.rules.dlq.dlq_action import DlqAction

    from tests.unit.contracts.test_contracts_conditions import _consume

    fmt = Fmt(name)
    client = confluent_client(server.url)
    theirs_topic, ours_topic = f"fdlq-theirs-{name}", f"fdlq-ours-{name}"
    fmt.register(client, "t-value", [encrypt_rule(), cel_rule("adults", "message.age >= 18", mode=RuleMode.WRITE,
                                                              on_failure="DLQ", params={"dlq.topic": theirs_topic})])
    action = DlqAction({"bootstrap.servers": kafka.bootstrap_servers, "dlq.auto.flush": "true"})
    refused = [v is None for v in _serialize_each(fmt.serializer(client, rule_registry=rule_registry(dlq=action)),
                                                  fmt, ROWS[name])]
    action.close()
    contract = settings(dlq_topic=ours_topic).with_producer({"bootstrap.servers": kafka.bootstrap_servers})
    out, _ = write(server.url, ROWS[name], request=SchemaRequest(registration=Registration.LATEST,
                                                                 subject="t-value", contract=contract))
    assert out.dropped.tolist() == refused == [False, True, False]
    ours = _consume(kafka, ours_topic, 1)
    theirs = _consume(kafka, theirs_topic, 1)
    record = json.loads(ours[0][0])
    assert record == json.loads(theirs[0][0])
    assert record["name"] == "bob" and record["ssn"] == "<REDACTED>"


# -- the formats' field transform (what DLQ redaction and field rules run per record) ----------------------
AVRO_NESTED = {"type": "record", "name": "R", "namespace": "ex", "fields": [
    {"name": "m", "type": {"type": "map", "values": "string"}, "confluent:tags": ["PII"]},
    {"name": "u", "type": ["null", "string", "bytes"], "confluent:tags": ["PII"]},
    {"name": "a", "type": {"type": "array", "items": "string"}, "confluent:tags": ["PII"]},
    {"name": "n", "type": "string"}]}
JSON_NESTED = {"type": "object", "properties": {
    "o": {"type": "object", "properties": {"s": {"type": "string", "confluent:tags": ["PII"]}}},
    "a": {"type": "array", "items": {"type": "string"}, "confluent:tags": ["PII"]},
    "n": {"type": "string"}}}
PROTO_NESTED = """syntax = "proto3";
package ex;
import "confluent/meta.proto";
message Inner { string s = 1 [(confluent.field_meta).tags = "PII"]; }
message R {
  map<string, string> m = 1 [(confluent.field_meta).tags = "PII"];
  repeated string a = 2 [(confluent.field_meta).tags = "PII"];
  Inner inner = 3;
  string empty = 4 [(confluent.field_meta).tags = "PII"];
  optional string unset = 5 [(confluent.field_meta).tags = "PII"];
  bytes b = 6 [(confluent.field_meta).tags = "PII"];
  string n = 7;
}
"""


def _redact(typ, value):
    if typ == "STRING" and isinstance(value, str):
        return "<R>"
    if typ == "BYTES" and isinstance(value, bytes):
        return b"<R>"
    return value


def _transform_tagged(fmt_name, text, message, obj):
    from connector.formats import payload_format

    fmt = payload_format(fmt_name)
    form = fmt.record_form(text, (), message)
    for leaf in fmt.tagged_leaves(text, (), message):
        if leaf.selected_by(("PII",)):
            obj = form.transform(obj, leaf, lambda v, t=leaf.type: _redact(t, v))
    return form, obj


def test_the_field_transform_reaches_map_values_union_branches_and_items_avro():
    _, got = _transform_tagged("avro", json.dumps(AVRO_NESTED), None,
                               {"m": {"k": "v"}, "u": b"raw", "a": ["x", "y"], "n": "keep"})
    assert got == {"m": {"k": "<R>"}, "u": b"<R>", "a": ["<R>", "<R>"], "n": "keep"}
    _, got = _transform_tagged("avro", json.dumps(AVRO_NESTED), None, {"m": {}, "u": "s", "a": [], "n": "keep"})
    assert got == {"m": {}, "u": "<R>", "a": [], "n": "keep"}
    _, got = _transform_tagged("avro", json.dumps(AVRO_NESTED), None, {"m": {}, "u": None, "a": [], "n": "k"})
    assert got["u"] is None


def test_the_field_transform_reaches_nested_and_array_values_json():
    form, got = _transform_tagged("json", json.dumps(JSON_NESTED), None, {"o": {"s": "v"}, "a": ["x"], "n": "k"})
    assert got == {"o": {"s": "<R>"}, "a": ["<R>"], "n": "k"}
    assert json.loads(form.to_json(got)) == got


def test_the_field_transform_on_protobuf_messages_follows_confluent():
    """Map values, repeated items, nested messages and proto3 fields at their default are
    transformed; an unset field with explicit presence is left unset."""
    from connector.formats.protobuf import compile_proto

    compiled = compile_proto(PROTO_NESTED)
    cls = compiled.message_class(compiled.find("ex.R"))
    msg = cls(a=["x", "y"], n="keep")
    msg.m["k"] = "v"
    msg.inner.s = "secret"
    form, got = _transform_tagged("protobuf", PROTO_NESTED, "ex.R", msg)
    assert dict(got.m) == {"k": "<R>"} and list(got.a) == ["<R>", "<R>"] and got.inner.s == "<R>"
    assert got.empty == "<R>" and got.b == b"<R>" and got.n == "keep" and not got.HasField("unset")
    assert json.loads(form.to_json(got))["inner"] == {"s": "<R>"}


def test_protobuf_field_tags_from_option_bytes():
    """The tags of (confluent.field_meta), and nothing (never an exception) from bytes that do
    not parse."""
    from hypothesis import given, settings as hsettings, strategies as st

    from connector.formats.protobuf._contract import field_tags

    meta = b"\x1a\x03PII\x1a\x03GDP"                       # Meta{tags: ["PII", "GDP"]}
    opts = b"\x18\x01" + b"\x82\x44" + bytes([len(meta)]) + meta   # deprecated=true, field 1088 = meta
    assert field_tags(opts) == {"PII", "GDP"}
    assert field_tags(b"") == frozenset() and field_tags(b"\x82\x44\x05\x1a\x09ab") == frozenset()

    @hsettings(max_examples=120, deadline=None)
    @given(st.binary(max_size=64))
    def never_raises(data):
        assert isinstance(field_tags(data), frozenset)

    never_raises()
