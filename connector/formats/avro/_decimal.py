"""Avro decimals (big-endian two's-complement unscaled bytes) into Arrow decimal128 values, in
one compiled pass (numba, imported lazily like the VM).

A value of at most 16 bytes is sign-extended into a 128-bit integer (two uint64 words), its
magnitude checked against ``10**precision`` and stored little-endian; a value past the precision
is a zero with its row marked. Longer values (sign extension beyond 16 bytes: rare) are
converted by Python's ``int`` one by one.
"""
from __future__ import annotations

import numpy as np

from connector.formats.core import njit

__all__ = ["decimal_column"]

_U8 = np.uint64(8)
_U56 = np.uint64(56)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(nogil=True)
def _words(buf, starts, lens, lim_hi, lim_lo, out, bad):  # pragma: no cover - compiled
    for i in range(len(starts)):
        n = lens[i]
        if n > 16:
            continue  # the caller converts it
        s = starts[i]
        neg = n > 0 and buf[s] >= 0x80
        hi = _ALL if neg else _ZERO
        lo = _ALL if neg else _ZERO
        for j in range(n):
            hi = (hi << _U8) | (lo >> _U56)
            lo = (lo << _U8) | np.uint64(buf[s + j])
        if neg:
            alo = (lo ^ _ALL) + _ONE
            ahi = (hi ^ _ALL) + (_ONE if alo == _ZERO else _ZERO)
        else:
            alo = lo
            ahi = hi
        if ahi < lim_hi or (ahi == lim_hi and alo < lim_lo):
            out[2 * i] = lo
            out[2 * i + 1] = hi
        else:
            bad[i] = True
            out[2 * i] = _ZERO
            out[2 * i + 1] = _ZERO


def decimal_column(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, precision: int):
    """Big-endian two's-complement unscaled values → (16-byte little-endian decimal128 values,
    rows beyond ``precision``).

    >>> out, bad = decimal_column(np.array([0x01, 0x00, 0xFF, 0x7F], np.uint8),
    ...                           np.array([0, 2, 3]), np.array([2, 1, 1]), 3)
    >>> np.frombuffer(out, "<i8")[::2].tolist(), bad.tolist()
    ([256, -1, 127], [False, False, False])
    >>> decimal_column(np.array([0x03, 0xE8], np.uint8), np.array([0]), np.array([2]), 3)[1].tolist()
    [True]
    """
    m = len(starts)
    limit = 10 ** precision
    out = np.zeros(2 * m, np.uint64)
    bad = np.zeros(m, bool)
    if m:
        _words(buf if len(buf) else np.zeros(1, np.uint8), np.ascontiguousarray(starts, np.int64),
               np.ascontiguousarray(lens, np.int64), np.uint64(limit >> 64),
               np.uint64(limit & ((1 << 64) - 1)), out, bad)
    for i in np.flatnonzero(lens > 16).tolist():
        v = int.from_bytes(buf[starts[i]:starts[i] + lens[i]].tobytes(), "big", signed=True)
        if abs(v) < limit:  # precision <= 38: within 128 bits
            w = v % (1 << 128)
            out[2 * i], out[2 * i + 1] = np.uint64(w & ((1 << 64) - 1)), np.uint64(w >> 64)
        else:
            bad[i] = True
    return out.tobytes(), bad
