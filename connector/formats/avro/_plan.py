"""Writer × reader → a decode plan executed in lockstep over every payload of a group.

A plan node decodes, for arrays of cursors (one byte position and row id each), the writer's
bytes of one type into an Arrow array of the reader's type. Records run their fields in
writer order (skipping writer-only fields, filling reader-only fields with defaults); unions
read the branch index, split the cursors by branch and scatter the results back; arrays and
maps read block counts and decode items either all at once (fixed-width items: positions are
arithmetic; varint items: item ends are the next bytes < 0x80) or in waves of one item per
still-active cursor. The plan mirrors the reader tree, which is finite (recursion is cut by
``parse_avro``); data the reader does not keep is skipped over the uncut writer graph with a
nesting cap, so Python recursion is bounded by the schema and :data:`MAX_NESTING`, never by
the data.

Known limits: a writer union branch whose record the reader's cut removed from a union with
other non-null branches has no reader branch, so rows using it at the cut depth are row errors
(a ``["null", T]`` union at the cut is dropped as a whole and is skipped fine). The collection
cap (``max_collection_items``) counts all items of one record, as the old guard did; a group of
many rows each at the cap of zero-byte items (``null``) still materialises them.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from connector.formats.avro._graph import short_names
from connector.formats.avro._read import (
    Ctx,
    binary_array,
    decimal_array,
    from_numpy,
    read_bytes,
    read_fixed,
    read_varint,
    string_array,
)
from connector.formats.avro._schema import Node, arrow_type_of, default_value, union_kind
from connector.formats.avro._walk import (
    MAX_NESTING,
    min_size,
    skip,
    skip_width,
    walk_collection,
)

__all__ = ["MAX_NESTING", "resolve"]

_PROMO = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
          ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}
_NAMED = ("record", "enum", "fixed")
_I64_MS = (2**63 - 1) // 1000


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


# -- assembling ------------------------------------------------------------------------------
def _scatter(m: int, parts: list, typ: pa.DataType) -> pa.Array:
    """Arrays for disjoint cursor subsets → one array of length m (null elsewhere)."""
    parts = [(s, v if v.type == typ else v.cast(typ)) for s, v in parts if len(s)]
    if not parts:
        return pa.nulls(m, typ)
    if len(parts) == 1 and len(parts[0][0]) == m:
        return parts[0][1]
    vals = pa.concat_arrays([v for _, v in parts])
    ix = np.full(m, -1, np.int64)
    off = 0
    for s, v in parts:
        ix[s] = np.arange(off, off + len(v))
        off += len(v)
    return vals.take(pa.array(ix, mask=ix < 0))


def _assemble_union(R: Node, typ: pa.DataType, m: int, parts: list) -> pa.Array:
    """parts: (reader branch index, cursors, values) → the reader union's Arrow form."""
    kind = union_kind(R)
    vparts = [(rb, s, v) for rb, s, v in parts if R.branches[rb].kind != "null"]
    if kind != "struct":
        return _scatter(m, [(s, v) for _, s, v in vparts], typ)
    valid = np.zeros(m, bool)
    for _, s, _v in vparts:
        valid[s] = True
    members = []
    j = 0
    for rb, b in enumerate(R.branches):
        if b.kind == "null":
            continue
        members.append(_scatter(m, [(s, v) for i, s, v in vparts if i == rb], typ.field(j).type))
        j += 1
    return pa.StructArray.from_arrays(members, fields=list(typ),
                                      mask=None if valid.all() else pa.array(~valid))


# -- plans -----------------------------------------------------------------------------------
class Plan:
    width: int | None = None  # bytes per value when constant
    varint = False   # the value is exactly one varint
    min_size = 0

    def __init__(self, typ: pa.DataType):
        self.typ = typ

    def decode(self, ctx: Ctx, pos, rid, depth):
        raise NotImplementedError


class ErrorPlan(Plan):
    def __init__(self, typ, why):
        super().__init__(typ)
        self.why = why

    def decode(self, ctx, pos, rid, depth):
        ctx.fail(rid, self.why)
        return pa.nulls(len(pos), self.typ), np.full(len(pos), ctx.zero, np.int64)


class NullPlan(Plan):
    width = 0

    def decode(self, ctx, pos, rid, depth):
        return pa.nulls(len(pos), self.typ), pos


class BoolPlan(Plan):
    width = min_size = 1

    def decode(self, ctx, pos, rid, depth):
        mat, p = read_fixed(ctx, pos, rid, 1)
        b = mat[:, 0]
        ctx.check(p, rid, b > 1, "boolean byte is neither 0 nor 1")
        return pa.array(b == 1, pa.bool_()), p


