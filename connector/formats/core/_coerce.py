"""Spark-produced Arrow columns → the exact Arrow type an encoder expects.

Structs are matched by field name (order does not matter); a field the schema has but the
input lacks, or input fields the schema lacks, are a misconfiguration
(:class:`EncodeError` naming the column path). Scalars are cast with Arrow's safe casts
between compatible kinds only (no parsing of strings into numbers); a value that does not
fit its target (an int64 past int32, a decimal with more digits than the schema's
precision) raises :class:`ValueFitError`, which :meth:`Encoder.encode` turns into per-row
errors.
"""
from __future__ import annotations

import pyarrow as pa

from connector.errors import EncodeError

__all__ = ["coerce", "ValueFitError"]


class ValueFitError(EncodeError):
    """A value does not fit the schema's type (caught per row by the encoder)."""


def _kind(t: pa.DataType) -> str:
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_dictionary(t):
        return "dictionary"
    return str(t)


_OK = {("number", "number"), ("string", "string"), ("binary", "binary"), ("string", "binary"),
       ("binary", "string"), ("timestamp", "timestamp"), ("date", "date"), ("bool", "bool"),
       ("time", "number"), ("date", "number"), ("timestamp", "number")}


def coerce(arr: pa.Array, target: pa.DataType, path: str = "value") -> pa.Array:
    """Cast ``arr`` to ``target`` (see the module docstring); ``path`` names it in errors."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if t.equals(target):
        return arr
    if pa.types.is_dictionary(t):
        return coerce(arr.dictionary_decode(), target, path)
    if pa.types.is_null(t):
        return pa.nulls(len(arr), target)
    if pa.types.is_struct(target):
        return _struct(arr, target, path)
    if pa.types.is_map(target):
        if not pa.types.is_map(t):
            raise EncodeError(f"column {path!r} has type {t}; the schema needs a map ({target})")
        keys = coerce(arr.keys, target.key_type, f"{path}.key")
        items = coerce(arr.items, target.item_type, f"{path}.value")
        return pa.MapArray.from_arrays(_offsets(arr), keys, items, type=target, mask=_mask(arr))
    if pa.types.is_list(target):
        if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
            raise EncodeError(f"column {path!r} has type {t}; the schema needs a list ({target})")
        if pa.types.is_fixed_size_list(t):
            arr = arr.cast(pa.list_(t.value_field))
        values = coerce(arr.values, target.value_type, f"{path}.element")
        return pa.ListArray.from_arrays(_offsets(arr), values, type=target, mask=_mask(arr))
    if (_kind(t), _kind(target)) not in _OK:
        raise EncodeError(f"column {path!r} has type {t}, which cannot be written as the "
                          f"schema's {target}")
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        if isinstance(e, pa.ArrowNotImplementedError):
            raise EncodeError(f"column {path!r}: cannot cast {t} to {target}: {e}") from e
        raise ValueFitError(f"column {path!r}: a value does not fit {target}: {e}") from e


def _mask(arr: pa.Array):
    return arr.is_null() if arr.null_count else None


def _offsets(arr: pa.Array) -> pa.Array:
    offs = arr.offsets
    if arr.offset:
        offs = pa.array(offs.to_numpy() - offs[0].as_py())
    return offs.cast(pa.int32())


def _struct(arr: pa.Array, target: pa.StructType, path: str) -> pa.Array:
    t = arr.type
    if not pa.types.is_struct(t):
        raise EncodeError(f"column {path!r} has type {t}; the schema needs a struct with fields "
                          f"{[f.name for f in target]}")
    have = {t.field(i).name: i for i in range(t.num_fields)}
    want = [f.name for f in target]
    missing = [n for n in want if n not in have]
    extra = [n for n in have if n not in set(want)]
    if missing:
        raise EncodeError(f"column {path!r} lacks field(s) {missing} that the schema has "
                          f"(schema fields: {want})")
    if extra:
        raise EncodeError(f"column {path!r} has field(s) {extra} that the schema lacks "
                          f"(schema fields: {want}); drop or rename them")
    children = [coerce(arr.field(have[f.name]), f.type, f"{path}.{f.name}") for f in target]
    return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(arr))
