"""Message payload, header and key schemas: format detection and self-contained text.

``schemaFormat`` values understood (media type parameters such as ``version`` are
ignored, comparison is case-insensitive); each format says which media types it accepts
(``PayloadFormat.accepts_media_type``):

=========================================================  ============
``application/vnd.apache.avro`` (``+json``, ``+yaml``)      ``avro``
absent, ``application/vnd.aai.asyncapi`` (``+json/+yaml``),  ``json``
``application/schema+json``/``+yaml`` (JSON Schema),
``application/vnd.oai.openapi`` (``+json/+yaml``)
``application/vnd.google.protobuf``                          ``protobuf``
=========================================================  ============

Schema text is made self-contained: every ``$ref`` resolves from the file that holds it and
is inlined. The format chooses how (``PayloadFormat.document_schema`` over a
:class:`_Payload`): JSON Schemas are bundled by the JSON Schema format, which also follows
``$id``\\s and anchors (recursive ones keep ``$ref: '#/$defs/...'`` where they recurse); Avro
named types are referred to by name after their first definition; ``.proto`` source is taken as
written. Each schema records the files it was read from (``SchemaSpec.files``), which ``inspect``
shows.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from connector.errors import AsyncApiDocumentError, SchemaMappingError

from connector.asyncapi import _refs
from connector.asyncapi._json_refs import bundle_json_payload
from connector.asyncapi._refs import is_ref, join_path


@dataclass(frozen=True)
class SchemaSpec:
    """A schema given in the document.

    Attributes
    ----------
    format : str
        ``"avro"``, ``"json"`` (JSON Schema / AsyncAPI schema) or ``"protobuf"``.
    text : str
        Avro or JSON Schema as compact JSON text, or ``.proto`` source.
    message_name : str or None
        Protobuf only: the message to decode (None: the first message of the file).
    schema_format : str or None
        The ``schemaFormat`` string as written in the document.
    files : tuple of str
        The files the schema was read from, in the order its ``$ref``\\s reached them: the
        document, the files a channel or message ``$ref`` led to, then the schema's own files
        (paths relative to the reference root; URLs for remote refs). Not part of equality.
    notes : tuple of str
        How references were resolved where the rules leave a choice (a ``#/...`` pointer inside a
        schema with ``$id`` that resolved in the AsyncAPI document); ``inspect`` shows them. Not
        part of equality.
    """

    format: str
    text: str
    message_name: str | None = None
    schema_format: str | None = None
    files: tuple[str, ...] = field(default=(), compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class MessageSpec:
    """One message that may appear on the channel.

    Attributes
    ----------
    name : str
        Its key in the channel's ``messages`` (3.x) or ``messageId``/``name`` (2.x).
    payload : SchemaSpec or None
    content_type : str or None
    title : str or None
    headers : SchemaSpec or None
        The headers schema (JSON Schema), when given.
    message_name : str or None
        The message's own ``name`` field.
    """

    name: str
    payload: SchemaSpec | None
    content_type: str | None = None
    title: str | None = None
    headers: SchemaSpec | None = None
    message_name: str | None = None


def classify_schema_format(schema_format: str | None, path: str = "") -> str:
    """The name of the format (``"avro"``, ``"json"``, ``"protobuf"``) a ``schemaFormat`` names."""
    if schema_format is not None and not isinstance(schema_format, str):
        raise AsyncApiDocumentError("schemaFormat must be a string", path=path)
    # the formats load with the first schema, not with the document model (inspect, check)
    from connector.formats import FORMATS, format_of_media_type

    fmt = format_of_media_type(schema_format)
    if fmt is None:
        supported = ", ".join(f.title for f in FORMATS.values())
        raise AsyncApiDocumentError(f"unsupported schemaFormat {schema_format!r} (supported: {supported})", path=path)
    return fmt.name


class _Payload:
    """A payload node of the document as its format asks for it
    (:class:`connector.formats.core.DocumentPayload`)."""

    def __init__(self, resolver, node, src, path: str):
        self._resolver, self._node, self._src, self._path = resolver, node, src, path
        self.notes: list[str] = []  # how '#/...' references inside an $id schema were resolved

    def resolved(self):
        return self._resolver.resolve(self._node, self._src, self._path)

    def inlined(self):
        return self._resolver.inline_avro(self._node, self._src, self._path)

    def bundled(self):
        return bundle_json_payload(self._resolver, self._node, self._src, self._path, _refs.MAX_INLINED_NODES,
                                   self.notes)


def _split_multi_format(doc, node, src, path, schema_format):
    """3.x Multi Format Schema Object ``{schemaFormat, schema}`` → (schema node, format, path)."""
    if doc.major == 3 and node is not None:
        obj, osrc, _ = doc.resolver.follow(node, src, path)
        if isinstance(obj, dict) and "schemaFormat" in obj and "schema" in obj:
            return obj["schema"], osrc, obj["schemaFormat"], join_path(path, "schema"), \
                join_path(path, "schemaFormat")
    fmt_path = path[: -len(".payload")] + ".schemaFormat" if path.endswith(".payload") else path
    return node, src, schema_format, path, fmt_path


def build_schema(doc, node, src, path: str, schema_format: str | None, name_hint: str | None = None, *,
                 force_format: str | None = None) -> SchemaSpec | None:
    """A :class:`SchemaSpec` for a payload/headers/key node, resolving ``$ref``\\s as needed."""
    if node is None:
        return None
    with doc.resolver.tracing() as trace:
        spec = _build_schema(doc, node, src, path, schema_format, name_hint, force_format)
    return dataclasses.replace(spec, files=tuple(doc.resolver.display(s) for s in trace))


def _build_schema(doc, node, src, path: str, schema_format: str | None, name_hint: str | None,
                  force_format: str | None) -> SchemaSpec:
    node, src, schema_format, path, fmt_path = _split_multi_format(doc, node, src, path, schema_format)
    from connector.formats import payload_format

    fmt = payload_format(force_format or classify_schema_format(schema_format, fmt_path))
    try:
        payload = _Payload(doc.resolver, node, src, path)
        text, message_name = fmt.document_schema(payload, name_hint)
    except SchemaMappingError as e:
        raise AsyncApiDocumentError(str(e), path=path) from e
    return SchemaSpec(fmt.name, text, message_name, schema_format, notes=tuple(payload.notes))


_AVRO_ONLY_TYPES = {"null", "int", "long", "float", "double", "bytes", "record", "error", "enum", "fixed", "map"}


def _looks_avro(value) -> bool:
    if isinstance(value, (list, str)):
        return True
    if not isinstance(value, dict):
        return False
    t = value.get("type")
    if isinstance(t, (list, dict)) or t in _AVRO_ONLY_TYPES:
        return True
    if t == "array" and isinstance(value.get("items"), (str, list)):
        return True
    return any(k in value for k in ("fields", "symbols", "logicalType"))


def build_key_schema(doc, node, src, path: str) -> SchemaSpec | None:
    """The Kafka message binding ``key``: a Schema Object or an Avro schema, told apart by shape.

    A ``$ref`` to an ``.avsc`` file, or a value using Avro-only constructs (``record``,
    ``enum`` with ``symbols``, unions, ``long``/``int``/``bytes``...), is Avro; anything
    else is JSON Schema. A 3.x multi-format object says its format itself.
    """
    if node is None:
        return None
    node, src, schema_format, path, _ = _split_multi_format(doc, node, src, path, None)
    if schema_format is not None:
        return build_schema(doc, node, src, path, schema_format)
    if is_ref(node) and node["$ref"].split("#", 1)[0].lower().endswith(".avsc"):
        return build_schema(doc, node, src, path, None, force_format="avro")
    spec = build_schema(doc, node, src, path, None, force_format="json") if not isinstance(node, (str, list)) \
        else None
    if spec is None or _looks_avro(json.loads(spec.text)):
        return build_schema(doc, node, src, path, None, force_format="avro")
    return spec


def top_level_messages(proto: str) -> list[str]:
    """Names of the top-level ``message`` declarations of a ``.proto`` source (the Protobuf
    format's: :func:`connector.formats.protobuf.top_level_messages`)."""
    from connector.formats.protobuf import top_level_messages as names

    return names(proto)


def message_spec(doc, message, call=lambda build, *args, **kw: build(*args, **kw)) -> MessageSpec:
    """Build the :class:`MessageSpec` of a model message (resolves its payload and headers).

    ``call`` wraps each schema build (the planner uses it to tolerate unresolvable schemas).
    """
    payload = call(build_schema, doc, message.payload, message.source, join_path(message.path, "payload"),
                   message.schema_format, message.name or message.key)
    headers = call(build_schema, doc, message.headers, message.source, join_path(message.path, "headers"), None)
    return MessageSpec(message.key, with_chain(doc, message, payload), message.content_type, message.title,
                       with_chain(doc, message, headers), message.name)


def with_chain(doc, message, spec: SchemaSpec | None) -> SchemaSpec | None:
    """``spec`` whose ``files`` start with the files that led to ``message`` (channel and message
    ``$ref``\\s), so the chain reads from the document to the schema's last file."""
    if spec is None:
        return None
    files = [doc.resolver.display(s) for s in message.sources]
    files += [f for f in spec.files if f not in files]
    return dataclasses.replace(spec, files=tuple(dict.fromkeys(files)))


def describe_format(doc, message) -> str | None:
    """The payload format without fetching anything (``None`` when there is no payload)."""
    node, fmt = message.payload, message.schema_format
    if node is None:
        return None
    if doc.major == 3:
        try:
            obj = doc.resolver.resolve(node, message.source, message.path)
        except AsyncApiDocumentError:
            return "unresolved"
        if isinstance(obj, dict) and "schemaFormat" in obj and "schema" in obj:
            fmt = obj["schemaFormat"]
    try:
        return classify_schema_format(fmt)
    except AsyncApiDocumentError:
        return f"unsupported ({fmt})"
