"""Schemas, rules and confluent-kafka serdes shared by the data-contract tests.

Records are written and read by confluent-kafka's own serializers and deserializers (with
``confluent-kafka[rules]``: its CEL, JSONata and encryption executors and its local KMS) against
the embedded registry, which serves rule sets, metadata and the DEK registry API."""
from __future__ import annotations

import base64
import json

import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka.schema_registry.rules.encryption.encrypt_executor")
pytest.importorskip("cryptography")

from confluent_kafka.schema_registry import Schema as CSchema
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.schema_registry_client import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Rule,
    RuleKind,
    RuleMode,
    RuleParams,
    RuleSet,
)
from confluent_kafka.serialization import MessageField, SerializationContext

from connector.formats import decode_column, encode_column
from connector.schema import SchemaRequest, value_reading, value_writer
from connector.schema.rules import ContractSettings, KmsSettings
from registry import RegistryConfig, client_for
from wireformat import Framing

SECRET = "s3cret-local-kms"
RULE_CONF = {"secret": SECRET}

AVRO = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "name", "type": "string"},
    {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
    {"name": "photo", "type": ["null", "bytes"], "confluent:tags": ["PII"]},
    {"name": "age", "type": "int"},
    {"name": "emails", "type": {"type": "array", "items": "string"}, "confluent:tags": ["PII"]}]}
JSON_SCHEMA = {"type": "object", "title": "User", "properties": {
    "name": {"type": "string"},
    "ssn": {"type": "string", "confluent:tags": ["PII"]},
    "age": {"type": "integer"}}, "required": ["name", "ssn", "age"]}
PROTO = """syntax = "proto3";
package ex;
import "confluent/meta.proto";
message User {
  string name = 1;
  string ssn = 2 [(confluent.field_meta).tags = "PII"];
  bytes photo = 3 [(confluent.field_meta).tags = "PII"];
  int32 age = 4;
}
"""

ROWS = {
    "avro": [{"name": "ann", "ssn": "123-45-6789", "photo": b"\x89PNG", "age": 31, "emails": ["a@x", "b@y"]},
             {"name": "bob", "ssn": "987-65-4321", "photo": None, "age": 17, "emails": []},
             {"name": "cy", "ssn": "", "photo": b"", "age": 45, "emails": ["c@z"]}],
    "json": [{"name": "ann", "ssn": "123-45-6789", "age": 31}, {"name": "bob", "ssn": "987-65-4321", "age": 17},
             {"name": "cy", "ssn": "", "age": 45}],
    "protobuf": [{"name": "ann", "ssn": "123-45-6789", "photo": b"\x89PNG", "age": 31},
                 {"name": "bob", "ssn": "987-65-4321", "photo": b"", "age": 17},
                 {"name": "cy", "ssn": "", "photo": b"\x00", "age": 45}],
}


