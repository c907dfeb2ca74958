"""Helpers for the batch test matrix: AsyncAPI documents for every payload format, the schemas
and records each format round-trips, and producers that frame records the way each registry's
own client does (independent serializers where one exists here, ``wireformat`` otherwise)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import socket
import urllib.request

from tests.integration.spark.helpers import ORDER_AVRO, unique_topic

UTC = dt.timezone.utc
STATUSES = ("NEW", "PAID", "SHIPPED")
BASE_TS_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, explicit CreateTime of record 0
PARTITIONS = 4

ORDER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order", "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": "string"},
        "amount": {"type": "number"},
        "status": {"type": "string", "enum": list(STATUSES)},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "customer", "amount", "status"],
    "additionalProperties": False,
}

ORDER_PROTO = """\
syntax = "proto3";
package shop;

message Order {
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
  message Line { string sku = 1; int32 qty = 2; }
  int64 id = 1;
  string customer = 2;
  double amount = 3;
  Status status = 4;
  repeated Line lines = 5;
  optional string note = 6;
}
"""

SCHEMA_FORMATS = {
    "avro": "application/vnd.apache.avro;version=1.9.0",
    "json": "application/schema+json;version=draft-07",
    "protobuf": "application/vnd.google.protobuf;version=3",
}
DOC_SCHEMAS = {"avro": ORDER_AVRO, "json": ORDER_JSON, "protobuf": ORDER_PROTO}
REGISTRY_TYPES = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_doc(*, bootstrap: str, address: str, fmt: str | None, registry_url: str | None = None,
             vendor: str = "confluent", encoding: str | None = None, location: str | None = "payload",
             key_schema: dict | None = None, parameters: dict | None = None) -> str:
    """An AsyncAPI 3.0 document (JSON text) with one channel ``orders`` whose payload is ``fmt``
    (``None``: no payload schema, the value stays binary)."""
    server = {"host": bootstrap, "protocol": "kafka"}
    if registry_url:
        server["bindings"] = {"kafka": {"schemaRegistryUrl": registry_url, "schemaRegistryVendor": vendor,
                                        "bindingVersion": "0.5.0"}}
    msg_bindings: dict = {"bindingVersion": "0.5.0"}
    if registry_url and location:
        msg_bindings["schemaIdLocation"] = location
    if registry_url and encoding:
        msg_bindings["schemaIdPayloadEncoding"] = encoding
    if key_schema is not None:
        msg_bindings["key"] = key_schema
    message: dict = {"name": "Order", "bindings": {"kafka": msg_bindings}}
    if fmt is not None:
        message["payload"] = {"schemaFormat": SCHEMA_FORMATS[fmt], "schema": DOC_SCHEMAS[fmt]}
    channel: dict = {"address": address, "messages": {"order": {"$ref": "#/components/messages/Order"}}}
    if parameters:
        channel["parameters"] = parameters
    doc = {
        "asyncapi": "3.0.0",
        "info": {"title": "Shop", "version": "1.0.0"},
        "servers": {"local": server},
        "channels": {"orders": channel},
        "operations": {"readOrders": {"action": "receive", "channel": {"$ref": "#/channels/orders"}}},
        "components": {"messages": {"Order": message}},
    }
    return json.dumps(doc, indent=2)


def order_class(workdir):
    """``shop.Order`` compiled at test time by protoc (grpc_tools) into a private descriptor pool."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    (workdir / "order.proto").write_text(ORDER_PROTO)
    rc = protoc.main(["protoc", f"-I{workdir}", f"--descriptor_set_out={workdir / 'order.desc'}",
                      str(workdir / "order.proto")])
    assert rc == 0, "protoc failed"
    fds = descriptor_pb2.FileDescriptorSet.FromString((workdir / "order.desc").read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def record(i: int, fmt: str) -> dict:
    """The i-th order as the producer hands it to the serializer of ``fmt``."""
    rec = {"id": i, "customer": f"c{i % 7}", "amount": i * 1.25, "status": STATUSES[i % 3],
           "note": None if i % 2 else f"n{i}"}
    if fmt == "avro":
        rec["placed_at"] = dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i, microseconds=i)
    if fmt == "protobuf":
        rec["lines"] = [{"sku": f"s{i}-{j}", "qty": j} for j in range(i % 3)]
    return rec


def expected_value(rec: dict, fmt: str) -> dict:
    """What the ``value`` struct of that record must hold after the read."""
    out = dict(rec)
    if fmt == "avro":
        out["placed_at"] = _naive_local(rec["placed_at"])
    return out


def _naive_local(t: dt.datetime) -> dt.datetime:
    # PySpark hands TimestampType back as naive datetimes in the Python process's local zone.
    return t.astimezone().replace(tzinfo=None)


def ts_naive(ms: int) -> dt.datetime:
    return _naive_local(dt.datetime.fromtimestamp(ms / 1000, tz=UTC))


