"""What a payload format package provides: the contract between the generic ``Decoder`` /
``Encoder`` and one format (Avro, Protobuf, JSON Schema).

A format package exports one :class:`PayloadFormat` object: an instance of its subclass of
:class:`PayloadFormat`, which names the format's facts once, as class keywords
(``class AvroFormat(PayloadFormat, name="avro", title="Avro", registry_type=SchemaType.AVRO)``),
and implements the hooks. The format owns its schema model (parse, references, the Arrow type a
schema maps to), its vectorized decoder and encoder, and its limits; the generic layer only groups
rows by writer schema, keeps row errors and caches what the format compiles once per process.
Adding a format means adding one package that exports such an object and naming it in
``connector.formats._registry``.

======================  ==========================================================================
member                  meaning
======================  ==========================================================================
*class keywords*        *the format's facts, declared once by its subclass*
``name``                the format's name (``"avro"``): ``Decoder.fmt``, the registry table key
``title``               the format's name in messages (``"Avro"``)
``registry_type``       its ``registry.SchemaType``: the registry owns every other spelling
                        (``"AVRO"``, ``"proto"``, ``"JSONSCHEMA"`` ...)
``indexed_messages``    records carry a message-index path naming their type (Protobuf under
                        Confluent framing): rows are grouped by it and checked against the reader.
                        Default ``False``
``binary_payloads``     payloads only their own schema can read (Avro, Protobuf), so records of
                        several types with no schema id cannot be told apart by trying each schema
                        (``connector.formats._multi``), and a reader or encoder needs a schema's
                        text. Default ``True``
*owned by the base*     *the same for every format*
``reader()``            the compiled reader of one schema (a :class:`ReaderModel`), built once
                        per process per (schema, options): refuses a schema without text when
                        payloads are binary, else asks the format's ``_reader()``
``encoder()``           the compiled encoder of one schema (an :class:`EncoderModel`): the same
                        rule, then the format's ``_encoder()``
``canonical()``         text that compares equal for equal schemas (registered-version lookup):
                        sorted-key JSON or whitespace-squeezed text, unless a format overrides it
*hooks*                 *what each format implements*
``_reader()``           the reader of a schema (text ``None`` only for non-binary payloads)
``_encoder()``          the encoder of a schema (likewise)
``writer_name()``       the record / message full name a *writer* schema carries (record-type
                        routing, message checks); cheap, cached by the caller
``record_name()``       the full name of the record a schema describes (``namespace.Name``,
                        ``package.Message`` or the JSON Schema ``title``): subject strategies
``accepts_media_type``  whether an AsyncAPI ``schemaFormat`` media type (lowercase, no
                        parameters; ``""`` when absent) names this format
``document_schema()``   the schema text (and Protobuf message) of an AsyncAPI payload: the format
                        chooses how the document's ``$ref``\\s resolve (:class:`DocumentPayload`)
``tagged_leaves()``     the walk to the leaf fields and their inline data-contract tags
                        (:class:`connector.formats.core.Leaf`): what field rules touch
``record_form()``       records as objects (:class:`RecordForm`): the rules' per-record path
                        through confluent-kafka's serializer and deserializer
``samples()``           example payloads generated from a schema (``asyncapi-kafka sandbox``)
======================  ==========================================================================

Nothing outside a format's package compares a format's name (``tests/unit/test_format_names.py``):
what differs between formats is a member here.
"""
from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

import pyarrow as pa

from connector.errors import SchemaMappingError

if TYPE_CHECKING:
    from registry import SchemaType

    from connector.formats.core._encode_options import EncodeOptions
    from connector.formats.core._leaves import Leaf
    from connector.formats.core._options import DecodeOptions

__all__ = ["PayloadFormat", "ReaderModel", "EncoderModel", "DocumentPayload", "RecordForm", "Samples", "refs_of",
           "refs_texts", "document_json"]


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


