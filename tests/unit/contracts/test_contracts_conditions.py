"""CEL conditions and field transforms, migrations between major versions and dead-letter queues,
each against confluent-kafka's own serializers and deserializers on the same records."""
from __future__ import annotations

import copy
import json

import pytest

from tests.unit.contracts.contract_helpers import (
    Fmt,
    cel_rule,
    confluent_client,
    ctx,
    metadata,
    read,
    rule_registry,
    settings,
    write,
)

from confluent_kafka.schema_registry import Schema as CSchema
from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleKind, RuleMode, RuleSet
from confluent_kafka.serialization import SerializationError

from connector.schema import SchemaRequest
from connector.schema._request import Registration
from connector.testing import RegistryServer

ROWS = [{"name": "ann", "ssn": "1", "photo": None, "age": 31, "emails": ["a@x"]},
        {"name": "bob", "ssn": "2", "photo": None, "age": 17, "emails": []},
        {"name": "Cy", "ssn": "3", "photo": b"p", "age": 18, "emails": []},
        {"name": "dee", "ssn": "4", "photo": None, "age": -2, "emails": ["d@w", "e@v"]}]


@pytest.fixture()
def server():
    with RegistryServer() as srv:
        yield srv


def _produce(srv, rules, rows=ROWS, fmt=None):
    """Records written by confluent-kafka's serializer under a schema carrying ``rules`` (READ-mode
    rules do not run on write)."""
    fmt = fmt or Fmt("avro")
    client = confluent_client(srv.url)
    fmt.register(client, "t-value", rules)
    ser = fmt.serializer(client)
    return fmt, [ser(copy.deepcopy(r), ctx("t")) for r in rows]


def _confluent_reads(fmt, srv, values):
    """(object or None, failed?) per record, as confluent-kafka's deserializer reads them."""
    deser = fmt.deserializer(confluent_client(srv.url))
    out = []
    for v in values:
        try:
            out.append((deser(v, ctx("t")), False))
        except SerializationError:
            out.append((None, True))
    return out


# A vectorized expression, one the Arrow subset refuses (regex: per record), and a guard form.
CONDITIONS = ["message.age >= 18 && size(message.name) < 4",
              "message.name.matches('^[a-z]+$') && message.age >= 0",
              "message.age > 0 ; message.name.startsWith('a') || message.age != 17"]


@pytest.mark.parametrize("expr", CONDITIONS)
@pytest.mark.parametrize("on_failure", ["ERROR", "NONE"])
def test_condition_on_read_fails_the_records_confluent_fails(server, expr, on_failure):
    fmt, values = _produce(server, [cel_rule("check", expr, on_failure=on_failure)])
    theirs = _confluent_reads(fmt, server, values)
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    ours_failed = [e is not None for e in res.errors.to_pylist()]
    assert ours_failed == [failed for _, failed in theirs]
    if on_failure == "NONE":
        assert not any(ours_failed)
    assert any(failed for _, failed in theirs) == (on_failure == "ERROR")
    for (obj, failed), got, err in zip(theirs, res.values.to_pylist(), res.errors.to_pylist()):
        if failed:
            assert got is None and "check" in err and "Rule expr failed" in err
        else:
            assert got == obj


@pytest.mark.parametrize("expr", ["message.age >= 18", "message.name.matches('^[a-z]+$')"])
def test_condition_on_write_refuses_the_rows_confluent_refuses(server, expr):
    fmt = Fmt("avro")
    client = confluent_client(server.url)
    fmt.register(client, "t-value", [cel_rule("adults", expr, mode=RuleMode.WRITE)])
    ser = fmt.serializer(client)
    refused = []
    for r in ROWS:
        try:
            ser(copy.deepcopy(r), ctx("t"))
            refused.append(False)
        except SerializationError:
            refused.append(True)
    out, _ = write(server.url, ROWS, request=SchemaRequest(registration=Registration.LATEST, subject="t-value",
                                                          contract=settings()))
    assert [e is not None for e in out.errors.to_pylist()] == refused
    assert any(refused) and not all(refused)
    assert [v is None for v in out.values.to_pylist()] == refused


def test_field_transform_on_write_matches_confluent(server):
    """CEL_FIELD on every string field (a guard on typeName), written by us and by confluent-kafka:
    the same bytes."""
    fmt = Fmt("avro")
    client = confluent_client(server.url)
    rule = cel_rule("suffix", "typeName == 'STRING' ; value + '-x'", kind=RuleKind.TRANSFORM, mode=RuleMode.WRITE,
                    rule_type="CEL_FIELD")
    fmt.register(client, "t-value", [rule])
    rows = [{**r, "emails": []} for r in ROWS]  # a field rule on array items runs per record: covered below
    theirs = [fmt.serializer(client)(copy.deepcopy(r), ctx("t")) for r in rows]  # it transforms in place
    out, _ = write(server.url, rows, request=SchemaRequest(registration=Registration.LATEST, subject="t-value",
                                                           contract=settings()))
    assert out.values.to_pylist() == theirs
    plain = fmt.deserializer(client)
    assert plain(theirs[0], ctx("t"))["name"] == "ann-x"
    # with array items the batch goes per record through confluent-kafka's serializer: same bytes
    theirs = [fmt.serializer(client)(copy.deepcopy(r), ctx("t")) for r in ROWS]
    out, _ = write(server.url, ROWS, request=SchemaRequest(registration=Registration.LATEST, subject="t-value",
                                                           contract=settings()))
    assert out.values.to_pylist() == theirs


