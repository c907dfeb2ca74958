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

from connector.schema import Registration, SchemaRequest
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
