"""Avro schema → an acyclic type tree → Arrow types in the form Spark expects.

Mapping (spark-avro compatible where Spark has the type):

=====================================  =========================================
Avro                                   Arrow
=====================================  =========================================
record                                 struct (all fields nullable)
array                                  list<element: T>
map                                    map<key: string, value: T>
enum, string, uuid                     string
bytes, fixed, duration (fixed 12)      binary (duration is kept as its 12 raw bytes)
decimal (bytes or fixed)               decimal128(p, s)
date                                   date32
time-millis / time-micros              int32 ms / int64 µs since midnight (Spark has no
                                       usable TIME type in data sources, like spark-avro)
timestamp-millis / -micros             timestamp[us, tz=UTC]
local-timestamp-millis / -micros       timestamp[us] (Spark TIMESTAMP_NTZ)
["null", T]                            nullable T
[int, long] / [float, double]          int64 / float64 (as spark-avro)
other unions                           struct<member0, member1, ...> (non-null branches)
=====================================  =========================================

Recursion is cut at ``max_depth``: a type below the cut is left out of the tree (a field or
union branch whose type was cut disappears from the Arrow type). Writers parse with
``keep_cuts=True`` instead: each cut place stays in the tree as a ``cut`` node holding the one
value a writer can put there (``empty``: the null branch of a union, an empty array or map;
``logical`` says which: ``"null"``, ``"array"``, ``"map"``),
so every record is still complete on the wire; a cut that admits no value (a record with a
field of its own type and no null, array or map on the way) has ``empty=None``.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa

from connector.errors import SchemaMappingError
from connector.formats.avro._graph import parse_graph
from connector.formats.avro._model import PRIMITIVES, Field, Node

__all__ = ["Node", "Field", "parse_avro", "arrow_type_of", "default_value"]

TS_UTC = pa.timestamp("us", tz="UTC")
TS_NTZ = pa.timestamp("us")


def _zz(i: int) -> bytes:
    """Avro's zig-zag varint of a small non-negative int (a union branch index)."""
    i <<= 1
    out = bytearray()
    while i & ~0x7F:
        out.append((i & 0x7F) | 0x80)
        i >>= 7
    out.append(i)
    return bytes(out)


class _Cutter:
    """The reader tree of a writer graph: each use of a named type becomes its own node, and
    recursion is cut at ``max_depth`` (dropped, or a ``cut`` node with ``keep_cuts``)."""

    def __init__(self, max_depth: int, keep_cuts: bool = False):
        self.max_depth = max_depth
        self.keep_cuts = keep_cuts
        self.stack: dict[str, int] = {}
        self.recursive = False

    def cut(self, g: Node) -> Node | None:
        k = g.kind
        if k in PRIMITIVES:
            return Node(k, logical=g.logical, precision=g.precision, scale=g.scale)
        if k == "union":
            branches = [self.cut(b) for b in g.branches]
            if self.keep_cuts:
                return self._union(branches)  # type: ignore[arg-type]  # keep_cuts never gives None
            kept = [b for b in branches if b is not None]
            if branches and not [b for b in kept if b.kind != "null"] and None in branches:
                return None  # every non-null branch was cut
            return Node("union", branches=tuple(kept))
        if k == "enum":
            return Node("enum", name=g.name, aliases=g.aliases, symbols=g.symbols, enum_default=g.enum_default)
        if k == "fixed":
            return Node("fixed", name=g.name, aliases=g.aliases, size=g.size, logical=g.logical,
                        precision=g.precision, scale=g.scale)
        if k == "record":
            full = g.name
            assert full is not None
            depth = self.stack.get(full, 0)
            if depth:
                self.recursive = True
                if self.max_depth <= 0:
                    raise SchemaMappingError(
                        f"recursive Avro type {full!r} cannot be mapped to a Spark schema; set "
                        "max_recursion_depth to cut it at a fixed depth")
                if depth > self.max_depth:
                    return Node("cut") if self.keep_cuts else None
            self.stack[full] = depth + 1
            try:
                fields = []
                for f in g.fields:
                    ft = self.cut(f.type)
                    if ft is not None and ft.kind == "cut" and ft.empty is None:
                        return Node("cut")  # a field no value can fill: the record cannot be written
                    if ft is not None:
                        fields.append(Field(f.name, f.aliases, ft, f.default, f.has_default))
            finally:
                self.stack[full] = depth
            return Node("record", name=full, aliases=g.aliases, fields=tuple(fields))
        if k in ("array", "map"):
            items = self.cut(g.items)
            if items is not None and items.kind == "cut":
                return Node("cut", empty=b"\x00", logical=k)  # only an empty collection can be written
            return None if items is None else Node(k, items=items)
        raise SchemaMappingError(f"invalid Avro type {k!r:.80}")

    def _union(self, branches: list[Node]) -> Node:
        """A union of a writer's tree: cut branches stay as placeholders (branch indexes are
        the schema's); a union left with no branch but null is itself a cut writing null."""
        if any(b.kind == "cut" for b in branches) and all(b.kind in ("null", "cut") for b in branches):
            null_i = next((i for i, b in enumerate(branches) if b.kind == "null"), None)
            return Node("cut", empty=None if null_i is None else _zz(null_i), logical="null")
        return Node("union", branches=tuple(branches))


