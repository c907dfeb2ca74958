"""The formats this connector knows, by name: the one table every path asks.

Adding a format: a package exporting a :class:`connector.formats.core.PayloadFormat`, and
one entry here.
"""
from __future__ import annotations

from typing import Any

from registry import schema_type_of

from connector.errors import ConfigError
from connector.formats.avro import AVRO
from connector.formats.core import PayloadFormat
from connector.formats.json_schema import JSON_SCHEMA
from connector.formats.protobuf import PROTOBUF

__all__ = ["FORMATS", "payload_format", "schema_format", "format_of_media_type"]

#: name -> format
FORMATS: dict[str, PayloadFormat] = {f.name: f for f in (AVRO, PROTOBUF, JSON_SCHEMA)}
_BY_REGISTRY_TYPE = {f.registry_type: f for f in FORMATS.values()}


def payload_format(name: str) -> PayloadFormat:
    """The format spelled ``name``: its own name (``"avro"``), or any spelling the registry
    knows for its schema type (``"AVRO"``, ``"proto"``, ``"JSONSCHEMA"`` ...)."""
    found = FORMATS.get(str(name).strip().lower())
    if found is not None:
        return found
    try:
        return _BY_REGISTRY_TYPE[schema_type_of(str(name))]
    except (KeyError, ValueError):
        raise ConfigError(f"unsupported payload format {name!r}; expected {', '.join(FORMATS)}") from None


def schema_format(obj: Any, hint: str | None = None) -> str:
    """The format name of a schema: a document ``SchemaSpec``'s ``.format``, a registry
    ``Schema``'s ``.schema_type`` (``"AVRO"``, ``"PROTOBUF"``, ``"JSON"``), else ``hint``, else Avro
    (a registry answer without a type is Avro, as Confluent's API defines it)."""
    raw = getattr(obj, "format", None) or getattr(obj, "schema_type", None) or hint or AVRO.name
    return payload_format(str(getattr(raw, "value", raw))).name


def format_of_media_type(schema_format: str | None) -> PayloadFormat | None:
    """The format an AsyncAPI ``schemaFormat`` names (media type parameters such as ``version``
    ignored, any case; None, a payload without one, is what JSON Schema accepts as ``""``), or
    None when no format accepts it."""
    media = "" if schema_format is None else schema_format.split(";", 1)[0].strip().lower()
    return next((f for f in FORMATS.values() if f.accepts_media_type(media)), None)
