"""Vectorized Avro encoder: Arrow columns → Avro binary, column by column, no per-record loop.

Every schema node encodes its whole column into a ``pa.BinaryArray`` (one encoded value per
position, never null: empty where nothing is written):

======================  =============================================================
Avro                    how
======================  =============================================================
int, long (+ date,      zigzag in numpy, varint bytes laid out as an (n, width) matrix and
time, timestamps)       compacted with one boolean mask; millis = floor(µs / 1000)
float, double, boolean  the value buffer itself, 4 / 8 / 1 bytes per row
string, bytes           ``varint(len)`` joined with the values (Arrow C++ join)
fixed                   the values (length checked)
decimal                 the 16-byte unscaled integers, big-endian, cut to fastavro's width
                        with one mask; precision checked in 128-bit arithmetic
enum                    ``index_in`` on the symbols, then a varint
record                  the fields' arrays joined row-wise (``binary_join_element_wise``);
                        a field cut at the recursion depth writes its one value (``empty``)
array, map              item encodings are contiguous, so a row's items are one slice:
                        offsets are re-indexed (zero copy), then ``count, items, 0`` joined
union                   ``varint(branch)`` joined with the chosen branch's encoding
                        (multi-type unions: each member encoded, then ``coalesce``)
======================  =============================================================

Bytes are identical to the per-record reference (``_avro_ref``), which the tests check on
random data. Errors (a null in a non-nullable field, an int out of range, an unknown enum
symbol, a decimal past its precision, a fixed of the wrong size, several union members set,
a string that is not a UUID) are recorded per top-level row; only *live* positions (whose
parent is present) are checked, so the junk Arrow keeps under null parents never fails a row.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.avro._schema import Node, union_kind
from connector.formats.core import (
    EMPTY_BYTES,
    ZERO_BYTE,
    RowErrors,
    binary_from_buffers,
    dense,
    fixed_width_rows,
    int_values,
    join_rows,
    valid_mask,
    varints,
    with_validity,
    zigzag,
)

__all__ = ["encode_vectorized"]

_U64 = np.uint64


def _bitlen(x: np.ndarray) -> np.ndarray:
    r = np.zeros(len(x), np.int64)
    x = x.copy()
    for s in (32, 16, 8, 4, 2, 1):
        m = x >= _U64(1 << s)
        x = np.where(m, x >> _U64(s), x)
        r += m * s
    return r + (x > 0)


def _decimal(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> pa.Array:
    m = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * 16:(arr.offset + m) * 16].reshape(m, 16)
    lo = raw[:, :8].copy().view(_U64).ravel()
    hi = raw[:, 8:].copy().view(np.int64).ravel()
    neg = hi < 0
    # |u| in two 64-bit halves: two's complement negation where negative
    alo = np.where(neg, ~lo + _U64(1), lo)
    ahi = np.where(neg, ~hi.view(_U64) + (alo == 0).astype(_U64), hi.view(_U64))
    scale = arr.type.scale
    if n.precision:
        lim = 10 ** int(n.precision) * 10 ** max(0, int(n.scale or 0) - scale)
        lh, ll = _U64(lim >> 64) if lim < (1 << 128) else None, _U64(lim & ((1 << 64) - 1))
        if lh is not None:
            over = (ahi > lh) | ((ahi == lh) & (alo >= ll))
            ctx.fail(live & over, lambda v: f"{path}: decimal {v} overflows precision {n.precision} "
                                            f"(scale {n.scale or 0})", arr)
    if scale != (n.scale or 0):
        raise ValueError(f"{path}: decimal scale {scale} differs from the schema's {n.scale}")
    be = raw[:, ::-1]
    if n.kind == "fixed":
        size = int(n.size)
        if size >= 16:
            pad = np.where(neg, 0xFF, 0x00).astype(np.uint8)[:, None].repeat(size - 16, 1)
            return fixed_width_rows(np.concatenate([pad, be], 1).ravel(), size, m)
        sign = np.where(neg, 0xFF, 0x00).astype(np.uint8)
        fits = (be[:, :16 - size] == sign[:, None]).all(1) & ((be[:, 16 - size] >= 0x80) == neg)
        ctx.fail(live & ~fits, f"{path}: decimal does not fit fixed({size})")
        return fixed_width_rows(np.ascontiguousarray(be[:, 16 - size:]).ravel(), size, m)
    width = (np.where(ahi > 0, 64 + _bitlen(ahi), _bitlen(alo)) + 8) // 8
    keep = np.arange(16)[None, :] >= (16 - width)[:, None]
    offs = np.zeros(m + 1, np.int64)
    np.cumsum(width, out=offs[1:])
    body = binary_from_buffers(offs, be[keep], m)
    return join_rows(varints(zigzag(width)), body)


def _enc(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> pa.Array:
    k = n.kind
    m = len(arr)
    if k == "union":
        return _union(n, arr, live, ctx, path)
    if k == "null":
        return pa.repeat(EMPTY_BYTES, m) if m else pa.array([], pa.binary())
    if arr.null_count:
        valid = valid_mask(arr)
        ctx.fail(live & ~valid, f"{path}: null for a non-nullable Avro {k}")
        live = live & valid
    if k == "record":
        parts: list = []
        j = 0  # the Arrow struct has no child for a field cut at the recursion depth
        for f in n.fields:
            if f.type.kind == "cut":
                parts.append(pa.scalar(f.type.empty, pa.binary()))
                continue
            parts.append(_enc(f.type, arr.field(j), live, ctx, f"{path}.{f.name}"))
            j += 1
        if not any(isinstance(p, pa.Array) for p in parts):  # nothing but constants
            const = b"".join(p.as_py() for p in parts)
            return pa.repeat(pa.scalar(const, pa.binary()), m) if m else pa.array([], pa.binary())
        return join_rows(*parts)
    if k == "boolean":
        vals = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return fixed_width_rows(vals, 1, m)
    if k in ("int", "long"):
        v = int_values(arr)
        if n.logical and n.logical.endswith("timestamp-millis"):
            v = np.floor_divide(v, 1000)
        return varints(zigzag(v))
    if k == "float":
        return fixed_width_rows(arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f4"), 4, m)
    if k == "double":
        return fixed_width_rows(arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f8"), 8, m)
    if n.logical == "decimal" and pa.types.is_decimal(arr.type):
        return _decimal(n, arr, live, ctx, path)
    if k == "enum":
        idx = pc.index_in(arr, value_set=pa.array(n.symbols, pa.string()))
        unknown = live & ~valid_mask(idx)
        ctx.fail(unknown, lambda v: f"{path}: {str(v)[:40]!r} is not a symbol of enum {n.name}", arr)
        return varints(zigzag(int_values(idx)))
    if k in ("string", "bytes", "fixed"):
        b = arr if pa.types.is_binary(arr.type) else arr.cast(pa.binary())
        lens = pc.binary_length(b).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if k == "fixed":
            ctx.fail(live & (lens != n.size), f"{path}: fixed({n.size}) needs {n.size} bytes")
            return b.fill_null(b"") if b.null_count else b
        if n.logical == "uuid":
            ok = pc.match_substring_regex(arr.cast(pa.string()), r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-"
                                          r"[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
            ctx.fail(live & ~ok.fill_null(True).to_numpy(zero_copy_only=False),
                     lambda v: f"{path}: {str(v)[:40]!r} is not a UUID", arr)
        return join_rows(varints(zigzag(lens)), b)
    if k in ("array", "map"):
        return _collection(n, arr, live, ctx, path)
    raise ValueError(f"{path}: no encoding for Avro {k}")


def _collection(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> pa.Array:
    m = len(arr)
    offs = arr.offsets.to_numpy().astype(np.int64)
    lens = np.diff(offs)
    base, stop = int(offs[0]), int(offs[-1])
    # ``live`` already excludes null rows, so items a null row may own are never checked
    inner_live = np.repeat(live, lens)
    sub = ctx.items(offs - base)
    if n.kind == "map":
        kb = arr.keys.slice(base, stop - base).cast(pa.binary())
        klen = pc.binary_length(kb).to_numpy(zero_copy_only=False).astype(np.int64)
        enc = join_rows(varints(zigzag(klen)), kb, _enc(n.items, arr.items.slice(base, stop - base),
                                                 inner_live, sub, f"{path}[value]"))
    else:
        enc = _enc(n.items, arr.values.slice(base, stop - base), inner_live, sub, f"{path}[]")
    if enc.null_count:
        enc = dense(enc)
    # item encodings are back to back: a row's items are one slice of the data buffer, so
    # the rows' bodies share it (zero copy) with re-indexed offsets
    eoffs = np.frombuffer(enc.buffers()[1], np.int32, len(enc) + 1, enc.offset * 4)
    body_offs = eoffs[offs - base]
    data = enc.buffers()[2] or pa.py_buffer(b"")
    body = pa.BinaryArray.from_buffers(pa.binary(), m, [None, pa.py_buffer(body_offs.astype(np.int32)), data])
    return join_rows(varints(zigzag(lens), lens > 0), body, ZERO_BYTE)


def _union(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> pa.Array:
    br = n.branches
    nn = n.nonnull
    null_i = next((i for i, b in enumerate(br) if b.kind == "null"), None)
    uk = union_kind(n)
    m = len(arr)
    valid = valid_mask(arr)
    if uk == "struct":
        members = [arr.field(i) for i in range(len(nn))]
        mvalid = [valid & valid_mask(x) for x in members]
        count = np.sum(mvalid, axis=0) if mvalid else np.zeros(m, np.int64)
        ctx.fail(live & (count > 1), f"{path}: union value sets several members; set exactly one")
        chosen = np.argmax(np.stack(mvalid), axis=0) if mvalid else np.zeros(m, np.int64)
        present = count > 0
        bidx = np.array([br.index(b) for b in nn], np.int64)[chosen]
        encs = [with_validity(_enc(b, x, live & mv & (chosen == i), ctx, path), mv & (chosen == i))
                for i, (b, x, mv) in enumerate(zip(nn, members, mvalid))]
        value = pc.coalesce(*encs) if len(encs) > 1 else encs[0]
    else:
        present = valid
        if not nn:
            bidx = np.zeros(m, np.int64)
            value = None
        elif uk == "long":
            v = int_values(arr)
            is_int = (v >= -(1 << 31)) & (v < (1 << 31))
            ii = next(i for i, b in enumerate(br) if b.kind == "int")
            li = next(i for i, b in enumerate(br) if b.kind == "long")
            bidx = np.where(is_int, ii, li)
            value = varints(zigzag(v))
        elif uk == "double":
            bidx = np.full(m, next(i for i, b in enumerate(br) if b.kind == "double"), np.int64)
            value = _enc(Node("double"), arr, live & valid, ctx, path)
        else:
            bidx = np.full(m, br.index(nn[0]), np.int64)
            value = _enc(nn[0], arr, live & valid, ctx, path)
        if value is not None:
            value = with_validity(value, valid)
    if null_i is None:
        ctx.fail(live & ~present, f"{path}: null for a union without a null branch")
        null_i = 0
    bidx = np.where(present, bidx, null_i)
    if value is None:
        return varints(zigzag(bidx))
    if (bidx == bidx[0]).all() if m else True:
        head = pa.scalar(varints(zigzag(bidx[:1])).to_pylist()[0] if m else b"", pa.binary())
    else:
        head = varints(zigzag(bidx))
    return join_rows(head, value)


def encode_vectorized(node: Node, values: pa.Array):
    """(payloads, errors object array, failed-row mask or None) for ``values`` of
    ``arrow_type_of(node)``; null rows → null payloads."""
    n = len(values)
    errors = np.full(n, None, object)
    ctx = RowErrors(errors)
    valid = valid_mask(values)
    # null rows (tombstones) are not live: encoded as junk, never checked, then marked null
    if node.kind == "union":
        enc = _union(node, values, valid, ctx, "value")
    else:
        enc = _enc(node, values, valid, ctx, "value")
    bad = ctx.bad_rows()
    return with_validity(enc, valid if bad is None else valid & ~bad), errors, bad


