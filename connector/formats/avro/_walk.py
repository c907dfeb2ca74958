"""Array/map blocks and skipping for the Avro engine (see :mod:`connector.formats.avro._plan`).

:func:`walk_collection` runs the block loop of arrays and maps for many cursors at once;
:func:`skip` walks writer data the reader does not keep, over the uncut writer graph, with
the nesting cap :data:`MAX_NESTING` (Python recursion is bounded by it, never by the data).
"""
from __future__ import annotations

import numpy as np

from connector.formats.avro._read import Ctx, read_bytes, read_varint
from connector.formats.avro._schema import Node

__all__ = ["MAX_NESTING", "min_size", "skip", "skip_width", "walk_collection"]

MAX_NESTING = 128  # nesting levels of records/unions/collections in one payload


def walk_collection(ctx: Ctx, pos, rid, step, width, varint, min_sz):
    """Array/map blocks for every cursor; ``step(cursors, item positions, item rows, item
    numbers) -> positions after the items`` is called once per wave (or once per block for
    fixed-width and varint items). Returns (positions after the collection, items per cursor)."""
    m = len(pos)
    p = pos.copy()
    count = np.zeros(m, np.int64)
    remaining = np.zeros(m, np.int64)
    live = np.arange(m, dtype=np.int64)  # cursors still in their collection: shrinks per wave
    cap = ctx.cap_items
    while len(live):
        need = live[remaining[live] == 0]
        if len(need):
            r = rid[need]
            cnt, q = read_varint(ctx, p[need], r)
            neg = np.flatnonzero(cnt < 0)
            if len(neg):  # negative count: |count| items preceded by their byte size
                _, q[neg] = read_varint(ctx, q[neg], r[neg])
                cnt[neg] = -cnt[neg]
            bad = cnt < 0  # -INT64_MIN
            if min_sz:
                bad |= cnt > (ctx.end[r] - q) // min_sz
            if bad.any():
                ctx.check(q, r, bad, "collection block count larger than the payload")
                cnt = np.where(bad, 0, cnt)
            np.add.at(ctx.items, r, cnt)
            over = ctx.items[r] > cap
            if over.any():
                ctx.check(q, r, over, f"record declares more than max_collection_items={cap} items")
                cnt = np.where(over, 0, cnt)
            p[need] = q
            remaining[need] = cnt
            live = live[remaining[live] > 0]
        if len(live):
            dead = ctx.dead[rid[live]]
            if dead.any():
                live = live[~dead]
        if not len(live):
            break
        act = live
        if width is not None or varint:
            k = remaining[act]
            total = int(k.sum())
            first = np.cumsum(k) - k
            cur = np.repeat(act, k)
            within = np.arange(total, dtype=np.int64) - np.repeat(first, k)
            if width is not None:
                ipos = p[cur] + within * width
            else:
                ipos = _varint_items(ctx, p[act], rid[act], k, first, within)
            q = step(cur, ipos, rid[cur], count[cur] + within)
            if width != 0:
                p[act] = q[first + k - 1]
            count[act] += k
            remaining[act] = 0
        else:
            p[act] = step(act, p[act], rid[act], count[act])
            count[act] += 1
            remaining[act] -= 1
    return p, count


def _varint_items(ctx: Ctx, p, r, k, first, within):
    """Start positions of ``k`` back-to-back varints from each ``p``: item j ends at the j-th
    byte < 0x80, searched only within the 10·k bytes the items can span (and the payload)."""
    span = np.maximum(np.minimum(ctx.end[r], p + 10 * k) - p, 0)
    offs = np.zeros(len(p) + 1, np.int64)
    np.cumsum(span, out=offs[1:])
    idx = np.repeat(p - offs[:-1], span) + np.arange(int(offs[-1]), dtype=np.int64)
    terms = np.flatnonzero(ctx.buf.take(idx, mode="clip") < 0x80)
    lo = np.searchsorted(terms, offs[:-1])
    found = np.searchsorted(terms, offs[1:]) - lo
    short = found < k
    if short.any():  # fewer varint ends than items: overlong varint or truncated block
        ctx.fail(r[short], "truncated payload or varint longer than 10 bytes in an array")
    if not len(terms):  # no varint ends at all: every row is short (failed above), none is read
        terms = np.zeros(1, np.int64)
    ends = terms.take(np.repeat(lo, k) + within, mode="clip") + np.repeat(p - offs[:-1], k)
    ipos = np.empty(len(ends), np.int64)
    ipos[1:] = ends[:-1] + 1
    ipos[first] = p
    if short.any():
        ipos[np.repeat(short, k)] = ctx.zero
    return ipos


def skip_width(w: Node):
    """Constant encoded size of a writer type, or None (cached on the node)."""
    if "width" in w.memo:
        return w.memo["width"]
    w.memo["width"] = None  # cycles are variable-sized
    k = w.kind
    wd = {"null": 0, "boolean": 1, "float": 4, "double": 8}.get(k)
    if k == "fixed":
        wd = w.size
    elif k == "record":
        ws = [skip_width(f.type) for f in w.fields]
        wd = None if None in ws else sum(ws)
    w.memo["width"] = wd
    return wd


def min_size(w: Node) -> int:
    """Smallest encoded size of a writer type (0 for null and records of nulls)."""
    if "min" in w.memo:
        return w.memo["min"]
    w.memo["min"] = 0
    v = skip_width(w)
    if v is None:
        v = sum(min_size(f.type) for f in w.fields) if w.kind == "record" else 1
    w.memo["min"] = v
    return v


def skip(ctx: Ctx, w: Node, pos, rid, depth):
    """Advance cursors over one writer value without building it (validated like a read)."""
    k = w.kind
    if not len(pos) or k == "null":
        return pos
    if depth > MAX_NESTING:
        ctx.fail(rid, f"nesting deeper than {MAX_NESTING} levels")
        return np.full(len(pos), ctx.zero, np.int64)
    wd = skip_width(w)
    if wd is not None:
        p = pos + wd
        ctx.bound(p, rid)
        return p
    if k in ("int", "long", "enum"):
        return read_varint(ctx, pos, rid)[1]
    if k in ("bytes", "string"):
        return read_bytes(ctx, pos, rid)[2]
    if k == "record":
        for f in w.fields:
            pos = skip(ctx, f.type, pos, rid, depth + 1)
        return pos
    if k == "union":
        idx, p = read_varint(ctx, pos, rid, is_int=True)
        bad = (idx < 0) | (idx >= len(w.branches))
        if bad.any():
            ctx.check(p, rid, bad, "union branch index out of range")
            idx = np.where(bad, -1, idx)
        for b in np.unique(idx).tolist():
            if b >= 0:
                sel = np.flatnonzero(idx == b)
                p[sel] = skip(ctx, w.branches[b], p[sel], rid[sel], depth + 1)
        return p
    item = w.items

    def step(cur, ipos, irid, nums):
        if k == "map":
            ipos = read_bytes(ctx, ipos, irid)[2]
        return skip(ctx, item, ipos, irid, depth + 1)

    iw = skip_width(item) if k == "array" else None
    iv = k == "array" and item.kind in ("int", "long", "enum")
    return walk_collection(ctx, pos, rid, step, iw, iv, min_size(item) if k == "array" else 1)[0]
