"""The numba kernel of :mod:`connector.formats.protobuf._encode_program`: Arrow buffers →
framed Protobuf wire bytes in one pass (imported lazily: numba is slow to import). Compiled
once, cached on disk; the schema is data (the program's tables).

The program is a tree of nodes, one per field as the Arrow type holds it (``P``, static), each
bound per batch to its column's buffers (``D``: addresses and offsets, read in place). The
output is written backwards, as upb does: rows last to first, each row's fields and items last
to first, so a nested message's length is known when its body is done and is written right
before it — one write per byte, no copy per level of nesting, no sizing pass. A row is walked
with an explicit stack bounded by the program's depth (no recursion); a row with a bad value is
rolled back and reported.

:func:`encode` takes named structures (``_encode_program.Tables``, the binding ``D``, ``Batch``,
``Out``: its output and scratch, allocated by the caller, so the kernel allocates nothing and
runs without reference counting); a scalar field is :func:`_leaf`, a packed one :func:`_packed`
(handlers pasted into the kernel at import: ``core._inline``).
"""
import numpy as np

from connector.formats.core import njit
from connector.formats.core.kernels import inline, kernel, load_i32, load_i64, load_u8, load_u32, memcpy, store_u8

from connector.formats.protobuf._layout import ENUM_BAD, Bind, Chk, Col, EncErr, Kind, Pres, Src

# the small helpers, called in expressions with the node tables: inlined at numba's IR level (as
# before the handlers were split out; measured 3-8% faster here than leaving them to LLVM)
_ir = njit(nogil=True, _nrt=False, inline="always")


@_ir
def _valid(D, c, j):
    a = D[c, Bind.VALID]
    if a == 0:
        return True
    b = D[c, Bind.VOFF] + j
    return (load_u8(a + (b >> 3)) >> (b & 7)) & 1 == 1


@_ir
def _span(D, c, j):
    """(start, stop) of list (or string) ``j`` of column ``c``."""
    a, k = D[c, Bind.OFFS], D[c, Bind.DOFF] + j
    return np.int64(load_i32(a + 4 * k)), np.int64(load_i32(a + 4 * k + 4))


@_ir
def _value(P, D, c, j):
    """(value as int64 bits, second word): Src.DEC → (low, high), Src.STR → (start, length)."""
    src = P[c, Col.SRC]
    d, k = D[c, Bind.DATA], D[c, Bind.DOFF] + j
    if src == Src.I64 or src == Src.F64 or src == Src.ENUM:
        return load_i64(d + 8 * k), np.int64(0)
    if src == Src.I32:
        return np.int64(load_i32(d + 4 * k)), np.int64(0)
    if src == Src.F32:
        return np.int64(load_u32(d + 4 * k)), np.int64(0)
    if src == Src.BOOL:
        return np.int64((load_u8(d + (k >> 3)) >> (k & 7)) & 1), np.int64(0)
    if src == Src.DEC:
        return load_i64(d + 16 * k), load_i64(d + 16 * k + 8)
    s, e = _span(D, c, j)
    return s, e - s


@_ir
def _varlen(u):
    u = np.uint64(u)
    n = 1
    while u >= np.uint64(0x80):
        u >>= np.uint64(7)
        n += 1
    return n


@_ir
def _put(oa, pos, u):
    """The varint ``u`` ending at byte ``pos`` of the output at address ``oa``; returns its start."""
    u = np.uint64(u)
    pos -= _varlen(u)
    k = oa + pos
    while u >= np.uint64(0x80):
        store_u8(k, (u & np.uint64(0x7F)) | np.uint64(0x80))
        u >>= np.uint64(7)
        k += 1
    store_u8(k, u)
    return pos


@_ir
def _zz(v):
    return (np.uint64(v) << np.uint64(1)) ^ np.uint64(v >> 63)


