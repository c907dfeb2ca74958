"""Schema ids carried in Kafka record headers; the value is then the bare payload.

=========================  ================================================  =====================
framing                    header key (value / key record part)              header value
=========================  ================================================  =====================
header-confluent           ``__value_schema_id`` / ``__key_schema_id``       0x01 + 16-byte GUID
                                                                             (+ Protobuf indexes)
header-apicurio-global     ``apicurio.value.globalId`` / ``apicurio.key.…``  int64 big-endian (8)
header-apicurio-content    ``apicurio.value.contentId`` / ``apicurio.key.…`` int64 big-endian (8)
=========================  ================================================  =====================

The headers column is Spark's Kafka layout, ``list<struct<key: string, value: binary>>``.
A key may repeat; as in Kafka's ``Headers.lastHeader`` the last one wins.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wireformat._arrowbuf import BinView, binary_view, gather_be, gather_fixed, single_array, validity_mask
from wireformat._errors import WireFormatError
from wireformat._framing import ErrorCode, Framing
from wireformat._state import RowState

__all__ = ["header_name", "last_header", "parse_header_id"]

_NAMES = {
    Framing.HEADER_CONFLUENT: ("__value_schema_id", "__key_schema_id"),
    Framing.HEADER_APICURIO_GLOBAL: ("apicurio.value.globalId", "apicurio.key.globalId"),
    Framing.HEADER_APICURIO_CONTENT: ("apicurio.value.contentId", "apicurio.key.contentId"),
}


def header_name(framing: Framing, is_key: bool = False) -> str:
    """Kafka header key that carries the schema id for ``framing``."""
    return _NAMES[framing][1 if is_key else 0]


def last_header(headers, name: str, n: int) -> tuple[np.ndarray, BinView]:
    """Last header called ``name`` in each row, vectorized over the list offsets.

    Returns
    -------
    rows : numpy.ndarray[int64]
        Rows that carry the header (ascending).
    values : BinView
        The header value of each of those rows (aligned with ``rows``).
    """
    harr = single_array(headers, "headers")
    t = harr.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        raise WireFormatError(f"headers must be list<struct<key, value>>, got {t}")
    st = t.value_type
    if st.get_field_index("key") < 0 or st.get_field_index("value") < 0:
        raise WireFormatError(f"headers struct needs fields 'key' and 'value', got {st}")
    if len(harr) != n:
        raise WireFormatError(f"headers has {len(harr)} rows but values has {n}")
    offsets = np.asarray(harr.offsets, dtype=np.int64)
    if n == 0:
        return np.zeros(0, dtype=np.int64), binary_view(pa.array([], pa.binary()))
    fields = harr.values.flatten()  # struct nulls propagate into the children
    keys = fields[st.get_field_index("key")]
    vals = fields[st.get_field_index("value")]
    match = pc.fill_null(pc.equal(keys, pa.scalar(name, keys.type)), False).to_numpy(zero_copy_only=False)
    # Last matching child of each list (Kafka: the last header wins) in O(children):
    # a running maximum of matching positions, read at each list's last element.
    starts, ends = offsets[:-1], offsets[1:]
    if len(match):
        last = np.maximum.accumulate(np.where(match, np.arange(len(match), dtype=np.int64), -1))
        cand = np.where(ends > starts, last[np.clip(ends - 1, 0, len(match) - 1)], -1)
    else:
        cand = np.full(n, -1, dtype=np.int64)
    row = np.flatnonzero((cand >= starts) & validity_mask(harr))
    j = cand[row]
    if not (pa.types.is_binary(vals.type) or pa.types.is_large_binary(vals.type)):
        try:
            vals = vals.cast(pa.binary())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise WireFormatError(f"header values must be binary, got {vals.type}") from e
    return row, binary_view(vals.take(pa.array(j, type=pa.int64())), "header values")


def parse_header_id(view: BinView, rows: np.ndarray, st: RowState, headers, framing: Framing,
                    is_key: bool, protobuf_indexes: bool) -> None:
    """Fill ids from headers for ``rows`` (mask); the payload is the whole value."""
    if headers is None:
        raise WireFormatError(f"framing {framing.value!r} needs the headers column")
    hrows, hv = last_header(headers, header_name(framing, is_key), len(view))
    found = np.zeros(len(view), dtype=bool)
    found[hrows] = True
    st.fail(rows & ~found, ErrorCode.MISSING_HEADER)
    sel = rows[hrows]
    hrows, hlen = hrows[sel], hv.length[sel]
    hstart, hvalid = hv.start[sel], hv.valid[sel]
    if framing is Framing.HEADER_CONFLUENT:
        magic = hv.data.take(hstart, mode="clip")
        size_ok = hlen > 17 if protobuf_indexes else hlen == 17
        bad = ~hvalid | ~size_ok | (magic != 1)
        if protobuf_indexes:
            # A Protobuf GUID header with nothing after the GUID lacks its index array.
            bad_varint = hvalid & (hlen == 17) & (magic == 1)
            st.fail_rows(hrows[bad_varint], ErrorCode.BAD_VARINT)
        st.fail_rows(hrows[bad], ErrorCode.BAD_HEADER)
        good = ~bad
        mask = np.zeros(len(view), dtype=bool)
        mask[hrows[good]] = True
        hmask = np.zeros(len(hv), dtype=bool)
        hmask[np.flatnonzero(sel)[good]] = True
        st.set_guid(mask, gather_fixed(hv, hmask, 1, 16))
        if protobuf_indexes:
            st.header_index_src = (hrows[good], hv.data, hstart[good] + 17, hv.end[sel][good])
    else:
        bad = ~hvalid | (hlen != 8)
        st.fail_rows(hrows[bad], ErrorCode.BAD_HEADER)
        good = ~bad
        mask = np.zeros(len(view), dtype=bool)
        mask[hrows[good]] = True
        st.set_int(mask, gather_be(hv.data, hstart[good], 8).view(np.int64))
