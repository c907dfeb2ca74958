"""Sink semantics (issue 16): interoperability with confluent-kafka's deserializers, registration
modes against the embedded registry, failed deliveries, producer-side size cap, input layouts.

The registry is our embedded Confluent-compatible ``RegistryServer``; the "incompatible schema"
case uses a subclass that answers 409 (as Confluent does under its compatibility level) to a
registration under one subject, so the HTTP exchange stays real.
"""
from __future__ import annotations

import json
import socket

import pytest

from connector.testing import RegistryServer
from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark import write_helpers as wh
from tests.integration.spark.helpers import unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


class _Registry(RegistryServer):
    """The embedded registry, refusing registrations under subjects in ``incompatible`` with 409."""

    def __init__(self):
        super().__init__()
        self.incompatible: set[str] = set()

    def _confluent(self, method, p, body):
        if method == "POST" and len(p) == 3 and p[0] == "subjects" and p[2] == "versions" \
                and p[1] in self.incompatible:
            return 409, {"error_code": 409, "message": "Schema being registered is incompatible with an "
                                                       "earlier schema for subject"}, {}
        return super()._confluent(method, p, body)


@pytest.fixture()
def registry():
    with _Registry() as srv:
        yield srv


def _doc(tmp_path, kafka_bootstrap: str, topic: str, fmt: str = "avro", **kw) -> str:
    path = tmp_path / f"{topic}.json"
    path.write_text(mh.make_doc(bootstrap=kafka_bootstrap, address=topic, fmt=fmt,
                                key_schema={"type": "string"}, **kw))
    return str(path)


def _consume_all(bootstrap: str, topic: str, n: int, timeout: float = 30.0) -> list:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    try:
        import time

        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                out.append(m)
    finally:
        c.close()
    return out


def _total(kafka, topic: str) -> int:
    return sum(kafka.watermarks(topic, p)[1] - kafka.watermarks(topic, p)[0] for p in range(mh.PARTITIONS))


# -- interoperability ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["avro", "json", "protobuf"])
def test_confluent_deserializers_read_what_we_write(spark, kafka, registry, tmp_path, fmt):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = unique_topic(f"interop.{fmt}")
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, fmt, registry_url=registry.url)
    wh.write(wh.frame(spark, fmt), doc, **{"auto.register.schemas": "true"})
    client = SchemaRegistryClient({"url": registry.url})
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        de = AvroDeserializer(client)
    elif fmt == "json":
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        de = JSONDeserializer(json.dumps(mh.ORDER_JSON), schema_registry_client=client)
    else:
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

        cls = mh.order_class(tmp_path)
        de = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    msgs = _consume_all(kafka.bootstrap_servers, topic, mh.N)
    assert len(msgs) == mh.N
    for m in msgs:
        i = int(m.key().decode()[1:])
        got = de(m.value(), SerializationContext(topic, MessageField.VALUE, m.headers()))
        want = mh.record(i, fmt)
        if fmt == "protobuf":
            assert got == mh.to_proto(cls, want)
        elif fmt == "avro":
            assert {k: v for k, v in got.items() if k != "placed_at"} == \
                {k: v for k, v in want.items() if k != "placed_at"}
            assert got["placed_at"] == want["placed_at"]
        else:  # the sink leaves null optional properties out, which the schema allows
            assert got == {k: v for k, v in want.items() if v is not None}
        assert m.partition() == i % mh.PARTITIONS
        assert (mh.TRACE, f"t{i}".encode()) in m.headers()


# -- registration modes ---------------------------------------------------------------------------------


def test_default_mode_refuses_an_unregistered_schema_before_writing(spark, kafka, registry, tmp_path):
    topic = unique_topic("reg.off")
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, registry_url=registry.url)
    with pytest.raises(Exception) as info:
        wh.write(wh.frame(spark, "avro", 3), doc)
    text = str(info.value)
    assert f"{topic}-value" in text and "auto.register.schemas" in text
    # asked (POST /subjects/{s}, the look-up), nothing registered behind the user's back
    assert registry.request_count(f"/subjects/{topic}-value/versions", "POST") == 0
    assert topic not in kafka._producer.list_topics(timeout=10).topics  # nothing produced


def test_default_mode_uses_the_registered_version(spark, kafka, registry, tmp_path):
    topic = unique_topic("reg.pre")
    registry.register(f"{topic}-value", json.dumps({"type": "record", "name": "Old", "fields": []}))
    sid = registry.register(f"{topic}-value", json.dumps(mh.DOC_SCHEMAS["avro"]))
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, registry_url=registry.url)
    wh.write(wh.frame(spark, "avro", 4), doc)
    msgs = _consume_all(kafka.bootstrap_servers, topic, 4)
    assert {bytes(m.value()[:5]) for m in msgs} == {b"\x00" + sid.to_bytes(4, "big")}
    assert registry.request_count(f"/subjects/{topic}-value/versions", "POST") == 0  # a look-up, no registration