@_ir
def _time(kind, us):
    """(seconds, nanos) of a Timestamp (floor) or Duration (toward zero) in microseconds."""
    secs = us // 1_000_000
    rem = us - secs * 1_000_000
    if kind == Kind.DUR and us < 0 and rem != 0:
        secs += 1
        rem -= 1_000_000
    return secs, rem * 1000


@inline
def _put_bare(oa, pos, kind, v, h, D, c):
    """A value without its tag ending at ``pos``; returns its start."""
    if kind == Kind.VARINT:
        return _put(oa, pos, v)
    if kind == Kind.ZIGZAG:
        return _put(oa, pos, _zz(v))
    if kind == Kind.FIX32 or kind == Kind.FIX64:
        w = 4 if kind == Kind.FIX32 else 8
        pos -= w
        for b in range(w):
            store_u8(oa + pos + b, (v >> (8 * b)) & 0xFF)
        return pos
    if kind == Kind.BYTES:
        pos -= h
        if h >= 16:
            memcpy(oa + pos, D[c, Bind.BYTESADDR] + v, h)
        else:
            src = D[c, Bind.BYTESADDR] + v
            for k in range(h):
                store_u8(oa + pos + k, load_u8(src + k))
        return _put(oa, pos, h)
    secs, nanos = _time(kind, v)
    end = pos
    if nanos != 0:
        pos = _put(oa, pos, nanos) - 1
        store_u8(oa + pos, 0x10)
    if secs != 0:
        pos = _put(oa, pos, secs) - 1
        store_u8(oa + pos, 0x08)
    return _put(oa, pos, end - pos)


@_ir
def _check(P, c, v, h):
    chk = P[c, Col.CHK]
    if chk == Chk.U32 and (v < 0 or v >= (1 << 32)):
        return EncErr.U32
    if chk == Chk.U64 and h != 0:
        return EncErr.U64
    if chk == Chk.ENUM and v == ENUM_BAD:
        return EncErr.ENUM
    return 0


@inline
def _packed(P, D, oa, pos, c, j):
    """A packed repeated field: its items (last to first), their length and the tag. (start,
    error, bytes needed when out of room, the failing node and item)"""
    lo, hi = _span(D, c, j)
    if hi == lo:
        return pos, 0, 0, c, j
    it = P[c, Col.C0]
    ik = P[it, Col.KIND]
    if pos < 10 * (hi - lo) + 20:
        return pos, EncErr.ROOM, 10 * (hi - lo) + 20, c, j
    end = pos
    e = 0
    k = hi - 1
    while k >= lo and e == 0:
        if not _valid(D, it, k):
            e = EncErr.NULL
        else:
            v, h = _value(P, D, it, k)
            e = _check(P, it, v, h)
            if e == 0:
                pos = _put_bare(oa, pos, ik, v, h, D, it)
                k -= 1
    if e:
        return pos, e, 0, it, k
    pos = _put(oa, pos, end - pos)
    return _put(oa, pos, P[c, Col.TAG]), 0, 0, c, j


@inline
def _leaf(P, D, oa, pos, c, j, kind):
    """A scalar field (a proto3 implicit one holding its default is left out). (start, error,
    bytes needed when out of room)"""
    v, h = _value(P, D, c, j)
    e = _check(P, c, v, h)
    if e:
        return pos, e, 0
    if P[c, Col.PRES] == Pres.IMPLICIT and ((kind == Kind.BYTES and h == 0) or
                                            (kind != Kind.BYTES and v == P[c, Col.DEF])):
        return pos, 0, 0
    if pos < h + 40:
        return pos, EncErr.ROOM, h + 40
    pos = _put_bare(oa, pos, kind, v, h, D, c)
    return _put(oa, pos, P[c, Col.TAG]), 0, 0


