"""Avro as a :class:`connector.formats.core.PayloadFormat`: the reader, the encoder and the
writer names the generic ``Decoder``/``Encoder`` ask for, and what documents, data-contract
rules and the sandbox ask of Avro."""
from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from registry import SchemaType

from connector.errors import SchemaCompileError, SchemaMappingError
from connector.formats.avro._decode import AvroCodec, MixedCodecs
from connector.formats.avro._encode import encode_avro
from connector.formats.avro._schema import Node, arrow_type_of, parse_avro
from connector.formats.core import (
    DecodeOptions,
    EncodeOptions,
    PayloadFormat,
    document_json,
    fault_text,
    refs_of,
    refs_texts,
)

__all__ = ["AVRO", "AvroFormat", "reader_aliases"]


def reader_aliases(reader_node: Node | None) -> dict[str, str]:
    """Avro field aliases of a reader type tree → the reader's field name."""
    out: dict[str, str] = {}
    seen: set[int] = set()
    stack: list[Any] = [reader_node] if reader_node is not None else []
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        for f in getattr(n, "fields", ()) or ():
            for a in f.aliases:
                out.setdefault(a, f.name)
            stack.append(f.type)
        stack.extend(getattr(n, "branches", ()) or ())
        stack.append(getattr(n, "items", None))
    return out


class AvroReader:
    """A reader schema and one compiled plan per writer schema met (cached here)."""

    def __init__(self, text: str, refs: tuple, options: DecodeOptions):
        self.text, self.refs, self.options = text, refs_texts(refs), options
        self.node, _ = parse_avro(text, max_depth=options.max_recursion_depth, refs=self.refs)
        self.arrow_type: pa.DataType = arrow_type_of(self.node)
        self.full_name: str | None = self.node.name
        self.aliases: Mapping[str, str] = reader_aliases(self.node)
        self._codecs: dict[tuple, AvroCodec] = {}
        self._mixed = MixedCodecs(self.node, self.text, self.refs, options)
        self._lock = threading.Lock()

    def decode_group(self, payloads: pa.BinaryArray, writer: Any, path: tuple, label: str):
        text = writer.text if writer is not None else self.text
        w_refs = refs_texts(refs_of(writer)) if writer is not None else self.refs
        codec = self._codecs.get((text, w_refs))
        if codec is None:
            try:
                codec = AvroCodec(text, self.node, self.text, self.options, writer_refs=w_refs, reader_refs=self.refs)
            except Exception as e:
                if writer is None or (text, w_refs) == (self.text, self.refs):
                    # the reader's own schema as the writer's: it does not compile here, which is
                    # the job's fault (a writer that cannot be resolved is its records' row error)
                    raise SchemaCompileError(f"the avro reader schema {self.full_name!r} does not compile as "
                                             f"the records' writer schema: {fault_text(e)}") from e
                raise
            with self._lock:
                self._codecs[(text, w_refs)] = codec
        return codec.decode(payloads, label)

    def decode_runs(self, payloads: pa.BinaryArray, groups: list):
        """All rows of a batch of several writers in one pass (see :class:`MixedCodecs`)."""
        return self._mixed.decode(payloads, groups)


class AvroEncoderModel:
    def __init__(self, text: str, refs: tuple, options: EncodeOptions):
        # recursion cut at the decoder's depth: each cut place writes the one value it can hold
        # (null, an empty array or map), so every record stays complete for any Avro reader
        self.node, _ = parse_avro(text, max_depth=options.max_recursion_depth, refs=refs_texts(refs),
                                  keep_cuts=True)
        self.arrow_type: pa.DataType = arrow_type_of(self.node)
        self.full_name: str | None = self.node.name
        self.message_indexes: list[int] | None = None

    def encode(self, values: pa.Array, fast: bool, prefix: bytes = b""):
        return encode_avro(self.node, values, fast, prefix)


class AvroFormat(PayloadFormat, name="avro", title="Avro", registry_type=SchemaType.AVRO):
    """Avro (``schemaFormat`` ``application/vnd.apache.avro*``, registry type ``AVRO``)."""

    def _reader(self, text, refs, message, options):
        return AvroReader(text, refs, options)

    def writer_name(self, text, refs, path, options):
        return parse_avro(text, max_depth=max(1, options.max_recursion_depth), refs=refs_texts(refs))[0].name

    def record_name(self, text, refs, message):
        """``namespace.name`` of the top-level record, read without compiling (recursive
        schemas have a name too)."""
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
            return None
        name, ns = doc["name"], doc.get("namespace")
        return f"{ns}.{name}" if "." not in name and isinstance(ns, str) and ns else name

    def _encoder(self, text, refs, message, options):
        return AvroEncoderModel(text, refs, options)

    def accepts_media_type(self, media: str) -> bool:
        return media.startswith("application/vnd.apache.avro")  # +json, +yaml

    def document_schema(self, payload, name_hint):
        """Named types defined once and referred to by name; the value must be Avro JSON."""
        value = payload.inlined()
        if isinstance(value, str) and value.strip()[:1] in ("{", "[", '"'):
            try:
                value = json.loads(value)
            except ValueError as e:
                raise SchemaMappingError(f"Avro schema text is not JSON: {e}") from e
        if not isinstance(value, (dict, list, str)):
            raise SchemaMappingError("an Avro schema must be an object, array or type name")
        return document_json(value), None

    def tagged_leaves(self, text, refs, message):
        from connector.formats.avro._contract import avro_leaves

        return avro_leaves(text, refs_texts(refs))

    def record_form(self, text, refs, message):
        from connector.formats.avro._contract import AvroRecords

        return AvroRecords(text, refs_texts(refs))

    def samples(self, text, message, n, examples):
        from connector.formats.avro._samples import avro_samples

        return avro_samples(text, n, examples)


AVRO = AvroFormat()
