"""The compiled Avro decoder: one pass per payload over a program, values straight into
per-column buffers.

Imported lazily (numba is slow to import). Compiled once and cached on disk: the kernel is an
interpreter, so no schema is ever compiled to machine code — a (writer, reader) pair becomes a
small program (:mod:`connector.formats.avro._program`) of instructions (``_opcodes.Op``: one
per schema construct) that :func:`rows` dispatches, each to its handler below.

Instructions are rows of ``code``; ``pc`` moves to the next row unless the op jumps. Records
are inline (their fields' instructions follow one another), so a flat record costs one
instruction per field. A program may hold the code of several writers of one reader (they fill
the same columns): each row starts at its writer's entry (``Rows.entry[r]``), so a batch whose
writer changed mid-way is one call, in row order.

The kernel takes named structures: the program (``_program.Tables``), the rows
(``_program.Rows``), the column buffers (``core.KernelBuffers``) and its scratch
(``_program.Work``, allocated by the caller: the kernel allocates nothing, so it runs without
reference counting). A handler (``@inline``) takes all four, the pc, the position in the
payload and its end, and returns (pc, position, error code); it is pasted into :func:`rows`
from its source at import, as is the dispatch generated from the one table of handlers below
(``core._inline``: one compiled function, as fast to compile and to run as one written by
hand). Small helpers called in expressions are ordinary compiled functions (``@helper``).

Column ``c`` owns ``cbase[c] .. cbase[c] + ccap[c]`` of the value buffers (``cval``, ``cvalid``;
strings and bytes: their length in ``clen`` and their bytes, copied while they are in cache, in
``bdata[bbase[c]:]``, by ``memcpy``: a per-byte loop cost a quarter of the kernel's time;
decimals: the high word in ``clen``); ``cnt[c]`` counts its values, ``bcnt[c]`` its bytes. A
list's value is its item count (written when the list ends), a struct's its variant. A row
that fails is rolled back to the column counts at its start (a snapshot per row: cheaper than
logging writes) and replaced by a null-filled root, so neighbours never shift. A column that
runs out of room writes to a sink slot; the row is then rolled back and the caller grows the
column and redoes the row. Work is bounded per byte (items per row are capped) and nesting
(collections and subroutine calls) is capped at :data:`MAX_NESTING` frames, on an explicit
stack.
"""
import numpy as np

from connector.formats.avro._decimal import read_decimal
from connector.formats.avro._opcodes import K_F32, K_F64, K_I64, Err, Op
from connector.formats.avro._walk import MAX_NESTING
from connector.formats.core.kernels import dispatch, helper, inline, kernel, varint
from connector.formats.core.kernels import memcpy as _memcpy

__all__ = ["rows"]

_I64_MS = (2**63 - 1) // 1000
_U32 = np.uint64(1) << np.uint64(32)
# Work.reg: the current row's registers that only some handlers touch
_OVC, _OVB, _ITEMS, _SP = 0, 1, 2, 3


# -- value writes ---------------------------------------------------------------------------------
@inline
def _slot(C, W, c):
    """The value slot of column ``c``'s next value (the sink when it is full), counted."""
    i = C.cnt[c]
    j = C.cbase[c] + i
    if i >= C.ccap[c]:
        j = len(C.cval) - 1
        W.reg[_OVC] = c
    C.cnt[c] = i + 1
    return j


@inline
def _emit(C, W, c, v):
    """One valid value of a column without lengths (numbers, enums, structs, collections)."""
    j = _slot(C, W, c)
    C.cval[j] = v
    C.cvalid[j] = 1


@inline
def _emit_nulls(T, C, W, c):
    """A null value into column ``c`` and, for a struct, every column below it."""
    for q in range(T.fill0[c], T.fill1[c]):
        j = _slot(C, W, T.fills[q])
        C.cval[j] = 0
        C.cvalid[j] = 0
        C.clen[j] = 0


