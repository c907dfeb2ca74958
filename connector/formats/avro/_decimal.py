"""Avro decimals, both ways: the decoder's handler (big-endian two's-complement unscaled bytes →
a decimal128 value), the encoder's (decimal128 → bytes or fixed), and the Arrow array of a
decoded column. A change to how decimals are read or written is made here; the schema
mapping (``_schema``: ``decimal128(precision, scale)``) and one opcode each in ``_opcodes``
(``Op.DECIMAL``, ``EncOp.DECIMAL``) complete the type.

A decimal128 is two words: ``lo`` and ``hi`` (int64 bit patterns, little-endian order in
Arrow's buffer). A value must have ``|unscaled| < 10**precision`` (precision ≤ 38: within 128
bits); a longer byte string than 16 is read when its leading bytes only extend the sign.

Compiled with numba (imported lazily, like the kernels that call these handlers); the handlers
allocate nothing and are inlined into their kernel by LLVM.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from numba.cpython.unsafe.numbers import leading_zeros as _leading_zeros

from connector.formats.avro._opcodes import EncErr
from connector.formats.core.kernels import helper

__all__ = ["read_decimal", "write_decimal", "decimal_array"]

leading_zeros: Any = _leading_zeros  # an intrinsic: called without its typing context (Any for mypy)

_U8 = np.uint64(8)
_U56 = np.uint64(56)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
# 10**p as (high, low) unsigned words, p = 0 .. 38: the bound of a precision-p value
_P10 = np.array([[(10 ** p) >> 64, (10 ** p) & ((1 << 64) - 1)] for p in range(39)], np.uint64)


@helper
def _fits(hi, lo, precision):
    """``|hi:lo| < 10**precision`` for the two's-complement 128-bit ``hi:lo`` (uint64 words)."""
    if hi >> np.uint64(63):  # negative: |u| = -u
        lo = (lo ^ _ALL) + _ONE
        hi = (hi ^ _ALL) + (_ONE if lo == _ZERO else _ZERO)
    lim_hi, lim_lo = _P10[precision, 0], _P10[precision, 1]
    return hi < lim_hi or (hi == lim_hi and lo < lim_lo)


@helper
def read_decimal(buf, s, n, precision):
    """The ``n`` big-endian bytes at ``buf[s:]`` as (low word, high word, within precision);
    (0, 0, False) past the precision."""
    if n > 16:  # leading bytes beyond 16 may only extend the sign, else |u| ≥ 2**127
        sign = 0xFF if buf[s + n - 16] >= 0x80 else 0
        for k in range(s, s + n - 16):
            if buf[k] != sign:
                return np.int64(0), np.int64(0), False
        s += n - 16
        n = 16
    neg = n > 0 and buf[s] >= 0x80
    hi = _ALL if neg else _ZERO
    lo = _ALL if neg else _ZERO
    for j in range(s, s + n):
        hi = (hi << _U8) | (lo >> _U56)
        lo = (lo << _U8) | np.uint64(buf[j])
    if not _fits(hi, lo, precision):
        return np.int64(0), np.int64(0), False
    return np.int64(lo), np.int64(hi), True


@helper
def _be_byte(hi, lo, j):
    """Byte ``j`` (0: the most significant) of the 128-bit two's complement ``hi:lo``."""
    if j < 8:
        return (hi >> (8 * (7 - j))) & 0xFF
    return (lo >> (8 * (15 - j))) & 0xFF


@helper
def _bitlen(hi, lo):
    """Bit length of the unsigned 128-bit ``hi:lo`` (int64 bit patterns)."""
    if hi != 0:
        return 128 - np.int64(leading_zeros(np.uint64(hi)))
    if lo != 0:
        return 64 - np.int64(leading_zeros(np.uint64(lo)))
    return 0


@helper
def write_decimal(out, pos, cap, hi, lo, size, precision):
    """Write the decimal128 ``hi:lo`` (int64 words) at ``out[pos]``: as Avro ``bytes`` when
    ``size`` < 0 (fastavro's width, ``(bit_length(|u|) + 8) // 8``), else as ``fixed(size)``;
    ``precision`` 0: unchecked. Returns (new position, error code)."""
    neg = hi < 0
    ahi, alo = hi, lo
    if neg:  # |u| = -u in two's complement
        alo = ~lo + 1
        ahi = ~hi + (1 if alo == 0 else 0)
    if precision > 0 and not _fits(np.uint64(hi), np.uint64(lo), precision):
        return pos, EncErr.PRECISION
    if size < 0:
        width = (_bitlen(ahi, alo) + 8) // 8
        if pos + width + 10 > cap:
            return pos, EncErr.ROOM
        z = np.uint64(width) << _ONE  # zigzag of a small non-negative length: one byte
        out[pos] = z
        pos += 1
        for j in range(16 - width, 16):
            out[pos] = _be_byte(hi, lo, j)
            pos += 1
        return pos, 0
    if pos + size + 16 > cap:
        return pos, EncErr.ROOM
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
            return pos, EncErr.FIXED_DECIMAL
    if (_be_byte(hi, lo, 16 - size) >= 0x80) != neg:
        return pos, EncErr.FIXED_DECIMAL
    for j in range(16 - size, 16):
        out[pos] = _be_byte(hi, lo, j)
        pos += 1
    return pos, 0


def decimal_array(typ: pa.DataType, lo: np.ndarray, hi: np.ndarray, bitmap, nulls: int) -> pa.Array:
    """The decimal128 array of a decoded column: each value's two words side by side."""
    m = len(lo)
    words = np.empty((m, 2), np.int64)
    words[:, 0] = lo
    words[:, 1] = hi
    return pa.Array.from_buffers(typ, m, [bitmap, pa.py_buffer(words)], null_count=nulls)
