"""What we encode and frame is read by independent consumers: confluent-kafka's deserializers
(against the embedded registry, the schema registered with our ``register_schema``) and the
``aws-glue-schema-registry`` codec."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid

import pyarrow as pa
import pytest

from connector.formats import build_encoder
from registry import RegistryConfig, client_for
from connector.testing import RegistryServer
from tests.unit.encode.encode_helpers import Spec
from wireformat import frame_payloads

pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

UTC = dt.timezone.utc
AVRO = {"type": "record", "name": "Order", "namespace": "i", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "u", "type": ["null", "long", "string"]}]}
ROWS = [{"id": 1, "name": "a", "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=UTC),
         "amount": decimal.Decimal("-12.50"), "tags": ["x", "y"], "u": {"member0": 7, "member1": None}},
        {"id": -2, "name": None, "ts": dt.datetime(1969, 12, 31, tzinfo=UTC),
         "amount": decimal.Decimal("0.01"), "tags": [], "u": {"member0": None, "member1": "s"}}]


@pytest.fixture(scope="module")
def server():
    with RegistryServer() as srv:
        yield srv


def _register(srv, subject, spec):
    return client_for(RegistryConfig(urls=(srv.url,))).register_schema(subject, spec)


def _ctx(topic, headers=None):
    return SerializationContext(topic, MessageField.VALUE, headers)


def _expected_avro(r):
    u = r["u"]["member0"] if r["u"]["member0"] is not None else r["u"]["member1"]
    return {**r, "u": u}


@pytest.mark.parametrize("framing", ["confluent", "confluent-guid", "header-confluent"])
def test_avro_deserializer_reads_ours(server, framing):
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    spec = Spec("avro", AVRO)
    sid = _register(server, f"ord-{framing}-value", spec)
    enc = build_encoder(spec)
    res = enc.encode(pa.array(ROWS, enc.arrow_type))
    assert res.error_count == 0
    ident = server.guid_of(sid) if framing != "confluent" else sid
    fp = frame_payloads(res.payloads, framing, ident)
    deser = AvroDeserializer(SchemaRegistryClient({"url": server.url}))
    got = [deser(v, _ctx("ord", list(fp.headers or []))) for v in fp.values.to_pylist()]
    assert got == [_expected_avro(r) for r in ROWS]


def test_json_deserializer_reads_ours(server):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    schema = {"type": "object", "properties": {
        "id": {"type": "integer"}, "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"}, "tags": {"type": "array", "items": {"type": "string"}},
        "m": {"type": "object", "additionalProperties": {"type": "number"}}}, "required": ["id"]}
    spec = Spec("json", schema)
    sid = _register(server, "js-value", spec)
    enc = build_encoder(spec)
    rows = [{"id": 1, "when": dt.datetime(2024, 1, 1, 0, 0, 1, 500, tzinfo=UTC), "day": dt.date(2024, 2, 29),
             "tags": ["a"], "m": [("k", 1.5)]},
            {"id": 2, "when": None, "day": None, "tags": None, "m": None}]
    res = enc.encode(pa.array(rows, enc.arrow_type))
    assert res.error_count == 0
    values = frame_payloads(res.payloads, "confluent", sid).values.to_pylist()
    deser = JSONDeserializer(json.dumps(schema), schema_registry_client=SchemaRegistryClient({"url": server.url}))
    got = [deser(v, _ctx("js")) for v in values]
    assert got == [{"id": 1, "when": "2024-01-01T00:00:01.000500Z", "day": "2024-02-29", "tags": ["a"],
                    "m": {"k": 1.5}}, {"id": 2}]


PROTO = """syntax = "proto3";
package ip;
message Other { string x = 1; }
message Outer {
  message Inner {
    enum Kind { K0 = 0; K1 = 1; }
    int64 id = 1; string name = 2; Kind kind = 3; repeated int32 xs = 4;
    map<string, string> attrs = 5; optional double d = 7;
  }
}
"""


def test_protobuf_deserializer_reads_ours_with_message_indexes(server):
    import base64

    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    from connector.formats.protobuf._schema import compile_proto

    compiled = compile_proto(PROTO)
    # registered as confluent-kafka's ProtobufSerializer does: base64 FileDescriptorProto
    spec = Spec("protobuf", base64.b64encode(compiled.main.SerializeToString()).decode(), "ip.Outer.Inner")
    sid = _register(server, "pb-value", spec)
    enc = build_encoder(spec)
    assert enc.message_indexes == [1, 0]
    rows = [{"id": 5, "name": "n", "kind": "K1", "xs": [1, -2], "attrs": [("a", "b")],
             "d": 0.0},
            {"id": 0, "name": "", "kind": "K0", "xs": [], "attrs": [], "d": None}]
    res = enc.encode(pa.array(rows, enc.arrow_type))
    assert res.error_count == 0
    values = frame_payloads(res.payloads, "confluent", sid, message_indexes=enc.message_indexes).values
    cls = compiled.message_class(compiled.find("ip.Outer.Inner"))
    deser = ProtobufDeserializer(cls, {"use.deprecated.format": False},
                                 SchemaRegistryClient({"url": server.url}))
    got = [deser(v, _ctx("pb")) for v in values.to_pylist()]
    assert got[0].id == 5 and got[0].kind == 1 and list(got[0].xs) == [1, -2]
    assert dict(got[0].attrs) == {"a": "b"}
    assert got[0].HasField("d") and not got[1].HasField("d")


@pytest.mark.parametrize("compression", [None, "zlib"])
def test_glue_codec_reads_ours(compression):
    codec = pytest.importorskip("aws_schema_registry.codec")
    enc = build_encoder(Spec("avro", AVRO))
    res = enc.encode(pa.array(ROWS, enc.arrow_type))
    version = uuid.uuid4()
    values = frame_payloads(res.payloads, "glue", version, compression=compression).values.to_pylist()
    assert [codec.decode(v) for v in values] == [(p, version) for p in res.payloads.to_pylist()]
