"""The sink's hot loop: a whole Arrow batch handed to librdkafka in compiled code.

One call of :func:`produce_rows` queues rows ``start..n`` of a batch, one
``rd_kafka_produceva`` per record, reading topic, partition, value, key and headers straight
from Arrow buffers (offsets + data; a null key or value is a NULL pointer, an empty one a
non-NULL pointer of length 0), with ``RD_KAFKA_MSG_F_COPY`` (librdkafka copies the bytes, so
the Arrow batch may go as soon as the call returns) and the row number as the record's opaque.
It stops at the first record librdkafka refuses and returns that row and the error code: on
``_QUEUE_FULL`` the caller serves events and calls again from that row; anything else fails
the batch. No Python object is touched per record.

``rd_kafka_vu_t`` (rd_kafka.h) is 72 bytes: an ``int`` vtype, padding, then a 64-byte union at
offset 8 (``mem``: ptr, size; ``header``: name, val, ssize). The kernel writes the vector as
int64 words, 9 per element (little-endian: an int written as int64 fills the int's 4 bytes).
"""
from __future__ import annotations

import numpy as np
from numba import types

from connector.formats.core import njit
from connector.formats.core.kernels import load_i32, load_i64, voidptr
from connector.kafka._librdkafka import extern

__all__ = ["produce_rows", "produce_batch_rows", "scan_reports", "VU_WORDS", "FIXED_VUS", "MSG_WORDS",
           "ERR_QUEUE_FULL"]

#: int64 words per ``rd_kafka_vu_t``.
VU_WORDS = 9
#: Elements every record may use besides its headers: topic, partition, value, key, flags, opaque.
FIXED_VUS = 6
ERR_QUEUE_FULL = -184

_RKT, _PARTITION, _VALUE, _KEY, _OPAQUE, _MSGFLAGS, _HEADER = 2, 3, 4, 5, 6, 7, 9
_MSG_F_COPY = 2

_produceva = extern("rd_kafka_produceva", types.int64(types.voidptr, types.voidptr, types.uint64))
_produce_batch = extern("rd_kafka_produce_batch",
                        types.int32(types.voidptr, types.int32, types.int32, types.voidptr, types.int32))
#: int64 words per ``rd_kafka_message_t`` (72 bytes: ``MSG`` in ``_librdkafka``).
MSG_WORDS = 9
_MSG_F_PARTITION = 8
_PARTITION_UA = -1
_error_code = extern("rd_kafka_error_code", types.int32(types.voidptr))
_error_destroy = extern("rd_kafka_error_destroy", types.void(types.voidptr))


@njit(nogil=True)
def _valid(bits, bit_offset, i):
    if len(bits) == 0:
        return True
    j = bit_offset + i
    return (bits[j >> 3] >> (j & 7)) & 1 == 1


@njit(nogil=True)
def produce_rows(rk, start, n, rkts, tix, parts,
                 vbits, vbit_off, voff, vdata,
                 kbits, kbit_off, koff, kdata,
                 hrow, hname, hval, hlen, common_lo, common_hi,
                 vus, empty):
    """Queue rows ``start..n``; return ``(row, error)``: ``(n, 0)`` when all were queued.

    ``rkts``: topic handles; ``tix``: each row's index into ``rkts`` (empty: all ``rkts[0]``).
    ``parts``: each row's partition, -1 for the partitioner (empty: all -1). Values and keys:
    validity bitmap (empty: no nulls) with its bit offset, offsets sliced to the rows, data
    address; ``koff`` empty means no keys. Headers: ``hrow`` (empty: none) gives each row's
    entries, ``common_lo..common_hi`` the entries every record carries; an entry is a
    NUL-terminated name address, a value address (0: null) and a length. ``vus``: scratch of
    ``VU_WORDS * (FIXED_VUS + max headers)`` int64; ``empty``: a valid address for empty bytes.
    """
    has_tix = len(tix) > 0
    has_parts = len(parts) > 0
    has_keys = len(koff) > 0
    has_hdrs = len(hrow) > 0
    base = vus.ctypes.data
    rkp = voidptr(rk)
    for i in range(start, n):
        vus[0] = _RKT
        vus[1] = rkts[tix[i]] if has_tix else rkts[0]
        k = 1
        if has_parts:
            vus[k * VU_WORDS] = _PARTITION
            vus[k * VU_WORDS + 1] = parts[i]
            k += 1
        vus[k * VU_WORDS] = _VALUE
        if _valid(vbits, vbit_off, i):
            size = voff[i + 1] - voff[i]
            vus[k * VU_WORDS + 1] = vdata + voff[i] if vdata != 0 else empty
            vus[k * VU_WORDS + 2] = size
        else:
            vus[k * VU_WORDS + 1] = 0
            vus[k * VU_WORDS + 2] = 0
        k += 1
        if has_keys:
            vus[k * VU_WORDS] = _KEY
            if _valid(kbits, kbit_off, i):
                vus[k * VU_WORDS + 1] = kdata + koff[i] if kdata != 0 else empty
                vus[k * VU_WORDS + 2] = koff[i + 1] - koff[i]
            else:
                vus[k * VU_WORDS + 1] = 0
                vus[k * VU_WORDS + 2] = 0
            k += 1
        vus[k * VU_WORDS] = _MSGFLAGS
        vus[k * VU_WORDS + 1] = _MSG_F_COPY
        k += 1
        vus[k * VU_WORDS] = _OPAQUE
        vus[k * VU_WORDS + 1] = i
        k += 1
        if has_hdrs:
            for h in range(hrow[i], hrow[i + 1]):
                vus[k * VU_WORDS] = _HEADER
                vus[k * VU_WORDS + 1] = hname[h]
                vus[k * VU_WORDS + 2] = hval[h]
                vus[k * VU_WORDS + 3] = hlen[h]
                k += 1
        for h in range(common_lo, common_hi):
            vus[k * VU_WORDS] = _HEADER
            vus[k * VU_WORDS + 1] = hname[h]
            vus[k * VU_WORDS + 2] = hval[h]
            vus[k * VU_WORDS + 3] = hlen[h]
            k += 1
        err = _produceva(rkp, voidptr(base), k)
        if err != 0:
            code = _error_code(voidptr(err))
            _error_destroy(voidptr(err))
            return i, code
    return n, 0


