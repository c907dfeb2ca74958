"""The two typed readers' view of a JSON Schema tree, and the casts that finish their output.

* ``arrow_readable``: what one ``pyarrow.json.read_json`` call with an explicit schema can
  read strictly (it refuses ``"12"`` for an integer and ``1.5`` for an integer, but cannot
  express maps or JSON-text leaves).
* ``py_type``: a msgspec type that validates the rest strictly (no coercion: ``"12"`` is not
  an integer, ``1.0`` is not an integer, integers are range-checked to int64) and yields
  Python values ``pyarrow.array`` converts in C++ (JSON-text leaves come out as compact text
  through ``dec_hook``).
* ``finish``: strings read for dates and timestamps → ``date32`` / ``timestamp[us, UTC]``
  the way pyarrow's JSON reader parses them (a zone-less time is UTC).
"""
# ruff: noqa: UP045 - Optional[...] builds msgspec types at run time, where "X | None" fails on some X
from __future__ import annotations

from collections.abc import Callable
from itertools import count
from types import GenericAlias
from typing import Annotated, Any, Optional, TypedDict, cast

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.json_schema._schema import JNode

__all__ = [
    "JsonText",
    "arrow_readable",
    "dec_hook",
    "finish",
    "json_type",
    "py_type",
    "read_type",
    "typed_dict",
]

INT64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_encode = msgspec.json.encode
_names = count()
# TypedDict's functional form, called with names known only at run time (mypy reads literals)
_typed_dict = cast(Callable[..., Any], TypedDict)


def typed_dict(name: str, fields: dict[str, Any]) -> Any:
    """A msgspec object type whose keys are all optional."""
    return _typed_dict(name, fields, total=False)


def arrow_readable(n: JNode) -> bool:
    """True when pyarrow's JSON reader can read ``n`` strictly with an explicit schema."""
    return not n.contains("map", "json")


class JsonText(str):
    """A JSON-text leaf: msgspec decodes the value, ``dec_hook`` checks its JSON type and
    re-encodes it compactly (so no Python walk over the enclosing structure is needed)."""

    allowed: frozenset | None = None


_TEXT: dict = {}


def _text_class(allowed) -> type:
    cls = _TEXT.get(allowed)
    if cls is None:
        cls = _TEXT[allowed] = type(f"JsonText{len(_TEXT)}", (JsonText,), {"allowed": allowed})
    return cls


def json_type(v: Any) -> str:
    """The JSON Schema type name of a decoded value."""
    t = type(v)
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    return {float: "number", str: "string", dict: "object", list: "array"}.get(t, "null")


def dec_hook(tp: type, obj: Any) -> Any:
    """msgspec hook: JSON-text leaves (see :class:`JsonText`)."""
    if isinstance(tp, type) and issubclass(tp, JsonText):
        if tp.allowed is not None and json_type(obj) not in tp.allowed:
            raise ValueError(f"expected one of {sorted(tp.allowed)}, got {json_type(obj)}")
        return tp(_encode(obj).decode())
    raise NotImplementedError(f"no decoder for {tp!r}")


def py_type(n: JNode) -> Any:
    """The msgspec type validating ``n`` (every value may be JSON null)."""
    k = n.kind
    if k == "struct":
        td = typed_dict(f"JStruct{next(_names)}", {name: py_type(t) for name, t in n.fields})
        return Optional[td]
    # GenericAlias(dict, ...) is what dict[...] builds; spelled so, since the item is computed
    if k == "map":
        return Optional[GenericAlias(dict, (str, py_type(n.items)))]
    if k == "list":
        return Optional[GenericAlias(list, (py_type(n.items),))]
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
    return Optional[_text_class(n.allowed)]


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


