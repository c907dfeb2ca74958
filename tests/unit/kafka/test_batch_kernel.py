"""Pieces of the Arrow assembly of consumed records that need no broker."""
from __future__ import annotations

import numpy as np


from connector.kafka import RAW_ARROW_SCHEMA
from connector.kafka import _batch_kernel as k


def test_splits_keep_every_buffer_within_the_limit():
    sizes = [np.array([5, 5, 5, 5]), np.array([0, 9, 0, 1])]
    assert k._splits(4, sizes, 100) == [(0, 4)]
    assert k._splits(4, sizes, 10) == [(0, 2), (2, 4)]
    assert k._splits(4, sizes, 9) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    # one record larger than the limit still makes its own batch
    assert k._splits(2, [np.array([50, 1])], 10) == [(0, 1), (1, 2)]
    assert k._splits(0, [np.array([], np.int64)], 10) == []


def test_timestamp_types_map_to_kafkas_and_unavailable_is_null():
    n = 3
    tstype = np.array([1, 2, 0], np.int32)  # CreateTime, LogAppendTime, not available
    ts = np.array([1000, 2000, -1], np.int64)
    lens = np.array([-1, 0, 2], np.int64)
    bufs = (np.empty(0, np.uint8), np.zeros(4, np.int32), np.frombuffer(b"ab", np.uint8),
            np.array([0, 0, 0, 2], np.int32), 0, np.zeros(4, np.int32), np.zeros(1, np.int32),
            np.empty(0, np.uint8), np.zeros(1, np.int32), np.empty(0, np.uint8), np.empty(0, np.uint8))
    batch = k._assemble(n, np.arange(n, dtype=np.int64), ts, tstype, lens, lens, np.zeros(n, np.int64),
                        bufs, "t", 4, RAW_ARROW_SCHEMA, True)
    assert batch.schema == RAW_ARROW_SCHEMA
    assert batch.column("timestampType").to_pylist() == [0, 1, -1]
    assert [None if t is None else round(t.timestamp() * 1000) for t in
            batch.column("timestamp").to_pylist()] == [1000, 2000, None]
    assert batch.column("value").to_pylist() == [None, b"", b"ab"]
    assert batch.column("headers").null_count == 3
    assert batch.column("partition").to_pylist() == [4, 4, 4]
