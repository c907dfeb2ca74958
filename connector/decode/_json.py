"""JSON payloads → one Arrow array of the reader's type.

Fast path: payloads joined with newlines (numpy) and read by one ``pyarrow.json.read_json``
call with the reader type as explicit schema (dates read as text, then cast). Schemas with
maps or free-form JSON leaves, top-level non-objects, and any group the fast path rejects go
through the reference path: ``orjson.loads`` per record and a strict converter.
"""
from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any, Callable

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from connector.decode._avro import _payload_view, _to_arrow
from connector.decode._json_schema import JNode
from connector.decode._options import DecodeOptions

__all__ = ["JsonCodec"]

def _read_type(t: pa.DataType) -> pa.DataType:
    """The explicit-schema type for pyarrow's JSON reader: dates are read as text."""
    if pa.types.is_date32(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _read_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _read_type(t.value_type)))
    return t


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
        return lambda v: None if v is None else orjson.dumps(v).decode()

    def scalar(v):
        if v is None:
            return None
        if k == "string":
            _expect(type(v) is str, "string", v)
            return v
        if k == "int":
            _expect(type(v) is int, "integer", v)
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
        self.fast = options.fast_path and node.kind == "struct" and not node.contains("map", "json", "null")
        if self.fast:
            self._read_schema = pa.schema(list(_read_type(node.arrow)))

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        n = len(payloads)
        if n == 0:
            return pa.array([], self.arrow_type), []
        if self.fast:
            out = self._fast(payloads)
            if out is not None:
                return out, [None] * n
        return self._reference(payloads, label)

    def _fast(self, payloads: pa.BinaryArray) -> pa.Array | None:
        offs, data = _payload_view(payloads)
        starts = offs[:-1]
        # Every payload must open an object: then each yields at least one row (or an error),
        # and the row-count check below proves each yielded exactly one.
        if (np.diff(offs) == 0).any() or (data[starts] != 0x7B).any():
            return None
        joined = pc.binary_join_element_wise(payloads, pa.scalar(b"", pa.binary()),
                                             pa.scalar(b"\n", pa.binary()))
        buf = joined.buffers()[2]
        newline_inside = bool((np.frombuffer(buf, np.uint8)[:-1] == 0x0A).sum() >= len(payloads))
        try:
            table = pj.read_json(
                pa.BufferReader(buf),
                read_options=pj.ReadOptions(block_size=4 << 20),
                parse_options=pj.ParseOptions(explicit_schema=self._read_schema,
                                              unexpected_field_behavior="ignore",
                                              newlines_in_values=newline_inside))
            if table.num_rows != len(payloads):
                return None
            arr = table.to_struct_array().combine_chunks()
            if arr.type != self.arrow_type:
                arr = arr.cast(self.arrow_type)
            return arr
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            return None

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
        return _to_arrow(rows, errors, self.arrow_type, prefix)