@njit(nogil=True)
def produce_batch_rows(rkt, start, n, rows, parts, vbits, vbit_off, voff, vdata, kbits, kbit_off, koff, kdata,
                       msgs, empty, failed):
    """Queue records ``start..n`` of one topic, none with headers, by ``rd_kafka_produce_batch``,
    a window of ``len(msgs) // MSG_WORDS`` records per call: librdkafka takes the topic's lock
    once per window instead of once per record. Record ``j`` is row ``rows[j]`` (``rows``
    empty: row ``j``). Values, keys and partitions as :func:`produce_rows`; ``rkt``: the topic
    handle; ``msgs``: scratch ``rd_kafka_message_t`` words; ``failed``: scratch of a window's size.

    Returns ``(next, error, k, bad)``: ``(n, 0, 0, -1)`` when every record was queued. A window
    librdkafka refused records of is still queued otherwise (the call enqueues what it can), so
    the result stops after it: ``next`` is the record after the window, ``failed[:k]`` the
    refused rows in order, ``error`` the first error that is not ``_QUEUE_FULL`` (row ``bad``),
    else ``_QUEUE_FULL``: then the caller serves events and queues exactly ``failed[:k]`` again.
    """
    cap = len(msgs) // MSG_WORDS
    has_rows = len(rows) > 0
    has_parts = len(parts) > 0
    has_keys = len(koff) > 0
    flags = _MSG_F_COPY | (_MSG_F_PARTITION if has_parts else 0)
    rktp = voidptr(rkt)
    base = msgs.ctypes.data
    j0 = start
    while j0 < n:
        m = min(cap, n - j0)
        for w in range(m):
            i = rows[j0 + w] if has_rows else j0 + w
            b = w * MSG_WORDS
            msgs[b] = 0  # err (int32), padding
            msgs[b + 1] = 0  # rkt: librdkafka's
            msgs[b + 2] = parts[i] if has_parts else _PARTITION_UA  # int32 in the low bytes
            if _valid(vbits, vbit_off, i):
                msgs[b + 3] = vdata + voff[i] if vdata != 0 else empty
                msgs[b + 4] = voff[i + 1] - voff[i]
            else:
                msgs[b + 3] = 0
                msgs[b + 4] = 0
            if has_keys and _valid(kbits, kbit_off, i):
                msgs[b + 5] = kdata + koff[i] if kdata != 0 else empty
                msgs[b + 6] = koff[i + 1] - koff[i]
            else:
                msgs[b + 5] = 0
                msgs[b + 6] = 0
            msgs[b + 7] = 0  # offset
            msgs[b + 8] = i  # _private: the record's opaque, its row
        got = _produce_batch(rktp, _PARTITION_UA, flags, voidptr(base), m)
        if got < m:
            k = 0
            code = 0
            bad = -1
            for w in range(m):
                e = np.int32(msgs[w * MSG_WORDS] & 0xFFFFFFFF)
                if e != 0:
                    i = rows[j0 + w] if has_rows else j0 + w
                    if code == 0 or (code == ERR_QUEUE_FULL and e != ERR_QUEUE_FULL):
                        code = e
                        bad = i
                    failed[k] = i
                    k += 1
            return j0 + m, code, k, bad
        j0 += m
    return n, 0, 0, -1


_MSG_OFFSET = 56  # rd_kafka_message_t.offset (``MSG.offset`` in ``_librdkafka``)


@njit(nogil=True)
def scan_reports(ptrs, n, odd):
    """Sort the ``n`` delivery reports at ``ptrs`` (``rd_kafka_message_t`` addresses): returns
    how many were acknowledged with an offset; the indices of the others (failed: ``err`` set;
    or acknowledged without an offset) go to ``odd``, whose used length is ``n`` minus that."""
    ok = 0
    k = 0
    for i in range(n):
        a = ptrs[i]
        if load_i32(a) == 0 and load_i64(a + _MSG_OFFSET) >= 0:
            ok += 1
        else:
            odd[k] = i
            k += 1
    return ok


@njit(nogil=True)
def c_strings(offsets, data):
    """Each string of an Arrow string array (offsets sliced to its rows) followed by a NUL, and
    where each one starts in that buffer."""
    m = len(offsets) - 1
    total = offsets[m] - offsets[0] + m
    out = np.zeros(max(total, 1), np.uint8)
    starts = np.empty(m, np.int64)
    p = 0
    for j in range(m):
        starts[j] = p
        for b in range(offsets[j], offsets[j + 1]):
            out[p] = data[b]
            p += 1
        out[p] = 0
        p += 1
    return out, starts