@inline
def _emit_bytes(C, W, c, src, ln):
    """A string/bytes value of ``ln`` bytes at address ``src`` into column ``c``."""
    j = _slot(C, W, c)
    C.cvalid[j] = 1
    C.clen[j] = ln
    b = C.bcnt[c]
    if b + ln > C.bcap[c]:
        W.reg[_OVB] = c
    else:
        _memcpy(C.bdata.ctypes.data + C.bbase[c] + b, src, ln)
        C.bcnt[c] = b + ln


@inline
def _struct_union(T, C, W, c, m, members):
    """A struct-form union value into column ``c``: member ``m`` set (-1: the union is null),
    every other member (columns ``aux[members + 1:]``) null."""
    j = _slot(C, W, c)
    C.cval[j] = 0
    C.cvalid[j] = 1 if m >= 0 else 0
    C.clen[j] = 0
    for k in range(T.aux[members]):
        if k != m:
            _emit_nulls(T, C, W, T.aux[members + 1 + k])


# -- reads ----------------------------------------------------------------------------------------
# a varint's fault (core.kernels.varint) → the row error
_VARINT_ERR = np.array([0, Err.TRUNC, Err.VARINT, Err.VARINT], np.int64)


@helper
def _varint(buf, pos, end):
    """(raw unsigned value, new position, error code): the one-byte varint (most of them) read
    in place, longer ones by ``core.kernels.varint``."""
    if pos < end and buf[pos] < 0x80:
        return np.uint64(buf[pos]), pos + 1, 0
    u, pos, fault = varint(buf, pos, end)
    return u, pos, _VARINT_ERR[fault]


@helper
def _zigzag(u):
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1))


@helper
def _int(buf, pos, end):
    """(value, position, error) of an Avro int (a zigzag varint within 32 bits)."""
    u, pos, err = _varint(buf, pos, end)
    if err == 0 and u >= _U32:
        err = Err.INT32
    return _zigzag(u), pos, err


@helper
def _length(buf, pos, end):
    """(length, position after it, error) of a length-prefixed value, checked against the end."""
    u, pos, err = _varint(buf, pos, end)
    ln = _zigzag(u)
    if err == 0 and (ln < 0 or ln > end - pos):
        err = Err.LENGTH
    return ln, pos, err


@inline
def _block(T, B, W, pos, end, min_item):
    """(item count, position, error) of a collection block's header: the count, and the block's
    byte size after a negative count. Checked: items of ``min_item`` bytes fit in the payload,
    and the row's items stay within ``T.cap_items``."""
    u, pos, err = _varint(B.buf, pos, end)
    if err:
        return 0, pos, err
    k = _zigzag(u)
    if k < 0:
        _, pos, err = _varint(B.buf, pos, end)
        if err:
            return 0, pos, err
        k = -k
        if k < 0:
            return 0, pos, Err.COUNT
    if min_item > 0 and k > (end - pos) // min_item:
        return 0, pos, Err.COUNT
    if k > T.cap_items - W.reg[_ITEMS]:
        return 0, pos, Err.CAP
    W.reg[_ITEMS] += k
    return k, pos, 0


@inline
def _map_key(T, B, C, W, a, pos, end):
    """(position, error) after a map entry's key (into the key column of ARRAY ``a``)."""
    ln, pos, err = _length(B.buf, pos, end)
    if err:
        return pos, err
    kc = T.code[a, 4]
    if kc >= 0:
        _emit_bytes(C, W, kc, B.buf.ctypes.data + pos, ln)
    return pos + ln, 0


