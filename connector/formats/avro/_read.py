"""Vectorized Avro primitive readers over many cursors at once (numpy, no per-record loop).

A *cursor* is a byte position in the group's concatenated payloads plus the row it belongs
to (``rid``). Every reader takes arrays of cursors and returns values and the advanced
positions. A cursor that reads something invalid (overlong varint, length past the end of its
payload, int out of 32-bit range…) marks its row failed with the first reason and is moved to
``ctx.zero`` — the start of a zero-filled pad past every payload — so later reads of that
cursor fail again (ignored: the first reason wins) and yield zeros (count 0, length 0, branch
0): O(schema) work, never O(garbage). Bounds are always checked against the row's own payload
end, so a sibling cursor of a failed row stays bounded too. Every gather uses
``mode="clip"``: no position can index outside the buffer.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = [
    "Ctx",
    "binary_array",
    "decimal_array",
    "from_numpy",
    "read_bytes",
    "read_fixed",
    "read_varint",
    "string_array",
]

PAD = 16
_K16 = np.arange(16, dtype=np.int64)


class Ctx:
    """Buffers and per-row state of one decode call."""

    def __init__(self, offs: np.ndarray, data: np.ndarray, cap_items: int):
        lo, hi = int(offs[0]), int(offs[-1])
        self.buf = np.concatenate([data[lo:hi], np.zeros(PAD, np.uint8)])
        self.zero = hi - lo
        self.start = offs[:-1].astype(np.int64) - lo
        self.end = offs[1:].astype(np.int64) - lo
        n = len(self.start)
        self.dead = np.zeros(n, bool)
        self.why = np.full(n, None, object)
        self.items = np.zeros(n, np.int64)
        self.cap_items = cap_items

    def fail(self, rid: np.ndarray, why: str) -> None:
        """Mark rows failed (first reason wins)."""
        rid = rid[~self.dead[rid]]
        if len(rid):
            self.dead[rid] = True
            self.why[rid] = why

    def check(self, newpos: np.ndarray, rid: np.ndarray, bad: np.ndarray, why: str) -> None:
        """Fail the cursors where ``bad`` and park them on the zero pad (in place)."""
        if bad.any():
            self.fail(rid[bad], why)
            newpos[bad] = self.zero

    def bound(self, newpos: np.ndarray, rid: np.ndarray) -> None:
        """A read may not end past its payload."""
        self.check(newpos, rid, newpos > self.end[rid], "truncated payload")


def read_varint(ctx: Ctx, pos: np.ndarray, rid: np.ndarray, is_int: bool = False):
    """Zigzag varints at ``pos`` → (int64 values, new positions). Validates length (≤ 10
    bytes), 64-bit overflow, 32-bit range for ``int`` and the payload end; a failed cursor
    reads 0."""
    buf = ctx.buf
    b0 = buf.take(pos, mode="clip")
    u = (b0 & 0x7F).astype(np.uint64)
    newpos = pos + 1
    idx = np.flatnonzero(b0 >= 0x80)  # cursors whose varint goes on: usually few, shrinking
    bad = None
    why = "truncated payload"
    for k in range(1, 10):
        if not len(idx):
            break
        bk = buf.take(pos[idx] + k, mode="clip")
        u[idx] |= (bk & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        newpos[idx] += 1
        if k == 9:
            over = idx[bk > 1]  # a 10th byte above 1 overflows 64 bits
            if len(over):
                bad = np.zeros(len(pos), bool)
                bad[over] = True
        idx = idx[bk >= 0x80]
    if len(idx):  # still going after 10 bytes
        bad = np.zeros(len(pos), bool) if bad is None else bad
        bad[idx] = True
    if bad is not None:
        why = "varint longer than 10 bytes or beyond 64 bits"
    if is_int:
        big = u >= np.uint64(1 << 32)
        if big.any():
            why = "int varint beyond 32 bits" if bad is None else why
            bad = big if bad is None else bad | big
    past = newpos > ctx.end[rid]
    bad = past if bad is None else bad | past
    if bad.any():
        ctx.fail(rid[bad], why if not past[bad].all() else "truncated payload")
        newpos[bad] = ctx.zero
        u[bad] = 0
    val = (u >> np.uint64(1)).view(np.int64) ^ -(u & np.uint64(1)).view(np.int64)
    return val, newpos


def read_fixed(ctx: Ctx, pos: np.ndarray, rid: np.ndarray, size: int):
    """``size`` raw bytes per cursor → ((m, size) uint8 matrix, new positions)."""
    newpos = pos + size
    ctx.bound(newpos, rid)
    mat = ctx.buf.take(pos[:, None] + np.arange(size, dtype=np.int64), mode="clip")
    return mat, newpos


def read_bytes(ctx: Ctx, pos: np.ndarray, rid: np.ndarray):
    """Length-prefixed bytes → (starts, lengths, new positions); bad lengths fail the row."""
    ln, p = read_varint(ctx, pos, rid)
    bad = (ln < 0) | (ln > ctx.end[rid] - p)
    if bad.any():
        ctx.fail(rid[bad], "negative length or length past the end of the payload")
        ln = np.where(bad, 0, ln)
        p = np.where(bad, ctx.zero, p)
    return p, ln, p + ln


def _gather(ctx: Ctx, starts: np.ndarray, lens: np.ndarray):
    offs = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    total = int(offs[-1])
    if total:
        idx = np.repeat(starts - offs[:-1], lens)  # int64: numpy's take converts int32 anyway
        idx += np.arange(total, dtype=np.int64)
        data = ctx.buf.take(idx, mode="clip")
    else:
        data = np.zeros(0, np.uint8)
    return offs, data


_BINARY = pa.binary()


def binary_array(ctx: Ctx, starts, lens, typ=_BINARY) -> pa.Array:
    offs, data = _gather(ctx, starts, lens)
    return pa.Array.from_buffers(typ, len(starts), [None, pa.py_buffer(offs.astype(np.int32)),
                                                    pa.py_buffer(data)])


def string_array(ctx: Ctx, starts, lens, rid) -> pa.Array:
    """UTF-8 strings; a row with invalid UTF-8 fails (its value becomes empty)."""
    arr = binary_array(ctx, starts, lens, pa.string())
    try:
        arr.validate(full=True)
        return arr
    except pa.ArrowInvalid:
        pass
    bad = np.zeros(len(starts), bool)
    for i, v in enumerate(arr.cast(pa.binary()).to_pylist()):  # only on the failing group
        try:
            v.decode("utf-8")
        except UnicodeDecodeError:
            bad[i] = True
    ctx.fail(rid[bad], "invalid UTF-8 in a string")
    return binary_array(ctx, starts, np.where(bad, 0, lens), pa.string())


def decimal_array(ctx: Ctx, starts, lens, rid, precision: int, scale: int) -> pa.Array:
    """Big-endian two's-complement unscaled values → decimal128(precision, scale); a value
    with more digits than ``precision`` fails its row (Spark: a row error, not a query error)."""
    m = len(starts)
    lens = lens.copy()
    starts = starts.copy()
    extra = {}
    for i in np.flatnonzero(lens > 16):  # rare: longer than 16 bytes (sign extension)
        b = ctx.buf[starts[i]:starts[i] + lens[i]].tobytes()
        extra[i] = int.from_bytes(b, "big", signed=True)
        lens[i] = 0
    L = lens
    st = starts
    idx = st[:, None] + (L[:, None] - 1 - _K16[None, :])
    raw = ctx.buf.take(idx, mode="clip")
    neg = (ctx.buf.take(st, mode="clip") >= 0x80) & (L > 0)
    fill = np.where(neg, 0xFF, 0).astype(np.uint8)[:, None]
    out = np.where(_K16[None, :] < L[:, None], raw, fill).astype(np.uint8)
    for i, v in extra.items():
        out[i] = np.frombuffer((v % (1 << 128)).to_bytes(16, "little"), np.uint8) \
            if -(1 << 127) <= v < (1 << 127) else 0
    lo = np.ascontiguousarray(out[:, :8]).view("<u8").ravel()
    hi = np.ascontiguousarray(out[:, 8:]).view("<u8").ravel()
    negv = hi >= np.uint64(1 << 63)
    nlo = ~lo + np.uint64(1)
    nhi = ~hi + (nlo == 0).astype(np.uint64)
    ahi = np.where(negv, nhi, hi)
    alo = np.where(negv, nlo, lo)
    limit = 10 ** precision
    lh, ll = np.uint64(limit >> 64), np.uint64(limit & ((1 << 64) - 1))
    ok = (ahi < lh) | ((ahi == lh) & (alo < ll))
    for i, v in extra.items():
        ok[i] = abs(v) < limit
    if not ok.all():
        ctx.fail(rid[~ok], f"decimal value exceeds precision {precision}")
        out[~ok] = 0
    return pa.Array.from_buffers(pa.decimal128(precision, scale), m,
                                 [None, pa.py_buffer(out.tobytes())])


def from_numpy(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A fixed-width numpy array as an Arrow array of ``typ`` (same width), zero-copy."""
    if pa.types.is_boolean(typ):
        return pa.array(values.astype(bool), pa.bool_())
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])
