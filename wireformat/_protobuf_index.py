"""Confluent Protobuf message-index array, between the id header and the payload.

======================  ==============================================================
bytes                   meaning
======================  ==============================================================
0x00                    shorthand for ``[0]`` (the first message of the .proto file)
varint(zz(n)) ...       n > 0: count, then n indexes; each a zigzag LEB128 varint
                        (7 bits per byte, low bits first, 0x80 = more bytes follow)
======================  ==============================================================

The path ``[i, j, ...]`` names the message: top-level message i, its nested message j, ...
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from wireformat._arrowbuf import validity_buffer
from wireformat._errors import LimitExceededError
from wireformat._framing import ErrorCode, Limits

__all__ = ["read_varints", "zigzag", "parse_indexes", "build_index_lists"]

_INT32_MAX = (1 << 31) - 1


def read_varints(data: np.ndarray, pos: np.ndarray, end: np.ndarray, max_bytes: int):
    """One unsigned LEB128 varint at each ``pos`` (< ``end``), at most ``max_bytes`` long.

    Returns ``(value uint64, position after it, ok)``; bits past 64 are dropped.
    """
    m = len(pos)
    val = np.zeros(m, dtype=np.uint64)
    pos = pos.copy()
    done = np.zeros(m, dtype=bool)
    bad = np.zeros(m, dtype=bool)
    for k in range(max_bytes):
        live = ~(done | bad)
        if not live.any():
            break
        bad |= live & (pos >= end)
        live &= ~bad
        b = data.take(pos, mode="clip")
        val[live] |= (b[live] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        pos[live] += 1
        done |= live & (b < 0x80)
    return val, pos, done & ~bad


def zigzag(v: np.ndarray) -> np.ndarray:
    """Zigzag-decode uint64 values into int64."""
    return (v >> np.uint64(1)).astype(np.int64) ^ -(v & np.uint64(1)).astype(np.int64)


def parse_indexes(data: np.ndarray, pos: np.ndarray, end: np.ndarray, limits: Limits):
    """Parse the index array at ``pos`` for m rows.

    Returns
    -------
    codes : numpy.ndarray[uint8]
        Error code per row (0 = OK).
    new_pos : numpy.ndarray[int64]
        Position after the array.
    lengths : numpy.ndarray[int64]
        Index count per row (``[0]`` counts 1).
    slots : list[tuple[numpy.ndarray, int, numpy.ndarray]]
        ``(rows, slot j, int32 values)`` for the non-zero indexes; zero-filled otherwise.
    """
    m = len(pos)
    codes = np.zeros(m, dtype=np.uint8)
    avail = pos < end
    codes[~avail] = ErrorCode.BAD_VARINT
    first = data.take(pos, mode="clip")
    # Common case, fully vectorized: one 0x00 byte meaning [0].
    zero = avail & (first == 0)
    lengths = zero.astype(np.int64)
    new_pos = np.where(zero, pos + 1, pos)
    slots: list = []
    gen = np.flatnonzero(avail & (first != 0))
    if not len(gen):
        return codes, new_pos, lengths, slots
    # Other rows: a vectorized multi-pass over only those rows -- one numpy pass per
    # varint byte per index slot, so at most max_message_indexes * max_varint_bytes passes.
    v, cur, ok = read_varints(data, pos[gen], end[gen], limits.max_varint_bytes)
    count = zigzag(v)
    codes[gen[~ok]] = ErrorCode.BAD_VARINT
    neg = ok & (count < 0)
    codes[gen[neg]] = ErrorCode.BAD_MESSAGE_INDEX
    many = ok & (count > limits.max_message_indexes)
    codes[gen[many]] = ErrorCode.TOO_MANY_INDEXES
    alive = ok & ~neg & ~many
    count = np.where(alive, count, 0)
    lengths[gen[alive]] = np.maximum(count[alive], 1)  # a count of 0 also means [0]
    gend = end[gen]
    for j in range(int(count.max(initial=0))):
        act = np.flatnonzero(alive & (count > j))
        if not len(act):
            break
        v, p, okj = read_varints(data, cur[act], gend[act], limits.max_varint_bytes)
        idx = zigzag(v)
        in_range = okj & (idx >= 0) & (idx <= _INT32_MAX)
        codes[gen[act[~okj]]] = ErrorCode.BAD_VARINT
        codes[gen[act[okj & ~in_range]]] = ErrorCode.BAD_MESSAGE_INDEX
        alive[act[~in_range]] = False
        good = act[in_range]
        cur[good] = p[in_range]
        slots.append((gen[good], j, idx[in_range].astype(np.int32)))
    new_pos[gen[alive]] = cur[alive]
    return codes, new_pos, lengths, slots


def build_index_lists(n: int, rows: np.ndarray, lengths: np.ndarray, slots, ok: np.ndarray) -> pa.Array:
    """``list<int32>`` column: row ``rows[k]`` gets ``lengths[k]`` indexes; null where not ``ok``."""
    full = np.zeros(n, dtype=np.int64)
    full[rows] = lengths
    full[~ok] = 0
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(full, out=offsets[1:])
    values = np.zeros(int(offsets[-1]), dtype=np.int32)
    for srows, j, vals in slots:
        keep = ok[srows]
        values[offsets[srows[keep]] + j] = vals[keep]
    if offsets[-1] >= (1 << 31):
        raise LimitExceededError("over 2**31 message indexes in one batch")
    return pa.Array.from_buffers(pa.list_(pa.int32()), n,
                                 [validity_buffer(ok), pa.py_buffer(offsets.astype(np.int32))],
                                 children=[pa.array(values, type=pa.int32())])
