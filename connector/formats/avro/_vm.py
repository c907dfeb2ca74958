"""The compiled Avro kernel: one pass per payload over a bytecode program, values straight
into per-column buffers.

Imported lazily (numba is slow to import). Compiled once and cached on disk: the kernel is an
interpreter, so no schema is ever compiled to machine code — a (writer, reader) pair becomes a
small program (:mod:`connector.formats.avro._program`) of instructions this loop runs.

Instructions are rows of ``code`` (int64, 8 slots: op and operands); ``pc`` moves to the next
row unless the op jumps. Records are inline (their fields' instructions follow one another),
so a flat record costs one instruction per field. A program may hold the code of several
writers of one reader (they fill the same columns): each row starts at its writer's entry
(``entry[r]``), so a batch whose writer changed mid-way is one call, in row order.

=========  =========================================================================
op         operands (``col`` is the output column; -1: the value is skipped)
=========  =========================================================================
HALT       the row's value is complete
REC        col, variant: one struct value (the variant tells which writer filled it)
NULL       col: a null value (struct children get one too)
BOOL       col: one byte, 0 or 1
VARNUM     col, int check, reader kind, millis→µs, storage: a zigzag varint
VARSKIP    skip a varint
FLOATNUM   col, width (4/8), reader kind, storage
FIXSKIP    width: skip bytes
BYTES      col, size (-1: length-prefixed): (start, length) into the column
ENUM       col, writer symbols, aux offset of the reader index per symbol (-1: none)
UNION      col (struct-form union) or -1, aux offset, end: ``aux`` holds the count, then
           (target, member, error) per branch (target -1: the end; -2: a null into column
           ``member``, then the end), then the member columns
TOUNION    col, member, aux offset of members: a non-union value into a struct-form union
ARRAY      col, min item size, end, key column, is map: starts a collection (a frame)
NEXT       pc of its ARRAY: ends one item; the next item, block or the collection's end
JMP        target
CONST      col, value: a reader default (number bits, boolean, enum index) the writer lacks
CBYTES     col, offset, length: a string/bytes default, from ``consts``
CALL/RET   target: a subroutine (skipping a writer record, which may recurse)
ERROR      code: fail the row
=========  =========================================================================

Helpers allocate nothing and are compiled without reference counting (``_nrt=False``) and
without numba's own inlining, which LLVM then does: either of those cost about 10 ns per
call that passes an array (measured), most of the kernel's time. Where a hot helper would take
many arrays it is written out by hand (a call passes each array as seven values).

Column ``c`` owns ``cbase[c] .. cbase[c] + ccap[c]`` of the value buffers (``cval``, ``cvalid``;
strings and bytes: their length in ``clen`` and their bytes, copied while they are in cache, in
``bdata[bbase[c]:]``, by ``memcpy``: a per-byte loop cost a quarter of the kernel's time;
values of other columns leave ``clen`` unwritten); ``cnt[c]`` counts its values, ``bcnt[c]`` its bytes. A list's value is its
item count (written when the list ends), a struct's its variant. A row that fails is rolled back
to the column counts at its start (a snapshot per row: cheaper than logging writes) and
replaced by a null-filled root, so neighbours never shift. A column that runs out of room
writes to a sink slot; the row is then rolled back and the caller grows the column and redoes
the row. Work is bounded per byte (items per row are capped) and nesting (collections and
subroutine calls) is capped at :data:`MAX_NESTING` frames, on an explicit stack.
"""
import numpy as np

from connector.formats.core import njit
from connector.formats.core.kernels import emit as _emit
from connector.formats.core.kernels import memcpy as _memcpy
from connector.formats.avro._opcodes import (  # noqa: F401 - the kernel's constants
    OP_HALT, OP_REC, OP_NULL, OP_BOOL, OP_VARNUM, OP_VARSKIP, OP_FLOATNUM, OP_FIXSKIP, OP_BYTES,
    OP_ENUM, OP_UNION, OP_TOUNION, OP_ARRAY, OP_NEXT, OP_JMP, OP_CALL, OP_RET, OP_ERROR, OP_CONST,
    OP_CBYTES, K_I32,
    K_I64, K_F32, K_F64, E_TRUNC, E_VARINT, E_INT32, E_LENGTH, E_BOOL, E_ENUM_RANGE,
    E_ENUM_UNKNOWN, E_BRANCH, E_COUNT, E_CAP, E_DEEP, E_TRAILING, E_MILLIS, E_BIG, E_CUSTOM,
)
from connector.formats.avro._walk import MAX_NESTING

