"""What a payload format package provides: the contract between the generic ``Decoder`` /
``Encoder`` and one format (Avro, Protobuf, JSON Schema).

A format package exports one :class:`PayloadFormat` object. It owns its schema model (parse,
references, the Arrow type a schema maps to), its vectorized decoder and encoder, and its
limits; the generic layer only groups rows by writer schema, keeps row errors and caches what
the format compiles once per process. Adding a format means adding one package that exports
such an object and naming it in ``connector.formats._registry``.

======================  ==========================================================================
member                  meaning
======================  ==========================================================================
``name``                the format's name (``"avro"``): ``Decoder.fmt``, the registry table key
``spellings``           other names documents and registries use (``"AVRO"``, ``"proto"`` ...)
``indexed_messages``    records carry a message-index path naming their type (Protobuf under
                        Confluent framing): rows are grouped by it and checked against the reader
``reader()``            the compiled reader of one schema (a :class:`ReaderModel`), built once
                        per process per (schema, options)
``writer_name()``       the record / message full name a *writer* schema carries (record-type
                        routing, message checks); cheap, cached by the caller
``record_name()``       the full name of the record a schema describes (``namespace.Name``,
                        ``package.Message`` or the JSON Schema ``title``): subject strategies
``encoder()``           the compiled encoder of one schema (an :class:`EncoderModel`)
``canonical()``         text that compares equal for equal schemas (registered-version lookup)
``binary_payloads``     optional, default False: payloads only their own schema can read (Avro,
                        Protobuf), so records of several types with no schema id cannot be told
                        apart by trying each schema (``connector.formats._multi``)
======================  ==========================================================================
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

if TYPE_CHECKING:
    from registry import SchemaType

    from connector.formats.core._encode_options import EncodeOptions
    from connector.formats.core._options import DecodeOptions

__all__ = ["PayloadFormat", "ReaderModel", "EncoderModel", "refs_of", "refs_texts", "canonical_text"]


class ReaderModel(Protocol):
    """One reader schema compiled for decoding (per process; never pickled)."""

    @property
    def arrow_type(self) -> pa.DataType: ...

    @property
    def full_name(self) -> str | None: ...

    @property
    def aliases(self) -> Mapping[str, str]:
        """Writer field name -> reader field name (Avro aliases), for schema evolution."""
        ...

    def decode_group(self, payloads: pa.BinaryArray, writer: Any, path: tuple,
                     label: str) -> tuple[pa.Array, list]:
        """Decode null-free payloads sharing one writer schema (None: the reader's own) and
        message-index ``path``: (values, per-row error text or None)."""
        ...


class EncoderModel(Protocol):
    """One schema compiled for encoding (per process; never pickled)."""

    @property
    def arrow_type(self) -> pa.DataType: ...

    @property
    def full_name(self) -> str | None: ...

    @property
    def message_indexes(self) -> list[int] | None:
        """Protobuf: the Confluent message-index path of the written message; else None."""
        ...

    def encode(self, values: pa.Array, fast: bool, prefix: bytes = b"") -> tuple[pa.Array, Any]:
        """(payloads, per-row errors or None) for ``values`` of :attr:`arrow_type`; every payload
        starts with ``prefix`` (a framing header, written in the same pass)."""
        ...


class PayloadFormat(Protocol):
    """A payload format: see the module table."""

    @property
    def name(self) -> str: ...

    @property
    def registry_type(self) -> SchemaType: ...

    @property
    def indexed_messages(self) -> bool: ...

    def reader(self, text: str | None, refs: tuple, message: str | None,
               options: DecodeOptions) -> ReaderModel: ...

    def writer_name(self, text: str, refs: tuple, path: tuple, options: DecodeOptions) -> str | None: ...

    def record_name(self, text: str, refs: tuple, message: str | None) -> str | None: ...

    def encoder(self, text: str | None, refs: tuple, message: str | None,
                options: EncodeOptions) -> EncoderModel: ...

    def canonical(self, text: str) -> str: ...


def refs_texts(refs: tuple) -> tuple[str, ...]:
    """The texts of ``(name, text)`` reference pairs (Avro resolves named types from texts)."""
    return tuple(t for _, t in refs)


def refs_of(obj: Any) -> tuple[tuple[str, str], ...]:
    """``(name, text)`` of the references a schema resolved (a registry ``Schema``'s
    ``resolved_references``, a document ``SchemaSpec``'s); ``()`` when it has none."""
    return tuple((name, getattr(ref, "text", ref)) for name, ref in getattr(obj, "resolved_references", ()) or ())


def canonical_text(text: str) -> str:
    """Schema text that compares equal for equal schemas: JSON (Avro, JSON Schema) re-serialized
    with sorted keys, other text (``.proto``) with its whitespace squeezed."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return " ".join(text.split())
