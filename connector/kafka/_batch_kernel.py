"""Consumed librdkafka messages to Arrow record batches in compiled loops (no Python object per
record).

:class:`~connector.kafka._native.NativeConsumer` fills an int64 array with the addresses of the
``rd_kafka_message_t`` that ``rd_kafka_consume_batch_queue`` returned. One numba pass,
:func:`take`, reads each record's offset, timestamp (and its type), key and value (a NULL
pointer is a null) and headers, copies the bytes into growing Arrow buffers and gives the
message back to librdkafka, so each message is touched once while it is in cache (three
passes, read sizes / copy / destroy, cost about twice as much CPU per record: the window of
10,000 messages does not fit in cache). The buffers start at the sizes of the consumer's last
batch (:class:`Sizes`). :func:`take_records` assembles the columns of
:data:`~connector.kafka.RAW_ARROW_SCHEMA` (or its variant without headers) with the same null
rules the per-message path had: a record without headers has null ``headers``; a header with a
NULL value has a null ``value``; a record whose timestamp is not available has a null
``timestamp`` and ``timestampType`` -1 (librdkafka's types 1 CreateTime, 2 LogAppendTime become
Kafka's 0 and 1).

Arrow's ``binary`` and ``string`` columns have int32 offsets: a batch whose key, value, header
key or header value bytes would pass :data:`MAX_BUFFER_BYTES` is split into several batches.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import types

from connector.formats.core import njit
from connector.formats.core.kernels import load_i32, load_i64, load_u8, memcpy, voidptr

from . import _librdkafka as rd
from ._raw_schema import HEADERS_TYPE

__all__ = ["first_error", "destroy", "take", "take_records", "MAX_BUFFER_BYTES"]

_TS_TYPE = pa.timestamp("us", tz="UTC")

#: Most bytes one Arrow buffer with int32 offsets may hold (tests lower it to exercise splits).
MAX_BUFFER_BYTES = 2**31 - 1

_timestamp = rd.extern("rd_kafka_message_timestamp", types.int64(types.voidptr, types.voidptr))
_headers = rd.extern("rd_kafka_message_headers", types.int32(types.voidptr, types.voidptr))
_header_cnt = rd.extern("rd_kafka_header_cnt", types.uintp(types.voidptr))
_header_get_all = rd.extern("rd_kafka_header_get_all", types.int32(
    types.voidptr, types.uintp, types.voidptr, types.voidptr, types.voidptr))
_message_destroy = rd.extern("rd_kafka_message_destroy", types.void(types.voidptr))

_PAYLOAD, _LEN, _KEY, _KEY_LEN, _OFFSET = rd.MSG.payload, rd.MSG.len, rd.MSG.key, rd.MSG.key_len, rd.MSG.offset


@njit(nogil=True)
def first_error(ptrs, lo, hi):
    """Index of the first message of ``ptrs[lo:hi]`` whose ``err`` is set, else ``hi``."""
    for i in range(lo, hi):
        if load_i32(ptrs[i]) != 0:
            return i
    return hi


@njit(nogil=True)
def destroy(ptrs, lo, hi):
    """``rd_kafka_message_destroy`` every message of ``ptrs[lo:hi]`` not yet destroyed (entries
    not 0), zeroing the entries."""
    for i in range(lo, hi):
        if ptrs[i] != 0:
            _message_destroy(voidptr(ptrs[i]))
            ptrs[i] = 0


@njit(nogil=True)
def _cstrlen(addr):
    n = 0
    while load_u8(addr + n) != 0:
        n += 1
    return n


@njit(nogil=True)
def _extent(ptrs, lo, hi, end, limit, with_headers, hcnt):
    """How many records of ``ptrs[lo:hi]`` one batch takes, why it stops there, and the bytes
    and header count they need: ``(n, status, key bytes, value bytes, headers, header-name
    bytes, header-value bytes)``; with headers, each record's header count into ``hcnt``.
    Only the message fields are read."""
    out = np.zeros(3, np.int64)  # header name, value pointer, value size
    hp = np.zeros(1, np.int64)
    k = v = hn = hk = hv = 0
    for i in range(lo, hi):
        a = ptrs[i]
        if load_i64(a + _OFFSET) >= end:
            return i - lo, 1, k, v, hn, hk, hv
        k2 = k + (load_i64(a + _KEY_LEN) if load_i64(a + _KEY) != 0 else 0)
        v2 = v + (load_i64(a + _LEN) if load_i64(a + _PAYLOAD) != 0 else 0)
        hn2, hk2, hv2 = hn, hk, hv
        if with_headers and _headers(voidptr(a), voidptr(hp.ctypes.data)) == 0:
            h = voidptr(hp[0])
            nh = np.int64(_header_cnt(h))
            for x in range(nh):
                _header_get_all(h, x, voidptr(out.ctypes.data), voidptr(out.ctypes.data + 8),
                                voidptr(out.ctypes.data + 16))
                hk2 += _cstrlen(out[0])
                if out[1] != 0:
                    hv2 += out[2]
            hn2 += nh
            hcnt[i - lo] = nh
        if i > lo and (k2 > limit or v2 > limit or hk2 > limit or hv2 > limit):
            return i - lo, 2, k, v, hn, hk, hv
        k, v, hn, hk, hv = k2, v2, hn2, hk2, hv2
    return hi - lo, 0, k, v, hn, hk, hv


@njit(nogil=True)
def take(ptrs, lo, hi, end, limit, with_headers):
    """Read, copy and destroy the records of one batch from ``ptrs[lo:hi]`` (no error among
    them).

    The batch stops before the first record at or past offset ``end`` (status 1) or before a
    record that would take a key, value, header-name or header-value buffer past ``limit``
    bytes (status 2; a first record always fits); status 0 when it takes them all. A first
    pass reads the lengths only (:func:`_extent`), so every buffer is allocated once at its
    size; the second reads, copies and destroys each message while it is in cache (and zeroes
    its ``ptrs`` entry). Messages past the batch are left for the caller. Returns ``(status,
    n, columns...)``, see :func:`_assemble`.

    No array is reassigned in the loop: numba would count references on every iteration (a
    kernel that grew its buffers as it went cost four times as much per record).
    """
    # librdkafka parses a consumed record's headers on every rd_kafka_message_headers call
    # when it has none (about 60 ns): the first pass notes who has some
    hcnt = np.zeros(hi - lo if with_headers else 0, np.int64)
    n, status, kt, vt, nh, hkt, hvt = _extent(ptrs, lo, hi, end, limit, with_headers, hcnt)
    offsets = np.empty(n, np.int64)
    ts = np.empty(n, np.int64)          # microseconds
    tstype = np.empty(n, np.int32)      # Kafka's: 0 CreateTime, 1 LogAppendTime, -1 none
    kvalid = np.empty(n, np.uint8)
    vvalid = np.empty(n, np.uint8)
    tvalid = np.empty(n, np.uint8)
    hvalid = np.empty(n if with_headers else 0, np.uint8)  # records with headers
    ko = np.empty(n + 1, np.int32)
    vo = np.empty(n + 1, np.int32)
    kbuf = np.empty(kt, np.uint8)
    vbuf = np.empty(vt, np.uint8)
    hoff = np.empty(n + 1 if with_headers else 1, np.int32)
    hko = np.empty(nh + 1, np.int32)
    hvo = np.empty(nh + 1, np.int32)
    hvv = np.empty(nh, np.uint8)        # header values that are not NULL
    hkbuf = np.empty(hkt, np.uint8)
    hvbuf = np.empty(hvt, np.uint8)
    nulls = np.zeros(5, np.int64)       # keys, values, timestamps, headers, header values
    tt = np.zeros(1, np.int32)
    hp = np.zeros(1, np.int64)
    out = np.zeros(3, np.int64)         # header name, value pointer, value size
    k = v = hn = hk = hv = 0
    ko[0] = vo[0] = hoff[0] = hko[0] = hvo[0] = 0
    for j in range(n):
        a = ptrs[lo + j]
        offsets[j] = load_i64(a + _OFFSET)
        kp = load_i64(a + _KEY)
        if kp != 0:
            kl = load_i64(a + _KEY_LEN)
            memcpy(kbuf.ctypes.data + k, kp, kl)
            k += kl
        vp = load_i64(a + _PAYLOAD)
        if vp != 0:
            vl = load_i64(a + _LEN)
            memcpy(vbuf.ctypes.data + v, vp, vl)
            v += vl
        ko[j + 1] = k
        vo[j + 1] = v
        kvalid[j] = kp != 0
        vvalid[j] = vp != 0
        nulls[0] += kp == 0
        nulls[1] += vp == 0
        ts[j] = _timestamp(voidptr(a), voidptr(tt.ctypes.data)) * 1000
        tstype[j] = tt[0] - 1  # librdkafka: 0 not available, 1 CreateTime, 2 LogAppendTime
        tvalid[j] = tt[0] != 0
        nulls[2] += tt[0] == 0
        if with_headers:
            cnt = hcnt[j]
            if cnt > 0 and _headers(voidptr(a), voidptr(hp.ctypes.data)) == 0:
                h = voidptr(hp[0])
                for x in range(cnt):
                    _header_get_all(h, x, voidptr(out.ctypes.data), voidptr(out.ctypes.data + 8),
                                    voidptr(out.ctypes.data + 16))
                    hl = _cstrlen(out[0])
                    memcpy(hkbuf.ctypes.data + hk, out[0], hl)
                    hk += hl
                    hko[hn + 1] = hk
                    if out[1] != 0:
                        memcpy(hvbuf.ctypes.data + hv, out[1], out[2])
                        hv += out[2]
                    hvv[hn] = out[1] != 0
                    nulls[4] += out[1] == 0
                    hvo[hn + 1] = hv
                    hn += 1
            hoff[j + 1] = hn
            hvalid[j] = cnt > 0
            nulls[3] += cnt == 0
        _message_destroy(voidptr(a))
        ptrs[lo + j] = 0
    return (status, n, offsets, ts, tstype, kvalid, vvalid, tvalid, hvalid, nulls, ko, kbuf,
            vo, vbuf, hoff, hko, hkbuf, hvo, hvbuf, hvv)


def _validity(valid: np.ndarray, nulls: int):
    return pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None


def take_records(ptrs: np.ndarray, lo: int, hi: int, end: int, topic: str, partition: int,
                 schema: pa.Schema) -> tuple[list[pa.RecordBatch], int]:
    """Batches of the records ``ptrs[lo:hi]`` (none of them an error) with offsets below ``end``.

    Every message of ``ptrs[lo:hi]`` is destroyed, also those at or past ``end`` and also when
    this raises. Returns the batches (one, or several when a buffer would pass
    :data:`MAX_BUFFER_BYTES`; none when the first record is already past the range) and how many
    records were below ``end``.
    """
    include_headers = "headers" in schema.names
    batches = []
    pos = lo
    try:
        while pos < hi:
            r = take(ptrs, pos, hi, end, MAX_BUFFER_BYTES, include_headers)
            status, n = r[0], r[1]
            if n:
                batches.append(_assemble(n, r, topic, partition, schema, include_headers))
            pos += n
            if status != 2:
                break
    finally:
        destroy(ptrs, pos, hi)
    return batches, pos - lo


def _assemble(n, r, topic, partition, schema, include_headers) -> pa.RecordBatch:
    (_, _, offsets, ts, tstype, kvalid, vvalid, tvalid, hvalid, nulls, ko, kbuf, vo, vbuf,
     hoff, hko, hkbuf, hvo, hvbuf, hvv) = r
    binary = pa.binary()
    columns = [
        pa.Array.from_buffers(binary, n, [_validity(kvalid, nulls[0]), pa.py_buffer(ko),
                                          pa.py_buffer(kbuf)]),
        pa.Array.from_buffers(binary, n, [_validity(vvalid, nulls[1]), pa.py_buffer(vo),
                                          pa.py_buffer(vbuf)]),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
        pa.Array.from_buffers(_TS_TYPE, n, [_validity(tvalid, nulls[2]), pa.py_buffer(ts)]),
        pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(tstype)]),
    ]
    if include_headers:
        columns.append(_headers_column(n, hvalid, nulls[3], hoff, hko, hkbuf, hvo, hvbuf, hvv, nulls[4],
                                       topic, partition, offsets))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _headers_column(n, hvalid, hnulls, hoff, hko, hkbuf, hvo, hvbuf, hvv, vnulls, topic, partition,
                    offsets):
    nh = len(hvv)
    if nh == 0:
        return pa.nulls(n, HEADERS_TYPE)
    keys = pa.Array.from_buffers(pa.string(), nh, [None, pa.py_buffer(hko), pa.py_buffer(hkbuf)])
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid as e:
        from connector.errors import KafkaReadError

        raise KafkaReadError(f"a record header name is not valid UTF-8 in topic {topic}, partition "
                             f"{partition}, offsets {int(offsets[0])}..{int(offsets[-1])}") from e
    values = pa.Array.from_buffers(pa.binary(), nh, [_validity(hvv, vnulls), pa.py_buffer(hvo),
                                                     pa.py_buffer(hvbuf)])
    entries = pa.StructArray.from_arrays([keys, values], fields=list(HEADERS_TYPE.value_type))
    # Spark's Kafka source gives null (not an empty list) for records without headers.
    return pa.Array.from_buffers(HEADERS_TYPE, n, [_validity(hvalid, hnulls), pa.py_buffer(hoff)],
                                 children=[entries])
