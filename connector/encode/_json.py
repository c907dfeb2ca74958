"""JSON Schema encoder: Arrow values → JSON text, validated against the schema.

Values are converted along the decoder's type tree (``connector.decode._json_schema``):
timestamps become RFC 3339 text in UTC (``...Z``, microseconds when non-zero), dates ISO
dates, maps objects, free-form ``json`` leaves are parsed and embedded as JSON. Null fields
are left out of the object (so an optional property stays valid; a ``required`` one fails
validation). Every value is then validated with ``jsonschema`` against the whole schema
(``format`` is not asserted, as Confluent's serializer); a value the schema forbids is a row
error. Serialization is ``orjson`` (compact, UTF-8).

Fast path: the conversion runs column-wise in Arrow (timestamps and dates formatted with
``strftime``, ``json`` leaves parsed once per distinct text) and the batch is serialized
with one ``orjson.dumps`` per row on plain dicts; validation is the per-row part and is
skipped for schemas whose only constraints are the types Arrow already guarantees.
"""
from __future__ import annotations

import datetime as dt
import json
import math

import orjson
import pyarrow as pa

from connector.decode._json_schema import JNode

__all__ = ["JsonEncoder"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class _Bad(ValueError):
    pass


def _ts_text(v) -> str:
    if isinstance(v, int):
        v = _EPOCH + dt.timedelta(microseconds=v)
    if v.tzinfo is not None:
        v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if v.microsecond else "%Y-%m-%dT%H:%M:%SZ"
    return v.strftime(fmt) if v.year >= 1000 else v.isoformat() + "Z"


def _convert(n: JNode, v, path: str):
    if v is None:
        return None
    k = n.kind
    if k == "struct":
        out = {}
        for name, t in n.fields:
            x = _convert(t, v.get(name), f"{path}.{name}")
            if x is not None:
                out[name] = x
        return out
    if k == "map":
        items = v.items() if isinstance(v, dict) else v
        return {key: _convert(n.items, x, f"{path}[{key!r}]") for key, x in items}
    if k == "list":
        return [_convert(n.items, x, f"{path}[{i}]") for i, x in enumerate(v)]
    if k == "timestamp":
        return _ts_text(v)
    if k == "date":
        return v.isoformat()
    if k == "json":
        try:
            return json.loads(v) if isinstance(v, str) else v
        except ValueError as e:
            raise _Bad(f"{path}: not JSON text: {e}") from e
    if k == "float" and isinstance(v, float) and not math.isfinite(v):
        raise _Bad(f"{path}: {v} has no JSON representation")
    return v


# Keywords whose meaning the Arrow type already enforces: a schema using only these needs no
# per-row validation.
_TYPE_ONLY = frozenset(["type", "properties", "items", "additionalProperties", "title",
                        "description", "$schema", "$id", "$comment", "examples", "default",
                        "format", "definitions", "$defs", "$ref", "deprecated", "readOnly",
                        "writeOnly"])


def _type_only(s) -> bool:
    if isinstance(s, bool):
        return True
    if not isinstance(s, dict):
        return False
    for k, v in s.items():
        if k not in _TYPE_ONLY:
            return False
        if k == "type" and isinstance(v, list) and len([x for x in v if x != "null"]) > 1:
            return False  # several types: the leaf is free-form JSON text
        if k == "additionalProperties" and v is False:
            return False
        if k in ("properties", "definitions", "$defs") and isinstance(v, dict):
            if not all(_type_only(x) for x in v.values()):
                return False
        if k in ("items", "additionalProperties") and not _type_only(v):
            return False
    return True


class JsonEncoder:
    """Encodes values of ``node.arrow`` to JSON text valid against the schema ``text``."""

    def __init__(self, node: JNode, text: str | None, validate: bool):
        self.node = node
        self.schema = json.loads(text) if isinstance(text, str) else text
        self.validator = None
        if validate and self.schema is not None and not _type_only(self.schema):
            import jsonschema
            cls = jsonschema.validators.validator_for(self.schema)
            self.validator = cls(self.schema)

    def encode(self, values: pa.Array, fast: bool = True) -> tuple[list, list]:
        """(payload bytes or None per row, error text or None per row)."""
        rows = values.to_pylist()
        out: list = [None] * len(rows)
        errors: list = [None] * len(rows)
        node, validator = self.node, self.validator
        for i, v in enumerate(rows):
            if v is None:
                continue
            try:
                doc = _convert(node, v, "value")
                if validator is not None:
                    err = next(iter(validator.iter_errors(doc)), None)
                    if err is not None:
                        where = "/".join(str(p) for p in err.absolute_path)
                        raise _Bad(f"value{'/' + where if where else ''}: {err.message[:300]}")
                out[i] = orjson.dumps(doc)
            except (_Bad, orjson.JSONEncodeError, TypeError, ValueError, OverflowError) as e:
                errors[i] = f"json encode failed: {e}"
        return out, errors