class DocumentPayload(Protocol):
    """A payload schema of an AsyncAPI document, offered to its format
    (:meth:`PayloadFormat.document_schema`), which picks how its ``$ref``\\s resolve. Each
    method raises :class:`connector.errors.AsyncApiDocumentError` naming the document path
    when a reference does not resolve."""

    def resolved(self) -> Any:
        """The node, its own ``$ref`` followed (a ``.proto`` source is a string)."""
        ...

    def inlined(self) -> Any:
        """Every ``$ref`` inlined; a named type is referred to by name after its first
        definition (Avro's named types)."""
        ...

    def bundled(self) -> Any:
        """A self-contained JSON Schema: references bundled over the document's files, ``$id``\\s
        and anchors followed, recursion through ``$defs``."""
        ...


class RecordForm(Protocol):
    """The records of one schema as objects, the form confluent-kafka's serializers and
    deserializers take and give (fastavro dicts, JSON values, Protobuf messages): the rules'
    per-record path (:mod:`connector.schema.rules`)."""

    @property
    def message_class(self) -> Any:
        """Protobuf: the generated message class; None for formats whose serdes take no class."""
        ...

    def to_bytes(self, obj: Any) -> bytes:
        """The payload of ``obj`` (no framing)."""
        ...

    def from_bytes(self, payload: bytes) -> Any:
        """The object of a payload (no framing)."""
        ...

    def transform(self, obj: Any, leaf: Leaf, fn: Callable[[Any], Any]) -> Any:
        """``obj`` with ``fn`` applied to each value of ``leaf`` (one of this schema's
        :meth:`PayloadFormat.tagged_leaves`): a field transform of a rule, as confluent-kafka's
        ``transform`` applies one; values of another type at that place are ``fn``'s to keep."""
        ...

    def to_json(self, obj: Any) -> bytes:
        """``obj`` as the JSON confluent-kafka's DLQ action writes (dead-letter records)."""
        ...

    def deserializer(self, **kw: Any) -> Any:
        """confluent-kafka's deserializer of this format (``kw``: its ``schema_registry_client``,
        ``conf``, ``rule_conf``, ``rule_registry``)."""
        ...

    def serializer(self, schema: Any, **kw: Any) -> Any:
        """confluent-kafka's serializer writing with ``schema`` (its ``schema_registry.Schema``)."""
        ...


class Samples(NamedTuple):
    """Example payloads of a schema and, where records name their type by a message-index
    path (:attr:`PayloadFormat.indexed_messages`), the path and full name of their type."""

    payloads: list[bytes]
    message_indexes: list[int] | None = None
    full_name: str | None = None


