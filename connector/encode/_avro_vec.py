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
record                  the fields' arrays joined row-wise (``binary_join_element_wise``)
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

from connector.decode import Node, union_kind

__all__ = ["encode_vectorized"]

_EMPTY = pa.scalar(b"", pa.binary())
_ZERO = pa.scalar(b"\x00", pa.binary())
_U64 = np.uint64
_NONE = np.array(None, object)  # compares like None; numpy's stubs refuse a bare None operand


class _Ctx:
    """Maps positions of a (nested) column to top-level rows and records row errors."""

    def __init__(self, errors: np.ndarray, parent: "_Ctx | None" = None, offsets=None):
        self.errors, self.parent, self.offsets = errors, parent, offsets
        self.root: _Ctx = self if parent is None else parent.root
        self.failed = False  # on the root: whether any row failed (skips scans when none did)

    def items(self, offsets: np.ndarray) -> "_Ctx":
        return _Ctx(self.errors, self, offsets)

    def bad_rows(self) -> np.ndarray | None:
        """Mask of failed top-level rows, or None when none failed."""
        return np.not_equal(self.errors, _NONE).astype(bool) if self.root.failed else None

    def top(self, pos: np.ndarray) -> np.ndarray:
        if self.parent is None:
            return pos
        rows = np.searchsorted(self.offsets, pos, side="right") - 1
        return self.parent.top(rows)

    def fail(self, bad: np.ndarray, message, values=None) -> None:
        """Record ``message`` (text, or a callable of the position's value) at ``bad`` positions."""
        if not bad.any():
            return
        pos = np.flatnonzero(bad)
        self.root.failed = True
        rows = self.top(pos)
        for p, r in zip(pos.tolist(), rows.tolist()):
            if self.errors[r] is None:
                self.errors[r] = message if isinstance(message, str) else message(values[p].as_py())


def _bin(offsets: np.ndarray, data: np.ndarray, n: int) -> pa.BinaryArray:
    if n and int(offsets[-1]) >= 1 << 31:  # int32 offsets would wrap: never a silently wrong value
        from connector.encode._options import EncodeError
        raise EncodeError("one encoded column of this batch exceeds 2 GiB; write smaller Arrow batches "
                          "(spark.sql.execution.arrow.maxRecordsPerBatch)")
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)),
                                                        pa.py_buffer(np.ascontiguousarray(data))])


def _zz(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64, copy=False)
    return ((v << 1) ^ (v >> 63)).view(_U64)


def _varint_len(z: np.ndarray) -> np.ndarray:
    nb = np.ones(len(z), np.int64)
    for k in range(1, 10):
        more = z >= _U64(1 << (7 * k))
        if not more.any():
            break
        nb += more
    return nb


def varints(z: np.ndarray, present: np.ndarray | None = None, prefix: bytes = b"") -> pa.BinaryArray:
    """``prefix`` + LEB128 bytes of unsigned ``z`` per row (empty where ``present`` is False)."""
    n = len(z)
    nb = _varint_len(z)
    width = int(nb.max()) if n else 0
    plen = len(prefix)
    if plen == 0 and width <= 1:
        offsets = np.zeros(n + 1, np.int64)
        if present is None:
            offsets[1:] = np.arange(1, n + 1)
            return _bin(offsets, z.astype(np.uint8), n)
        np.cumsum(present, out=offsets[1:])
        return _bin(offsets, z.astype(np.uint8)[present], n)
    mat = np.empty((n, plen + width), np.uint8)
    if plen:
        mat[:, :plen] = np.frombuffer(prefix, np.uint8)
    for k in range(width):
        byte = ((z >> _U64(7 * k)) & _U64(0x7F)).astype(np.uint8)
        byte[nb > k + 1] |= 0x80
        mat[:, plen + k] = byte
    return _rows(mat, nb + plen, present)


def _rows(mat: np.ndarray, lens: np.ndarray, present: np.ndarray | None) -> pa.BinaryArray:
    """Row ``i`` = the first ``lens[i]`` bytes of ``mat[i]`` (none where not ``present``)."""
    n, width = mat.shape
    if present is not None:
        lens = np.where(present, lens, 0)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    if n and int(lens.min()) == width:  # every row full width (e.g. timestamps): no compaction
        return _bin(offsets, mat.reshape(-1), n)
    if n and present is not None and bool((lens[present] == width).all()):
        return _bin(offsets, mat[present].reshape(-1), n)
    keep = np.arange(width)[None, :] < lens[:, None]
    return _bin(offsets, mat[keep], n)


