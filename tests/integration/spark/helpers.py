"""Helpers for Spark integration tests: documents templated with the live peers' addresses,
unique topics per test (the mock cluster is shared by the session), independent producers."""
from __future__ import annotations

import itertools
import json
import textwrap
import uuid


_counter = itertools.count()

ORDER_AVRO = {
    "type": "record", "name": "Order", "namespace": "com.example.shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def produce_orders(kafka, registry_server, topic: str, n: int, partitions: int | None = None) -> list:
    """``n`` Avro orders framed with the id of ``<topic>-value`` (registered now), produced to
    ``topic`` (round-robin over ``partitions`` when given); returns ``[[id, customer], ...]``."""
    import io

    import fastavro

    from wireformat import encode_frame

    schema_id = registry_server.register(f"{topic}-value", json.dumps(ORDER_AVRO))
    parsed = fastavro.parse_schema(ORDER_AVRO)
    expected = []
    for i in range(n):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {"id": i, "customer": f"c{i}", "amount": 1.0, "status": "NEW",
                                                 "placed_at": 0, "note": None})
        extra = {"partition": i % partitions} if partitions else {}
        kafka.produce(topic, encode_frame("confluent", schema_id, buf.getvalue()), **extra)
        expected.append([i, f"c{i}"])
    kafka.flush()
    return expected


def unique_topic(prefix: str) -> str:
    return f"{prefix}.{next(_counter)}.{uuid.uuid4().hex[:6]}"


def avro_doc(*, bootstrap: str, registry_url: str | None, address: str, schema: dict = ORDER_AVRO,
             encoding: str = "confluent", location: str = "payload", vendor: str = "confluent",
             key_schema: dict | None = None, parameters: dict | None = None) -> str:
    """An AsyncAPI 3.0 document with one Avro channel, as YAML text."""
    server_bindings = ""
    if registry_url:
        server_bindings = textwrap.dedent(f"""\
            bindings:
              kafka:
                schemaRegistryUrl: '{registry_url}'
                schemaRegistryVendor: {vendor}
                bindingVersion: 0.5.0""")
    msg_bindings = {"schemaIdLocation": location, "bindingVersion": "0.5.0"}
    if registry_url:
        msg_bindings["schemaIdPayloadEncoding"] = encoding
    if key_schema is not None:
        msg_bindings["key"] = key_schema
    doc = {
        "asyncapi": "3.0.0",
        "info": {"title": "Shop", "version": "1.0.0"},
        "servers": {"local": {"host": bootstrap, "protocol": "kafka"}},
        "channels": {"orders": {"address": address, "messages": {"order": {"$ref": "#/components/messages/Order"}}}},
        "operations": {"readOrders": {"action": "receive", "channel": {"$ref": "#/channels/orders"},
                                      "bindings": {"kafka": {"groupId": {"type": "string", "enum": ["shop-readers"]}}}}},
        "components": {"messages": {"Order": {
            "name": "Order",
            "payload": {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": schema},
            "bindings": {"kafka": msg_bindings}}}},
    }
    if parameters:
        doc["channels"]["orders"]["parameters"] = parameters
    text = json.dumps(doc, indent=2)
    if server_bindings:
        # Keep the server bindings as YAML to exercise the YAML path too.
        import yaml

        loaded = yaml.safe_load(text)
        loaded["servers"]["local"].update(yaml.safe_load(server_bindings))
        text = yaml.safe_dump(loaded, sort_keys=False)
    return text


