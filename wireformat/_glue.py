"""AWS Glue Schema Registry wire format.

=======  ==================================================================
bytes    meaning
=======  ==================================================================
[0]      header version, 0x03
[1]      compression: 0x00 none, 0x05 zlib (RFC 1950 stream of the payload)
[2:18]   schema version id, UUID (16 bytes, RFC 4122 order)
[18:]    payload (zlib-compressed when [1] is 0x05)
=======  ==================================================================
"""
from __future__ import annotations

import zlib

import numpy as np

from wireformat._arrowbuf import BinView, gather_fixed
from wireformat._framing import ErrorCode, Limits
from wireformat._state import RowState

__all__ = ["parse_glue", "inflate", "HEADER_LEN", "COMPRESSION_NONE", "COMPRESSION_ZLIB"]

HEADER_LEN = 18
COMPRESSION_NONE = 0x00
COMPRESSION_ZLIB = 0x05


def inflate(blob: bytes, cap: int) -> tuple[ErrorCode, bytes | None]:
    """Decompress one zlib stream, producing at most ``cap`` bytes.

    ``max_length`` bounds the output, so an over-cap ("zip bomb") or endless stream
    costs at most ``cap + 1`` bytes of memory and one pass over the input.
    """
    d = zlib.decompressobj()
    try:
        out = d.decompress(blob, cap + 1)
    except zlib.error:
        return ErrorCode.DECOMPRESSION_FAILED, None
    if len(out) > cap:
        return ErrorCode.LIMIT_EXCEEDED, None
    if not d.eof or d.unused_data:
        return ErrorCode.DECOMPRESSION_FAILED, None
    return ErrorCode.OK, out


def parse_glue(view: BinView, rows: np.ndarray, st: RowState, limits: Limits, head=None) -> None:
    """Rows whose magic byte was 0x03 (``head``: optional ``(n, 18)`` first bytes)."""
    short = rows & (view.length < HEADER_LEN)
    st.fail(short, ErrorCode.TOO_SHORT)
    rows = rows & ~short
    comp = head[:, 1] if head is not None else view.data.take(view.start + 1, mode="clip")
    zipped = rows & (comp == COMPRESSION_ZLIB)
    st.fail(rows & (comp != COMPRESSION_NONE) & ~zipped, ErrorCode.BAD_COMPRESSION)
    good = rows & ((comp == COMPRESSION_NONE) | zipped)
    st.set_guid(good, head[:, 2:18] if head is not None else gather_fixed(view, good, 2, 16))
    st.set_skip(good, HEADER_LEN)
    # zlib is one stream per record, so this loop runs only over the compressed rows.
    for r in np.flatnonzero(zipped):
        s = int(view.start[r]) + HEADER_LEN
        code, out = inflate(view.data[s:int(view.end[r])].tobytes(), limits.max_decompressed_bytes)
        if out is None:  # inflate returns bytes exactly when the code is OK
            st.error[r] = code
        else:
            st.replaced[int(r)] = out
