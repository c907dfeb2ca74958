"""JSON Schema encoder: Arrow values → JSON text, validated against the schema.

Values are converted along the decoder's type tree (``connector.formats.json_schema._schema``):
timestamps become RFC 3339 text in UTC (``...Z``, microseconds when non-zero), dates ISO
dates, maps objects, free-form ``json`` leaves are parsed and embedded as JSON. Null fields
are left out of the object (so an optional property stays valid), except ``required``
ones, written as ``null``: valid when the property allows null (``"type": ["string", "null"]``),
else a validation error naming the property. Every value is then validated with ``jsonschema`` against the whole schema
(the validator class the reader uses, ``_reference``; ``format`` is not asserted, as Confluent's
serializer); a value the schema forbids is a row error. Serialization is ``orjson`` (compact, UTF-8).

This module is the per-record reference path; the fast path (``_json_vec``) builds the
text column-wise with Arrow and checks the common keywords vectorized, and is used for
every schema :func:`connector.formats.json_schema._encode_vec.plan` accepts.
"""
from __future__ import annotations

import datetime as dt
import json
import math

import orjson
import pyarrow as pa

from connector.formats.json_schema._jsontext import loads_json_text
from connector.formats.json_schema._reference import validator_class
from connector.formats.json_schema._schema import JNode

__all__ = ["JsonEncoder"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class _Bad(ValueError):
    pass


def _ts_text(v) -> str:
    if isinstance(v, int):
        v = _EPOCH + dt.timedelta(microseconds=v)
    if v.tzinfo is not None:
        v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}." \
        f"{v.microsecond:06d}Z"


def _convert(n: JNode, v, path: str):
    if v is None:
        return None
    k = n.kind
    if k == "struct":
        out = {}
        for name, t in n.fields:
            x = _convert(t, v.get(name), f"{path}.{name}")
            if x is not None or name in n.required:
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
            return loads_json_text(v) if isinstance(v, str) else v
        except ValueError as e:
            raise _Bad(f"{path}: not JSON text: {e}") from e
    if k == "float" and isinstance(v, float) and not math.isfinite(v):
        raise _Bad(f"{path}: {v} has no JSON representation")
    return v


def _required_null(n: JNode, path: list) -> str | None:
    """The message for a null the schema refuses, when it is a required property we wrote as
    null (the vectorized checks say the same)."""
    for i, p in enumerate(path):
        if n.kind == "struct":
            t = dict(n.fields).get(p) if isinstance(p, str) else None
            if t is None:
                return None
            if i == len(path) - 1:
                return f"null is not allowed: '{p}' is a required property" if p in n.required else None
            n = t
        elif n.kind in ("list", "map") and n.items is not None:
            n = n.items
        else:
            return None
    return None


class JsonEncoder:
    """Encodes values of ``node.arrow`` to JSON text valid against the schema ``text``."""

    def __init__(self, node: JNode, text: str | None, validate: bool):
        self.node = node
        self.schema = json.loads(text) if isinstance(text, str) else text
        self.validator = None
        if validate and self.schema is not None:
            self.validator = validator_class(self.schema)(self.schema)  # the reader's reference
        from connector.formats.json_schema._encode_vec import plan
        self.plan = plan(self.schema, node) if validate else None
        if not validate:
            self.plan = plan({}, node)  # text only: no checks

    def encode(self, values: pa.Array, fast: bool = True) -> tuple:
        """(payloads, errors): the vectorized path when the schema allows, else per row."""
        if fast and self.plan is not None:
            from connector.formats.json_schema._encode_vec import encode_json_vectorized
            from connector.formats.core import EncodeError, note_fallback
            try:
                out = encode_json_vectorized(self.plan, values)
            except EncodeError:
                raise
            except Exception as e:  # noqa: BLE001 - any surprise: the checked per-record path
                note_fallback("json", e)  # a shape the vectorized path did not foresee
                out = None
            if out is not None:
                return out
        return self.encode_reference(values)

    def encode_reference(self, values: pa.Array) -> tuple[list, list]:
        """(payload bytes or None per row, error text or None per row), one record at a time."""
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
                        why = _required_null(node, list(err.absolute_path)) if err.instance is None else None
                        raise _Bad(f"value{'/' + where if where else ''}: {why or err.message[:300]}")
                out[i] = orjson.dumps(doc)
            except (_Bad, orjson.JSONEncodeError, TypeError, ValueError, OverflowError) as e:
                errors[i] = f"json encode failed: {e}"
        return out, errors
