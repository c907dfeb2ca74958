"""Writer × reader → a decode plan: what to do with every writer type, per the Avro spec.

A plan node says how the writer's bytes of one type become a value of the reader's type:
records list their fields in writer order (decode into a reader field, or skip a writer-only
field; reader-only fields take their defaults), a writer union maps each branch index to a
reader branch (or to an error for that branch only), arrays and maps hold their item plan,
scalars carry their promotion (int → long/float/double, string ↔ bytes …). Every node keeps
the reader type it produces (``reader``). The plan mirrors the reader tree, which is finite
(recursion is cut by ``parse_avro``); data the reader does not keep is skipped over the uncut
writer graph. :mod:`connector.formats.avro._program` compiles a plan for the kernel.

Known limit: a writer union branch whose record the reader's cut removed from a union with
other non-null branches has no reader branch, so rows using it at the cut depth are row errors
(a ``["null", T]`` union at the cut is dropped as a whole and is skipped fine).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from connector.formats.avro._graph import short_names
from connector.formats.avro._schema import Node, arrow_type_of, default_value
from connector.formats.avro._walk import min_size, skip_width

__all__ = ["resolve"]

_PROMO = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
          ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}
_NAMED = ("record", "enum", "fixed")


def _desc(n: Node) -> str:
    return f"{n.kind} {n.name}" if n.name else n.kind


def _same(w: Node, r: Node) -> bool:
    """Same kind and, for named types, same unqualified name (or a reader alias)."""
    if w.kind != r.kind:
        return False
    if w.kind in _NAMED:
        if not (short_names(r) & {w.name.rpartition(".")[2]}):
            return False
        return w.kind != "fixed" or w.size == r.size
    return True


def _compatible(w: Node, r: Node) -> bool:
    return _same(w, r) or (w.kind, r.kind) in _PROMO


def _match_branch(w: Node, R: Node):
    for test in (_same, _compatible):
        for i, b in enumerate(R.branches):
            if test(w, b):
                return i
    return None


# -- plans -----------------------------------------------------------------------------------
class Plan:
    """How writer bytes of one type become a value of the reader type ``reader``."""
    width: int | None = None  # bytes per value when constant
    varint = False   # the value is exactly one varint
    min_size = 0
    reader: Node  # set by resolve()

    def __init__(self, typ: pa.DataType):
        self.typ = typ


class ErrorPlan(Plan):
    """Unresolvable: every row reaching it fails with ``why``."""

    def __init__(self, typ, why):
        super().__init__(typ)
        self.why = why


class NullPlan(Plan):
    width = 0


class BoolPlan(Plan):
    width = min_size = 1


class NumPlan(Plan):
    """int/long/float/double writer → numeric or temporal reader (promotions, logical types)."""

    def __init__(self, w: Node, r: Node):
        super().__init__(arrow_type_of(r))
        self.wk, self.r = w.kind, r
        self.varint = self.wk in ("int", "long")
        self.width = {"float": 4, "double": 8}.get(self.wk)
        self.min_size = self.width or 1


class BytesPlan(Plan):
    """bytes/string/fixed writer → binary, string or decimal reader."""

    def __init__(self, w: Node, r: Node):
        super().__init__(arrow_type_of(r))
        self.size = w.size if w.kind == "fixed" else None
        self.width = self.size
        self.min_size = self.size if self.size is not None else 1
        self.r = r


class EnumPlan(Plan):
    """Writer symbol index → reader symbol index (``map``; -1: unknown and no default)."""
    varint = True
    min_size = 1

    def __init__(self, w: Node, r: Node):
        super().__init__(arrow_type_of(r))
        rs = list(r.symbols)
        dflt = rs.index(r.enum_default) if r.enum_default in rs else -1
        self.map = np.array([rs.index(s) if s in rs else dflt for s in w.symbols] or [-1], np.int64)
        self.nw = len(w.symbols)


class RecordPlan(Plan):
    """``steps``: (plan, None, reader field) to decode or (None, writer type, None) to skip,
    in writer order; ``defaults``: {reader field: one-value array} for reader-only fields."""

    def __init__(self, typ, steps, defaults, width):
        super().__init__(typ)
        self.steps, self.defaults, self.width = steps, defaults, width
        self.min_size = sum(s[0].min_size if s[0] is not None else min_size(s[1]) for s in steps)


class WriterUnionPlan(Plan):
    """A writer union: the encoded branch index picks the branch (never the value's type).
    ``branches``: (plan, reader branch, error) per writer branch; ``R`` the reader union or
    None (a non-union reader)."""
    min_size = 1

    def __init__(self, typ, branches, R):
        super().__init__(typ)
        self.branches, self.R = branches, R


class ToUnionPlan(Plan):
    """A non-union writer type read into a reader union (the first matching branch)."""

    def __init__(self, typ, inner, rb, R):
        super().__init__(typ)
        self.inner, self.rb, self.R = inner, rb, R
        self.width, self.varint, self.min_size = inner.width, inner.varint, inner.min_size


class MapEntryPlan(Plan):
    min_size = 1

    def __init__(self, value: Plan):
        super().__init__(pa.struct([("key", pa.string()), ("value", value.typ)]))
        self.value = value


class CollectionPlan(Plan):
    min_size = 1

    def __init__(self, typ, item: Plan, is_map: bool):
        super().__init__(typ)
        self.item, self.is_map = item, is_map


# -- resolution ------------------------------------------------------------------------------
def resolve(w: Node, r: Node, memo: dict | None = None) -> Plan:
    """The plan reading writer type ``w`` (graph) as reader type ``r`` (tree), per the Avro
    spec's resolution rules; what cannot be resolved becomes an :class:`ErrorPlan`, so only the
    rows that reach it fail (e.g. one union branch the reader lacks)."""
    memo = {} if memo is None else memo
    key = (id(w), id(r))
    if key not in memo:
        plan = memo[key] = _resolve(w, r, memo)
        plan.reader = r
    return memo[key]


def _resolve(w: Node, r: Node, memo) -> Plan:
    typ = arrow_type_of(r)
    if w.kind == "union":
        branches: list[tuple[Plan | None, int | None, str | None]] = []
        for wb in w.branches:
            if r.kind == "union":
                rb = _match_branch(wb, r)
                if rb is None:
                    why = f"writer union branch {_desc(wb)} matches no branch of the reader's union"
                    branches.append((None, None, why))
                else:
                    branches.append((resolve(wb, r.branches[rb], memo), rb, None))
            elif _compatible(wb, r):
                branches.append((resolve(wb, r, memo), None, None))
            else:
                why = f"writer union branch {_desc(wb)} cannot be read as the reader's {_desc(r)}"
                branches.append((None, None, why))
        return WriterUnionPlan(typ, branches, r if r.kind == "union" else None)
    if r.kind == "union":
        rb = _match_branch(w, r)
        if rb is None:
            return ErrorPlan(typ, f"writer type {_desc(w)} matches no branch of the reader's union")
        return ToUnionPlan(typ, resolve(w, r.branches[rb], memo), rb, r)
    if not _compatible(w, r):
        return ErrorPlan(typ, f"writer type {_desc(w)} cannot be read as the reader's {_desc(r)}")
    k = r.kind
    if k == "null":
        return NullPlan(typ)
    if k == "boolean":
        return BoolPlan(typ)
    if k in ("int", "long", "float", "double"):
        return NumPlan(w, r)
    if k in ("bytes", "string", "fixed"):
        return BytesPlan(w, r)
    if k == "enum":
        return EnumPlan(w, r)
    if k in ("array", "map"):
        item = resolve(w.items, r.items, memo)
        if k == "map":
            item = MapEntryPlan(item)
        return CollectionPlan(typ, item, k == "map")
    # (plan, None, reader field) for a field the reader keeps, (None, writer type, None) to skip
    steps: list[tuple[Plan, None, int] | tuple[None, Node, None]] = []
    used: set[int] = set()
    for wf in w.fields:
        ri = next((i for i, rf in enumerate(r.fields) if wf.name in (rf.name, *rf.aliases)), None)
        if ri is None or ri in used:
            steps.append((None, wf.type, None))
        else:
            used.add(ri)
            steps.append((resolve(wf.type, r.fields[ri].type, memo), None, ri))
    defaults = {}
    for ri, rf in enumerate(r.fields):
        if ri in used:
            continue
        if not rf.has_default:
            return ErrorPlan(typ, f"reader field {rf.name!r} is missing from the writer's "
                                  f"{_desc(w)} and has no default")
        try:
            defaults[ri] = pa.array([default_value(rf.type, rf.default)], arrow_type_of(rf.type))
        except (pa.ArrowException, ValueError, TypeError, AttributeError, OverflowError) as e:
            return ErrorPlan(typ, f"invalid default of reader field {rf.name!r}: {e}")
    widths = [s[0].width if s[0] is not None else skip_width(s[1]) for s in steps]
    known = [wd for wd in widths if wd is not None]
    width = None if defaults or len(known) != len(widths) else sum(known)
    return RecordPlan(typ, steps, defaults, width)
