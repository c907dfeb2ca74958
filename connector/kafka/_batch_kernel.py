"""Consumed librdkafka messages to Arrow record batches in compiled loops (no Python object per
record).

:class:`~connector.kafka._native.NativeConsumer` fills an int64 array with the addresses of the
``rd_kafka_message_t`` that ``rd_kafka_consume_batch_queue`` returned. Two numba passes read
them: :func:`scan` reads each record's offset, timestamp (and its type), key/value lengths
(a NULL pointer is a null) and the sizes of its headers; :func:`copy` copies keys, values and
headers into Arrow buffers. :func:`destroy` then gives every message back to librdkafka.
:func:`take_records` chains the three and assembles the columns of
:data:`~connector.kafka.RAW_ARROW_SCHEMA` (or its variant without headers) with the same null
rules the per-message path had: a record without headers has null ``headers``; a header with a
NULL value has a null ``value``; a record whose timestamp is not available has a null
``timestamp`` and ``timestampType`` -1 (librdkafka's types 1 CreateTime, 2 LogAppendTime become
Kafka's 0 and 1).

Arrow's ``binary`` and ``string`` columns have int32 offsets: a batch whose key, value, header
key or header value bytes would pass :data:`MAX_BUFFER_BYTES` is split into several batches.
"""
from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa
from numba import types

from connector.formats.core import njit
from connector.formats.core.kernels import voidptr

from . import _librdkafka as rd
from ._raw_schema import HEADERS_TYPE

__all__ = ["first_error", "destroy", "take_records", "MAX_BUFFER_BYTES"]

_TS_TYPE = pa.timestamp("us", tz="UTC")

#: Most bytes one Arrow buffer with int32 offsets may hold (tests lower it to exercise splits).
MAX_BUFFER_BYTES = 2**31 - 1

_timestamp = rd.extern("rd_kafka_message_timestamp", types.int64(types.voidptr, types.voidptr))
_headers = rd.extern("rd_kafka_message_headers", types.int32(types.voidptr, types.voidptr))
_header_cnt = rd.extern("rd_kafka_header_cnt", types.uintp(types.voidptr))
_header_get_all = rd.extern("rd_kafka_header_get_all", types.int32(
    types.voidptr, types.uintp, types.voidptr, types.voidptr, types.voidptr))
_message_destroy = rd.extern("rd_kafka_message_destroy", types.void(types.voidptr))

