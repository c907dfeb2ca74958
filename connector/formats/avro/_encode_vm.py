"""The compiled Avro encoder: one pass over the rows, each row's Avro bytes (after the framing
header) appended to one output buffer, running an :class:`~._encode_program.EncodeProgram`.

Imported lazily (numba is slow to import); compiled once and cached on disk: the kernel is an
interpreter, so no schema is compiled to machine code.

The kernel reads the Arrow buffers in place: column ``c`` of the program is ``ctab[c]`` =
(validity bitmap address, 0 when the column has no null, -1 when every value is null; the
array's offset; its first and second buffer addresses: values, or offsets and data). Addresses
are read inside compiled code by small intrinsics (loads and ``memcpy``). A row that fails writes nothing and
records (error code, instruction, index in the failing column); a row that does not fit in the
output stops the kernel, which the caller calls again from that row with a larger buffer.
Nesting is bounded by the program (one frame per collection of the tree).
"""
from typing import Any

import numpy as np
from numba import types
from numba.core import cgutils
from numba.cpython.unsafe.numbers import leading_zeros as _leading_zeros
from numba.extending import intrinsic

from connector.formats.core import njit
from connector.formats.avro._encode_program import (
    OP_HALT, OP_REC, OP_BOOL, OP_INT, OP_F32, OP_F64, OP_BYTES, OP_FIXED, OP_ENUM, OP_DECIMAL,
    OP_CONST, OP_OPT, OP_ULONG, OP_UDOUBLE, OP_USTRUCT, OP_JMP, OP_ARRAY, OP_NEXT,
    E_NULL, E_NULL_UNION, E_SEVERAL, E_ENUM, E_FIXED, E_UUID, E_PRECISION, E_FIXED_DECIMAL, E_ROOM,
)

__all__ = ["encode_rows"]

_helper = njit(nogil=True, _nrt=False)
_LOW57 = 0x01FFFFFFFFFFFFFF  # a logical shift right by 7 of an int64, as a mask


def _loader(nbtype):
    @intrinsic
    def load(typingctx, addr):
        """The ``nbtype`` value at an int64 address (compiled code only)."""
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], context.get_value_type(nbtype).as_pointer())
            return builder.load(ptr)
        return nbtype(addr), codegen
    return load


_ld_u8, _ld_i32, _ld_i64 = _loader(types.uint8), _loader(types.int32), _loader(types.int64)


def _memcpy_typer(typingctx, dst, src, n):
    """Copy ``n`` bytes between int64 addresses (compiled code only)."""
    def codegen(context, builder, signature, args):
        bp = context.get_value_type(types.uint8).as_pointer()
        cgutils.raw_memcpy(builder, builder.inttoptr(args[0], bp), builder.inttoptr(args[1], bp), args[2], 1)
        return context.get_dummy_value()
    return types.none(dst, src, n), codegen


_memcpy: Any = intrinsic(_memcpy_typer)
leading_zeros: Any = _leading_zeros  # intrinsics are called without the typing context: Any for mypy


@_helper
def _u8(addr, i):
    return np.int64(_ld_u8(addr + i))


@_helper
def _i32(addr, i):
    return np.int64(_ld_i32(addr + 4 * i))


@_helper
def _i64(addr, i):
    return _ld_i64(addr + 8 * i)


@_helper
def _valid(ctab, c, i):
    a = ctab[c, 0]
    if a == 0:
        return True
    if a == -1:
        return False
    p = i + ctab[c, 1]
    return (_u8(a, p >> 3) >> (p & 7)) & 1 == 1


@_helper
def _varint(out, pos, z):
    """LEB128 of ``z`` (an int64 read as unsigned) at ``pos``; the next position."""
    while z & -128:
        out[pos] = (z & 0x7F) | 0x80
        pos += 1
        z = (z >> 7) & _LOW57
    out[pos] = z
    return pos + 1


@_helper
def _zigzag(v):
    return (v << 1) ^ (v >> 63)


@_helper
def _copy(out, pos, addr, n):
    _memcpy(out.ctypes.data + pos, addr, n)
    return pos + n


@_helper
def _hex(b):
    return (48 <= b <= 57) or (65 <= b <= 70) or (97 <= b <= 102)


@_helper
def _is_uuid(addr, n):
    if n != 36:
        return False
    for k in range(36):
        b = _u8(addr, k)
        if k == 8 or k == 13 or k == 18 or k == 23:
            if b != 45:
                return False
        elif not _hex(b):
            return False
    return True


@_helper
def _be_byte(hi, lo, j):
    """Byte ``j`` (0: the most significant) of the 128-bit two's complement ``hi:lo``."""
    if j < 8:
        return (hi >> (8 * (7 - j))) & 0xFF
    return (lo >> (8 * (15 - j))) & 0xFF


@_helper
def _bitlen(hi, lo):
    """Bit length of the unsigned 128-bit ``hi:lo``."""
    if hi != 0:
        return 128 - np.int64(leading_zeros(np.uint64(hi)))
    if lo != 0:
        return 64 - np.int64(leading_zeros(np.uint64(lo)))
    return 0