def _fixed_width(data: np.ndarray, width: int, n: int) -> pa.BinaryArray:
    return _bin(np.arange(n + 1, dtype=np.int64) * width, data.view(np.uint8), n)


def _join(*args) -> pa.Array:
    parts = [p for p in args if not (isinstance(p, pa.Scalar) and p.as_py() == b"")]
    if len(parts) == 1 and isinstance(parts[0], pa.Array) and parts[0].null_count == 0:
        return parts[0]
    return pc.binary_join_element_wise(*parts, _EMPTY, null_handling="replace", null_replacement="")


def _valid(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _ints(arr: pa.Array) -> np.ndarray:
    if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type) or pa.types.is_time(arr.type):
        arr = arr.cast(pa.int64() if not pa.types.is_date32(arr.type) else pa.int32())
    if arr.null_count:
        arr = arr.fill_null(0)
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _with_validity(b: pa.Array, valid: np.ndarray) -> pa.Array:
    """``b`` with rows where ``valid`` is False marked null."""
    if valid.all():
        return b
    if b.offset or b.null_count:
        b = _dense(b)
    bufs = b.buffers()
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(b.type, len(b), [bitmap, bufs[1], bufs[2]])


def _bitlen(x: np.ndarray) -> np.ndarray:
    r = np.zeros(len(x), np.int64)
    x = x.copy()
    for s in (32, 16, 8, 4, 2, 1):
        m = x >= _U64(1 << s)
        x = np.where(m, x >> _U64(s), x)
        r += m * s
    return r + (x > 0)


def _decimal(n: Node, arr: pa.Array, live: np.ndarray, ctx: _Ctx, path: str) -> pa.Array:
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
            return _fixed_width(np.concatenate([pad, be], 1).ravel(), size, m)
        sign = np.where(neg, 0xFF, 0x00).astype(np.uint8)
        fits = (be[:, :16 - size] == sign[:, None]).all(1) & ((be[:, 16 - size] >= 0x80) == neg)
        ctx.fail(live & ~fits, f"{path}: decimal does not fit fixed({size})")
        return _fixed_width(np.ascontiguousarray(be[:, 16 - size:]).ravel(), size, m)
    width = (np.where(ahi > 0, 64 + _bitlen(ahi), _bitlen(alo)) + 8) // 8
    keep = np.arange(16)[None, :] >= (16 - width)[:, None]
    offs = np.zeros(m + 1, np.int64)
    np.cumsum(width, out=offs[1:])
    body = _bin(offs, be[keep], m)
    return _join(varints(_zz(width)), body)


