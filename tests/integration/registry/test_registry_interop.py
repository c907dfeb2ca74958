"""confluent-kafka's own SchemaRegistryClient and serializers against RegistryServer, read back by us."""
from __future__ import annotations

import pytest

from registry import SchemaType, client_for

sr = pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

# as registries store it (Karapace, the stand-in): compact, keys sorted
ORDER = '{"fields":[{"name":"id","type":"long"}],"name":"Order","namespace":"acme","type":"record"}'


def test_confluent_serializer_registers_and_we_read_back(server, fast_config):
    client = sr.SchemaRegistryClient({"url": server.url})
    ser = AvroSerializer(client, ORDER, conf={"auto.register.schemas": True})
    ctx = SerializationContext("orders", MessageField.VALUE)
    framed = ser({"id": 7}, ctx)
    assert framed[0] == 0
    schema_id = int.from_bytes(framed[1:5], "big")
    assert server.request_count("/subjects/orders-value/versions", method="POST") == 1
    ours = client_for(fast_config(server.url))
    s = ours.lookup(("confluent", schema_id))
    assert (s.schema_type, s.id) == (SchemaType.AVRO, schema_id)
    assert "Order" in s.text
    assert ours.get_latest("orders-value").id == schema_id
    assert AvroDeserializer(client)(framed, ctx) == {"id": 7}


def test_confluent_lookup_and_use_latest(server):
    sid = server.register("orders-value", ORDER)
    client = sr.SchemaRegistryClient({"url": server.url})
    found = client.lookup_schema("orders-value", sr.Schema(ORDER, "AVRO"))
    assert found.schema_id == sid and found.version == 1
    ser = AvroSerializer(client, ORDER, conf={"auto.register.schemas": False, "use.latest.version": True})
    framed = ser({"id": 1}, SerializationContext("orders", MessageField.VALUE))
    assert int.from_bytes(framed[1:5], "big") == sid
    assert client.get_schema(sid).schema_str == ORDER
