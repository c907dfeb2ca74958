"""Checks on raw Protobuf wire bytes that protobuf's own parsers do not make.

upb, protobuf-java and ptars all accept a 10-byte varint whose last byte carries bits above
the 64th (they drop them), so ``ff ff ff ff ff ff ff ff ff 7f`` reads as -1. Such a varint
is never written by a conforming encoder: we make it a row error rather than a value.

:func:`overflow_rows` finds candidate rows with a numpy pattern scan (9 bytes with the
continuation bit, then a final byte ≥ 2) over all payloads at once; only candidates — rare,
found inside bytes/string data too — are walked exactly by :func:`walk`, an iterative
(explicit stack, depth-capped) tokenizer that follows the descriptor into sub-messages and
packed varint fields, so string and bytes contents are never read as varints.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor as FD

__all__ = ["overflow_rows", "walk", "MAX_DEPTH"]

MAX_DEPTH = 100  # upb's default recursion limit: deeper data is already refused by parsers

_VARINT_TYPES = frozenset([FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_UINT64,
                           FD.TYPE_SINT32, FD.TYPE_SINT64, FD.TYPE_BOOL, FD.TYPE_ENUM])


def _candidates(payloads: pa.BinaryArray) -> np.ndarray:
    """Indices of rows whose bytes contain ≥ 9 continuation bytes followed by a byte in
    2..127 (a superset of the rows holding an overflowing varint)."""
    n = len(payloads)
    if n == 0:
        return np.zeros(0, np.int64)
    offs = np.frombuffer(payloads.buffers()[1], np.int32, n + 1, payloads.offset * 4).astype(np.int64)
    data_buf = payloads.buffers()[2]
    if data_buf is None:
        return np.zeros(0, np.int64)
    start, stop = int(offs[0]), int(offs[-1])
    data = np.frombuffer(data_buf, np.uint8, stop - start, start)
    if len(data) < 10:
        return np.zeros(0, np.int64)
    # A run of 9 continuation bytes starting at s holds the 8-byte block at 2j for j with
    # 2j in {s, s+1}: find all-continuation 8-byte words at the 4 even phases (cheap uint64
    # ops), then test the exact pattern only at the two run starts each word allows.
    padded = np.concatenate([data, np.zeros(24, np.uint8)])
    high = np.uint64(0x8080808080808080)
    found = []
    for off in (0, 2, 4, 6):
        w = padded[off:off + (len(data) // 8) * 8 + 8].view(np.uint64)
        at = np.flatnonzero((w & high) == high) * 8 + off
        found += [at, at - 1]
    starts = np.concatenate(found)
    starts = starts[(starts >= 0) & (starts + 9 < len(data))]
    if len(starts) == 0:
        return np.zeros(0, np.int64)
    last = padded[starts + 9]
    run = (last >= 2) & (last < 0x80)
    for k in range(9):
        run &= padded[starts + k] >= 0x80
    starts = starts[run]
    pos = starts + start
    if len(pos) == 0:
        return np.zeros(0, np.int64)
    return np.unique(np.searchsorted(offs, pos, side="right") - 1)


def overflow_rows(payloads: pa.BinaryArray, desc) -> dict[int, str]:
    """{row: reason} for rows holding a varint longer than 10 bytes or above 64 bits."""
    out = {}
    for i in _candidates(payloads).tolist():
        why = walk(payloads[i].as_py(), desc)
        if why is not None:
            out[i] = why
    return out


def _varint(data: bytes, pos: int, end: int):
    """(value, new pos) or raises ValueError; at most 10 bytes, no bits above the 64th."""
    val = 0
    for k in range(10):
        if pos >= end:
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        if k == 9 and b > 1:
            raise ValueError("varint overflows 64 bits")
        val |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            return val, pos
    raise ValueError("varint longer than 10 bytes")


def walk(data: bytes, desc) -> str | None:
    """Tokenize ``data`` as ``desc`` (iteratively); None when well-formed, else the reason."""
    stack = [(desc, 0, len(data))]
    try:
        while stack:
            d, pos, end = stack.pop()
            while pos < end:
                tag, pos = _varint(data, pos, end)
                wt, num = tag & 7, tag >> 3
                if num == 0:
                    return "field number 0"
                f = d.fields_by_number.get(num) if d is not None else None
                if wt == 0:
                    _, pos = _varint(data, pos, end)
                elif wt == 1:
                    pos += 8
                elif wt == 5:
                    pos += 4
                elif wt == 2:
                    ln, pos = _varint(data, pos, end)
                    if pos + ln > end:
                        return "length past the end of the message"
                    if f is not None and f.type == FD.TYPE_MESSAGE:
                        if len(stack) >= MAX_DEPTH:
                            return f"nested deeper than {MAX_DEPTH} levels"
                        stack.append((d, pos + ln, end))  # resume the parent afterwards
                        stack.append((f.message_type, pos, pos + ln))
                        pos = end  # leave this loop: the child is popped next
                        break
                    if f is not None and f.type in _VARINT_TYPES:  # packed varints
                        p = pos
                        while p < pos + ln:
                            _, p = _varint(data, p, pos + ln)
                    pos += ln
                else:
                    return None  # groups (proto2): left to the parser, not checked here
                if pos > end:
                    return "truncated field"
    except ValueError as e:
        return str(e)
    return None