@_helper
def _ult(ahi, alo, bhi, blo):
    """Unsigned 128-bit ``a < b`` (halves as int64 bit patterns)."""
    x = ahi ^ (-(1 << 63))  # flip the sign bit: signed compare = unsigned compare
    y = bhi ^ (-(1 << 63))
    if x != y:
        return x < y
    return (alo ^ (-(1 << 63))) < (blo ^ (-(1 << 63)))


@_helper
def _decimal(out, pos, cap, hi, lo, size, aux, at):
    """Write a decimal128 (``hi:lo``); (new position, error code)."""
    neg = hi < 0
    ahi, alo = hi, lo
    if neg:  # |u| = -u in two's complement
        alo = ~lo + 1
        ahi = ~hi + (1 if alo == 0 else 0)
    if at >= 0 and not _ult(ahi, alo, aux[at], aux[at + 1]):
        return pos, E_PRECISION
    if size < 0:  # bytes: fastavro's width, (bit_length(|u|) + 8) // 8
        width = (_bitlen(ahi, alo) + 8) // 8
        if pos + width + 10 > cap:
            return pos, E_ROOM
        pos = _varint(out, pos, _zigzag(width))
        for j in range(16 - width, 16):
            out[pos] = _be_byte(hi, lo, j)
            pos += 1
        return pos, 0
    if pos + size + 16 > cap:
        return pos, E_ROOM
    sign = 0xFF if neg else 0
    if size >= 16:
        for _ in range(size - 16):
            out[pos] = sign
            pos += 1
        for j in range(16):
            out[pos] = _be_byte(hi, lo, j)
            pos += 1
        return pos, 0
    for j in range(16 - size):
        if _be_byte(hi, lo, j) != sign:
            return pos, E_FIXED_DECIMAL
    if (_be_byte(hi, lo, 16 - size) >= 0x80) != neg:
        return pos, E_FIXED_DECIMAL
    for j in range(16 - size, 16):
        out[pos] = _be_byte(hi, lo, j)
        pos += 1
    return pos, 0


@_helper
def _enum(ctab, c, p, aux, at, consts):
    """Index of the string at ``p`` of column ``c`` among the enum's symbols, or -1."""
    o0 = _i32(ctab[c, 2], p)
    n = _i32(ctab[c, 2], p + 1) - o0
    data = ctab[c, 3] + o0
    for s in range(aux[at]):
        off = aux[at + 1 + 2 * s]
        if aux[at + 2 + 2 * s] != n:
            continue
        same = True
        for k in range(n):
            if _u8(data, k) != consts[off + k]:
                same = False
                break
        if same:
            return s
    return -1