@kernel()
def encode(T, D, B, Y, r, pos):
    """Rows ``r`` down to 0 of ``B.n``, each ``B.prefix`` + the message, written backwards into
    ``Y.out`` ending at ``pos``; ``Y.ends[r + 1]``: bytes written (from the end) after row
    ``r``; a failed row is empty, its (error, node, item) in ``Y.code``/``Y.enode``/``Y.eitem``.
    Returns (-1, start of the bytes, 0), or (row, position, bytes needed) when the row does not
    fit: grow ``Y.out`` (keeping its tail) and call again from that row. ``T``: the program
    (``_encode_program.Tables``), ``D``: its binding to this batch's columns (``Bind``)."""
    P, KIDS = T.P, T.KIDS
    cap = len(Y.out)
    oa = Y.out.ctypes.data
    npre = len(B.prefix)
    stamp = Y.stamp[0]  # in a register while the kernel runs, kept in Y between calls
    while r >= 0:
        Y.ends[r + 1] = cap - pos
        if not _valid(D, 0, r):
            r -= 1
            continue
        # the current frame lives in locals (registers); the stack holds its parents
        top, node, fj_, cur, fe, mark = 0, 0, r, P[0, Col.C1] - 1, P[0, Col.C0] - 1, 0
        is_msg, item = True, 0
        stamp += 1
        fst = stamp  # one id per message instance, for its oneofs
        e = 0
        need = 0
        c = 0
        j = 0
        while True:
            if cur <= fe:  # the frame is done: a message gets its length and tag
                if top == 0:
                    break
                if is_msg:
                    if pos < 20:
                        e, need = EncErr.ROOM, 20
                        break
                    pos = _put(oa, pos, cap - pos - mark)
                    pos = _put(oa, pos, P[node, Col.TAG])
                top -= 1
                node, fj_, cur, fe, mark, fst = (Y.fn[top], Y.fj[top], Y.fcur[top], Y.fend[top],
                                                 Y.fmark[top], Y.fstamp[top])
                is_msg = P[node, Col.KIND] == Kind.MSG
                item = P[node, Col.C0]
                continue
            if is_msg:
                c, j = KIDS[cur], fj_
            else:  # a repeated field's items
                c, j = item, cur
            cur -= 1
            if not _valid(D, c, j):
                if P[c, Col.NULLERR]:
                    e = EncErr.NULL
                    break
                continue
            g = P[c, Col.ONEOF]
            if g >= 0:
                if Y.seen[g] == fst:
                    e = EncErr.ONEOF
                    break
                Y.seen[g] = fst
            kind = P[c, Col.KIND]
            if kind == Kind.MSG or kind == Kind.REP:  # a frame for its fields or items
                if top >= len(Y.fn):
                    raise ValueError("protobuf program deeper than its stack")
                Y.fn[top], Y.fj[top], Y.fcur[top], Y.fend[top], Y.fmark[top], Y.fstamp[top] = \
                    node, fj_, cur, fe, mark, fst
                top += 1
                node, fj_, mark = c, j, cap - pos
                is_msg = kind == Kind.MSG
                item = P[c, Col.C0]
                if is_msg:
                    cur, fe = P[c, Col.C1] - 1, P[c, Col.C0] - 1
                    stamp += 1
                    fst = stamp
                else:
                    lo, hi = _span(D, c, j)
                    cur, fe = hi - 1, lo - 1
                continue
            if kind == Kind.PACKED:
                pos, e, need, c, j = _packed(P, D, oa, pos, c, j)
            else:
                pos, e, need = _leaf(P, D, oa, pos, c, j, kind)
            if e:
                break
        if e == 0 and pos < npre:
            e, need = EncErr.ROOM, npre
        if e:
            pos = cap - Y.ends[r + 1]  # the row is rolled back
            if e == EncErr.ROOM:  # rarely: the caller grows the buffer, the row is redone
                Y.stamp[0] = stamp
                return r, pos, need
            Y.code[r], Y.enode[r], Y.eitem[r] = e, c, j
            r -= 1
            continue
        pos -= npre
        for k in range(npre):
            Y.out[pos + k] = B.prefix[k]
        r -= 1
    Y.stamp[0] = stamp
    return -1, pos, 0