# -- handlers: one per instruction ---------------------------------------------------------------
@inline
def _varnum(T, B, C, W, pc, pos, end):
    """int, long, date, time, timestamp: a zigzag varint, promoted to the reader's kind."""
    u, pos, err = _varint(B.buf, pos, end)
    if err:
        return pc, pos, err
    if T.code[pc, 2] and u >= _U32:
        return pc, pos, Err.INT32
    c = T.code[pc, 1]
    if c >= 0:
        v = _zigzag(u)
        rk = T.code[pc, 3]
        sk = T.code[pc, 5]
        if rk == K_I64 and T.code[pc, 4]:
            if v > _I64_MS or v < -_I64_MS:
                return pc, pos, Err.MILLIS
            v *= 1000
        if rk == K_F32:
            W.f32[0] = np.float32(v)
            if sk == K_F32:
                v = np.int64(W.u32[0])
            else:
                W.f64[0] = np.float64(W.f32[0])
                v = W.i64[0]
        elif rk == K_F64 or sk == K_F64:
            W.f64[0] = np.float64(v)
            v = W.i64[0]
        _emit(C, W, c, v)
    return pc + 1, pos, 0


@inline
def _floatnum(T, B, C, W, pc, pos, end):
    """float, double: 4 or 8 little-endian bytes (a float read as double widened)."""
    w = T.code[pc, 2]
    if pos + w > end:
        return pc, pos, Err.TRUNC
    bits = np.uint64(0)
    for k in range(w):
        bits |= np.uint64(B.buf[pos + k]) << np.uint64(8 * k)
    c = T.code[pc, 1]
    if c >= 0:
        v = np.int64(bits)
        if w == 4 and T.code[pc, 5] != K_F32:
            W.u32[0] = np.uint32(bits)
            W.f64[0] = np.float64(W.f32[0])
            v = W.i64[0]
        _emit(C, W, c, v)
    return pc + 1, pos + w, 0


@helper
def _sized(buf, pos, end, size):
    """(length, position of the bytes, error) of a value of ``size`` bytes (fixed) or, when
    ``size`` < 0, of a length-prefixed one (bytes, string)."""
    if size < 0:
        return _length(buf, pos, end)
    if pos + size > end:
        return size, pos, Err.TRUNC
    return size, pos, 0


@inline
def _bytes(T, B, C, W, pc, pos, end):
    """string, bytes, fixed: (start, length) and the bytes into the column."""
    ln, pos, err = _sized(B.buf, pos, end, T.code[pc, 2])
    if err:
        return pc, pos, err
    c = T.code[pc, 1]
    if c >= 0:
        _emit_bytes(C, W, c, B.buf.ctypes.data + pos, ln)
    return pc + 1, pos + ln, 0


@inline
def _decimal(T, B, C, W, pc, pos, end):
    """decimal (bytes or fixed): the unscaled value's two words (``_decimal.read_decimal``)."""
    ln, pos, err = _sized(B.buf, pos, end, T.code[pc, 2])
    if err:
        return pc, pos, err
    lo, hi, ok = read_decimal(B.buf, pos, ln, T.code[pc, 3])
    if not ok:
        return pc, pos, T.code[pc, 4]
    j = _slot(C, W, T.code[pc, 1])
    C.cval[j] = lo
    C.clen[j] = hi
    C.cvalid[j] = 1
    return pc + 1, pos + ln, 0


@inline
def _bool(T, B, C, W, pc, pos, end):
    if pos >= end:
        return pc, pos, Err.TRUNC
    v = B.buf[pos]
    if v > 1:
        return pc, pos + 1, Err.BOOL
    c = T.code[pc, 1]
    if c >= 0:
        _emit(C, W, c, v)
    return pc + 1, pos + 1, 0


@inline
def _enum(T, B, C, W, pc, pos, end):
    """The writer's symbol index → the reader's (``aux``), or the reader's default."""
    v, pos, err = _int(B.buf, pos, end)
    if err:
        return pc, pos, err
    if v < 0 or v >= T.code[pc, 2]:
        return pc, pos, Err.ENUM_RANGE
    v = T.aux[T.code[pc, 3] + v]
    if v < 0:
        return pc, pos, Err.ENUM_UNKNOWN
    c = T.code[pc, 1]
    if c >= 0:
        _emit(C, W, c, v)
    return pc + 1, pos, 0


@inline
def _operand(T, B, C, W, pc, pos, end):
    """The instruction's operand as the value: REC's variant (a record's struct value; its
    fields' instructions follow), CONST's reader default the writer lacks (a number's bits, a
    boolean, an enum index)."""
    _emit(C, W, T.code[pc, 1], T.code[pc, 2])
    return pc + 1, pos, 0