def to_proto(cls, rec: dict):
    m = cls(id=rec["id"], customer=rec["customer"], amount=rec["amount"], status=STATUSES.index(rec["status"]),
            lines=[cls.Line(**line) for line in rec["lines"]])
    if rec["note"] is not None:
        m.note = rec["note"]
    return m


def payload_bytes(rec: dict, fmt: str, proto_cls=None) -> bytes:
    """The bare serialized payload (no framing), by each format's reference library."""
    if fmt == "avro":
        import fastavro

        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(ORDER_AVRO), rec)
        return buf.getvalue()
    if fmt == "json":
        return json.dumps(rec).encode()
    return to_proto(proto_cls, rec).SerializeToString()


@dataclasses.dataclass
class Case:
    """One produced topic of the matrix and what reading it must give back."""

    name: str
    fmt: str
    topic: str
    doc: str
    options: dict
    keys: list
    values: list          # expected value dicts, by record index
    headers: list         # expected header lists [(key, bytes)], by record index
    timestamps: list      # ms
    schema_id_kind: str   # "long" (int ids) or "string" (GUIDs / Glue UUIDs)
    schema_ids: list      # expected schemaId per record
    doc_kwargs: dict = dataclasses.field(default_factory=dict)   # make_doc arguments but the address
    raw: list = dataclasses.field(default_factory=list)          # (value bytes, headers) as produced

    def position(self, i: int) -> tuple[int, int]:
        """(partition, offset) of record i: produced round-robin to a fresh topic."""
        return i % PARTITIONS, i // PARTITIONS


def confluent_serializer(fmt: str, client, proto_cls, id_serializer):
    """confluent-kafka's own serializer for ``fmt``, writing the id with ``id_serializer``."""
    conf = {"schema.id.serializer": id_serializer}
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroSerializer

        return AvroSerializer(client, json.dumps(ORDER_AVRO), conf=conf)
    if fmt == "json":
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        return JSONSerializer(json.dumps(ORDER_JSON), client, conf=conf)
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    conf["use.deprecated.format"] = False
    return ProtobufSerializer(proto_cls, client, conf=conf)


def guid_prefix_serializer(payload: bytes, ctx, schema_id) -> bytes:
    """The GUID-in-payload layout, written by confluent-kafka's own ``SchemaId.guid_to_bytes``
    (0x01 + 16-byte GUID + Protobuf message indexes); the library ships no ready callable for it."""
    return schema_id.guid_to_bytes() + payload


# -- producing the matrix --------------------------------------------------------------------------

N = 24
TRACE = "trace"
GLUE_REGISTRY = "matrix"


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def glue_options(moto_url: str) -> dict:
    """Source options for the Glue registry on moto. Dummy credentials go in as options: the
    Spark workers do not see this process's environment (the JVM started before the test)."""
    return {"schema.registry.vendor": "aws-glue", "schema.registry.glue.endpoint.url": moto_url,
            "schema.registry.glue.region": "us-east-1", "schema.registry.glue.registry.name": GLUE_REGISTRY,
            "schema.registry.glue.access.key.id": "testing", "schema.registry.glue.secret.access.key": "testing"}


CONFLUENT_CASES = [(f, fmt) for f in ("confluent", "header-confluent", "confluent-guid")
                   for fmt in ("avro", "protobuf", "json")]
GLUE_CASES = [("glue", "avro"), ("glue-zlib", "avro"), ("glue", "json"), ("glue", "protobuf")]
APICURIO_CASES = [("apicurio-legacy", "avro"), ("apicurio-legacy", "json"), ("apicurio-new", "avro"),
                  ("apicurio-new", "json"), ("header-apicurio-global", "avro"),
                  ("header-apicurio-content", "json")]
ALL_CASES = [f"{f}-{fmt}" for f, fmt in CONFLUENT_CASES + GLUE_CASES + APICURIO_CASES]


class Producer:
    """Produces one case's records and remembers what reading them must give back."""

    def __init__(self, kafka, tmp, proto_cls):
        self.kafka, self.tmp, self.proto_cls = kafka, tmp, proto_cls

    def start(self, name: str, fmt: str, doc_kwargs: dict, options: dict, kind: str) -> Case:
        topic = unique_topic(f"matrix.{name}")
        doc = self.kafka_doc(topic, fmt, **doc_kwargs)
        return Case(name=name, fmt=fmt, topic=topic, doc=doc, options=options, keys=[], values=[],
                    headers=[], timestamps=[], schema_id_kind=kind, schema_ids=[], doc_kwargs=doc_kwargs)

    def kafka_doc(self, topic: str, fmt: str, **kw) -> str:
        path = self.tmp / f"{topic}.json"
        path.write_text(make_doc(bootstrap=self.kafka.bootstrap_servers, address=topic, fmt=fmt,
                                 key_schema={"type": "string"}, **kw))
        return str(path)

    def send(self, case: Case, i: int, value: bytes, headers: list, schema_id) -> None:
        key = f"k{i}"
        ts = BASE_TS_MS + i * 1000 + 7
        partition, _ = case.position(i)
        self.kafka.produce(case.topic, value, key=key.encode(), partition=partition, headers=headers,
                           timestamp=ts)
        case.keys.append(key)
        case.values.append(expected_value(record(i, case.fmt), case.fmt))
        case.headers.append([(k, None if v is None else bytes(v)) for k, v in headers])
        case.timestamps.append(ts)
        case.schema_ids.append(schema_id)
        case.raw.append((value, list(headers)))


