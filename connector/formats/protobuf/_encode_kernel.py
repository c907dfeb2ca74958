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
"""
import numpy as np

from connector.formats.core import njit
from connector.formats.core.kernels import load_i32, load_i64, load_u8, load_u32, memcpy, store_u8

from connector.formats.protobuf._layout import ENUM_BAD, Bind, Chk, Col, EncErr, Kind, Pres, Src


@njit(nogil=True, inline="always")
def _valid(D, c, j):
    a = D[c, Bind.VALID]
    if a == 0:
        return True
    b = D[c, Bind.VOFF] + j
    return (load_u8(a + (b >> 3)) >> (b & 7)) & 1 == 1


@njit(nogil=True, inline="always")
def _span(D, c, j):
    """(start, stop) of list (or string) ``j`` of column ``c``."""
    a, k = D[c, Bind.OFFS], D[c, Bind.DOFF] + j
    return np.int64(load_i32(a + 4 * k)), np.int64(load_i32(a + 4 * k + 4))


@njit(nogil=True, inline="always")
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


@njit(nogil=True, inline="always")
def _varlen(u):
    u = np.uint64(u)
    n = 1
    while u >= np.uint64(0x80):
        u >>= np.uint64(7)
        n += 1
    return n


@njit(nogil=True, inline="always")
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


@njit(nogil=True, inline="always")
def _zz(v):
    return (np.uint64(v) << np.uint64(1)) ^ np.uint64(v >> 63)


@njit(nogil=True, inline="always")
def _time(kind, us):
    """(seconds, nanos) of a Timestamp (floor) or Duration (toward zero) in microseconds."""
    secs = us // 1_000_000
    rem = us - secs * 1_000_000
    if kind == Kind.DUR and us < 0 and rem != 0:
        secs += 1
        rem -= 1_000_000
    return secs, rem * 1000


@njit(nogil=True, inline="always")
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


@njit(nogil=True, inline="always")
def _check(P, c, v, h):
    chk = P[c, Col.CHK]
    if chk == Chk.U32 and (v < 0 or v >= (1 << 32)):
        return EncErr.U32
    if chk == Chk.U64 and h != 0:
        return EncErr.U64
    if chk == Chk.ENUM and v == ENUM_BAD:
        return EncErr.ENUM
    return 0


@njit(nogil=True)
def _room(out, pos, need):
    """``out`` grown to have at least ``need`` free bytes before ``pos`` (the written tail kept
    at the end), and the new ``pos``."""
    used = len(out) - pos
    cap = max(2 * len(out), used + need + 1024)
    grown = np.empty(cap, np.uint8)
    if used:
        memcpy(grown.ctypes.data + cap - used, out.ctypes.data + pos, used)
    return grown, cap - used


@njit(nogil=True, inline="always")
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
    for k in range(hi - 1, lo - 1, -1):
        if not _valid(D, it, k):
            return pos, EncErr.NULL, 0, it, k
        v, h = _value(P, D, it, k)
        e = _check(P, it, v, h)
        if e:
            return pos, e, 0, it, k
        pos = _put_bare(oa, pos, ik, v, h, D, it)
    pos = _put(oa, pos, end - pos)
    return _put(oa, pos, P[c, Col.TAG]), 0, 0, c, j


@njit(nogil=True, inline="always")
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


@njit(nogil=True)
def encode(T, D, B):
    """(bytes, offsets (n + 1), error code per row (0: fine), node, item) of ``B.n`` rows, each
    ``B.prefix`` + the message; null and failed rows are empty. ``T``: the program
    (``_encode_program.Tables``), ``D``: its binding to this batch's columns (``Bind``),
    ``B``: the batch (``_encode_program.Batch``; ``guess``: bytes to start with)."""
    P, KIDS, depth, n = T.P, T.KIDS, T.depth, B.n
    fn = np.empty(depth + 1, np.int64)
    fj = np.empty(depth + 1, np.int64)
    fcur = np.empty(depth + 1, np.int64)
    fend = np.empty(depth + 1, np.int64)
    fmark = np.empty(depth + 1, np.int64)  # bytes written (from the end) when the frame began
    fstamp = np.empty(depth + 1, np.int64)
    seen = np.full(max(T.n_oneof, 1), -1, np.int64)
    ends = np.zeros(n + 1, np.int64)  # bytes written (from the end) after each row
    code = np.zeros(n, np.int64)
    enode = np.zeros(n, np.int64)
    eitem = np.zeros(n, np.int64)
    out = np.empty(max(B.guess, 64), np.uint8)
    cap = len(out)
    pos = cap
    oa = out.ctypes.data
    npre = len(B.prefix)
    stamp = 0
    need = 0
    r = n - 1
    while r >= 0:
        ends[r + 1] = cap - pos
        if not _valid(D, 0, r):
            r -= 1
            continue
        # the current frame lives in locals (registers); the stack holds its parents
        top, node, fj_, cur, fe, mark = 0, 0, r, P[0, Col.C1] - 1, P[0, Col.C0] - 1, 0
        is_msg, item = True, 0
        stamp += 1
        fst = stamp
        e = 0
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
                node, fj_, cur, fe, mark, fst = fn[top], fj[top], fcur[top], fend[top], fmark[top], fstamp[top]
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
                if seen[g] == fst:
                    e = EncErr.ONEOF
                    break
                seen[g] = fst
            kind = P[c, Col.KIND]
            if kind == Kind.MSG or kind == Kind.REP:  # a frame for its fields or items
                if top >= depth:
                    raise ValueError("protobuf program deeper than its stack")
                fn[top], fj[top], fcur[top], fend[top], fmark[top], fstamp[top] = node, fj_, cur, fe, mark, fst
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
            pos = cap - ends[r + 1]  # the row is rolled back
            if e == EncErr.ROOM:  # rarely: the buffer grows (outside the walk), the row is redone
                out, pos = _room(out, pos, need)
                cap, oa = len(out), out.ctypes.data
                continue
            code[r], enode[r], eitem[r] = e, c, j
            r -= 1
            continue
        pos -= npre
        for k in range(npre):
            out[pos + k] = B.prefix[k]
        r -= 1
    total = cap - pos
    ends[0] = total
    offs = np.empty(n + 1, np.int64)
    for r in range(n + 1):
        offs[r] = total - ends[r]
    return out[pos:], offs, code, enode, eitem