@inline
def _null(T, B, C, W, pc, pos, end):
    _emit_nulls(T, C, W, T.code[pc, 1])
    return pc + 1, pos, 0


@inline
def _cbytes(T, B, C, W, pc, pos, end):
    """A string/bytes reader default: ``consts[code[pc, 2]:][:code[pc, 3]]``."""
    _emit_bytes(C, W, T.code[pc, 1], T.consts.ctypes.data + T.code[pc, 2], T.code[pc, 3])
    return pc + 1, pos, 0


@inline
def _union(T, B, C, W, pc, pos, end):
    """A writer union: the branch index picks the code to run (see ``Op.UNION``)."""
    b, pos, err = _int(B.buf, pos, end)
    if err:
        return pc, pos, err
    base = T.code[pc, 2]
    nb = T.aux[base]
    if b < 0 or b >= nb:
        return pc, pos, Err.BRANCH
    j = base + 1 + 3 * b
    if T.aux[j + 2]:
        return pc, pos, T.aux[j + 2]
    c = T.code[pc, 1]
    if c >= 0:  # struct-form union: the chosen member, the others null
        _struct_union(T, C, W, c, T.aux[j + 1], base + 1 + 3 * nb)
    nxt = T.aux[j]
    if nxt >= 0:
        return nxt, pos, 0
    if nxt == -2:  # a null branch: null-fill its column
        _emit_nulls(T, C, W, T.aux[j + 1])
    return T.code[pc, 3], pos, 0


@inline
def _tounion(T, B, C, W, pc, pos, end):
    """A non-union writer value into a struct-form reader union."""
    _struct_union(T, C, W, T.code[pc, 1], T.code[pc, 2], T.code[pc, 3])
    return pc + 1, pos, 0


@inline
def _frame(W):
    """A frame pushed on the row's stack: its index, or -1 past :data:`MAX_NESTING`."""
    sp = W.reg[_SP]
    if sp >= MAX_NESTING:
        return -1
    W.reg[_SP] = sp + 1
    return sp


@inline
def _array(T, B, C, W, pc, pos, end):
    """array, map: the first block's header, a frame for the collection, a map's first key."""
    sp = _frame(W)
    if sp < 0:
        return pc, pos, Err.DEEP
    k, pos, err = _block(T, B, W, pos, end, T.code[pc, 2])
    if err:
        return pc, pos, err
    c = T.code[pc, 1]
    i = 0
    if c >= 0:
        i = C.cnt[c]
        _emit(C, W, c, 0)  # the item count, written when the collection ends
    if k == 0:
        W.reg[_SP] = sp  # no item: no frame
        return T.code[pc, 3], pos, 0
    W.rem[sp] = k
    W.done[sp] = 0
    W.col[sp] = c
    W.idx[sp] = i
    if T.code[pc, 5]:
        pos, err = _map_key(T, B, C, W, pc, pos, end)
    return pc + 1, pos, err


@inline
def _next(T, B, C, W, pc, pos, end):
    """The end of one item: the next item, the next block, or the collection's end."""
    t = W.reg[_SP] - 1
    W.rem[t] -= 1
    W.done[t] += 1
    a = T.code[pc, 2]  # the collection's ARRAY
    if W.rem[t] == 0:  # the next block
        k, pos, err = _block(T, B, W, pos, end, T.code[a, 2])
        if err:
            return pc, pos, err
        if k == 0:
            fc = W.col[t]
            if fc >= 0:
                i = W.idx[t]
                C.cval[C.cbase[fc] + i if i < C.ccap[fc] else len(C.cval) - 1] = W.done[t]
            W.reg[_SP] = t
            return pc + 1, pos, 0
        W.rem[t] = k
    if T.code[a, 5]:
        pos, err = _map_key(T, B, C, W, a, pos, end)
        if err:
            return pc, pos, err
    return a + 1, pos, 0


