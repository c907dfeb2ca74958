"""The two typed readers' view of a JSON Schema tree, and the casts that finish their output.

* ``arrow_readable``: what one ``pyarrow.json.read_json`` call with an explicit schema can
  read strictly (it refuses ``"12"`` for an integer and ``1.5`` for an integer, but cannot
  express maps or JSON-text leaves).
* ``py_type``: a msgspec type that validates the rest strictly (no coercion: ``"12"`` is not
  an integer, ``1.0`` is not an integer, integers are range-checked to int64) and yields
  Python values ``pyarrow.array`` converts in C++.
* ``finish``: strings read for dates and timestamps → ``date32`` / ``timestamp[us, UTC]``
  the way pyarrow's JSON reader parses them (a zone-less time is UTC).
"""
from __future__ import annotations

from itertools import count
from typing import Annotated, Any, Optional, TypedDict, Union

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from connector.decode._json_schema import JNode

__all__ = ["arrow_readable", "py_type", "read_type", "finish", "to_text", "has_text"]

INT64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_ANY_JSON = {"object": dict[str, Any], "array": list[Any], "string": str, "integer": int,
             "boolean": bool}
_names = count()


def arrow_readable(n: JNode) -> bool:
    """True when pyarrow's JSON reader can read ``n`` strictly with an explicit schema."""
    return not n.contains("map", "json")


def has_text(n: JNode) -> bool:
    return n.contains("json")


def _text_type(allowed) -> Any:
    if allowed is None:
        return Any
    members = [_ANY_JSON[t] for t in sorted(allowed) if t in _ANY_JSON]
    if "number" in allowed:
        members += [int, float]  # int first: an integer keeps its text ("3", not "3.0")
    members = list(dict.fromkeys(members))
    return Optional[Union[tuple(members)]] if members else None


def py_type(n: JNode) -> Any:
    """The msgspec type validating ``n`` (every value may be JSON null)."""
    k = n.kind
    if k == "struct":
        td = TypedDict(f"JStruct{next(_names)}", {name: py_type(t) for name, t in n.fields},
                       total=False)
        return Optional[td]
    if k == "map":
        return Optional[dict[str, py_type(n.items)]]
    if k == "list":
        return Optional[list[py_type(n.items)]]
    if k in ("string", "timestamp", "date"):
        return Optional[str]
    if k == "int":
        return Optional[INT64]
    if k == "float":
        return Optional[float]
    if k == "bool":
        return Optional[bool]
    if k == "null":
        return None
    return _text_type(n.allowed)


def read_type(n: JNode) -> pa.DataType:
    """``n.arrow`` with dates and timestamps as strings (what the readers produce first)."""
    k = n.kind
    if k == "struct":
        return pa.struct([pa.field(name, read_type(t)) for name, t in n.fields])
    if k == "list":
        return pa.list_(pa.field("element", read_type(n.items)))
    if k == "map":
        return pa.map_(pa.field("key", pa.string(), nullable=False),
                       pa.field("value", read_type(n.items)))
    if k in ("timestamp", "date"):
        return pa.string()
    return n.arrow


_ZONED = r"[Tt ]\d\d:?\d\d.*([Zz]|[+-]\d\d(:?\d\d)?)$"
TS = pa.timestamp("us", tz="UTC")


def _timestamps(s: pa.Array) -> pa.Array:
    """ISO-8601 strings → timestamp[us, UTC]; a zone-less time is UTC (as pyarrow.json reads)."""
    zoned = pc.fill_null(pc.match_substring_regex(s, _ZONED), False)
    a = pc.if_else(zoned, s, pa.scalar(None, pa.string())).cast(TS)
    b = pc.if_else(zoned, pa.scalar(None, pa.string()), s).cast(pa.timestamp("us")).cast(TS)
    return pc.if_else(zoned, a, b)


def finish(arr: pa.Array, n: JNode) -> pa.Array:
    """Cast the string leaves of a ``read_type(n)`` array to ``n.arrow``; raises on a bad value."""
    t = n.arrow
    if arr.type == t:
        return arr
    if not n.contains("timestamp"):
        return arr.cast(t)
    k = n.kind
    if k == "timestamp":
        return _timestamps(arr)
    mask = arr.is_null() if arr.null_count else None
    if k == "struct":
        # flatten(): a null struct's children may hold placeholders ("" is no timestamp)
        kids = [finish(c, f) for c, (_, f) in zip(arr.flatten(), n.fields)]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=mask)
    if k == "list":
        return pa.ListArray.from_arrays(arr.offsets, finish(arr.values, n.items), type=t, mask=mask)
    return pa.MapArray.from_arrays(arr.offsets, arr.keys, finish(arr.items, n.items), type=t,
                                   mask=mask)


_encode = msgspec.json.encode


def to_text(n: JNode):
    """Python value of ``py_type(n)`` → the same with JSON-text leaves as ``str`` (or None)."""
    k = n.kind
    if k == "json":
        return lambda v: None if v is None else _encode(v).decode()
    if not has_text(n):
        return lambda v: v
    if k == "struct":
        conv = [(name, to_text(t)) for name, t in n.fields]
        return lambda v: None if v is None else {name: c(v.get(name)) for name, c in conv}
    c = to_text(n.items)
    if k == "map":
        return lambda v: None if v is None else {key: c(x) for key, x in v.items()}
    return lambda v: None if v is None else [c(x) for x in v]