# helpers allocate nothing: compiled without reference counting (see the docstring)
_helper = njit(nogil=True, _nrt=False)


_I64_MS = (2**63 - 1) // 1000
_U32 = np.uint64(1) << np.uint64(32)


@_helper
def _varint(buf, pos, end):
    """(raw unsigned value, new position, error code)."""
    u = np.uint64(0)
    for k in range(10):
        if pos >= end:
            return u, pos, E_TRUNC
        b = buf[pos]
        pos += 1
        if k == 9 and b > 1:
            return u, pos, E_VARINT
        u |= np.uint64(b & 0x7F) << np.uint64(7 * k)
        if b < 0x80:
            return u, pos, 0
    return u, pos, E_VARINT


@_helper
def _emit_v(c, v, cbase, ccap, cnt, cval, cvalid, sink, ovc):
    """One valid value of a column without lengths (numbers, enums, structs, collections):
    ``emit`` without the length store."""
    i = cnt[c]
    j = cbase[c] + i
    if i >= ccap[c]:
        j = sink
        ovc = c
    cval[j] = v
    cvalid[j] = 1
    cnt[c] = i + 1
    return ovc


@_helper
def _zigzag(u):
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1))


@_helper
def _copy(dst, src):
    """dst[:] = src without a temporary (numba's slice copy allocates one per call)."""
    for i in range(len(src)):
        dst[i] = src[i]