# rd_kafka_message_t as 8-byte words (see rd.MSG): payload 3, len 4, key 5, key_len 6, offset 7
_W_PAYLOAD, _W_LEN, _W_KEY, _W_KEY_LEN, _W_OFFSET = (rd.MSG.payload // 8, rd.MSG.len // 8,
                                                       rd.MSG.key // 8, rd.MSG.key_len // 8,
                                                       rd.MSG.offset // 8)


@njit(nogil=True)
def first_error(ptrs, lo, hi):
    """Index of the first message of ``ptrs[lo:hi]`` whose ``err`` is set, else ``hi``."""
    for i in range(lo, hi):
        if numba.carray(voidptr(ptrs[i]), 1, np.int32)[0] != 0:
            return i
    return hi


@njit(nogil=True)
def destroy(ptrs, lo, hi):
    """``rd_kafka_message_destroy`` every message of ``ptrs[lo:hi]``."""
    for i in range(lo, hi):
        _message_destroy(voidptr(ptrs[i]))
        ptrs[i] = 0


@njit(nogil=True)
def _cstrlen(addr):
    n = 0
    while numba.carray(voidptr(addr + n), 1, np.uint8)[0] != 0:
        n += 1
    return n


@njit(nogil=True)
def scan(ptrs, lo, hi, end, offsets, ts, tstype, klen, vlen, hcnt, hkbytes, hvbytes):
    """Fields and sizes of the records ``ptrs[lo:hi]`` (no error among them) into arrays
    indexed from 0; stops before the first record at or past offset ``end``. Returns how many
    records were read."""
    tt = np.zeros(1, np.int32)
    hp = np.zeros(1, np.int64)
    out = np.zeros(3, np.int64)  # name, value pointer, value size
    for i in range(lo, hi):
        m = voidptr(ptrs[i])
        f = numba.carray(m, 8, np.int64)
        j = i - lo
        off = f[_W_OFFSET]
        if off >= end:
            return j
        offsets[j] = off
        vlen[j] = f[_W_LEN] if f[_W_PAYLOAD] != 0 else -1
        klen[j] = f[_W_KEY_LEN] if f[_W_KEY] != 0 else -1
        ts[j] = _timestamp(m, voidptr(tt.ctypes.data))
        tstype[j] = tt[0]
        nh = 0
        kb = 0
        vb = 0
        if _headers(m, voidptr(hp.ctypes.data)) == 0:
            h = voidptr(hp[0])
            nh = _header_cnt(h)
            for k in range(nh):
                _header_get_all(h, k, voidptr(out.ctypes.data), voidptr(out.ctypes.data + 8),
                                voidptr(out.ctypes.data + 16))
                kb += _cstrlen(out[0])
                if out[1] != 0:
                    vb += out[2]
        hcnt[j] = nh
        hkbytes[j] = kb
        hvbytes[j] = vb
    return hi - lo


@njit(nogil=True)
def _copy_bytes(dst, at, src_addr, n):
    if n > 0:
        dst[at:at + n] = numba.carray(voidptr(src_addr), n, np.uint8)


@njit(nogil=True)
def copy(ptrs, lo, hi, klen, vlen, kbuf, ko, vbuf, vo, headers, hoff, hko, hkbuf, hvo, hvbuf, hvalid):
    """Copy keys, values (and, with ``headers``, header keys and values) of ``ptrs[lo:hi]``
    into Arrow buffers sized from :func:`scan`; offsets start at 0."""
    hp = np.zeros(1, np.int64)
    out = np.zeros(3, np.int64)
    k = 0
    v = 0
    hn = 0
    hk = 0
    hv = 0
    ko[0] = 0
    vo[0] = 0
    hoff[0] = 0
    hko[0] = 0
    hvo[0] = 0
    for i in range(lo, hi):
        m = voidptr(ptrs[i])
        f = numba.carray(m, 8, np.int64)
        j = i - lo
        if klen[j] > 0:
            _copy_bytes(kbuf, k, f[_W_KEY], klen[j])
            k += klen[j]
        ko[j + 1] = k
        if vlen[j] > 0:
            _copy_bytes(vbuf, v, f[_W_PAYLOAD], vlen[j])
            v += vlen[j]
        vo[j + 1] = v
        if headers and _headers(m, voidptr(hp.ctypes.data)) == 0:
            h = voidptr(hp[0])
            for x in range(_header_cnt(h)):
                _header_get_all(h, x, voidptr(out.ctypes.data), voidptr(out.ctypes.data + 8),
                                voidptr(out.ctypes.data + 16))
                n = _cstrlen(out[0])
                _copy_bytes(hkbuf, hk, out[0], n)
                hk += n
                hko[hn + 1] = hk
                if out[1] != 0:
                    _copy_bytes(hvbuf, hv, out[1], out[2])
                    hv += out[2]
                    hvalid[hn] = 1
                else:
                    hvalid[hn] = 0
                hvo[hn + 1] = hv
                hn += 1
        hoff[j + 1] = hn


def _splits(n: int, sizes: list[np.ndarray], limit: int) -> list[tuple[int, int]]:
    """``[a, b)`` slices of ``n`` records whose bytes fit ``limit`` in every buffer."""
    if n == 0:
        return []
    cums = [np.concatenate(([0], np.cumsum(s))) for s in sizes]
    if all(int(c[-1]) <= limit for c in cums):
        return [(0, n)]
    out = []
    a = 0
    while a < n:
        b = n
        for c in cums:
            b = min(b, int(np.searchsorted(c, c[a] + limit, side="right")) - 1)
        b = max(b, a + 1)  # one record alone always makes a batch
        out.append((a, b))
        a = b
    return out


def _validity(valid: np.ndarray):
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _binary(typ, n: int, lens: np.ndarray, offs: np.ndarray, buf: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(typ, n, [_validity(lens >= 0), pa.py_buffer(offs), pa.py_buffer(buf)])


def take_records(ptrs: np.ndarray, lo: int, hi: int, end: int, topic: str, partition: int,
                 schema: pa.Schema) -> tuple[list[pa.RecordBatch], int]:
    """Batches of the records ``ptrs[lo:hi]`` (none of them an error) with offsets below ``end``.

    Every message of ``ptrs[lo:hi]`` is destroyed, also those at or past ``end`` and also when
    this raises. Returns the batches (one, or several when a buffer would pass
    :data:`MAX_BUFFER_BYTES`; none when the first record is already past the range) and how many
    records were below ``end``.
    """
    include_headers = "headers" in schema.names
    m = hi - lo
    offsets = np.empty(m, np.int64)
    ts = np.empty(m, np.int64)
    tstype = np.empty(m, np.int32)
    klen = np.empty(m, np.int64)
    vlen = np.empty(m, np.int64)
    hcnt = np.empty(m, np.int64)
    hkb = np.empty(m, np.int64)
    hvb = np.empty(m, np.int64)
    parts = []
    try:
        n = scan(ptrs, lo, hi, end, offsets, ts, tstype, klen, vlen, hcnt, hkb, hvb)
        sizes = [np.maximum(klen[:n], 0), np.maximum(vlen[:n], 0)]
        if include_headers:
            sizes += [hkb[:n], hvb[:n]]
        for a, b in _splits(n, sizes, MAX_BUFFER_BYTES):
            parts.append((a, b, _copy(ptrs, lo, a, b, klen, vlen, hcnt, hkb, hvb, include_headers)))
    finally:
        destroy(ptrs, lo, hi)
    batches = []
    for a, b, bufs in parts:
        batches.append(_assemble(b - a, offsets[a:b], ts[a:b], tstype[a:b], klen[a:b], vlen[a:b],
                                 hcnt[a:b], bufs, topic, partition, schema, include_headers))
    return batches, n


def _copy(ptrs, lo, a, b, klen, vlen, hcnt, hkb, hvb, include_headers):
    n = b - a
    kl, vl = klen[a:b], vlen[a:b]
    kbuf = np.empty(int(np.maximum(kl, 0).sum()), np.uint8)
    vbuf = np.empty(int(np.maximum(vl, 0).sum()), np.uint8)
    ko = np.empty(n + 1, np.int32)
    vo = np.empty(n + 1, np.int32)
    nh = int(hcnt[a:b].sum()) if include_headers else 0
    hoff = np.empty(n + 1, np.int32)
    hko = np.empty(nh + 1, np.int32)
    hvo = np.empty(nh + 1, np.int32)
    hvalid = np.empty(nh, np.uint8)
    hkbuf = np.empty(int(hkb[a:b].sum()) if nh else 0, np.uint8)
    hvbuf = np.empty(int(hvb[a:b].sum()) if nh else 0, np.uint8)
    copy(ptrs, lo + a, lo + b, kl, vl, kbuf, ko, vbuf, vo, include_headers and nh > 0, hoff, hko,
         hkbuf, hvo, hvbuf, hvalid)
    return kbuf, ko, vbuf, vo, nh, hoff, hko, hkbuf, hvo, hvbuf, hvalid


def _assemble(n, offsets, ts, tstype, klen, vlen, hcnt, bufs, topic, partition, schema,
              include_headers) -> pa.RecordBatch:
    kbuf, ko, vbuf, vo, nh, hoff, hko, hkbuf, hvo, hvbuf, hvalid = bufs
    available = tstype != 0  # librdkafka: 0 = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
    columns = [
        _binary(pa.binary(), n, klen, ko, kbuf),
        _binary(pa.binary(), n, vlen, vo, vbuf),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.array(offsets, type=pa.int64()),
        pa.Array.from_buffers(_TS_TYPE, n, [_validity(available), pa.py_buffer(ts * 1000)]),
        pa.array((tstype - 1).astype(np.int32), type=pa.int32()),
    ]
    if include_headers:
        columns.append(_headers_column(n, hcnt, nh, hoff, hko, hkbuf, hvo, hvbuf, hvalid, topic,
                                       partition, offsets))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _headers_column(n, hcnt, nh, hoff, hko, hkbuf, hvo, hvbuf, hvalid, topic, partition, offsets):
    if nh == 0:
        return pa.nulls(n, HEADERS_TYPE)
    keys = pa.Array.from_buffers(pa.string(), nh, [None, pa.py_buffer(hko), pa.py_buffer(hkbuf)])
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid as e:
        from connector.errors import KafkaReadError

        raise KafkaReadError(f"a record header name is not valid UTF-8 in topic {topic}, partition "
                             f"{partition}, offsets {int(offsets[0])}..{int(offsets[-1])}") from e
    values = pa.Array.from_buffers(pa.binary(), nh, [_validity(hvalid.astype(bool)), pa.py_buffer(hvo),
                                                     pa.py_buffer(hvbuf)])
    entries = pa.StructArray.from_arrays([keys, values], fields=list(HEADERS_TYPE.value_type))
    # Spark's Kafka source gives null (not an empty list) for records without headers.
    return pa.Array.from_buffers(HEADERS_TYPE, n, [_validity(hcnt > 0), pa.py_buffer(hoff)],
                                 children=[entries])
