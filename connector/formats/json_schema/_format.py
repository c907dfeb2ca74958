"""JSON Schema as a :class:`connector.formats.core.PayloadFormat`: the reader, the encoder and the
writer names the generic ``Decoder``/``Encoder`` ask for, and what documents, data-contract
rules and the sandbox ask of JSON Schema.

JSON payloads are self-describing: the reader schema decodes every row; a framed writer id
only has to be one the registry knows, of a JSON Schema (checked by the generic layer).
References (``refs``: a registry's resolved references, by name) are bundled into the schema
before it is mapped or used to validate writes.
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from registry import SchemaType

from connector.errors import SchemaMappingError
from connector.formats.core import DecodeOptions, EncodeOptions, PayloadFormat, document_json, prepend
from connector.formats.json_schema._schema import parse_json_schema, schema_document

__all__ = ["JSON_SCHEMA", "JsonSchemaFormat", "json_title"]


def json_title(text: str | None) -> str | None:
    """A JSON Schema's ``title``: the record name Confluent's serializers use for subjects."""
    try:
        t = json.loads(text).get("title") if text else None
    except (ValueError, AttributeError):
        return None
    return t if isinstance(t, str) else None


class JsonSchemaReader:
    aliases: dict[str, str] = {}

    def __init__(self, text: str | None, refs: tuple, options: DecodeOptions):
        # the engine (msgspec, orjson) loads with the first JSON reader, not with the format table
        from connector.formats.json_schema._decode import JsonCodec

        self.codec = JsonCodec(parse_json_schema(text, max_depth=options.max_recursion_depth, refs=refs), options)
        self.arrow_type: pa.DataType = self.codec.arrow_type
        self.full_name: str | None = json_title(text)

    def decode_group(self, payloads: pa.BinaryArray, writer: Any, path: tuple, label: str):
        return self.codec.decode(payloads, label)


class JsonSchemaEncoderModel:
    message_indexes: list[int] | None = None

    def __init__(self, text: str | None, refs: tuple, options: EncodeOptions):
        from connector.formats.json_schema._encode import JsonEncoder

        document = schema_document(text, refs)  # writes validate against the referenced schemas too
        node = parse_json_schema(document, max_depth=options.max_recursion_depth)
        self.json = JsonEncoder(node, document, options.validate_json)
        self.arrow_type: pa.DataType = node.arrow
        self.full_name: str | None = json_title(text)

    def encode(self, values: pa.Array, fast: bool, prefix: bytes = b""):
        out, errors = self.json.encode(values, fast)
        return prepend(out, prefix), errors


class JsonSchemaFormat(PayloadFormat, name="json", title="JSON Schema", registry_type=SchemaType.JSON,
                       binary_payloads=False):
    """JSON Schema (``schemaFormat`` ``application/schema+json*``, registry type ``JSON``).

    A reader without text reads any JSON document as JSON text."""

    def _reader(self, text, refs, message, options):
        return JsonSchemaReader(text, refs, options)

    def writer_name(self, text, refs, path, options):
        return json_title(text)

    def record_name(self, text, refs, message):
        return json_title(text)

    def _encoder(self, text, refs, message, options):
        return JsonSchemaEncoderModel(text, refs, options)

    def accepts_media_type(self, media: str) -> bool:
        """JSON Schema, AsyncAPI's own Schema Object (a superset) and OpenAPI's; also a payload
        without ``schemaFormat`` (``""``)."""
        return media.startswith(("application/vnd.aai.asyncapi", "application/schema+",
                                 "application/vnd.oai.openapi")) or media in ("application/json", "")

    def document_schema(self, payload, name_hint):
        """Bundled: ``$id``\\s, anchors and recursion are the JSON Schema format's to resolve."""
        value = payload.bundled()
        if not isinstance(value, (dict, bool)):
            raise SchemaMappingError("a JSON schema must be an object")
        return document_json(value), None

    def tagged_leaves(self, text, refs, message):
        from connector.formats.json_schema._contract import json_leaves

        return json_leaves(text)

    def record_form(self, text, refs, message):
        from connector.formats.json_schema._contract import JsonRecords

        return JsonRecords()

    def samples(self, text, message, n, examples):
        from connector.formats.json_schema._samples import json_samples

        return json_samples(text, n, examples)


JSON_SCHEMA = JsonSchemaFormat()