class NumPlan(Plan):
    """int/long/float/double writer → numeric or temporal reader (promotions, logical types)."""

    def __init__(self, w: Node, r: Node):
        super().__init__(arrow_type_of(r))
        self.wk, self.r = w.kind, r
        self.varint = self.wk in ("int", "long")
        self.width = {"float": 4, "double": 8}.get(self.wk)
        self.min_size = self.width or 1

    def decode(self, ctx, pos, rid, depth):
        if self.varint:
            raw, p = read_varint(ctx, pos, rid, is_int=self.wk == "int")
        else:
            mat, p = read_fixed(ctx, pos, rid, self.width)
            raw = mat.view("<f4" if self.width == 4 else "<f8").ravel()
        with np.errstate(all="ignore"):  # float32 signalling NaNs widen to quiet NaNs
            return self._convert(ctx, raw, rid), p

    def _convert(self, ctx, raw, rid):
        r, typ = self.r, self.typ
        if r.kind == "int":
            return from_numpy(raw.astype(np.int32), typ)
        if r.kind == "float":
            return from_numpy(raw.astype(np.float32), typ)
        if r.kind == "double":
            return from_numpy(raw.astype(np.float64), typ)
        if pa.types.is_timestamp(typ) and r.logical and r.logical.endswith("millis"):
            bad = np.abs(raw) > _I64_MS
            if bad.any():
                ctx.fail(rid[bad], "timestamp in milliseconds beyond the microsecond range")
                raw = np.where(bad, 0, raw)
            raw = raw * 1000
        return from_numpy(raw.astype(np.int64), typ)


class BytesPlan(Plan):
    """bytes/string/fixed writer → binary, string or decimal reader."""

    def __init__(self, w: Node, r: Node):
        super().__init__(arrow_type_of(r))
        self.size = w.size if w.kind == "fixed" else None
        self.width = self.size
        self.min_size = self.size if self.size is not None else 1
        self.r = r

    def decode(self, ctx, pos, rid, depth):
        if self.size is not None:
            p = pos + self.size
            bad = p > ctx.end[rid]
            ctx.check(p, rid, bad, "truncated payload")
            starts, lens = pos, np.where(bad, 0, self.size).astype(np.int64)
        else:
            starts, lens, p = read_bytes(ctx, pos, rid)
        if pa.types.is_decimal(self.typ):
            return decimal_array(ctx, starts, lens, rid, self.typ.precision, self.typ.scale), p
        if pa.types.is_string(self.typ):
            return string_array(ctx, starts, lens, rid), p
        return binary_array(ctx, starts, lens), p


class EnumPlan(Plan):
    varint = True
    min_size = 1

    def __init__(self, w: Node, r: Node):
        super().__init__(arrow_type_of(r))
        rs = list(r.symbols)
        dflt = rs.index(r.enum_default) if r.enum_default in rs else -1
        self.map = np.array([rs.index(s) if s in rs else dflt for s in w.symbols] or [-1], np.int64)
        self.nw = len(w.symbols)
        self.syms = pa.array(rs or [""], pa.string())

    def decode(self, ctx, pos, rid, depth):
        idx, p = read_varint(ctx, pos, rid, is_int=True)
        ok = (idx >= 0) & (idx < self.nw)
        mapped = np.where(ok, self.map.take(np.where(ok, idx, 0)), -1)
        bad = mapped < 0
        if bad.any():
            ctx.check(p, rid, ~ok, "enum index out of range")
            ctx.check(p, rid, bad, "enum symbol unknown to the reader, which has no default")
            mapped = np.where(bad, 0, mapped)
        return self.syms.take(pa.array(mapped)), p


class RecordPlan(Plan):
    def __init__(self, typ, steps, defaults, width):
        super().__init__(typ)
        self.steps, self.defaults, self.width = steps, defaults, width
        self.min_size = sum(s[0].min_size if s[0] is not None else min_size(s[1]) for s in steps)

    def decode(self, ctx, pos, rid, depth):
        m = len(pos)
        if depth > MAX_NESTING:
            ctx.fail(rid, f"nesting deeper than {MAX_NESTING} levels")
        kids = [None] * len(self.typ)
        p = pos
        for plan, wtype, ri in self.steps:
            if plan is None:
                p = skip(ctx, wtype, p, rid, depth + 1)
            else:
                kids[ri], p = plan.decode(ctx, p, rid, depth + 1)
        if self.defaults:
            zeros = pa.array(np.zeros(m, np.int64))
            for ri, dv in self.defaults.items():
                kids[ri] = dv.take(zeros)
        if not kids:
            return pa.Array.from_buffers(self.typ, m, [None], children=[]), p
        return pa.StructArray.from_arrays(kids, fields=list(self.typ)), p


