"""Vectorized Avro encoder: Arrow columns → Avro binary, column by column, no per-record loop.

Every schema node encodes its whole column into *parts*: ``pa.BinaryArray`` columns and
constant ``bytes`` whose row-wise concatenation is the node's encoding (a null row of a part
adds nothing). A record's parts are its fields' parts, a string's are its length and its bytes,
a union's its branch index and its value's parts; the top level (with the framing header in
front, when the caller gives one) is joined once (``join_parts``), so no byte is copied once
per level of nesting. Items of arrays and maps are joined per item, then sliced per row:

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
record                  its fields' parts in order; a field cut at the recursion depth
                        writes its one value (``empty``)
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
    RowErrors,
    binary_from_buffers,
    dense,
    fixed_width_rows,
    int_values,
    join_parts,
    masked_part,
    valid_mask,
    varints,
    with_validity,
    zigzag,
)

__all__ = ["encode_vectorized"]

_U64 = np.uint64


_BITS = np.array([i.bit_length() for i in range(256)], np.int64)


def _bitlen128(ahi: np.ndarray, alo: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of unsigned 128-bit values given as two uint64 halves, per row: the
    first non-zero byte of the big-endian form and a byte table."""
    m = len(ahi)
    mag = np.empty((m, 2), ">u8")
    mag[:, 0], mag[:, 1] = ahi, alo
    b = mag.view(np.uint8).reshape(m, 16)
    nz = b != 0
    first = nz.argmax(1)
    top = b[np.arange(m), first]
    return np.where(nz.any(1), (15 - first) * 8 + _BITS[top], 0)


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
            return [fixed_width_rows(np.concatenate([pad, be], 1).ravel(), size, m)]
        sign = np.where(neg, 0xFF, 0x00).astype(np.uint8)
        fits = (be[:, :16 - size] == sign[:, None]).all(1) & ((be[:, 16 - size] >= 0x80) == neg)
        ctx.fail(live & ~fits, f"{path}: decimal does not fit fixed({size})")
        return [fixed_width_rows(np.ascontiguousarray(be[:, 16 - size:]).ravel(), size, m)]
    width = (_bitlen128(ahi, alo) + 8) // 8  # fastavro's size: (bit_length(|u|) + 8) // 8
    keep = np.arange(16)[None, :] >= (16 - width)[:, None]
    offs = np.zeros(m + 1, np.int64)
    np.cumsum(width, out=offs[1:])
    body = binary_from_buffers(offs, be[keep], m)
    return [varints(zigzag(width)), body]


def _enc(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> pa.Array:
    """The node's encoding as one array (its parts joined)."""
    return join_parts(_parts(n, arr, live, ctx, path), len(arr))


def _parts(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> list:
    k = n.kind
    m = len(arr)
    if k == "union":
        return _union(n, arr, live, ctx, path)
    if k == "null":
        return []
    if arr.null_count:
        valid = valid_mask(arr)
        ctx.fail(live & ~valid, f"{path}: null for a non-nullable Avro {k}")
        live = live & valid
    if k == "record":
        parts: list = []
        j = 0  # the Arrow struct has no child for a field cut at the recursion depth
        for f in n.fields:
            if f.type.kind == "cut":
                parts.append(f.type.empty)
                continue
            parts += _parts(f.type, arr.field(j), live, ctx, f"{path}.{f.name}")
            j += 1
        return parts
    if k == "boolean":
        vals = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return [fixed_width_rows(vals, 1, m)]
    if k in ("int", "long"):
        v = int_values(arr)
        if n.logical and n.logical.endswith("timestamp-millis"):
            v = np.floor_divide(v, 1000)
        return [varints(zigzag(v))]
    if k == "float":
        return [fixed_width_rows(arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f4"), 4, m)]
    if k == "double":
        return [fixed_width_rows(arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f8"), 8, m)]
    if n.logical == "decimal" and pa.types.is_decimal(arr.type):
        return _decimal(n, arr, live, ctx, path)
    if k == "enum":
        idx = pc.index_in(arr, value_set=pa.array(n.symbols, pa.string()))
        unknown = live & ~valid_mask(idx)
        ctx.fail(unknown, lambda v: f"{path}: {str(v)[:40]!r} is not a symbol of enum {n.name}", arr)
        return [varints(zigzag(int_values(idx)))]
    if k in ("string", "bytes", "fixed"):
        b = arr if pa.types.is_binary(arr.type) else arr.cast(pa.binary())
        lens = pc.binary_length(b).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if k == "fixed":
            ctx.fail(live & (lens != n.size), f"{path}: fixed({n.size}) needs {n.size} bytes")
            return [b]
        if n.logical == "uuid":
            ok = pc.match_substring_regex(arr.cast(pa.string()), r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-"
                                          r"[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
            ctx.fail(live & ~ok.fill_null(True).to_numpy(zero_copy_only=False),
                     lambda v: f"{path}: {str(v)[:40]!r} is not a UUID", arr)
        return [varints(zigzag(lens)), b]
    if k in ("array", "map"):
        return _collection(n, arr, live, ctx, path)
    raise ValueError(f"{path}: no encoding for Avro {k}")


def _collection(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> list:
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
        enc = join_parts([varints(zigzag(klen)), kb] + _parts(n.items, arr.items.slice(base, stop - base),
                                                              inner_live, sub, f"{path}[value]"), stop - base)
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
    return [varints(zigzag(lens), lens > 0), body, b"\x00"]


def _union(n: Node, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> list:
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
        value: list = [pc.coalesce(*encs) if len(encs) > 1 else encs[0]]
    else:
        present = valid
        if not nn:
            bidx = np.zeros(m, np.int64)
            value = []
        elif uk == "long":
            v = int_values(arr)
            is_int = (v >= -(1 << 31)) & (v < (1 << 31))
            ii = next(i for i, b in enumerate(br) if b.kind == "int")
            li = next(i for i, b in enumerate(br) if b.kind == "long")
            bidx = np.where(is_int, ii, li)
            value = [varints(zigzag(v))]
        elif uk == "double":
            bidx = np.full(m, next(i for i, b in enumerate(br) if b.kind == "double"), np.int64)
            value = _parts(Node("double"), arr, live & valid, ctx, path)
        else:
            bidx = np.full(m, br.index(nn[0]), np.int64)
            value = _parts(nn[0], arr, live & valid, ctx, path)
        value = [masked_part(p, valid, m) for p in value]  # a null writes its branch index only
    if null_i is None:
        ctx.fail(live & ~present, f"{path}: null for a union without a null branch")
        null_i = 0
    bidx = np.where(present, bidx, null_i)
    if m and (bidx == bidx[0]).all():
        return [varints(zigzag(bidx[:1])).to_pylist()[0]] + value
    return [varints(zigzag(bidx))] + value


def encode_vectorized(node: Node, values: pa.Array, prefix: bytes = b""):
    """(payloads, errors object array, failed-row mask or None) for ``values`` of
    ``arrow_type_of(node)``, each payload after ``prefix`` (a framing header); null rows →
    null payloads."""
    n = len(values)
    errors = np.full(n, None, object)
    ctx = RowErrors(errors)
    valid = valid_mask(values)
    # null rows (tombstones) are not live: encoded as junk, never checked, then marked null
    enc = join_parts([prefix] + _parts(node, values, valid, ctx, "value"), n)
    bad = ctx.bad_rows()
    return with_validity(enc, valid if bad is None else valid & ~bad), errors, bad


