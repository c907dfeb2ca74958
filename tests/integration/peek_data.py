"""The topic the ``peek`` tests read (library and command line): 21 records over 4 partitions.

Record k (k = 0..19) is in partition k % 4 with timestamp BASE + k seconds, key ``k<k>``,
value ``{id: k, name: "n<k>"}`` (Avro, Confluent framing) and, for odd k, a header
``trace=t<k>``; record 20 (partition 0, the newest) is malformed. So time order is k order,
and each expectation is computed from the returned model, never from what peek returns."""
from __future__ import annotations

import io
import json
import struct
import uuid

BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SCHEMA = {"type": "record", "name": "E", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
BAD = 20

DOC = """
asyncapi: 3.0.0
info: {title: peek, version: 1.0.0}
servers:
  local:
    host: localhost:9092
    protocol: kafka
    bindings:
      kafka: {schemaRegistryUrl: 'http://localhost:8081', schemaRegistryVendor: confluent}
channels:
  events:
    address: TOPIC
    messages:
      e:
        payload:
          schemaFormat: application/vnd.apache.avro;version=1.9.0
          schema: {type: record, name: E, fields: [{name: id, type: long}, {name: name, type: string}]}
        bindings:
          kafka: {key: {type: string}, schemaIdLocation: payload, schemaIdPayloadEncoding: confluent}
"""


def avro(record: dict) -> bytes:
    import fastavro

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(SCHEMA), record)
    return buf.getvalue()


def framed(schema_id: int, record: dict) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + avro(record)


def make_topic(kafka, registry, directory, partitions: int = 4):
    """Produce the records; returns (document path, options, model) where the model is
    ``[(k, partition, offset, timestamp_ms)]``."""
    name = f"peek-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, partitions)
    sid = registry.register(f"{name}-value", json.dumps(SCHEMA))
    model, next_offset = [], [0] * partitions
    for k in range(BAD + 1):
        part = k % partitions if k < BAD else 0
        value = framed(sid, {"id": k, "name": f"n{k}"}) if k < BAD else b"\x00" + struct.pack(">I", sid) + b"\xff"
        kafka.produce(name, value, key=f"k{k}".encode(), partition=part, timestamp=BASE + 1000 * k,
                      headers=[("trace", f"t{k}".encode())] if k % 2 else None)
        model.append((k, part, next_offset[part], BASE + 1000 * k))
        next_offset[part] += 1
    kafka.flush()
    path = directory / "doc.yaml"
    path.write_text(DOC.replace("TOPIC", name))
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "schema.registry.url": registry.url}
    return str(path), options, model