def test_auto_register_registers_once_and_frames_with_the_id(spark, kafka, registry, tmp_path):
    topic = unique_topic("reg.auto")
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, registry_url=registry.url)
    wh.write(wh.frame(spark, "avro", 4), doc, **{"auto.register.schemas": "true"})
    latest = mh.get_json(f"{registry.url}/subjects/{topic}-value/versions/latest")
    assert latest["version"] == 1
    msgs = _consume_all(kafka.bootstrap_servers, topic, 4)
    assert {bytes(m.value()[:5]) for m in msgs} == {b"\x00" + int(latest["id"]).to_bytes(4, "big")}
    # Registered on the driver, once per job, not once per task or record.
    assert registry.request_count(f"/subjects/{topic}-value/versions", "POST") == 1


def test_incompatible_schema_is_refused_at_the_start(spark, kafka, registry, tmp_path):
    topic = unique_topic("reg.incompatible")
    registry.incompatible.add(f"{topic}-value")
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, registry_url=registry.url)
    with pytest.raises(Exception) as info:
        wh.write(wh.frame(spark, "avro", 3), doc, **{"auto.register.schemas": "true"})
    text = str(info.value)
    assert "IncompatibleSchemaError" in text and "incompatible" in text and f"{topic}-value" in text
    assert topic not in kafka._producer.list_topics(timeout=10).topics


def test_use_latest_version_encodes_with_the_registered_schema(spark, kafka, registry, tmp_path):
    """The registry's latest schema (a superset with a defaulted field) is what the bytes follow."""
    topic = unique_topic("reg.latest")
    newer = dict(mh.DOC_SCHEMAS["avro"], fields=mh.DOC_SCHEMAS["avro"]["fields"]
                 + [{"name": "channel", "type": "string", "default": "web"}])
    sid = registry.register(f"{topic}-value", json.dumps(newer))
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, registry_url=registry.url)
    df = wh.frame(spark, "avro", 4).selectExpr("key", "partition", "headers",
                                              "struct(value.*, 'app' as channel) as value")
    wh.write(df, doc, **{"use.latest.version": "true"})
    rows = wh.read(spark, doc, **{"schema.id": str(sid)}).collect()
    assert sorted(r.value.channel for r in rows) == ["app"] * 4


def test_missing_and_extra_fields_fail_at_the_start(spark, kafka, registry, tmp_path):
    topic = unique_topic("reg.fields")
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, registry_url=registry.url)
    df = wh.frame(spark, "avro", 2).selectExpr("key", "struct(value.id, value.customer, 1 as bogus) as value")
    with pytest.raises(Exception) as info:
        wh.write(df, doc, **{"auto.register.schemas": "true"})
    text = str(info.value)
    assert "bogus" in text or "amount" in text
    assert registry.request_count("/subjects", "POST") <= 1  # the registration may precede the check


def test_top_level_fields_and_templated_topics(spark, kafka, tmp_path):
    """No 'value' column: the message is every other column; a templated address takes its topic
    from a column named after the parameter. Framing none (no registry)."""
    base = unique_topic("tmpl")
    path = tmp_path / "tmpl.json"
    path.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=base + ".{region}", fmt="json",
                                parameters={"region": {"description": "region"}}))
    df = wh.frame(spark, "json", 6).selectExpr("key", "value.*", "if(value.id % 2 = 0, 'eu', 'us') as region")
    wh.write(df, str(path))
    for region, ids in (("eu", [0, 2, 4]), ("us", [1, 3, 5])):
        rows = wh.read(spark, str(path), **{"channel.param.region": region}).collect()
        assert sorted(r.value.id for r in rows) == ids
        assert {r.topic for r in rows} == {f"{base}.{region}"}


# -- delivery failures ------------------------------------------------------------------------------------


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_broker_fails_the_task(spark, tmp_path):
    """Nothing silently lost: when no broker acknowledges, every record's delivery report fails
    (after delivery.timeout.ms) and the task fails naming the topic."""
    topic = unique_topic("gone")
    doc = _doc(tmp_path, f"127.0.0.1:{_closed_port()}", topic, "json")
    with pytest.raises(Exception) as info:
        wh.write(wh.frame(spark, "json", 5), doc, **{"kafka.delivery.timeout.ms": "3000",
                                                      "kafka.socket.connection.setup.timeout.ms": "1000"})
    text = str(info.value)
    assert "DeliveryError" in text and "not delivered" in text and topic in text


def test_record_over_message_max_bytes_is_refused(spark, kafka, tmp_path):
    topic = unique_topic("big")
    doc = _doc(tmp_path, kafka.bootstrap_servers, topic, "json")
    df = wh.frame(spark, "json", 3).selectExpr("key", "struct(value.id, repeat('x', 5000) as customer, "
                                               "value.amount, value.status, value.note) as value")
    with pytest.raises(Exception) as info:
        wh.write(df, doc, **{"kafka.message.max.bytes": "2000"})
    text = str(info.value)
    assert "MessageTooLargeError" in text and "message.max.bytes=2000" in text and topic in text


