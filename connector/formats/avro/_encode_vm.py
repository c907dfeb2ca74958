"""The compiled Avro encoder: one pass over the rows, each row's Avro bytes (after the framing
header) appended to one output buffer, running an :class:`~._encode_program.EncodeProgram`.

Imported lazily (numba is slow to import); compiled once and cached on disk: the kernel is an
interpreter, so no schema is compiled to machine code. :func:`encode_rows` dispatches each
instruction (``_opcodes.EncOp``: one per schema construct) to its handler below.

The kernel takes named structures: the program (``_encode_program.EncTables``), the input
columns (``ctab``) and the output (``_encode_program.EncOut``). It reads the Arrow buffers in
place: column ``c`` of the program is ``ctab[c]`` = (validity bitmap address, 0 when the
column has no null, -1 when every value is null; the array's offset; its first and second
buffer addresses: values, or offsets and data — slots ``COL_*`` of ``_opcodes``). Addresses
are read inside compiled code by small intrinsics (loads and ``memcpy``). A handler takes the
three structures, the pc, the output position and the current index (a list's or map's items
run at their own indexes), and returns them with an error code; handlers (``@inline``) and
the dispatch generated from their table are pasted into the kernel at import
(``core._inline``). A row that fails writes nothing and records (error code,
instruction, index in the failing column); a row that does not fit in the output stops the
kernel, which the caller calls again from that row with a larger buffer. Nesting is bounded by
the program (one frame per collection of the tree).
"""
import numpy as np

from connector.formats.avro._decimal import write_decimal
from connector.formats.avro._opcodes import COL_BUF1, COL_BUF2, COL_OFFSET, COL_VALID, EncErr, EncOp
from connector.formats.core.kernels import dispatch, helper, inline, kernel, load_i32, load_i64, load_u8, memcpy

__all__ = ["encode_rows"]

_LOW57 = 0x01FFFFFFFFFFFFFF  # a logical shift right by 7 of an int64, as a mask


# -- reads and writes ----------------------------------------------------------------------------
@helper
def _i32(addr, i):
    return np.int64(load_i32(addr + 4 * i))


@helper
def _i64(addr, i):
    return load_i64(addr + 8 * i)


@helper
def _valid(X, c, i):
    a = X[c, COL_VALID]
    if a == 0:
        return True
    if a == -1:
        return False
    p = i + X[c, COL_OFFSET]
    return (np.int64(load_u8(a + (p >> 3))) >> (p & 7)) & 1 == 1


@inline
def _at(P, X, pc, idx):
    """(column, physical index: the array's offset applied) of instruction ``pc``'s value."""
    c = P.code[pc, 1]
    return c, idx + X[c, COL_OFFSET]


@helper
def _span(X, c, p):
    """(start, length) of value ``p`` (offset applied) of a string/binary/list column."""
    o0 = _i32(X[c, COL_BUF1], p)
    return o0, _i32(X[c, COL_BUF1], p + 1) - o0


@helper
def _varint(out, pos, z):
    """LEB128 of ``z`` (an int64 read as unsigned) at ``pos``; the next position."""
    while z & -128:
        out[pos] = (z & 0x7F) | 0x80
        pos += 1
        z = (z >> 7) & _LOW57
    out[pos] = z
    return pos + 1


@helper
def _zigzag(v):
    return (v << 1) ^ (v >> 63)


@helper
def _copy(out, pos, addr, n):
    memcpy(out.ctypes.data + pos, addr, n)
    return pos + n


@helper
def _hex(b):
    return (48 <= b <= 57) or (65 <= b <= 70) or (97 <= b <= 102)


@helper
def _is_uuid(addr, n):
    if n != 36:
        return False
    for k in range(36):
        b = np.int64(load_u8(addr + k))
        if k == 8 or k == 13 or k == 18 or k == 23:
            if b != 45:
                return False
        elif not _hex(b):
            return False
    return True


@helper
def _symbol(P, X, c, p, at):
    """Index of the string at ``p`` of column ``c`` among the enum's symbols (``aux[at:]``),
    or -1."""
    o0, n = _span(X, c, p)
    data = X[c, COL_BUF2] + o0
    for s in range(P.aux[at]):
        off = P.aux[at + 1 + 2 * s]
        if P.aux[at + 2 + 2 * s] != n:
            continue
        same = True
        for k in range(n):
            if load_u8(data + k) != P.consts[off + k]:
                same = False
                break
        if same:
            return s
    return -1


@inline
def _null_branch(P, Y, pc, pos):
    """A null into a union: its null branch index, or the error of a union without one."""
    if P.code[pc, 2] < 0:
        return pos, EncErr.NULL_UNION
    return _varint(Y.out, pos, 2 * P.code[pc, 2]), 0


# -- handlers: one per instruction (a value's null was refused by the caller, except unions) ----
@inline
def _opt(P, X, Y, pc, pos, idx):
    """A union of null and at most one type: the branch index, then the value's code (or the
    union's end)."""
    if pos + 10 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    if _valid(X, P.code[pc, 1], idx):
        return pc + 1, _varint(Y.out, pos, 2 * P.code[pc, 3]), idx, 0
    pos, err = _null_branch(P, Y, pc, pos)
    return (pc if err else P.code[pc, 4]), pos, idx, err