class WriterUnionPlan(Plan):
    """A writer union: the encoded branch index picks the branch (never the value's type)."""
    min_size = 1

    def __init__(self, typ, branches, R):
        super().__init__(typ)
        self.branches, self.R = branches, R  # (plan, reader branch, error) per writer branch

    def decode(self, ctx, pos, rid, depth):
        m = len(pos)
        idx, p = read_varint(ctx, pos, rid, is_int=True)
        nb = len(self.branches)
        bad = (idx < 0) | (idx >= nb)
        if bad.any():
            ctx.check(p, rid, bad, "union branch index out of range")
            idx = np.where(bad, -1, idx)
        parts = []
        single = m > 0 and bool((idx == idx[0]).all())
        for b in ([int(idx[0])] if single else np.unique(idx).tolist()):
            if b < 0:
                continue
            sel = np.arange(m) if single else np.flatnonzero(idx == b)
            plan, rb, why = self.branches[b]
            if why is not None:
                ctx.fail(rid[sel], why)
                p[sel] = ctx.zero
                continue
            vals, p[sel] = plan.decode(ctx, p[sel], rid[sel], depth + 1)
            parts.append((rb, sel, vals))
        if self.R is None:
            return _scatter(m, [(s, v) for _, s, v in parts], self.typ), p
        return _assemble_union(self.R, self.typ, m, parts), p


class ToUnionPlan(Plan):
    """A non-union writer type read into a reader union (the first matching branch)."""

    def __init__(self, typ, inner, rb, R):
        super().__init__(typ)
        self.inner, self.rb, self.R = inner, rb, R
        self.width, self.varint, self.min_size = inner.width, inner.varint, inner.min_size

    def decode(self, ctx, pos, rid, depth):
        vals, p = self.inner.decode(ctx, pos, rid, depth)
        return _assemble_union(self.R, self.typ, len(pos), [(self.rb, np.arange(len(pos)), vals)]), p


class MapEntryPlan(Plan):
    min_size = 1

    def __init__(self, value: Plan):
        super().__init__(pa.struct([("key", pa.string()), ("value", value.typ)]))
        self.value = value

    def decode(self, ctx, pos, rid, depth):
        starts, lens, p = read_bytes(ctx, pos, rid)
        keys = string_array(ctx, starts, lens, rid)
        vals, p = self.value.decode(ctx, p, rid, depth)
        return pa.StructArray.from_arrays([keys, vals], fields=list(self.typ)), p


class CollectionPlan(Plan):
    min_size = 1

    def __init__(self, typ, item: Plan, is_map: bool):
        super().__init__(typ)
        self.item, self.is_map = item, is_map

    def decode(self, ctx, pos, rid, depth):
        m = len(pos)
        chunks = []
        item = self.item

        def step(cur, ipos, irid, nums):
            vals, q = item.decode(ctx, ipos, irid, depth + 1)
            chunks.append((cur, nums, vals))
            return q

        if depth > MAX_NESTING:
            ctx.fail(rid, f"nesting deeper than {MAX_NESTING} levels")
        p, count = walk_collection(ctx, pos, rid, step, item.width, item.varint, item.min_size)
        offs = np.zeros(m + 1, np.int64)
        np.cumsum(count, out=offs[1:])
        if not chunks:
            values = pa.array([], item.typ)
        else:
            vals = chunks[0][2] if len(chunks) == 1 else pa.concat_arrays([c[2] for c in chunks])
            dest = np.concatenate([offs[c[0]] + c[1] for c in chunks])
            if len(dest) == len(vals) and not (dest == np.arange(len(dest))).all():
                perm = np.empty(len(dest), np.int64)
                perm[dest] = np.arange(len(dest))
                vals = vals.take(pa.array(perm))
            values = vals
        offsets = pa.array(offs.astype(np.int32))
        if self.is_map:
            keys, items = values.flatten()
            return pa.MapArray.from_arrays(offsets, keys, items, type=self.typ), p
        return pa.ListArray.from_arrays(offsets, values, type=self.typ), p


# -- resolution ------------------------------------------------------------------------------
def resolve(w: Node, r: Node, memo: dict | None = None) -> Plan:
    """The plan reading writer type ``w`` (graph) as reader type ``r`` (tree), per the Avro
    spec's resolution rules; what cannot be resolved becomes an :class:`ErrorPlan`, so only the
    rows that reach it fail (e.g. one union branch the reader lacks)."""
    memo = {} if memo is None else memo
    key = (id(w), id(r))
    if key not in memo:
        memo[key] = _resolve(w, r, memo)
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
