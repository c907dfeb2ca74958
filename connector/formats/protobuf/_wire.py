"""Checks on raw Protobuf wire bytes that protobuf's own parsers do not make.

upb, protobuf-java and ptars all accept a 10-byte varint whose last byte carries bits above
the 64th (they drop them), so ``ff ff ff ff ff ff ff ff ff 7f`` reads as -1. Such a varint
is never written by a conforming encoder: we make it a row error rather than a value.

:func:`overflow_rows` finds candidate positions with a numpy pattern scan over all
payloads at once (9 bytes with the continuation bit, then a final byte ≥ 2; bounded work per
byte); only those candidates — rare, and also found inside bytes/string data — are settled
exactly, with two C-level parses each.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["overflow_rows"]


def _candidates(payloads: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray]:
    """(row, offset in the row) of every 9 continuation bytes followed by a byte in 2..127
    (a superset of the overflowing varints)."""
    n = len(payloads)
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if n == 0:
        return none
    offs = np.frombuffer(payloads.buffers()[1], np.int32, n + 1, payloads.offset * 4).astype(np.int64)
    data_buf = payloads.buffers()[2]
    if data_buf is None:
        return none
    start, stop = int(offs[0]), int(offs[-1])
    data = np.frombuffer(data_buf, np.uint8, stop - start, start)
    if len(data) < 10:
        return none
    # A run of 9 continuation bytes starting at s holds the 8-byte block at 2j for j with
    # 2j in {s, s+1}: find all-continuation 8-byte words at the 4 even phases (cheap uint64
    # ops), then test the exact pattern only at the two run starts each word allows.
    high = np.uint64(0x8080808080808080)
    found = []
    for off in (0, 2, 4, 6):
        w = data[off:off + (len(data) - off) // 8 * 8].view(np.uint64)  # unaligned view: no copy
        at = np.flatnonzero((w & high) == high) * 8 + off
        found += [at, at - 1]
    starts = np.concatenate(found)
    starts = starts[(starts >= 0) & (starts + 9 < len(data))]
    last = data[starts + 9]
    starts = starts[(last >= 2) & (last < 0x80)]  # most runs end in 0x01 (negative ints)
    run = np.ones(len(starts), bool)
    for k in range(9):
        run &= data[starts + k] >= 0x80
    starts = np.unique(starts[run])
    rows = np.searchsorted(offs, starts + start, side="right") - 1
    inside = starts + start + 9 < offs[rows + 1]  # runs across two rows are no varint
    rows, starts = rows[inside], starts[inside]
    return rows, starts + start - offs[rows]


def overflow_rows(payloads: pa.BinaryArray, cls) -> dict[int, str]:
    """{row: reason} for rows holding a varint whose 10th byte carries bits above the 64th.

    Each candidate (see :func:`_candidates`) is settled with two C-level parses: the payload
    as is and with that 10th byte reduced to its low bit. Parsers drop the extra bits, so if
    the sequence is a varint (a value, a tag or a length) both parses re-serialize to the
    same bytes; if it lies inside string or bytes data, they differ.
    """
    out: dict[int, str] = {}
    rows, where = _candidates(payloads)
    for i, at in zip(rows.tolist(), where.tolist()):
        if i in out:
            continue
        data = payloads[i].as_py()
        try:
            a = cls.FromString(data).SerializeToString(deterministic=True)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and kin
            out[i] = f"malformed varint or message ({type(e).__name__}: {e})"
            continue
        fixed = bytearray(data)
        fixed[at + 9] &= 1
        try:
            b = cls.FromString(bytes(fixed)).SerializeToString(deterministic=True)
        except Exception:  # noqa: BLE001 - the byte was data whose change broke the parse
            continue
        if a == b:
            out[i] = "varint overflows 64 bits"
    return out
