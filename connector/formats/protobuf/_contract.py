"""What data-contract rules need of Protobuf: the walk to tagged leaves and records as objects.

Tags are a field's ``(confluent.field_meta).tags`` option (``confluent/meta.proto``: extension
1088 of ``google.protobuf.FieldOptions``, a ``Meta`` whose field 3 is ``repeated string tags``);
a leaf's full name is its field descriptor's (confluent-kafka's ``protobuf.get_inline_tags``).
The options are read from their wire bytes with a two-field stand-in of ``Meta``, so a schema
need not import ``confluent/meta.proto`` into our pool. Records as objects are messages of the
generated class, what confluent-kafka's Protobuf serdes take and give.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from connector.formats.core import BYTES, MAX_WALK_DEPTH, STRING, Leaf

__all__ = ["protobuf_leaves", "field_tags", "ProtobufRecords"]

_FIELD_META = 1088  # (confluent.field_meta) on google.protobuf.FieldOptions
_META_TAGS = 3      # confluent.Meta.tags


@functools.lru_cache(maxsize=1)
def _options_class() -> Any:
    """A message with field 1088 of type ``{repeated string tags = 3}``: parses just the tags
    of a ``FieldOptions``' bytes (every other field is skipped as unknown)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fd = descriptor_pb2.FileDescriptorProto(name="asyncapi_kafka_field_meta.proto", package="asyncapi_kafka_meta",
                                            syntax="proto3")
    meta = fd.message_type.add(name="Meta")
    meta.field.add(name="tags", number=_META_TAGS, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    opts = fd.message_type.add(name="Options")
    opts.field.add(name="field_meta", number=_FIELD_META, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                   type_name=".asyncapi_kafka_meta.Meta", label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("asyncapi_kafka_meta.Options"))


def field_tags(options: bytes) -> frozenset[str]:
    """The ``(confluent.field_meta).tags`` in a field's serialized ``FieldOptions`` (none when
    the bytes do not parse)."""
    if not options:
        return frozenset()
    from google.protobuf.message import DecodeError

    try:
        return frozenset(_options_class().FromString(options).field_meta.tags)
    except (DecodeError, ValueError):
        return frozenset()


def protobuf_leaves(text: str, refs: tuple, message: str | None) -> Iterator[Leaf]:
    """The leaf fields of ``message`` (the first top-level message when None)."""
    from google.protobuf.descriptor import FieldDescriptor as FD

    from connector.formats.protobuf._schema import compile_proto

    desc = compile_proto(text, refs).find(message)
    names = {FD.TYPE_STRING: STRING, FD.TYPE_BYTES: BYTES, FD.TYPE_BOOL: "BOOLEAN", FD.TYPE_DOUBLE: "DOUBLE",
             FD.TYPE_FLOAT: "FLOAT", FD.TYPE_ENUM: "ENUM"}
    for t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32, FD.TYPE_UINT32, FD.TYPE_FIXED32):
        names[t] = "INT"
    for t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_UINT64, FD.TYPE_FIXED64):
        names[t] = "LONG"

    def walk(d: Any, path: tuple, seen: tuple) -> Iterator[Leaf]:
        if d.full_name in seen or len(path) > MAX_WALK_DEPTH:
            return
        for f in d.fields:
            tags = field_tags(f.GetOptions().SerializeToString())
            p = path + (f.name,)
            is_map = f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry
            if is_map:
                vf = f.message_type.fields_by_name["value"]
                p = p + ("{}",)
                if vf.type == FD.TYPE_MESSAGE:
                    yield from walk(vf.message_type, p, seen + (d.full_name,))
                else:
                    yield Leaf(p, f.full_name, f.name, names.get(vf.type, "NULL"), tags)
                continue
            if f.is_repeated:
                p = p + ("[]",)
            if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
                yield from walk(f.message_type, p, seen + (d.full_name,))
            else:
                yield Leaf(p, f.full_name, f.name, names.get(f.type, "NULL"), tags)

    yield from walk(desc, (), ())


class ProtobufRecords:
    """Protobuf records as messages of the generated class (a
    :class:`connector.formats.core.RecordForm`)."""

    def __init__(self, text: str, refs: tuple, message: str | None):
        from connector.formats.protobuf._schema import compile_proto

        compiled = compile_proto(text, refs)
        self.message_class = compiled.message_class(compiled.find(message))

    def to_bytes(self, obj: Any) -> bytes:
        return obj.SerializeToString()

    def from_bytes(self, payload: bytes) -> Any:
        return self.message_class.FromString(payload)

    def transform(self, obj: Any, leaf: Leaf, fn: Callable[[Any], Any]) -> Any:
        """In place, as confluent-kafka's Protobuf ``transform``: a field with explicit presence
        that is unset is left alone, any other (proto3 scalars at their default too) is
        transformed."""
        _transform_message(obj, leaf.path, fn)
        return obj

    def to_json(self, obj: Any) -> bytes:
        from google.protobuf import json_format

        return json_format.MessageToJson(obj).encode("utf-8")

    def deserializer(self, **kw: Any) -> Any:
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

        return ProtobufDeserializer(self.message_class, **kw)

    def serializer(self, schema: Any, **kw: Any) -> Any:
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

        conf = {**kw.pop("conf"), "use.deprecated.format": False}
        return ProtobufSerializer(self.message_class, conf=conf, **kw)


def _transform_message(msg: Any, path: tuple[str, ...], fn: Callable[[Any], Any]) -> None:
    fd = msg.DESCRIPTOR.fields_by_name.get(path[0]) if path else None
    if fd is None or (fd.has_presence and not msg.HasField(fd.name)):
        return
    value, rest = getattr(msg, fd.name), path[1:]
    if rest[:1] in (("[]",), ("{}",)):
        keys = list(value) if rest[0] == "{}" else range(len(value))
        for k in keys:
            if rest[1:]:
                _transform_message(value[k], rest[1:], fn)
            else:
                value[k] = fn(value[k])
    elif rest:
        _transform_message(value, rest, fn)
    else:
        setattr(msg, fd.name, fn(value))