@njit(nogil=True)
def rows(buf, starts, ends, entry, code, aux, consts, fill0, fill1, fills, root_col, cap_items,
         max_bytes, cbase, ccap, cnt, cval, cvalid, clen, bbase, bcap, bcnt, bdata, err_out, r0):
    # the buffer arguments are ColumnBuffers.args() (connector.formats.core)
    """Rows from ``r0`` on: (next row, column out of value room or -1, column out of byte room
    or -1). Stops at the first row that overflows (rolled back: grow, call again from it).
    Row ``r`` runs the program from ``entry[r]`` (its writer's code)."""
    n = len(starts)
    sink = len(cval) - 1
    ncols = len(cbase)
    snap = np.empty(ncols, np.int64)  # the counts at the row's start, to roll a row back
    bsnap = np.empty(ncols, np.int64)
    fkind = np.empty(MAX_NESTING, np.int64)  # 0: collection, 1: call
    fpc = np.empty(MAX_NESTING, np.int64)
    frem = np.empty(MAX_NESTING, np.int64)
    fcnt = np.empty(MAX_NESTING, np.int64)
    fcol = np.empty(MAX_NESTING, np.int64)
    fidx = np.empty(MAX_NESTING, np.int64)
    f32 = np.empty(1, np.float32)
    u32 = f32.view(np.uint32)
    f64 = np.empty(1, np.float64)
    i64 = f64.view(np.int64)
    bsrc = buf.ctypes.data  # byte copies by address: a per-byte loop costs ~25% of the kernel
    bdst = bdata.ctypes.data
    csrc = consts.ctypes.data
    for r in range(r0, n):
        pos = starts[r]
        end = ends[r]
        err = 0
        items = 0
        sp = 0
        pc = entry[r]
        ovc = -1
        ovb = -1
        _copy(snap, cnt)
        _copy(bsnap, bcnt)
        if end - pos > max_bytes:
            err = E_BIG
        while err == 0:
            o = code[pc, 0]
            c = code[pc, 1]
            if o == OP_VARNUM:
                if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                    u = np.uint64(buf[pos])
                    pos += 1
                else:
                    u, pos, err = _varint(buf, pos, end)
                if err:
                    break
                if code[pc, 2] and u >= _U32:
                    err = E_INT32
                    break
                if c >= 0:
                    v = _zigzag(u)
                    rk = code[pc, 3]
                    sk = code[pc, 5]
                    if rk == K_I64 and code[pc, 4]:
                        if v > _I64_MS or v < -_I64_MS:
                            err = E_MILLIS
                            break
                        v *= 1000
                    if rk == K_F32:
                        f32[0] = np.float32(v)
                        if sk == K_F32:
                            v = np.int64(u32[0])
                        else:
                            f64[0] = np.float64(f32[0])
                            v = i64[0]
                    elif rk == K_F64 or sk == K_F64:
                        f64[0] = np.float64(v)
                        v = i64[0]
                    ovc = _emit_v(c, v, cbase, ccap, cnt, cval, cvalid, sink, ovc)
                pc += 1
            elif o == OP_BYTES:
                w = code[pc, 2]
                if w < 0:
                    if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                        u = np.uint64(buf[pos])
                        pos += 1
                    else:
                        u, pos, err = _varint(buf, pos, end)
                    if err:
                        break
                    ln = _zigzag(u)
                    if ln < 0 or ln > end - pos:
                        err = E_LENGTH
                        break
                else:
                    ln = w
                    if pos + ln > end:
                        err = E_TRUNC
                        break
                if c >= 0:
                    i = cnt[c]  # _emit_bytes by hand: a call with this many arrays costs ~13 ns
                    j = cbase[c] + i
                    if i >= ccap[c]:
                        j = sink
                        ovc = c
                    cvalid[j] = 1
                    clen[j] = ln
                    cnt[c] = i + 1
                    b = bcnt[c]
                    if b + ln > bcap[c]:
                        ovb = c
                    else:
                        _memcpy(bdst + bbase[c] + b, bsrc + pos, ln)
                        bcnt[c] = b + ln
                pos += ln
                pc += 1
            elif o == OP_REC:
                ovc = _emit_v(c, code[pc, 2], cbase, ccap, cnt, cval, cvalid, sink, ovc)
                pc += 1
            elif o == OP_UNION:
                if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                    u = np.uint64(buf[pos])
                    pos += 1
                else:
                    u, pos, err = _varint(buf, pos, end)
                if err:
                    break
                if u >= _U32:
                    err = E_INT32
                    break
                b = _zigzag(u)
                base = code[pc, 2]
                nb = aux[base]
                if b < 0 or b >= nb:
                    err = E_BRANCH
                    break
                j = base + 1 + 3 * b
                if aux[j + 2]:
                    err = aux[j + 2]
                    break
                nxt = aux[j]
                if c >= 0:  # struct-form union: the chosen member, the others null
                    m = aux[j + 1]
                    ovc = _emit(c, 1 if m >= 0 else 0, 0, 0,
                                cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                    mb = base + 1 + 3 * nb
                    for k in range(aux[mb]):
                        if k != m:
                            mc = aux[mb + 1 + k]
                            for q in range(fill0[mc], fill1[mc]):
                                ovc = _emit(fills[q], 0, 0, 0,
                                            cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                if nxt >= 0:
                    pc = nxt
                else:
                    if nxt == -2:  # a null branch: null-fill its column
                        nc = aux[j + 1]
                        for q in range(fill0[nc], fill1[nc]):
                            ovc = _emit(fills[q], 0, 0, 0,
                                        cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                    pc = code[pc, 3]
            elif o == OP_NEXT:
                t = sp - 1
                frem[t] -= 1
                fcnt[t] += 1
                a = code[pc, 2]  # the collection's ARRAY
                if frem[t] == 0:  # the next block
                    if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                        u = np.uint64(buf[pos])
                        pos += 1
                    else:
                        u, pos, err = _varint(buf, pos, end)
                    if err:
                        break
                    k = _zigzag(u)
                    if k < 0:
                        if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call  # the block's byte size
                            u = np.uint64(buf[pos])
                            pos += 1
                        else:
                            u, pos, err = _varint(buf, pos, end)
                        if err:
                            break
                        k = -k
                        if k < 0:
                            err = E_COUNT
                            break
                    ms = code[a, 2]
                    if ms > 0 and k > (end - pos) // ms:
                        err = E_COUNT
                        break
                    if k > cap_items - items:
                        err = E_CAP
                        break
                    items += k
                    if k == 0:
                        fc = fcol[t]
                        if fc >= 0:
                            i = fidx[t]
                            cval[cbase[fc] + i if i < ccap[fc] else sink] = fcnt[t]
                        sp -= 1
                        pc += 1
                        continue
                    frem[t] = k
                if code[a, 5]:  # a map entry: its key first
                    if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                        u = np.uint64(buf[pos])
                        pos += 1
                    else:
                        u, pos, err = _varint(buf, pos, end)
                    if err:
                        break
                    ln = _zigzag(u)
                    if ln < 0 or ln > end - pos:
                        err = E_LENGTH
                        break
                    kc = code[a, 4]
                    if kc >= 0:
                        i = cnt[kc]  # _emit_bytes by hand: a call with this many arrays costs ~13 ns
                        j = cbase[kc] + i
                        if i >= ccap[kc]:
                            j = sink
                            ovc = kc
                        cvalid[j] = 1
                        clen[j] = ln
                        cnt[kc] = i + 1
                        b = bcnt[kc]
                        if b + ln > bcap[kc]:
                            ovb = kc
                        else:
                            _memcpy(bdst + bbase[kc] + b, bsrc + pos, ln)
                            bcnt[kc] = b + ln
                    pos += ln
                pc = a + 1
            elif o == OP_ARRAY:
                if sp >= MAX_NESTING:
                    err = E_DEEP
                    break
                if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                    u = np.uint64(buf[pos])
                    pos += 1
                else:
                    u, pos, err = _varint(buf, pos, end)
                if err:
                    break
                k = _zigzag(u)
                if k < 0:
                    if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call  # the block's byte size
                        u = np.uint64(buf[pos])
                        pos += 1
                    else:
                        u, pos, err = _varint(buf, pos, end)
                    if err:
                        break
                    k = -k
                    if k < 0:
                        err = E_COUNT
                        break
                ms = code[pc, 2]
                if ms > 0 and k > (end - pos) // ms:
                    err = E_COUNT
                    break
                if k > cap_items - items:
                    err = E_CAP
                    break
                items += k
                i = 0
                if c >= 0:
                    i = cnt[c]
                    ovc = _emit_v(c, 0, cbase, ccap, cnt, cval, cvalid, sink, ovc)
                if k == 0:
                    pc = code[pc, 3]
                    continue
                fkind[sp] = 0
                frem[sp] = k
                fcnt[sp] = 0
                fcol[sp] = c
                fidx[sp] = i
                sp += 1
                if code[pc, 5]:  # a map entry: its key first
                    if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                        u = np.uint64(buf[pos])
                        pos += 1
                    else:
                        u, pos, err = _varint(buf, pos, end)
                    if err:
                        break
                    ln = _zigzag(u)
                    if ln < 0 or ln > end - pos:
                        err = E_LENGTH
                        break
                    kc = code[pc, 4]
                    if kc >= 0:
                        i = cnt[kc]  # _emit_bytes by hand: a call with this many arrays costs ~13 ns
                        j = cbase[kc] + i
                        if i >= ccap[kc]:
                            j = sink
                            ovc = kc
                        cvalid[j] = 1
                        clen[j] = ln
                        cnt[kc] = i + 1
                        b = bcnt[kc]
                        if b + ln > bcap[kc]:
                            ovb = kc
                        else:
                            _memcpy(bdst + bbase[kc] + b, bsrc + pos, ln)
                            bcnt[kc] = b + ln
                    pos += ln
                pc += 1
            elif o == OP_FLOATNUM:
                w = code[pc, 2]
                if pos + w > end:
                    err = E_TRUNC
                    break
                bits = np.uint64(0)
                for k in range(w):
                    bits |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
                pos += w
                if c >= 0:
                    v = np.int64(bits)
                    if w == 4 and code[pc, 5] != K_F32:
                        u32[0] = np.uint32(bits)
                        f64[0] = np.float64(f32[0])
                        v = i64[0]
                    ovc = _emit_v(c, v, cbase, ccap, cnt, cval, cvalid, sink, ovc)
                pc += 1
            elif o == OP_HALT:
                break
            elif o == OP_JMP:
                pc = code[pc, 2]
            elif o == OP_NULL:
                for q in range(fill0[c], fill1[c]):
                    ovc = _emit(fills[q], 0, 0, 0, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                pc += 1
            elif o == OP_BOOL:
                if pos >= end:
                    err = E_TRUNC
                    break
                v = buf[pos]
                pos += 1
                if v > 1:
                    err = E_BOOL
                    break
                if c >= 0:
                    ovc = _emit_v(c, v, cbase, ccap, cnt, cval, cvalid, sink, ovc)
                pc += 1
            elif o == OP_ENUM:
                if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                    u = np.uint64(buf[pos])
                    pos += 1
                else:
                    u, pos, err = _varint(buf, pos, end)
                if err:
                    break
                if u >= _U32:
                    err = E_INT32
                    break
                v = _zigzag(u)
                if v < 0 or v >= code[pc, 2]:
                    err = E_ENUM_RANGE
                    break
                v = aux[code[pc, 3] + v]
                if v < 0:
                    err = E_ENUM_UNKNOWN
                    break
                if c >= 0:
                    ovc = _emit_v(c, v, cbase, ccap, cnt, cval, cvalid, sink, ovc)
                pc += 1
            elif o == OP_VARSKIP:
                if pos < end and buf[pos] < 0x80:  # a one-byte varint: no call
                    u = np.uint64(buf[pos])
                    pos += 1
                else:
                    u, pos, err = _varint(buf, pos, end)
                if err:
                    break
                pc += 1
            elif o == OP_FIXSKIP:
                pos += code[pc, 2]
                if pos > end:
                    err = E_TRUNC
                    break
                pc += 1
            elif o == OP_TOUNION:
                m = code[pc, 2]
                ovc = _emit(c, 1 if m >= 0 else 0, 0, 0,
                            cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                mb = code[pc, 3]
                for k in range(aux[mb]):
                    if k != m:
                        mc = aux[mb + 1 + k]
                        for q in range(fill0[mc], fill1[mc]):
                            ovc = _emit(fills[q], 0, 0, 0,
                                        cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                pc += 1
            elif o == OP_CONST:  # a reader default the writer lacks: a number or enum index
                ovc = _emit_v(c, code[pc, 2], cbase, ccap, cnt, cval, cvalid, sink, ovc)
                pc += 1
            elif o == OP_CBYTES:  # a string/bytes default: consts[code[pc, 2]:][:code[pc, 3]]
                ln = code[pc, 3]
                i = cnt[c]
                j = cbase[c] + i
                if i >= ccap[c]:
                    j = sink
                    ovc = c
                cvalid[j] = 1
                clen[j] = ln
                cnt[c] = i + 1
                b = bcnt[c]
                if b + ln > bcap[c]:
                    ovb = c
                else:
                    _memcpy(bdst + bbase[c] + b, csrc + code[pc, 2], ln)
                    bcnt[c] = b + ln
                pc += 1
            elif o == OP_CALL:
                if sp >= MAX_NESTING:
                    err = E_DEEP
                    break
                fkind[sp] = 1
                fpc[sp] = pc + 1
                sp += 1
                pc = code[pc, 2]
            elif o == OP_RET:
                sp -= 1
                pc = fpc[sp]
            else:  # OP_ERROR
                err = code[pc, 2]
                break
        if err == 0 and pos != end:
            err = E_TRAILING
        if err:  # roll the row back and write a null value in its place
            _copy(cnt, snap)
            _copy(bcnt, bsnap)
            ovc = -1
            ovb = -1
            err_out[r] = err
            for q in range(fill0[root_col], fill1[root_col]):
                ovc = _emit(fills[q], 0, 0, 0, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
        if ovc >= 0 or ovb >= 0:  # out of room: roll back, let the caller grow the column
            _copy(cnt, snap)
            _copy(bcnt, bsnap)
            err_out[r] = 0
            return r, ovc, ovb
    return n, -1, -1
