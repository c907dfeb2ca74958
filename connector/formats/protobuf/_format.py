"""Protobuf as a :class:`connector.formats.core.PayloadFormat`: the reader, the encoder and the
writer names the generic ``Decoder``/``Encoder`` ask for."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from registry import SchemaType

from connector.errors import SchemaMappingError
from connector.formats.core import DecodeOptions, EncodeOptions, canonical_text, refs_of

# google.protobuf, ptars and the compiler load with the first Protobuf schema, not with the
# format table that every read imports.

__all__ = ["PROTOBUF", "ProtobufFormat"]


class ProtobufReader:
    """The reader's message: records must carry it (their message-index path names it)."""

    aliases: dict[str, str] = {}

    def __init__(self, text: str, refs: tuple, message: str | None, options: DecodeOptions):
        from connector.formats.protobuf._decode import ProtoCodec
        from connector.formats.protobuf._schema import compile_proto

        self.codec = ProtoCodec(compile_proto(text, refs), message, options)
        self.arrow_type: pa.DataType = self.codec.arrow_type
        self.full_name: str | None = self.codec.full_name
        self.options = options

    def decode_group(self, payloads: pa.BinaryArray, writer: Any, path: tuple, label: str):
        if writer is not None:
            name = PROTOBUF.writer_name(writer.text, refs_of(writer), path, self.options)
            if name != self.full_name:
                raise SchemaMappingError(f"message type {name} does not match the reader's {self.full_name}")
        return self.codec.decode(payloads, label)


class ProtobufEncoderModel:
    def __init__(self, text: str, refs: tuple, message: str | None, options: EncodeOptions):
        from connector.formats.protobuf._encode import ProtoEncoder
        from connector.formats.protobuf._schema import compile_proto

        self.proto = ProtoEncoder(compile_proto(text, refs), message,
                                  options.max_recursion_depth)
        self.arrow_type: pa.DataType = self.proto.arrow_type
        self.full_name: str | None = self.proto.desc.full_name
        self.message_indexes: list[int] | None = self.proto.indexes

    def encode(self, values: pa.Array, fast: bool, prefix: bytes = b""):
        return self.proto.encode(values, fast, prefix)


class ProtobufFormat:
    """Protobuf (``schemaFormat`` ``application/vnd.google.protobuf*``, registry type ``PROTOBUF``)."""

    name = "protobuf"
    registry_type = SchemaType.PROTOBUF
    indexed_messages = True

    def reader(self, text, refs, message, options):
        if not text:
            raise SchemaMappingError("the protobuf reader schema has no text")
        return ProtobufReader(text, refs, message, options)

    def writer_name(self, text, refs, path, options):
        from connector.formats.protobuf._schema import compile_proto

        return compile_proto(text, refs).full_name_for_indexes(path)

    def record_name(self, text, refs, message):
        """``package.Message`` of ``message`` (the first top-level message when None)."""
        from connector.formats.protobuf._schema import compile_proto

        compiled = compile_proto(text, refs)
        if message is None:
            names = compiled.message_names()
            return names[0] if names else None
        return compiled.find(message).full_name

    def encoder(self, text, refs, message, options):
        if not text:
            raise SchemaMappingError("the protobuf schema has no text to encode with")
        return ProtobufEncoderModel(text, refs, message, options)

    def canonical(self, text: str) -> str:
        return canonical_text(text)


PROTOBUF = ProtobufFormat()