def test_field_condition_on_read(server):
    rule = cel_rule("ssnDigits", "name == 'ssn' ; size(value) == 1", rule_type="CEL_FIELD")
    fmt, values = _produce(server, [rule], rows=ROWS + [{**ROWS[0], "ssn": "12"}])
    theirs = _confluent_reads(fmt, server, values)
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=settings()))
    assert [e is not None for e in res.errors.to_pylist()] == [f for _, f in theirs] == [False] * 4 + [True]


# -- migrations ------------------------------------------------------------------------------------------
V1 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
V2 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "fullName", "type": "string"}, {"name": "age", "type": "int"}]}
UP = "$merge([$sift($, function($v, $k) {$k != 'name'}), {'fullName': $.'name'}])"
DOWN = "$merge([$sift($, function($v, $k) {$k != 'fullName'}), {'name': $.'fullName'}])"


def _migration_topic(srv):
    """v1 (major_version 1) and v2 (major_version 2, renames name → fullName, with UPGRADE and
    DOWNGRADE JSONata rules); records of both, written by confluent-kafka's serializer."""
    from confluent_kafka.schema_registry.avro import AvroSerializer

    client = confluent_client(srv.url)
    client.register_schema("t-value", CSchema(json.dumps(V1), "AVRO", [], metadata({"major_version": "1"})))
    migrations = [Rule("up", None, RuleKind.TRANSFORM, RuleMode.UPGRADE, "JSONATA", None, None, UP, None, None, False),
                  Rule("down", None, RuleKind.TRANSFORM, RuleMode.DOWNGRADE, "JSONATA", None, None, DOWN, None, None,
                       False)]
    client.register_schema("t-value", CSchema(json.dumps(V2), "AVRO", [], metadata({"major_version": "2"}),
                                              RuleSet(migrations, None)))
    values = []
    for major, schema, rows in (("1", V1, [{"name": "ann", "age": 1}, {"name": "bob", "age": 2}]),
                                ("2", V2, [{"fullName": "cy", "age": 3}])):
        ser = AvroSerializer(client, json.dumps(schema), conf={
            "auto.register.schemas": False, "use.latest.with.metadata": {"major_version": major}},
            rule_registry=rule_registry())
        values += [ser(r, ctx("t")) for r in rows]
    return client, values


@pytest.mark.parametrize("major", ["2", "1"])
def test_migration_reads_every_version_as_the_readers(server, major):
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    client, values = _migration_topic(server)
    deser = AvroDeserializer(client, conf={"use.latest.with.metadata": {"major_version": major}},
                             rule_registry=rule_registry())
    theirs = [deser(v, ctx("t")) for v in values]
    want = "fullName" if major == "2" else "name"
    assert [sorted(t) for t in theirs] == [sorted(["age", want])] * 3
    request = SchemaRequest(subject="t-value", use_latest_with_metadata=(("major_version", major),),
                            contract=settings())
    res, reading = read(server.url, values, request=request)
    assert res.errors.to_pylist() == [None] * 3
    assert res.values.to_pylist() == theirs
    assert reading.decoder.arrow_type.names == [want, "age"]


# -- dead-letter queue -------------------------------------------------------------------------------------
@pytest.mark.kafka
def test_dlq_on_read_sends_the_raw_records_as_confluent_does(server, kafka):
    from confluent_kafka.schema_registry.rules.dlq.dlq_action import DlqAction

    topic_theirs, topic_ours = "dlq-theirs", "dlq-ours"
    rule = cel_rule("adults", "message.age >= 18", on_failure="DLQ", params={"dlq.topic": topic_theirs})
    fmt, values = _produce(server, [rule])
    action = DlqAction({"bootstrap.servers": kafka.bootstrap_servers, "dlq.auto.flush": "true"})
    deser = fmt.deserializer(confluent_client(server.url), rule_registry=rule_registry(dlq=action))
    failed = []
    for v in values:
        try:
            deser(v, ctx("t"))
            failed.append(False)
        except SerializationError:
            failed.append(True)
    action.close()
    s = settings(dlq_topic=topic_ours).with_producer({"bootstrap.servers": kafka.bootstrap_servers})
    res, _ = read(server.url, values, request=SchemaRequest(subject="t-value", contract=s))
    errors = res.errors.to_pylist()
    assert [e is not None for e in errors] == failed and any(failed)
    assert all("dead-letter topic 'dlq-ours'" in e for e in errors if e)
    theirs = _consume(kafka, topic_theirs, sum(failed))
    ours = _consume(kafka, topic_ours, sum(failed))
    assert [m[0] for m in ours] == [m[0] for m in theirs] == sorted(v for v, f in zip(values, failed) if f)
    for (_, h1), (_, h2) in zip(ours, theirs):
        assert h1["__rule.name"] == h2["__rule.name"] == b"adults"
        assert h1["__rule.mode"] == h2["__rule.mode"] == b"READ"
        assert h1["__rule.subject"] == h2["__rule.subject"] == b"t-value"
        assert h1["__rule.topic"] == h2["__rule.topic"] == b"t"


def _consume(kafka, topic, n, timeout=20.0):
    import time

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"g-{topic}", "enable.auto.commit": False})
    parts = c.list_topics(topic, timeout=10).topics[topic].partitions
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append((m.value(), dict(m.headers() or [])))
    c.close()
    return sorted(out, key=lambda x: x[0])
