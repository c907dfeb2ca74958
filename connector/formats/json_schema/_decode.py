"""JSON payloads → one Arrow array of the reader's type.

The vectorized path (``_json_engine``) validates every payload strictly and reads the fields
pyarrow's JSON reader can express with one ``read_json`` call; maps, unions and free-form
fields are read by msgspec against a type derived from the schema. The reference path
(``fast_path=False``, used by equivalence tests): ``orjson.loads`` per record and a strict
converter.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timezone
from typing import Any

import msgspec
import orjson
import pyarrow as pa

from connector.formats.json_schema._engine import JsonEngine
from connector.formats.json_schema._schema import JNode
from connector.formats.json_schema._types import json_type as _json_type
from connector.formats.core import DecodeOptions, to_arrow_checked

__all__ = ["JsonCodec"]


class _Bad(ValueError):
    pass


def _expect(ok: bool, what: str, v: Any):
    if not ok:
        raise _Bad(f"expected {what}, got {type(v).__name__}")


def _converter(n: JNode) -> Callable[[Any], Any]:
    k = n.kind
    if k == "struct":
        fields = [(name, _converter(t)) for name, t in n.fields]

        def struct(v):
            if v is None:
                return None
            _expect(type(v) is dict, "object", v)
            return {name: c(v.get(name)) for name, c in fields}
        return struct
    if k in ("map", "list"):
        c = _converter(n.items)

        def coll(v):
            if v is None:
                return None
            if k == "map":
                _expect(type(v) is dict, "object", v)
                return [(key, c(x)) for key, x in v.items()]
            _expect(type(v) is list, "array", v)
            return [c(x) for x in v]
        return coll
    if k == "json":
        allowed = n.allowed

        def text(v):
            if v is None:
                return None
            if allowed is not None and _json_type(v) not in allowed:
                raise _Bad(f"expected one of {sorted(allowed)}, got {_json_type(v)}")
            return msgspec.json.encode(v).decode()
        return text

    def scalar(v):
        if v is None:
            return None
        if k == "string":
            _expect(type(v) is str, "string", v)
            return v
        if k == "int":
            _expect(type(v) is int and -2**63 <= v < 2**63, "64-bit integer", v)
            return v
        if k == "float":
            _expect(type(v) in (int, float), "number", v)
            return float(v)
        if k == "bool":
            _expect(type(v) is bool, "boolean", v)
            return v
        if k == "timestamp":
            _expect(type(v) is str, "date-time string", v)
            ts = datetime.fromisoformat(v)
            return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
        if k == "date":
            _expect(type(v) is str, "date string", v)
            return date.fromisoformat(v)
        raise _Bad(f"expected null, got {type(v).__name__}")
    return scalar


class JsonCodec:
    """Decoder of JSON payloads to the type of one JSON Schema tree."""

    def __init__(self, node: JNode, options: DecodeOptions):
        self.node = node
        self.options = options
        self.arrow_type = node.arrow
        self._convert = _converter(node)
        self.fast = options.fast_path
        self._engine = JsonEngine(node, options) if self.fast else None

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        n = len(payloads)
        if n == 0:
            return pa.array([], self.arrow_type), []
        if self._engine is not None:  # built when options.fast_path
            return self._engine.decode(payloads, f"json decode failed for schema id {label}")
        return self._reference(payloads, label)

    def _reference(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        rows: list = []
        errors: list = []
        prefix = f"json decode failed for schema id {label}"
        for p in payloads.to_pylist():
            if p is None:
                rows.append(None)
                errors.append(f"{prefix}: null payload")
                continue
            try:
                v = orjson.loads(p)
                rows.append(p.decode() if self.node.kind == "json" else self._convert(v))
                errors.append(None)
            except (orjson.JSONDecodeError, _Bad, ValueError, TypeError, OverflowError) as e:
                rows.append(None)
                errors.append(f"{prefix}: {type(e).__name__}: {e}")
        return to_arrow_checked(rows, errors, self.arrow_type, prefix)