@inline
def _call(T, B, C, W, pc, pos, end):
    """A subroutine (a skipped writer record, which may recurse): a frame."""
    sp = _frame(W)
    if sp < 0:
        return pc, pos, Err.DEEP
    W.ret[sp] = pc + 1
    return T.code[pc, 2], pos, 0


@inline
def _ret(T, B, C, W, pc, pos, end):
    sp = W.reg[_SP] - 1
    W.reg[_SP] = sp
    return W.ret[sp], pos, 0


@inline
def _varskip(T, B, C, W, pc, pos, end):
    _, pos, err = _varint(B.buf, pos, end)
    return pc + 1, pos, err


@inline
def _fixskip(T, B, C, W, pc, pos, end):
    pos += T.code[pc, 2]
    if pos > end:
        return pc, pos, Err.TRUNC
    return pc + 1, pos, 0


@inline
def _jmp(T, B, C, W, pc, pos, end):
    return T.code[pc, 2], pos, 0


@inline
def _error(T, B, C, W, pc, pos, end):
    """An unresolvable writer type (``Program.message``): the row fails."""
    return pc, pos, T.code[pc, 2]


# -- the interpreter ------------------------------------------------------------------------------
# one handler per instruction but HALT, most frequent first (the last also takes any other op)
_dispatch = dispatch("_dispatch", {
    Op.VARNUM: _varnum, Op.BYTES: _bytes, Op.REC: _operand, Op.UNION: _union, Op.NEXT: _next,
    Op.ARRAY: _array, Op.FLOATNUM: _floatnum, Op.JMP: _jmp, Op.NULL: _null, Op.BOOL: _bool,
    Op.ENUM: _enum, Op.DECIMAL: _decimal, Op.VARSKIP: _varskip, Op.FIXSKIP: _fixskip,
    Op.TOUNION: _tounion, Op.CONST: _operand, Op.CBYTES: _cbytes, Op.CALL: _call, Op.RET: _ret,
    Op.ERROR: _error}, "T, B, C, W, pc, pos, end", globals())


@helper
def _copy(dst, src):
    """dst[:] = src without a temporary (numba's slice copy allocates one per call)."""
    for i in range(len(src)):
        dst[i] = src[i]


@kernel()
def rows(T, B, C, W, r0):
    """Rows from ``r0`` on: (next row, column out of value room or -1, column out of byte room
    or -1). Stops at the first row that overflows (rolled back: grow, call again from it).
    ``T``: the program (``_program.Tables``), ``B``: the rows (``_program.Rows``), ``C``: the
    column buffers (``core.KernelBuffers``), ``W``: scratch (``_program.Work``)."""
    n = len(B.starts)
    code = T.code
    for r in range(r0, n):
        pos = B.starts[r]
        end = B.ends[r]
        pc = B.entry[r]
        W.reg[_OVC] = -1
        W.reg[_OVB] = -1
        W.reg[_ITEMS] = 0
        W.reg[_SP] = 0
        _copy(W.snap, C.cnt)
        _copy(W.bsnap, C.bcnt)
        err = Err.BIG if end - pos > T.max_bytes else 0
        while err == 0:
            o = code[pc, 0]
            if o == Op.HALT:
                break
            pc, pos, err = _dispatch(o, T, B, C, W, pc, pos, end)
        if err == 0 and pos != end:
            err = Err.TRAILING
        if err:  # roll the row back and write a null value in its place
            _copy(C.cnt, W.snap)
            _copy(C.bcnt, W.bsnap)
            W.reg[_OVC] = -1
            W.reg[_OVB] = -1
            B.err[r] = err
            _emit_nulls(T, C, W, T.root)
        if W.reg[_OVC] >= 0 or W.reg[_OVB] >= 0:  # out of room: roll back, let the caller grow
            _copy(C.cnt, W.snap)
            _copy(C.bcnt, W.bsnap)
            B.err[r] = 0
            return r, W.reg[_OVC], W.reg[_OVB]
    return n, -1, -1