@inline
def _ustruct(P, X, Y, pc, pos, idx):
    """A struct-form union: the one member set picks the branch and its code."""
    if pos + 10 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    a = P.code[pc, 3]
    chosen = -1
    several = False
    if _valid(X, P.code[pc, 1], idx):
        for m in range(P.aux[a]):
            if _valid(X, P.aux[a + 1 + 3 * m], idx):
                several = several or chosen >= 0
                chosen = m
    if several:
        return pc, pos, idx, EncErr.SEVERAL
    if chosen < 0:
        pos, err = _null_branch(P, Y, pc, pos)
        return (pc if err else P.code[pc, 4]), pos, idx, err
    return P.aux[a + 3 + 3 * chosen], _varint(Y.out, pos, 2 * P.aux[a + 2 + 3 * chosen]), idx, 0


@inline
def _widened(P, X, Y, pc, pos, idx):
    """``[int, long]`` (ULONG: the branch the value fits) and ``[float, double]`` (UDOUBLE: the
    double), the unions Spark reads as one long or double: the branch index, then the value."""
    if pos + 20 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    c = P.code[pc, 1]
    if not _valid(X, c, idx):
        pos, err = _null_branch(P, Y, pc, pos)
        return (pc if err else pc + 1), pos, idx, err
    at = X[c, COL_BUF1] + 8 * (idx + X[c, COL_OFFSET])
    if P.code[pc, 0] == EncOp.UDOUBLE:
        pos = _varint(Y.out, pos, 2 * P.code[pc, 3])
        return pc + 1, _copy(Y.out, pos, at, 8), idx, 0
    v = load_i64(at)
    fits = -(1 << 31) <= v < (1 << 31)
    pos = _varint(Y.out, pos, 2 * (P.code[pc, 3] if fits else P.code[pc, 4]))
    return pc + 1, _varint(Y.out, pos, _zigzag(v)), idx, 0


@inline
def _const(P, X, Y, pc, pos, idx):
    """Bytes every row writes here (a field cut at the recursion depth)."""
    ln = P.code[pc, 3]
    if pos + ln > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    for k in range(ln):
        Y.out[pos + k] = P.consts[P.code[pc, 2] + k]
    return pc + 1, pos + ln, idx, 0


@inline
def _int(P, X, Y, pc, pos, idx):
    """int, long, date, timestamps: a zigzag varint (µs → floor ms for millis)."""
    if pos + 10 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    c, p = _at(P, X, pc, idx)
    if P.code[pc, 2] == 4:
        v = _i32(X[c, COL_BUF1], p)
    else:
        v = _i64(X[c, COL_BUF1], p)
        if P.code[pc, 3]:
            v = v // 1000
    return pc + 1, _varint(Y.out, pos, _zigzag(v)), idx, 0


@inline
def _float(P, X, Y, pc, pos, idx, w):
    """float (``w`` 4), double (8): the little-endian bytes."""
    if pos + w > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    c, p = _at(P, X, pc, idx)
    return pc + 1, _copy(Y.out, pos, X[c, COL_BUF1] + w * p, w), idx, 0


@inline
def _bool(P, X, Y, pc, pos, idx):
    if pos + 1 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    c, p = _at(P, X, pc, idx)
    Y.out[pos] = (load_u8(X[c, COL_BUF1] + (p >> 3)) >> (p & 7)) & 1
    return pc + 1, pos + 1, idx, 0


@inline
def _bytes(P, X, Y, pc, pos, idx):
    """string, bytes (BYTES: the length, then the bytes; a string checked as a UUID when asked),
    fixed (FIXED: the bytes, exactly ``size`` of them)."""
    c, p = _at(P, X, pc, idx)
    o0, ln = _span(X, c, p)
    if pos + ln + 10 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    if P.code[pc, 0] == EncOp.FIXED:
        if ln != P.code[pc, 2]:
            return pc, pos, idx, EncErr.FIXED
    else:
        if P.code[pc, 2] and not _is_uuid(X[c, COL_BUF2] + o0, ln):
            return pc, pos, idx, EncErr.UUID
        pos = _varint(Y.out, pos, 2 * ln)
    return pc + 1, _copy(Y.out, pos, X[c, COL_BUF2] + o0, ln), idx, 0


@inline
def _enum(P, X, Y, pc, pos, idx):
    """enum: the symbol's index."""
    if pos + 10 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    c, p = _at(P, X, pc, idx)
    s = _symbol(P, X, c, p, P.code[pc, 2])
    if s < 0:
        return pc, pos, idx, EncErr.ENUM
    return pc + 1, _varint(Y.out, pos, 2 * s), idx, 0


