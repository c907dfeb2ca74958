"""The readers' view of a JSON Schema tree, and the casts that finish their output.

* ``read_type``: ``n.arrow`` with dates and date-times as strings (what is read first).
* ``finish``: strings read for dates and timestamps → ``date32`` / ``timestamp[us, UTC]`` as
  Arrow's cast parses them (a zone-less time is UTC).
* ``json_type``: the JSON Schema type name of a decoded value (JSON-text leaves check it).
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.json_schema._schema import JNode

__all__ = ["finish", "json_type", "read_type"]

def json_type(v: Any) -> str:
    """The JSON Schema type name of a decoded value."""
    t = type(v)
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    return {float: "number", Decimal: "number", str: "string", dict: "object", list: "array"}.get(t, "null")


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
    if not n.contains("timestamp", "date"):
        return arr.cast(t)
    k = n.kind
    if k == "timestamp":
        return _timestamps(arr)
    if k == "date":
        return arr.cast(t)
    mask = arr.is_null() if arr.null_count else None
    if k == "struct":
        # flatten(): a null struct's children may hold placeholders ("" is no date or time)
        kids = [finish(c, f) for c, (_, f) in zip(arr.flatten(), n.fields)]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=mask)
    # a sliced list array's values/keys/items are its parent's whole child: keep only the
    # part its offsets reach (a neighbour row's bad value must not fail this one)
    offs = arr.offsets.to_numpy()
    lo, hi = int(offs[0]), int(offs[-1])
    offs = pa.array(offs - lo, pa.int32())
    if k == "list":
        return pa.ListArray.from_arrays(offs, finish(arr.values.slice(lo, hi - lo), n.items),
                                        type=t, mask=mask)
    return pa.MapArray.from_arrays(offs, arr.keys.slice(lo, hi - lo),
                                   finish(arr.items.slice(lo, hi - lo), n.items), type=t, mask=mask)


