"""Confluent wire formats and the Apicurio payload framings that share magic byte 0x00.

====================  ======  =================================  ============
framing               [0]     [1 : h]                            payload
====================  ======  =================================  ============
confluent (v0)        0x00    schema id, uint32 big-endian       [5:]
confluent-guid (v1)   0x01    schema GUID, 16 bytes (RFC 4122)   [17:]
apicurio-new          0x00    contentId, uint32 big-endian       [5:]
apicurio-legacy       0x00    globalId, int64 big-endian         [9:]
====================  ======  =================================  ============

With Protobuf, Confluent's serializers put the message-index array (see
``_protobuf_index``) right after the header, before the payload.  ``confluent`` and
``apicurio-new`` are the same bytes: only configuration tells them apart.
"""
from __future__ import annotations

import numpy as np

from wireformat._arrowbuf import BinView, gather_fixed
from wireformat._framing import ErrorCode, Framing
from wireformat._state import RowState

__all__ = ["parse_int_id", "parse_guid", "INT_ID_BYTES"]

INT_ID_BYTES = {Framing.CONFLUENT: 4, Framing.APICURIO_NEW: 4, Framing.APICURIO_LEGACY: 8}


def parse_int_id(view: BinView, rows: np.ndarray, st: RowState, framing: Framing, head=None) -> None:
    """Rows whose magic byte matched: 4- or 8-byte big-endian id after the magic byte.

    ``head`` is the optional ``(n, 1 + id bytes)`` matrix from ``fixed_head``.
    """
    nbytes = INT_ID_BYTES[framing]
    header = 1 + nbytes
    short = rows & (view.length < header)
    st.fail(short, ErrorCode.TOO_SHORT)
    good = rows & ~short
    # 8-byte ids are Java longs (signed); 4-byte ids are read unsigned.
    dtype = np.dtype(">i8" if nbytes == 8 else ">u4")
    if head is not None:
        # An unaligned strided big-endian view over the packed headers: one conversion pass.
        ids = np.ndarray((len(head),), dtype=dtype, buffer=np.ascontiguousarray(head), offset=1,
                         strides=(head.shape[1],))
    else:
        ids = np.ascontiguousarray(gather_fixed(view, good, 1, nbytes)).view(dtype).ravel()
    st.set_int(good, ids)
    st.set_skip(good, header)


def parse_guid(view: BinView, rows: np.ndarray, st: RowState, head=None) -> None:
    """Rows whose magic byte was 0x01: 16 GUID bytes after it."""
    short = rows & (view.length < 17)
    st.fail(short, ErrorCode.TOO_SHORT)
    good = rows & ~short
    st.set_guid(good, head[:, 1:17] if head is not None else gather_fixed(view, good, 1, 16))
    st.set_skip(good, 17)