def confluent_case(p: Producer, registry, framing: str, fmt: str) -> Case:
    from confluent_kafka.schema_registry import (SchemaRegistryClient, header_schema_id_serializer,
                                                 prefix_schema_id_serializer)
    from confluent_kafka.serialization import MessageField, SerializationContext

    id_ser, location, encoding, kind = {
        "confluent": (prefix_schema_id_serializer, "payload", "confluent", "long"),
        "header-confluent": (header_schema_id_serializer, "header", None, "string"),
        "confluent-guid": (guid_prefix_serializer, "payload", "guid", "string"),
    }[framing]
    case = p.start(f"{framing}-{fmt}", fmt, {"registry_url": registry.url, "location": location,
                                             "encoding": encoding}, {}, kind)
    ser = confluent_serializer(fmt, SchemaRegistryClient({"url": registry.url}), p.proto_cls, id_ser)
    schema_id = None
    for i in range(N):
        rec = record(i, fmt)
        obj = to_proto(p.proto_cls, rec) if fmt == "protobuf" else rec
        headers = [(TRACE, f"t{i}".encode())]
        value = ser(obj, SerializationContext(case.topic, MessageField.VALUE, headers))
        if schema_id is None:  # what the serializer registered, as the registry tells it
            latest = get_json(f"{registry.url}/subjects/{case.topic}-value/versions/latest")
            schema_id = latest["id"] if kind == "long" else latest["guid"]
        p.send(case, i, value, headers, schema_id)
    return case


def glue_case(p: Producer, glue_client, moto_url: str, framing: str, fmt: str) -> Case:
    from aws_schema_registry import DataAndSchema, SchemaRegistryClient, codec
    from aws_schema_registry.avro import AvroSchema
    from aws_schema_registry.jsonschema import JsonSchema
    from aws_schema_registry.serde import KafkaSerializer

    case = p.start(f"{framing}-{fmt}", fmt, {"registry_url": moto_url, "vendor": "aws-glue"},
                   glue_options(moto_url), "string")
    if fmt == "protobuf":
        from wireformat import encode_frame

        vid = glue_client.create_schema(
            RegistryId={"RegistryName": GLUE_REGISTRY}, SchemaName=case.topic, DataFormat="PROTOBUF",
            Compatibility="NONE", SchemaDefinition=ORDER_PROTO)["SchemaVersionId"]
        for i in range(N):
            rec = record(i, fmt)
            value = encode_frame("glue", vid, payload_bytes(rec, fmt, p.proto_cls))
            p.send(case, i, value, [(TRACE, f"t{i}".encode())], vid)
        return case
    ser = KafkaSerializer(SchemaRegistryClient(glue_client, registry_name=GLUE_REGISTRY, wait_interval_seconds=0.05))
    schema = AvroSchema(ORDER_AVRO) if fmt == "avro" else JsonSchema(ORDER_JSON)
    for i in range(N):
        rec = record(i, fmt)
        value = ser.serialize(case.topic, DataAndSchema(rec, schema))
        data, vid = codec.decode(value)
        if framing == "glue-zlib":
            value = codec.encode(data, vid, compression=True)
            assert value[1] == 5
        p.send(case, i, value, [(TRACE, f"t{i}".encode())], str(vid))
    return case


def apicurio_case(p: Producer, registry, framing: str, fmt: str) -> Case:
    from wireformat import encode_frame, header_for_id

    location = "header" if framing.startswith("header-") else "payload"
    encoding = "apicurio-new" if framing in ("apicurio-new", "header-apicurio-content") else "apicurio-legacy"
    case = p.start(f"{framing}-{fmt}", fmt, {"registry_url": registry.url, "vendor": "apicurio",
                                             "location": location, "encoding": encoding}, {}, "long")
    text = json.dumps(DOC_SCHEMAS[fmt])
    # Another artifact first, so that global ids and content ids differ from each other.
    registry.register(f"{case.topic}-other", json.dumps({"type": "record", "name": "X", "fields": []}))
    content_id = registry.register(f"{case.topic}-value", text, REGISTRY_TYPES[fmt])
    global_id = registry.global_id_of(f"{case.topic}-value", 1)
    assert global_id != content_id
    wire_id = content_id if encoding == "apicurio-new" else global_id
    for i in range(N):
        payload = payload_bytes(record(i, fmt), fmt)
        # A null-valued header ahead of the id header: legal in Kafka, must survive both ways.
        headers = [(TRACE, f"t{i}".encode()), ("nullable", None)]
        if location == "header":
            headers.append(header_for_id(framing, wire_id))
            value = payload
        else:
            value = encode_frame(framing, wire_id, payload)
        p.send(case, i, value, headers, wire_id)
    return case