@njit(nogil=True, _nrt=False)
def encode_rows(code, aux, consts, ctab, prefix, n, row, out, offs, ecode, epc, epos, stk):
    """Rows ``row`` .. ``n``: ``offs[r + 1]`` ends row ``r``'s bytes in ``out`` (a null or
    failed row is empty; failures in ``ecode``/``epc``/``epos``). Returns the row it stopped
    at (``n``: done; else that row did not fit: grow ``out`` and call again from it)."""
    cap = len(out)
    plen = len(prefix)
    pos = np.int64(offs[row])
    while row < n:
        start = pos
        if not _valid(ctab, 0, row):  # a tombstone
            offs[row + 1] = pos
            row += 1
            continue
        if pos + plen > cap:
            return row
        for k in range(plen):
            out[pos + k] = prefix[k]
        pos += plen
        pc = 0
        idx = np.int64(row)
        sp = 0
        err = 0
        at = idx
        while True:
            op = code[pc, 0]
            c = code[pc, 1]
            if op == OP_HALT:
                break
            if c >= 0:
                at = idx
                p = idx + ctab[c, 1]
            else:
                p = 0
            if op == OP_OPT:
                if pos + 10 > cap:
                    err = E_ROOM
                    break
                if _valid(ctab, c, idx):
                    pos = _varint(out, pos, 2 * code[pc, 3])
                    pc += 1
                else:
                    if code[pc, 2] < 0:
                        err = E_NULL_UNION
                        break
                    pos = _varint(out, pos, 2 * code[pc, 2])
                    pc = code[pc, 4]
                continue
            if op == OP_USTRUCT:
                if pos + 10 > cap:
                    err = E_ROOM
                    break
                a = code[pc, 3]
                chosen = -1
                if _valid(ctab, c, idx):
                    for m in range(aux[a]):
                        if _valid(ctab, aux[a + 1 + 3 * m], idx):
                            if chosen >= 0:
                                err = E_SEVERAL
                                break
                            chosen = m
                    if err:
                        break
                if chosen < 0:
                    if code[pc, 2] < 0:
                        err = E_NULL_UNION
                        break
                    pos = _varint(out, pos, 2 * code[pc, 2])
                    pc = code[pc, 4]
                else:
                    pos = _varint(out, pos, 2 * aux[a + 2 + 3 * chosen])
                    pc = aux[a + 3 + 3 * chosen]
                continue
            if op == OP_ULONG or op == OP_UDOUBLE:
                if pos + 20 > cap:
                    err = E_ROOM
                    break
                if not _valid(ctab, c, idx):
                    if code[pc, 2] < 0:
                        err = E_NULL_UNION
                        break
                    pos = _varint(out, pos, 2 * code[pc, 2])
                elif op == OP_ULONG:
                    v = _i64(ctab[c, 2], p)
                    fits = -(1 << 31) <= v < (1 << 31)
                    pos = _varint(out, pos, 2 * (code[pc, 3] if fits else code[pc, 4]))
                    pos = _varint(out, pos, _zigzag(v))
                else:
                    pos = _varint(out, pos, 2 * code[pc, 3])
                    pos = _copy(out, pos, ctab[c, 2] + 8 * p, 8)
                pc += 1
                continue
            if op == OP_JMP:
                pc = code[pc, 2]
                continue
            if op == OP_CONST:
                ln = code[pc, 3]
                if pos + ln > cap:
                    err = E_ROOM
                    break
                for k in range(ln):
                    out[pos + k] = consts[code[pc, 2] + k]
                pos += ln
                pc += 1
                continue
            if op == OP_NEXT:
                a = code[pc, 2]
                f = sp - 1
                cur = stk[f, 2] + 1
                if cur < stk[f, 3]:
                    stk[f, 2] = cur
                    idx = cur
                    pc = a + 1
                    continue
                if pos + 1 > cap:
                    err = E_ROOM
                    break
                out[pos] = 0
                pos += 1
                idx = stk[f, 1]
                sp = f
                pc += 1
                continue
            # a value of column c: null is an error here (unions handled their nulls)
            if not _valid(ctab, c, idx):
                err = E_NULL
                break
            if op == OP_REC:
                pc += 1
                continue
            if op == OP_INT:
                if pos + 10 > cap:
                    err = E_ROOM
                    break
                if code[pc, 2] == 4:
                    v = _i32(ctab[c, 2], p)
                else:
                    v = _i64(ctab[c, 2], p)
                    if code[pc, 3]:
                        v = v // 1000
                pos = _varint(out, pos, _zigzag(v))
            elif op == OP_BYTES or op == OP_FIXED or op == OP_ENUM:
                o0 = _i32(ctab[c, 2], p)
                ln = _i32(ctab[c, 2], p + 1) - o0
                if pos + ln + 10 > cap:
                    err = E_ROOM
                    break
                if op == OP_ENUM:
                    s = _enum(ctab, c, p, aux, code[pc, 2], consts)
                    if s < 0:
                        err = E_ENUM
                        break
                    pos = _varint(out, pos, 2 * s)
                else:
                    if op == OP_FIXED:
                        if ln != code[pc, 2]:
                            err = E_FIXED
                            break
                    else:
                        if code[pc, 2] and not _is_uuid(ctab[c, 3] + o0, ln):
                            err = E_UUID
                            break
                        pos = _varint(out, pos, 2 * ln)
                    pos = _copy(out, pos, ctab[c, 3] + o0, ln)
            elif op == OP_F64:
                if pos + 8 > cap:
                    err = E_ROOM
                    break
                pos = _copy(out, pos, ctab[c, 2] + 8 * p, 8)
            elif op == OP_F32:
                if pos + 4 > cap:
                    err = E_ROOM
                    break
                pos = _copy(out, pos, ctab[c, 2] + 4 * p, 4)
            elif op == OP_BOOL:
                if pos + 1 > cap:
                    err = E_ROOM
                    break
                out[pos] = (_u8(ctab[c, 2], p >> 3) >> (p & 7)) & 1
                pos += 1
            elif op == OP_DECIMAL:
                pos, err = _decimal(out, pos, cap, _i64(ctab[c, 2], 2 * p + 1), _i64(ctab[c, 2], 2 * p),
                                    code[pc, 2], aux, code[pc, 3])
                if err:
                    break
            elif op == OP_ARRAY:
                o0 = _i32(ctab[c, 2], p)
                cnt = _i32(ctab[c, 2], p + 1) - o0
                if pos + 10 > cap:
                    err = E_ROOM
                    break
                if cnt == 0:
                    out[pos] = 0
                    pos += 1
                    pc = code[pc, 2]
                    continue
                pos = _varint(out, pos, 2 * cnt)
                stk[sp, 0] = pc
                stk[sp, 1] = idx
                stk[sp, 2] = o0
                stk[sp, 3] = o0 + cnt
                sp += 1
                idx = o0
            pc += 1
        if err == E_ROOM:
            return row
        if err:
            ecode[row] = err
            epc[row] = pc
            epos[row] = at
            pos = start
        offs[row + 1] = pos
        row += 1
    return row
