"""Message payload, header and key schemas: format detection and self-contained text.

``schemaFormat`` values understood (media type parameters such as ``version`` are
ignored, comparison is case-insensitive):

=========================================================  ============
``application/vnd.apache.avro`` (``+json``, ``+yaml``)      ``avro``
absent, ``application/vnd.aai.asyncapi`` (``+json/+yaml``),  ``json``
``application/schema+json``/``+yaml`` (JSON Schema),
``application/vnd.oai.openapi`` (``+json/+yaml``)
``application/vnd.google.protobuf``                          ``protobuf``
=========================================================  ============

Schema text is made self-contained: every ``$ref`` resolves from the file that holds it and
is inlined. JSON Schemas are bundled by the JSON Schema format, which also follows ``$id``\\s and
anchors (recursive ones keep ``$ref: '#/$defs/...'`` where they recurse); Avro named types are
referred to by name after their first definition. Each schema records the files it was read
from (``SchemaSpec.files``), which ``inspect`` shows.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field

from connector.errors import AsyncApiDocumentError

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
    """``"avro"``, ``"json"`` or ``"protobuf"`` for a ``schemaFormat`` string."""
    if schema_format is None:
        return "json"
    if not isinstance(schema_format, str):
        raise AsyncApiDocumentError("schemaFormat must be a string", path=path)
    media = schema_format.split(";", 1)[0].strip().lower()
    if media.startswith("application/vnd.apache.avro"):
        return "avro"
    if (media.startswith("application/vnd.aai.asyncapi") or media.startswith("application/schema+")
            or media.startswith("application/vnd.oai.openapi") or media in ("application/json", "")):
        return "json"
    if media in ("application/vnd.google.protobuf", "application/x-protobuf", "application/protobuf"):
        return "protobuf"
    raise AsyncApiDocumentError(f"unsupported schemaFormat {schema_format!r} (supported: Avro, JSON Schema/"
                                "AsyncAPI schema, Protobuf)", path=path)


def _dump(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


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
    fmt = force_format or classify_schema_format(schema_format, fmt_path)
    resolver = doc.resolver
    if fmt == "protobuf":
        text = resolver.resolve(node, src, path)
        if not isinstance(text, str):
            raise AsyncApiDocumentError("a Protobuf schema must be .proto source text", path=path)
        names = top_level_messages(text)
        if not names:
            raise AsyncApiDocumentError("the .proto source declares no message", path=path)
        by_lower = {n.lower(): n for n in names}
        message_name = by_lower.get((name_hint or "").lower()) or (names[0] if len(names) == 1 else None)
        return SchemaSpec("protobuf", text, message_name, schema_format)
    notes: list[str] = []
    if fmt == "avro":
        value = resolver.inline_avro(node, src, path)
    else:  # the JSON Schema format bundles it: $id, anchors and recursion are its to resolve
        value = bundle_json_payload(resolver, node, src, path, _refs.MAX_INLINED_NODES, notes)
    if fmt == "avro":
        if isinstance(value, str) and value.strip()[:1] in ("{", "[", '"'):
            try:
                value = json.loads(value)
            except ValueError as e:
                raise AsyncApiDocumentError(f"Avro schema text is not JSON: {e}", path=path) from e
        if not isinstance(value, (dict, list, str)):
            raise AsyncApiDocumentError("an Avro schema must be an object, array or type name", path=path)
    elif not isinstance(value, (dict, bool)):
        raise AsyncApiDocumentError("a JSON schema must be an object", path=path)
    try:
        return SchemaSpec(fmt, _dump(value), None, schema_format, notes=tuple(notes))
    except ValueError as e:
        raise AsyncApiDocumentError(f"schema is not representable as JSON: {e}", path=path) from e


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


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", re.S)


def top_level_messages(proto: str) -> list[str]:
    """Names of the top-level ``message`` declarations of a ``.proto`` source, in order."""
    text = _COMMENTS.sub(lambda m: " " if m.group(0)[0] == "/" else '""', proto)
    names, depth = [], 0
    for m in re.finditer(r"[{}]|\bmessage\s+([A-Za-z_][A-Za-z0-9_]*)", text):
        tok = m.group(0)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            names.append(m.group(1))
    return names


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