def test_oversized_record_of_a_templated_topic_names_its_topic(spark, kafka, tmp_path):
    """Per-row topics reach the producer as an Arrow column: the error still names the row's topic."""
    base = unique_topic("bigtmpl")
    path = tmp_path / "bigtmpl.json"
    path.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=base + ".{region}", fmt="json",
                                parameters={"region": {"description": "region"}}))
    df = wh.frame(spark, "json", 4).selectExpr(
        "key", "value.id", "if(value.id = 3, repeat('x', 5000), value.customer) as customer", "value.amount",
        "value.status", "value.note", "if(value.id % 2 = 0, 'eu', 'us') as region")
    with pytest.raises(Exception) as info:
        wh.write(df, str(path), **{"kafka.message.max.bytes": "2000"})
    text = str(info.value)
    assert "MessageTooLargeError" in text and f"topic '{base}.us'" in text, text[-2000:]


def test_overwrite_mode_is_refused(spark, kafka, tmp_path):
    doc = _doc(tmp_path, kafka.bootstrap_servers, unique_topic("ow"), "json")
    with pytest.raises(Exception) as info:
        (wh.frame(spark, "json", 1).write.format("asyncapi-kafka").mode("overwrite").option("asyncapi", doc)
         .option("channel", "orders").save())
    assert "append-only" in str(info.value)


def test_struct_key_is_encoded_with_the_key_schema(spark, kafka, tmp_path):
    """A key that is not bytes/string is encoded with the message binding's key schema (here JSON
    Schema, framing none) and read back as the same struct."""
    topic = unique_topic("key.struct")
    path = tmp_path / "key.json"
    key_schema = {"type": "object", "properties": {"region": {"type": "string"}, "n": {"type": "integer"}},
                  "required": ["region", "n"], "additionalProperties": False}
    path.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt="json",
                                key_schema=key_schema))
    df = wh.frame(spark, "json", 6).selectExpr("named_struct('region', 'eu', 'n', value.id) as key", "value")
    wh.write(df, str(path))
    rows = wh.read(spark, str(path)).collect()
    assert sorted((r.key.region, r.key.n, r.value.id) for r in rows) == [("eu", i, i) for i in range(6)]
    raw = _consume_all(kafka.bootstrap_servers, topic, 6)
    assert min((json.loads(m.key()) for m in raw), key=lambda k: k["n"]) == {"region": "eu", "n": 0}


@pytest.mark.parametrize("location, encoding, magic", [("payload", "confluent", b"\x00"),
                                                      ("payload", "guid", b"\x01"), ("header", None, None)],
                         ids=["confluent", "confluent-guid", "header-confluent"])
def test_registry_framed_avro_key_round_trips_and_reads_with_confluents_deserializer(spark, kafka, registry,
                                                                                     tmp_path, location, encoding,
                                                                                     magic):
    """A record key with a registry framing: the sink registers the key schema under
    ``<topic>-key`` (TopicNameStrategy), frames the key with its id, the source decodes it back,
    and confluent-kafka's AvroDeserializer reads it as a key (before, only unframed keys were tested)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = unique_topic("key.avro")
    path = tmp_path / "key-avro.json"
    key_schema = {"type": "record", "name": "OrderKey", "namespace": "shop",
                  "fields": [{"name": "region", "type": "string"}, {"name": "n", "type": "long"}]}
    path.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt="avro",
                                registry_url=registry.url, location=location, encoding=encoding,
                                key_schema=key_schema))
    df = wh.frame(spark, "avro", 6).selectExpr("named_struct('region', 'europe-west', 'n', value.id) as key", "value")
    wh.write(df, str(path), **{"auto.register.schemas": "true"})
    client = SchemaRegistryClient({"url": registry.url})
    assert f"{topic}-key" in client.get_subjects()

    rows = wh.read(spark, str(path)).collect()
    assert sorted((r.key.region, r.key.n, r.value.id) for r in rows) == [("europe-west", i, i) for i in range(6)]

    de = AvroDeserializer(client)
    raw = _consume_all(kafka.bootstrap_servers, topic, 6)
    if magic is not None:  # the value's framing on the key too
        assert all(m.key()[:1] == magic for m in raw)
    else:  # the id travels in the key's own header
        assert all(any(k == "__key_schema_id" for k, _ in m.headers()) for m in raw)
    # (a region longer than "eu": confluent-kafka refuses header-framed payloads under 6 bytes)
    keys = [de(m.key(), SerializationContext(topic, MessageField.KEY, m.headers())) for m in raw]
    assert sorted(k["n"] for k in keys) == list(range(6)) and {k["region"] for k in keys} == {"europe-west"}