def _enc(n: Node, arr: pa.Array, live: np.ndarray, ctx: _Ctx, path: str) -> pa.Array:
    k = n.kind
    m = len(arr)
    if k == "union":
        return _union(n, arr, live, ctx, path)
    if k == "null":
        return pa.repeat(_EMPTY, m) if m else pa.array([], pa.binary())
    if arr.null_count:
        valid = _valid(arr)
        ctx.fail(live & ~valid, f"{path}: null for a non-nullable Avro {k}")
        live = live & valid
    if k == "record":
        if not n.fields:
            return pa.repeat(_EMPTY, m) if m else pa.array([], pa.binary())
        parts = [_enc(f.type, arr.field(i), live, ctx, f"{path}.{f.name}")
                 for i, f in enumerate(n.fields)]
        return _join(*parts)
    if k == "boolean":
        vals = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return _fixed_width(vals, 1, m)
    if k in ("int", "long"):
        v = _ints(arr)
        if n.logical and n.logical.endswith("timestamp-millis"):
            v = np.floor_divide(v, 1000)
        return varints(_zz(v))
    if k == "float":
        return _fixed_width(arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f4"), 4, m)
    if k == "double":
        return _fixed_width(arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f8"), 8, m)
    if n.logical == "decimal" and pa.types.is_decimal(arr.type):
        return _decimal(n, arr, live, ctx, path)
    if k == "enum":
        idx = pc.index_in(arr, value_set=pa.array(n.symbols, pa.string()))
        unknown = live & ~_valid(idx)
        ctx.fail(unknown, lambda v: f"{path}: {str(v)[:40]!r} is not a symbol of enum {n.name}", arr)
        return varints(_zz(_ints(idx)))
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
        return _join(varints(_zz(lens)), b)
    if k in ("array", "map"):
        return _collection(n, arr, live, ctx, path)
    raise ValueError(f"{path}: no encoding for Avro {k}")


def _collection(n: Node, arr: pa.Array, live: np.ndarray, ctx: _Ctx, path: str) -> pa.Array:
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
        enc = _join(varints(_zz(klen)), kb, _enc(n.items, arr.items.slice(base, stop - base),
                                                 inner_live, sub, f"{path}[value]"))
    else:
        enc = _enc(n.items, arr.values.slice(base, stop - base), inner_live, sub, f"{path}[]")
    if enc.null_count:
        enc = _dense(enc)
    # item encodings are back to back: a row's items are one slice of the data buffer, so
    # the rows' bodies share it (zero copy) with re-indexed offsets
    eoffs = np.frombuffer(enc.buffers()[1], np.int32, len(enc) + 1, enc.offset * 4)
    body_offs = eoffs[offs - base]
    data = enc.buffers()[2] or pa.py_buffer(b"")
    body = pa.BinaryArray.from_buffers(pa.binary(), m, [None, pa.py_buffer(body_offs.astype(np.int32)), data])
    return _join(varints(_zz(lens), lens > 0), body, _ZERO)


def _union(n: Node, arr: pa.Array, live: np.ndarray, ctx: _Ctx, path: str) -> pa.Array:
    br = n.branches
    nn = n.nonnull
    null_i = next((i for i, b in enumerate(br) if b.kind == "null"), None)
    uk = union_kind(n)
    m = len(arr)
    valid = _valid(arr)
    if uk == "struct":
        members = [arr.field(i) for i in range(len(nn))]
        mvalid = [valid & _valid(x) for x in members]
        count = np.sum(mvalid, axis=0) if mvalid else np.zeros(m, np.int64)
        ctx.fail(live & (count > 1), f"{path}: union value sets several members; set exactly one")
        chosen = np.argmax(np.stack(mvalid), axis=0) if mvalid else np.zeros(m, np.int64)
        present = count > 0
        bidx = np.array([br.index(b) for b in nn], np.int64)[chosen]
        encs = [_with_validity(_enc(b, x, live & mv & (chosen == i), ctx, path), mv & (chosen == i))
                for i, (b, x, mv) in enumerate(zip(nn, members, mvalid))]
        value = pc.coalesce(*encs) if len(encs) > 1 else encs[0]
    else:
        present = valid
        if not nn:
            bidx = np.zeros(m, np.int64)
            value = None
        elif uk == "long":
            v = _ints(arr)
            is_int = (v >= -(1 << 31)) & (v < (1 << 31))
            ii = next(i for i, b in enumerate(br) if b.kind == "int")
            li = next(i for i, b in enumerate(br) if b.kind == "long")
            bidx = np.where(is_int, ii, li)
            value = varints(_zz(v))
        elif uk == "double":
            bidx = np.full(m, next(i for i, b in enumerate(br) if b.kind == "double"), np.int64)
            value = _enc(Node("double"), arr, live & valid, ctx, path)
        else:
            bidx = np.full(m, br.index(nn[0]), np.int64)
            value = _enc(nn[0], arr, live & valid, ctx, path)
        if value is not None:
            value = _with_validity(value, valid)
    if null_i is None:
        ctx.fail(live & ~present, f"{path}: null for a union without a null branch")
        null_i = 0
    bidx = np.where(present, bidx, null_i)
    if value is None:
        return varints(_zz(bidx))
    if (bidx == bidx[0]).all() if m else True:
        head = pa.scalar(varints(_zz(bidx[:1])).to_pylist()[0] if m else b"", pa.binary())
    else:
        head = varints(_zz(bidx))
    return _join(head, value)


def encode_vectorized(node: Node, values: pa.Array):
    """(payloads, errors object array, failed-row mask or None) for ``values`` of
    ``arrow_type_of(node)``; null rows → null payloads."""
    n = len(values)
    errors = np.full(n, None, object)
    ctx = _Ctx(errors)
    valid = _valid(values)
    # null rows (tombstones) are not live: encoded as junk, never checked, then marked null
    if node.kind == "union":
        enc = _union(node, values, valid, ctx, "value")
    else:
        enc = _enc(node, values, valid, ctx, "value")
    bad = ctx.bad_rows()
    return _with_validity(enc, valid if bad is None else valid & ~bad), errors, bad


def _dense(b: pa.Array) -> pa.Array:
    """Copy to offset 0 with empty (not null) values."""
    return pc.binary_join_element_wise(b, _EMPTY, null_handling="replace", null_replacement="")