def parse_avro(text: str | dict | list, *, max_depth: int = 0, refs: tuple = (),
               keep_cuts: bool = False) -> tuple[Node, bool]:
    """Parse Avro schema text into a type tree.

    ``refs`` are the texts of referenced schemas (registry references), whose named types
    the main schema may use. ``keep_cuts`` (writers): recursion cut at ``max_depth`` leaves
    ``cut`` nodes in place (see the module docstring) instead of dropping the field.

    Returns
    -------
    (Node, bool)
        The tree and whether the schema was recursive (then cut at ``max_depth``).

    Raises
    ------
    SchemaMappingError
        Unparseable text, unknown names, or recursion when ``max_depth`` is 0.
    """
    c = _Cutter(max_depth, keep_cuts)
    node = c.cut(parse_graph(text, refs))
    if node is None or node.kind == "cut":
        raise SchemaMappingError("Avro schema has no representable type after cutting recursion")
    return node, c.recursive


def _scalar_type(n: Node) -> pa.DataType:
    lg = n.logical
    if lg == "decimal" and n.kind in ("bytes", "fixed") and n.precision:
        if n.precision > 38:
            raise SchemaMappingError(f"Avro decimal precision {n.precision} exceeds Spark's 38")
        return pa.decimal128(int(n.precision), int(n.scale or 0))
    if n.kind == "int":
        return pa.date32() if lg == "date" else pa.int32()
    if n.kind == "long":
        if lg in ("timestamp-millis", "timestamp-micros"):
            return TS_UTC
        if lg in ("local-timestamp-millis", "local-timestamp-micros"):
            return TS_NTZ
        return pa.int64()
    return {"null": pa.null(), "boolean": pa.bool_(), "float": pa.float32(),
            "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
            "fixed": pa.binary(), "enum": pa.string()}[n.kind]


def union_kind(n: Node) -> str:
    """``"nullable"`` (≤ 1 non-null branch), ``"long"``/``"double"`` (spark-avro widening)
    or ``"struct"``."""
    nn = n.nonnull
    if len(nn) <= 1:
        return "nullable"
    kinds = {b.kind for b in nn}
    if not any(b.logical for b in nn):
        if kinds == {"int", "long"}:
            return "long"
        if kinds == {"float", "double"}:
            return "double"
    return "struct"


def arrow_type_of(n: Node) -> pa.DataType:
    """The Arrow type Spark expects for an Avro type tree (memoized on the node)."""
    if n.arrow is not None:
        return n.arrow
    if n.kind == "record":
        t = pa.struct([pa.field(f.name, arrow_type_of(f.type)) for f in n.fields if f.type.kind != "cut"])
    elif n.kind == "array":
        t = pa.list_(pa.field("element", arrow_type_of(n.items)))
    elif n.kind == "map":
        t = pa.map_(pa.field("key", pa.string(), nullable=False),
                    pa.field("value", arrow_type_of(n.items)))
    elif n.kind == "union":
        k = union_kind(n)
        nn = n.nonnull
        if k == "nullable":
            t = arrow_type_of(nn[0]) if nn else pa.null()
        elif k == "long":
            t = pa.int64()
        elif k == "double":
            t = pa.float64()
        else:
            t = pa.struct([pa.field(f"member{i}", arrow_type_of(b)) for i, b in enumerate(nn)])
    else:
        t = _scalar_type(n)
    n.arrow = t
    return t


def _bytes_default(v: Any) -> bytes:
    return v.encode("latin-1") if isinstance(v, str) else bytes(v)


def _decimal_from_bytes(b: bytes, scale: int) -> Decimal:
    return Decimal(int.from_bytes(b, "big", signed=True)).scaleb(-scale)


def default_value(n: Node, v: Any) -> Any:
    """An Avro field default (JSON form) as the Python value ``pa.array`` takes for
    ``arrow_type_of(n)``."""
    k = n.kind
    if k == "union":
        first = n.branches[0] if n.branches else None
        if first is None or first.kind in ("null", "cut") or v is None:
            return None
        uk = union_kind(n)
        if uk == "struct":
            idx = n.nonnull.index(first)
            return {f"member{i}": (default_value(first, v) if i == idx else None)
                    for i in range(len(n.nonnull))}
        return default_value(first, v)
    if v is None:
        return None
    if k in ("bytes", "fixed"):
        b = _bytes_default(v)
        return _decimal_from_bytes(b, n.scale or 0) if n.logical == "decimal" else b
    if k == "long" and n.logical in ("timestamp-millis", "local-timestamp-millis"):
        return v * 1000
    if k == "record":
        return {f.name: default_value(f.type, v.get(f.name, f.default)) for f in n.fields if f.type.kind != "cut"}
    if k == "array":
        return [default_value(n.items, x) for x in v]
    if k == "map":
        return [(key, default_value(n.items, x)) for key, x in v.items()]
    if k == "float" or k == "double":
        return float(v)
    return v
