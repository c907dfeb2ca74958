"""Protobuf as a :class:`connector.formats.core.PayloadFormat`: the reader, the encoder and the
writer names the generic ``Decoder``/``Encoder`` ask for, and what documents, data-contract
rules and the sandbox ask of Protobuf."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from registry import SchemaType

from connector.errors import SchemaMappingError
from connector.formats.core import DecodeOptions, EncodeOptions, PayloadFormat, refs_of
from connector.formats.protobuf._source import top_level_messages

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


class ProtobufFormat(PayloadFormat, name="protobuf", title="Protobuf", registry_type=SchemaType.PROTOBUF,
                     indexed_messages=True):
    """Protobuf (``schemaFormat`` ``application/vnd.google.protobuf*``, registry type ``PROTOBUF``)."""

    def _reader(self, text, refs, message, options):
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

    def _encoder(self, text, refs, message, options):
        return ProtobufEncoderModel(text, refs, message, options)

    def accepts_media_type(self, media: str) -> bool:
        return media in ("application/vnd.google.protobuf", "application/x-protobuf", "application/protobuf")

    def document_schema(self, payload, name_hint):
        """The ``.proto`` source as written; the message is the one ``name_hint`` names (the
        document's message name, any case), else the file's only top-level message."""
        text = payload.resolved()
        if not isinstance(text, str):
            raise SchemaMappingError("a Protobuf schema must be .proto source text")
        names = top_level_messages(text)
        if not names:
            raise SchemaMappingError("the .proto source declares no message")
        by_lower = {n.lower(): n for n in names}
        return text, by_lower.get((name_hint or "").lower()) or (names[0] if len(names) == 1 else None)

    def tagged_leaves(self, text, refs, message):
        from connector.formats.protobuf._contract import protobuf_leaves

        return protobuf_leaves(text, refs, message)

    def record_form(self, text, refs, message):
        from connector.formats.protobuf._contract import ProtobufRecords

        return ProtobufRecords(text, refs, message)

    def samples(self, text, message, n, examples):
        from connector.formats.protobuf._samples import protobuf_samples

        return protobuf_samples(text, message, n, examples)


PROTOBUF = ProtobufFormat()
