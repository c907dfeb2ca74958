"""Frames written by independent producers parse to the same ids and payloads.

Producers: confluent-kafka's Avro/Protobuf/JSON Schema serializers against its
in-process mock registry (``SchemaRegistryClient.new_client({"url": "mock://..."})``;
the plain constructor does not accept ``mock://`` in 2.16), including its
``header_schema_id_serializer`` (GUID in the ``__value_schema_id`` header), and the
offline codec of the ``aws-glue-schema-registry`` package (no AWS call).
"""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from wireformat import Framing, parse_frames

pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.serialization import MessageField, SerializationContext

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                             {"name": "s", "type": "string"}]})


@pytest.fixture
def registry():
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


def _ctx(topic, headers=None, key=False):
    return SerializationContext(topic, MessageField.KEY if key else MessageField.VALUE, headers)


def test_avro_serializer_frames(registry):
    from confluent_kafka.schema_registry.avro import AvroSerializer
    import fastavro
    import io

    ser = AvroSerializer(registry, AVRO)
    records = [{"a": i, "s": "x" * i} for i in range(5)]
    values = [ser(r, _ctx("orders")) for r in records]
    sid = registry.get_latest_version("orders-value").schema_id
    pf = parse_frames(pa.array(values), "confluent")
    assert pf.error.tolist() == [0] * 5
    assert pf.schema_id.to_pylist() == [sid] * 5
    parsed = fastavro.parse_schema(json.loads(AVRO))
    assert [fastavro.schemaless_reader(io.BytesIO(p), parsed) for p in pf.payload.to_pylist()] == records
    assert parse_frames(pa.array(values), "auto").int_id.to_pylist() == [sid] * 5


@pytest.mark.parametrize("is_key", [False, True])
def test_avro_serializer_guid_in_header(registry, is_key):
    from confluent_kafka.schema_registry.avro import AvroSerializer

    ser = AvroSerializer(registry, AVRO, conf={"schema.id.serializer": header_schema_id_serializer})
    rows, heads = [], []
    for i in range(3):
        h = [("other", b"x")]
        rows.append(ser({"a": i, "s": "v"}, _ctx("guided", h, key=is_key)))
        heads.append(h)
    subject = "guided-key" if is_key else "guided-value"
    guid = uuid.UUID(registry.get_latest_version(subject).guid).bytes
    pf = parse_frames(pa.array(rows), "header-confluent", headers=pa.array(heads, HEADERS_TYPE), is_key=is_key)
    assert pf.error.tolist() == [0, 0, 0]
    assert pf.guid.to_pylist() == [guid] * 3
    assert pf.payload.to_pylist() == rows  # the value is the bare Avro body
    assert [k for k, _ in pf.group_by_schema()] == [(Framing.HEADER_CONFLUENT, guid)]


def test_json_serializer_frames(registry):
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    ser = JSONSerializer(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}), registry)
    values = [ser({"a": i}, _ctx("js")) for i in range(3)]
    sid = registry.get_latest_version("js-value").schema_id
    pf = parse_frames(pa.array(values), "confluent")
    assert pf.int_id.to_pylist() == [sid] * 3
    assert [json.loads(p) for p in pf.payload.to_pylist()] == [{"a": i} for i in range(3)]


@pytest.fixture(scope="module")
def proto_classes():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="wf_interop.proto", package="wfi", syntax="proto3")
    a = fdp.message_type.add(name="A")
    a.field.add(name="x", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    b = fdp.message_type.add(name="B")
    b.field.add(name="y", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    c = b.nested_type.add(name="C")
    c.field.add(name="z", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return {n: get(pool.FindMessageTypeByName(f"wfi.{n}")) for n in ("A", "B", "B.C")}


@pytest.mark.parametrize("name,expected", [("A", [0]), ("B", [1]), ("B.C", [1, 0])])
def test_protobuf_serializer_frames(registry, proto_classes, name, expected):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    cls = proto_classes[name]
    ser = ProtobufSerializer(cls, registry, {"use.deprecated.format": False})
    msgs = [cls(**({"x": "hi"} if name == "A" else {"y": 7} if name == "B" else {"z": 9}))] * 2
    values = [ser(m, _ctx(f"pb{name}")) for m in msgs]
    sid = registry.get_latest_version(f"pb{name}-value").schema_id
    pf = parse_frames(pa.array(values), "confluent", protobuf_indexes=True)
    assert pf.error.tolist() == [0, 0]
    assert pf.int_id.to_pylist() == [sid] * 2
    assert pf.message_indexes.to_pylist() == [expected] * 2
    assert [cls.FromString(p) for p in pf.payload.to_pylist()] == msgs


def test_protobuf_serializer_guid_header_with_indexes(registry, proto_classes):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    cls = proto_classes["B.C"]
    ser = ProtobufSerializer(cls, registry, {"use.deprecated.format": False,
                                             "schema.id.serializer": header_schema_id_serializer})
    heads = [[]]
    value = ser(cls(z=3), _ctx("pbh", heads[0]))
    guid = uuid.UUID(registry.get_latest_version("pbh-value").guid).bytes
    pf = parse_frames(pa.array([value]), "header-confluent", headers=pa.array(heads, HEADERS_TYPE),
                      protobuf_indexes=True)
    assert pf.error.tolist() == [0]
    assert pf.guid.to_pylist() == [guid]
    assert pf.message_indexes.to_pylist() == [[1, 0]]
    assert cls.FromString(pf.payload[0].as_py()) == cls(z=3)


@pytest.mark.parametrize("compression", [None, True])
def test_aws_glue_codec_frames(compression):
    codec = pytest.importorskip("aws_schema_registry.codec")
    version = uuid.uuid4()
    payloads = [b"", b"short", b"a longer Avro body " * 20]
    values = [codec.encode(p, version, compression=compression) for p in payloads]
    for framing in ("glue", "auto"):
        pf = parse_frames(pa.array(values), framing)
        assert pf.error.tolist() == [0, 0, 0]
        assert pf.guid.to_pylist() == [version.bytes] * 3
        assert pf.payload.to_pylist() == payloads
    # and the package's own decoder reads what our encoder writes
    from wireformat import encode_frame
    ours = encode_frame("glue", version, b"body", compression="zlib" if compression else None)
    assert codec.decode(ours) == (b"body", version)