@inline
def _decimal(P, X, Y, pc, pos, idx):
    """decimal: ``_decimal.write_decimal`` of the decimal128 value."""
    c, p = _at(P, X, pc, idx)
    pos, err = write_decimal(Y.out, pos, len(Y.out), _i64(X[c, COL_BUF1], 2 * p + 1),
                             _i64(X[c, COL_BUF1], 2 * p), P.code[pc, 2], P.code[pc, 3])
    return (pc, pos, idx, err) if err else (pc + 1, pos, idx, 0)


@inline
def _array(P, X, Y, pc, pos, idx):
    """array, map: one block (count, items); a frame for the items (at their indexes)."""
    if pos + 10 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    c, p = _at(P, X, pc, idx)
    o0, cnt = _span(X, c, p)
    if cnt == 0:
        Y.out[pos] = 0
        return P.code[pc, 2], pos + 1, idx, 0
    sp = Y.sp[0]
    Y.stack[sp, 0] = pc
    Y.stack[sp, 1] = idx
    Y.stack[sp, 2] = o0
    Y.stack[sp, 3] = o0 + cnt
    Y.sp[0] = sp + 1
    return pc + 1, _varint(Y.out, pos, 2 * cnt), o0, 0


@inline
def _next(P, X, Y, pc, pos, idx):
    """The end of an item: the next one, or the block's end (0) and the collection's."""
    f = Y.sp[0] - 1
    cur = Y.stack[f, 2] + 1
    if cur < Y.stack[f, 3]:
        Y.stack[f, 2] = cur
        return P.code[pc, 2] + 1, pos, cur, 0
    if pos + 1 > len(Y.out):
        return pc, pos, idx, EncErr.ROOM
    Y.out[pos] = 0
    Y.sp[0] = f
    return pc + 1, pos + 1, Y.stack[f, 1], 0


@inline
def _rec(P, X, Y, pc, pos, idx):
    """A record: its fields' instructions follow, at the same index."""
    return pc + 1, pos, idx, 0


@inline
def _jmp(P, X, Y, pc, pos, idx):
    return P.code[pc, 2], pos, idx, 0


@inline
def _f64(P, X, Y, pc, pos, idx):
    return _float(P, X, Y, pc, pos, idx, 8)


@inline
def _f32(P, X, Y, pc, pos, idx):
    return _float(P, X, Y, pc, pos, idx, 4)


# -- the interpreter ------------------------------------------------------------------------------
# one handler per instruction but HALT, most frequent first (the last also takes any other op)
_dispatch = dispatch("_dispatch", {
    EncOp.OPT: _opt, EncOp.INT: _int, EncOp.BYTES: _bytes, EncOp.NEXT: _next, EncOp.REC: _rec,
    EncOp.F64: _f64, EncOp.ARRAY: _array, EncOp.JMP: _jmp, EncOp.USTRUCT: _ustruct,
    EncOp.ULONG: _widened, EncOp.UDOUBLE: _widened, EncOp.CONST: _const, EncOp.BOOL: _bool,
    EncOp.F32: _f32, EncOp.ENUM: _enum, EncOp.FIXED: _bytes, EncOp.DECIMAL: _decimal},
    "P, X, Y, pc, pos, idx", globals())
# instructions whose value must not be null (unions write their nulls; the others read no value)
_NOT_NULL = np.array([op in (EncOp.REC, EncOp.BOOL, EncOp.INT, EncOp.F32, EncOp.F64, EncOp.BYTES,
                             EncOp.FIXED, EncOp.ENUM, EncOp.DECIMAL, EncOp.ARRAY) for op in EncOp])

@kernel()
def encode_rows(P, X, Y, row):
    """Rows ``row`` .. ``Y.n``: ``Y.offs[r + 1]`` ends row ``r``'s bytes in ``Y.out`` (a null or
    failed row is empty; failures in ``Y.err``/``Y.epc``/``Y.epos``). Returns the row it stopped
    at (``Y.n``: done; else that row did not fit: grow ``Y.out`` and call again from it).
    ``P``: the program (``EncTables``), ``X``: the column table, ``Y``: the output (``EncOut``)."""
    code = P.code
    plen = len(Y.prefix)
    pos = np.int64(Y.offs[row])
    while row < Y.n:
        start = pos
        if not _valid(X, 0, row):  # a tombstone
            Y.offs[row + 1] = pos
            row += 1
            continue
        if pos + plen > len(Y.out):
            return row
        for k in range(plen):
            Y.out[pos + k] = Y.prefix[k]
        pos += plen
        pc = 0
        idx = np.int64(row)
        Y.sp[0] = 0
        err = 0
        while True:
            op = code[pc, 0]
            if op == EncOp.HALT:
                break
            if _NOT_NULL[op] and not _valid(X, code[pc, 1], idx):
                err = EncErr.NULL
                break
            pc, pos, idx, err = _dispatch(op, P, X, Y, pc, pos, idx)
            if err:
                break
        if err == EncErr.ROOM:
            return row
        if err:
            Y.err[row] = err
            Y.epc[row] = pc
            Y.epos[row] = idx
            pos = start
        Y.offs[row + 1] = pos
        row += 1
    return row