def encrypt_rule(name="encryptPII", tags=("PII",), kek="kek1", on_failure="ERROR,NONE", mode=RuleMode.WRITEREAD,
                 rule_type="ENCRYPT", **params):
    p = {"encrypt.kek.name": kek, "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "mykey"}
    p.update(params)
    return Rule(name, "", RuleKind.TRANSFORM, mode, rule_type, list(tags) if tags else None, RuleParams(p), None,
                None, on_failure, False)


def cel_rule(name, expr, *, kind=RuleKind.CONDITION, mode=RuleMode.READ, on_failure="ERROR", rule_type="CEL",
             tags=None, params=None):
    return Rule(name, None, kind, mode, rule_type, list(tags) if tags else None,
                RuleParams(params) if params else None, expr, None, on_failure, False)


def metadata(props: dict | None = None, tags: dict | None = None):
    return Metadata(MetadataTags(tags or {}) if tags else None, MetadataProperties(props or {}) if props else None,
                    None)


def rule_registry(dlq=None):
    """A fresh rule registry with confluent-kafka's executors (a configured executor is bound to one
    registry, so each serde gets its own)."""
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry
    from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
    from confluent_kafka.schema_registry.rules.cel.cel_field_executor import CelFieldExecutor
    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import (
        EncryptionExecutor,
        FieldEncryptionExecutor,
    )
    from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
    from confluent_kafka.schema_registry.rules.jsonata.jsonata_executor import JsonataExecutor

    LocalKmsDriver.register()
    rr = RuleRegistry()
    for ex in (CelExecutor(), CelFieldExecutor(), JsonataExecutor(), FieldEncryptionExecutor(), EncryptionExecutor()):
        rr.register_executor(ex)
    if dlq is not None:
        rr.register_action(dlq)
    return rr


class Fmt:
    """One format's schema text, confluent-kafka serde and plaintext view of decoded values."""

    def __init__(self, name: str):
        self.name = name
        if name == "protobuf":
            from connector.formats.protobuf import compile_proto

            self.compiled = compile_proto(PROTO)
            self.cls = self.compiled.message_class(self.compiled.find("ex.User"))
            self.text = base64.b64encode(self.compiled.main.SerializeToString()).decode()
            self.type = "PROTOBUF"
        else:
            self.text = json.dumps(AVRO if name == "avro" else JSON_SCHEMA)
            self.type = "AVRO" if name == "avro" else "JSON"

    def register(self, client, subject, rules=(), encoding=(), meta=None, migration=()) -> int:
        rs = RuleSet(list(migration) or None, list(rules) or None, list(encoding) or None)
        return client.register_schema(subject, CSchema(self.text, self.type, [], meta, rs))

    def serializer(self, client, conf=None, rule_conf=RULE_CONF, rule_registry=None):
        base = {"auto.register.schemas": False, "use.latest.version": True, **(conf or {})}
        rule_registry = rule_registry or rule_registry_default()
        kw = {"conf": base, "rule_conf": rule_conf, "rule_registry": rule_registry}
        if self.name == "avro":
            from confluent_kafka.schema_registry.avro import AvroSerializer
            return AvroSerializer(client, self.text, **kw)
        if self.name == "json":
            from confluent_kafka.schema_registry.json_schema import JSONSerializer
            return JSONSerializer(self.text, client, **kw)
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
        return ProtobufSerializer(self.cls, client, conf={**base, "use.deprecated.format": False},
                                  rule_conf=rule_conf, rule_registry=rule_registry)

    def deserializer(self, client, conf=None, rule_conf=RULE_CONF, rule_registry=None):
        kw = {"conf": conf or {}, "rule_conf": rule_conf, "rule_registry": rule_registry or rule_registry_default()}
        if self.name == "avro":
            from confluent_kafka.schema_registry.avro import AvroDeserializer
            return AvroDeserializer(client, **kw)
        if self.name == "json":
            from confluent_kafka.schema_registry.json_schema import JSONDeserializer
            return JSONDeserializer(None, schema_registry_client=client, **kw)
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
        kw["conf"] = {"use.deprecated.format": False, **kw["conf"]}
        return ProtobufDeserializer(self.cls, schema_registry_client=client, **kw)

    def obj(self, row: dict):
        return self.cls(**row) if self.name == "protobuf" else dict(row)

    def plain(self, obj) -> dict:
        if self.name == "protobuf":
            return {f.name: getattr(obj, f.name) for f in self.cls.DESCRIPTOR.fields}
        return obj


def rule_registry_default():
    return rule_registry()


def ctx(topic: str, headers=None):
    return SerializationContext(topic, MessageField.VALUE, headers)


def confluent_client(url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": url})


def settings(secret: str | None = SECRET, **kw) -> ContractSettings:
    return ContractSettings(kms=KmsSettings.of({"secret": secret} if secret else {}), **kw)


def read(url: str, values, *, request: SchemaRequest, topic="t", framing=Framing.CONFLUENT, headers=None,
         topics=None):
    """decode_column through the schema layer's reading (decoder and rules), as every path does."""
    cfg = RegistryConfig(urls=(url,))
    reading = value_reading(request, plan=None, registry=cfg, framing=framing, topic=topic)
    return decode_column(pa.array(values, pa.binary()), framing=framing, decoder=reading.decoder,
                         lookup=client_for(cfg).lookup, rules=reading.rules,
                         topics=topics if topics is not None else topic, headers=headers,
                         protobuf_indexes=reading.decoder.fmt == "protobuf"), reading


def write(url: str, rows: list, *, request: SchemaRequest, topic="t", framing=Framing.CONFLUENT):
    """encode_column through the schema layer's writer (encoder, wire id and rules)."""
    cfg = RegistryConfig(urls=(url,))
    w = value_writer(request, plan=None, registry=cfg, framing=framing, topic=topic)
    values = pa.array(rows, w.encoder.arrow_type)
    return encode_column(values, encoder=w.encoder, framing=w.framing, schema_id=w.wire_id,
                         message_indexes=w.message_indexes, rules=w.rules, topics=topic), w
