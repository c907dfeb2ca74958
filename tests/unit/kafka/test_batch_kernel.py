"""Pieces of the Arrow assembly of consumed records that need no broker."""
from __future__ import annotations

import numpy as np


from connector.kafka import RAW_ARROW_SCHEMA
from connector.kafka import _batch_kernel as k


def _columns(n, ts, tstype, lens, buf):
    """What :func:`take` returns for ``n`` records without headers (keys as values)."""
    valid = (lens >= 0).astype(np.uint8)
    offs = np.concatenate(([0], np.cumsum(np.maximum(lens, 0)))).astype(np.int32)
    tvalid = (tstype != 0).astype(np.uint8)
    nulls = np.array([n - valid.sum(), n - valid.sum(), n - tvalid.sum(), n, 0], np.int64)
    empty8, empty32 = np.empty(0, np.uint8), np.zeros(1, np.int32)
    return (0, n, np.arange(n, dtype=np.int64), ts * 1000, tstype - 1, valid, valid, tvalid,
            np.zeros(n, np.uint8), nulls, offs, buf, offs, buf, np.zeros(n + 1, np.int32), empty32,
            empty8, empty32, empty8, empty8)


def test_timestamp_types_map_to_kafkas_and_unavailable_is_null():
    n = 3
    tstype = np.array([1, 2, 0], np.int32)  # CreateTime, LogAppendTime, not available
    ts = np.array([1000, 2000, -1], np.int64)
    lens = np.array([-1, 0, 2], np.int64)
    r = _columns(n, ts, tstype, lens, np.frombuffer(b"ab", np.uint8))
    batch = k._assemble(n, r, "t", 4, RAW_ARROW_SCHEMA, True)
    batch.validate(full=True)
    assert batch.schema == RAW_ARROW_SCHEMA
    assert batch.column("timestampType").to_pylist() == [0, 1, -1]
    assert [None if t is None else round(t.timestamp() * 1000) for t in
            batch.column("timestamp").to_pylist()] == [1000, 2000, None]
    assert batch.column("value").to_pylist() == [None, b"", b"ab"]
    assert batch.column("key").to_pylist() == [None, b"", b"ab"]
    assert batch.column("headers").null_count == 3
    assert batch.column("partition").to_pylist() == [4, 4, 4]


def test_no_validity_bitmap_without_nulls():
    n = 2
    r = _columns(n, np.array([5, 6], np.int64), np.array([1, 1], np.int32), np.array([1, 1], np.int64),
                 np.frombuffer(b"xy", np.uint8))
    batch = k._assemble(n, r, "t", 0, RAW_ARROW_SCHEMA, True)
    assert batch.column("value").buffers()[0] is None
    assert batch.column("timestamp").buffers()[0] is None
    assert batch.column("value").to_pylist() == [b"x", b"y"]