class PayloadFormat(abc.ABC):
    """A payload format: see the module table.

    A format subclasses it once, naming its facts as class keywords; a keyword not given is
    inherited (``indexed_messages`` and ``binary_payloads`` have the defaults below; ``name``,
    ``title`` and ``registry_type`` have none).

    Parameters
    ----------
    name : str
        The format's name (``"avro"``).
    title : str
        Its name in messages (``"Avro"``).
    registry_type : registry.SchemaType
        Its schema type in registries.
    indexed_messages : bool, default False
        Records carry a message-index path naming their type.
    binary_payloads : bool, default True
        Payloads only their own schema can read.

    Examples
    --------
    >>> from connector.formats.avro import AVRO
    >>> AVRO.name, AVRO.title, AVRO.indexed_messages, AVRO.binary_payloads
    ('avro', 'Avro', False, True)
    """

    name: ClassVar[str]
    title: ClassVar[str]
    registry_type: ClassVar[SchemaType]
    #: records carry a message-index path naming their type (Protobuf under Confluent framing)
    indexed_messages: ClassVar[bool] = False
    #: a payload is bytes only its own schema can read: a schema cannot judge whether it fits
    #: (records of several types without a schema id cannot be told apart by trying each), and
    #: a reader or an encoder without a schema's text has nothing to read or write with
    binary_payloads: ClassVar[bool] = True

    def __init_subclass__(cls, *, name: str | None = None, title: str | None = None,
                          registry_type: SchemaType | None = None, indexed_messages: bool | None = None,
                          binary_payloads: bool | None = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if name is not None:
            cls.name = name
        if title is not None:
            cls.title = title
        if registry_type is not None:
            cls.registry_type = registry_type
        if indexed_messages is not None:
            cls.indexed_messages = indexed_messages
        if binary_payloads is not None:
            cls.binary_payloads = binary_payloads
        missing = [k for k in ("name", "title", "registry_type") if not hasattr(cls, k)]
        if missing:
            raise TypeError(f"payload format {cls.__qualname__} declares no {', '.join(missing)} "
                            f"(class keywords of PayloadFormat)")

    def reader(self, text: str | None, refs: tuple, message: str | None,
               options: DecodeOptions) -> ReaderModel:
        """The compiled reader of one schema (the format's :meth:`_reader`); raises
        :class:`SchemaMappingError` for a schema without text when payloads are binary."""
        self._check_text(text, "reader schema has no text")
        return self._reader(text, refs, message, options)

    def encoder(self, text: str | None, refs: tuple, message: str | None,
                options: EncodeOptions) -> EncoderModel:
        """The compiled encoder of one schema (the format's :meth:`_encoder`); the same rule."""
        self._check_text(text, "schema has no text to encode with")
        return self._encoder(text, refs, message, options)

    def _check_text(self, text: str | None, problem: str) -> None:
        # binary payloads have nothing to be read or written by without their schema; JSON
        # (binary_payloads=False) reads any document as text and writes any JSON value
        if not text and self.binary_payloads:
            raise SchemaMappingError(f"the {self.name} {problem}")

    def canonical(self, text: str) -> str:
        """Text that compares equal for equal schemas: JSON (Avro, JSON Schema) re-serialized
        with sorted keys, other text (``.proto``) with its whitespace squeezed."""
        try:
            return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
        except ValueError:
            return " ".join(text.split())

    @abc.abstractmethod
    def _reader(self, text: str | None, refs: tuple, message: str | None,
                options: DecodeOptions) -> ReaderModel:
        """The reader of a schema; ``text`` is None only when payloads are not binary."""

    @abc.abstractmethod
    def _encoder(self, text: str | None, refs: tuple, message: str | None,
                 options: EncodeOptions) -> EncoderModel:
        """The encoder of a schema; ``text`` is None only when payloads are not binary."""

    @abc.abstractmethod
    def writer_name(self, text: str, refs: tuple, path: tuple, options: DecodeOptions) -> str | None: ...

    @abc.abstractmethod
    def record_name(self, text: str, refs: tuple, message: str | None) -> str | None: ...

    @abc.abstractmethod
    def accepts_media_type(self, media: str) -> bool: ...

    @abc.abstractmethod
    def document_schema(self, payload: DocumentPayload, name_hint: str | None) -> tuple[str, str | None]:
        """(schema text, Protobuf message name or None) of a document's payload; raises
        :class:`connector.errors.SchemaMappingError` when the payload is no schema of this format
        (the caller adds the document path)."""

    @abc.abstractmethod
    def tagged_leaves(self, text: str, refs: tuple, message: str | None) -> Iterable[Leaf]: ...

    @abc.abstractmethod
    def record_form(self, text: str, refs: tuple, message: str | None) -> RecordForm: ...

    @abc.abstractmethod
    def samples(self, text: str, message: str | None, n: int, examples: list) -> Samples:
        """``n`` payloads: the ``examples`` (JSON values, in turn) or else values generated from
        the schema, deterministic (payload ``i`` is the same on every run); an example that does
        not fit the schema raises ``ValueError``."""


def refs_texts(refs: tuple) -> tuple[str, ...]:
    """The texts of ``(name, text)`` reference pairs (Avro resolves named types from texts)."""
    return tuple(t for _, t in refs)


def refs_of(obj: Any) -> tuple[tuple[str, str], ...]:
    """``(name, text)`` of the references a schema resolved (a registry ``Schema``'s
    ``resolved_references``, a document ``SchemaSpec``'s); ``()`` when it has none."""
    return tuple((name, getattr(ref, "text", ref)) for name, ref in getattr(obj, "resolved_references", ()) or ())


def document_json(value: Any) -> str:
    """Compact JSON text of a schema read from a document (Avro, JSON Schema).

    Raises
    ------
    SchemaMappingError
        ``value`` holds what JSON cannot (NaN, infinities).
    """
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as e:
        raise SchemaMappingError(f"schema is not representable as JSON: {e}") from e
