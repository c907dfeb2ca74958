"""Fields a writer has and the reader lacks: dropped, rescued, or a reason to stop.

``schemaEvolutionMode`` (``DecodeOptions.evolution``):

==================  ========================================================================
``none``            Avro's resolution rules: writer-only fields are skipped (documented loss).
``rescue``          The writer-only fields of each row go, as one JSON object per row, into a
                    ``_rescued_data`` string column (null where nothing was rescued), like
                    Auto Loader's rescued-data column: nothing is lost.
``failOnNewFields`` The first group whose writer schema has a field the reader lacks fails
                    the query with :class:`SchemaEvolutionError` naming the writer schema id
                    and the fields, so an orchestrator restarts the job with the new schema.
==================  ========================================================================

New fields are found by comparing the Arrow type each schema decodes to (names, nested
structs, list elements, map values, union members), so one rule serves Avro, Protobuf and
JSON Schema; reader aliases (Avro) count as the reader's names. A new field nested in a
record is rescued under its path (``{"address": {"zip": ...}}``); a new field inside list
elements or map values rescues that whole list/map as the writer wrote it.

Rescue decodes the group a second time with the writer schema as reader and serialises
only the new fields; it costs a per-row JSON dump for rows of such groups only. JSON
payloads are self-describing: without a schema id in the framing there is no writer
schema, and the modes do not apply (they need schema ids).
"""
from __future__ import annotations

import base64
import datetime
import decimal

import pyarrow as pa

from connector.formats.core._enum import OptionEnum

__all__ = ["EvolutionMode", "RESCUED_COLUMN", "new_fields", "rescue_json"]

RESCUED_COLUMN = "_rescued_data"


class EvolutionMode(OptionEnum):
    """``schemaEvolutionMode``: see the module table. Values are the option spellings."""

    NONE = "none"
    RESCUE = "rescue"
    FAIL_ON_NEW_FIELDS = "failOnNewFields"

    @classmethod
    def label(cls) -> str:
        return "schemaEvolutionMode"


def _inner(t: pa.DataType) -> pa.DataType | None:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return t.value_type
    if pa.types.is_map(t):
        return t.item_type
    return None


def new_fields(writer: pa.DataType, reader: pa.DataType, aliases: dict[str, str] | None = None,
               prefix: str = "") -> list[str]:
    """Dotted paths of fields in ``writer`` that ``reader`` lacks (``[]`` element marker for lists/maps)."""
    aliases = aliases or {}
    if pa.types.is_struct(writer) and pa.types.is_struct(reader):
        names = {reader.field(i).name for i in range(reader.num_fields)}
        out = []
        for i in range(writer.num_fields):
            f = writer.field(i)
            name = f.name if f.name in names else aliases.get(f.name, f.name)
            path = f"{prefix}{f.name}"
            if name not in names:
                out.append(path)
            else:
                out += new_fields(f.type, reader.field(name).type, aliases, path + ".")
        return out
    wi, ri = _inner(writer), _inner(reader)
    if wi is not None and ri is not None:
        return new_fields(wi, ri, aliases, prefix.rstrip(".") + "[].")
    return []


def _project(arr: pa.Array, reader: pa.DataType, aliases: dict[str, str]) -> pa.StructArray | None:
    """Only the writer-only parts of a struct array (None when there are none)."""
    if not pa.types.is_struct(arr.type) or not pa.types.is_struct(reader):
        return None
    names = {reader.field(i).name for i in range(reader.num_fields)}
    children, kept = [], []
    for f, child in zip(arr.type, arr.flatten()):
        name = f.name if f.name in names else aliases.get(f.name, f.name)
        if name not in names:
            children.append(child)
            kept.append(f.name)
            continue
        rtype = reader.field(name).type
        if pa.types.is_struct(f.type):
            sub = _project(child, rtype, aliases)
            if sub is not None:
                children.append(sub)
                kept.append(f.name)
        elif new_fields(f.type, rtype, aliases):
            children.append(child)  # new fields inside list elements / map values: keep it whole
            kept.append(f.name)
    if not kept:
        return None
    return pa.StructArray.from_arrays(children, names=kept, mask=arr.is_null())


def _default(v):
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return v.total_seconds()
    raise TypeError(f"cannot serialise {type(v).__name__}")


def _plain(v):
    # Arrow maps come back as lists of (key, value) tuples: JSON objects read better.
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {str(k): _plain(x) for k, x in v}
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def rescue_json(writer_values: pa.Array, reader: pa.DataType, aliases: dict[str, str]) -> pa.StringArray:
    """One JSON object per row with the writer-only fields (null for null rows)."""
    import orjson

    proj = _project(writer_values, reader, aliases)
    if proj is None:
        return pa.nulls(len(writer_values), pa.string())
    out = []
    for row in proj.to_pylist():
        out.append(None if row is None else orjson.dumps(
            _plain(row), default=_default, option=orjson.OPT_NON_STR_KEYS).decode())
    return pa.array(out, pa.string())
