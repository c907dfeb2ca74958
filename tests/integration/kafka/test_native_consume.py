"""The native read path (NativeConsumer + compiled kernels) against confluent-kafka's own
consumer on odd data, byte-limit splits, handle/message leaks and log routing."""
from __future__ import annotations

import logging
import os
import uuid

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, TopicPartition

from connector.kafka import RAW_ARROW_SCHEMA, OffsetRange, read_range, read_ranges
from connector.kafka._consume import consumer_stats
from connector.kafka import _batch_kernel

pytestmark = pytest.mark.kafka


def _odd_records():
    """(key, value, headers): nulls, empties, a large value, many headers, NULL header values,
    non-ASCII header names and binary bytes everywhere."""
    out = [
        (None, None, None),
        (b"", b"", None),
        (None, b"v", [("h", None)]),
        (b"k", None, [("", b"")]),
        (b"\x00\xff" * 3, bytes(range(256)), [("ключ-é", b"\x00\x01"), ("x", None), ("x", b"dup")]),
        (b"big", os.urandom(600_000), [("size", b"600000")]),
        (b"many", b"m", [(f"h{i}", None if i % 4 == 0 else b"%d" % i) for i in range(300)]),
    ]
    out += [(b"k%d" % i, b"v%d" % i if i % 2 else b"", [("i", b"%d" % i)] if i % 3 == 0 else None)
            for i in range(40)]
    return out


@pytest.fixture(scope="module")
def odd(kafka):
    topic = f"native-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic)
    recs = _odd_records()
    for i, (key, value, headers) in enumerate(recs):
        kafka.produce(topic, value, key=key, partition=0, headers=headers,
                      timestamp=1_700_000_000_000 + i)
    kafka.flush()
    return topic, recs


def _confluent_rows(kafka, topic: str, n: int) -> list[dict]:
    """The same records as confluent-kafka's Message objects give them (the reference)."""
    c = Consumer({**kafka.conf, "group.id": f"ref-{uuid.uuid4().hex}", "enable.auto.commit": False,
                  "log_level": 0})
    c.assign([TopicPartition(topic, 0, 0)])
    rows: list[dict] = []
    try:
        while len(rows) < n:
            for m in c.consume(n - len(rows), timeout=5):
                assert m.error() is None
                ts_type, ts = m.timestamp()
                hs = m.headers()
                rows.append({"key": m.key(), "value": m.value(), "offset": m.offset(),
                             "timestampType": ts_type - 1, "ms": ts if ts_type else None,
                             "headers": [{"key": k, "value": v} for k, v in hs] if hs else None})
    finally:
        c.close()
    return rows


def _rows(batches) -> list[dict]:
    out = []
    for r in pa.Table.from_batches(batches).to_pylist():
        ts = r.pop("timestamp")
        r["ms"] = None if ts is None else round(ts.timestamp() * 1000)
        r.pop("topic")
        r.pop("partition")
        out.append(r)
    return out


def test_odd_records_match_confluent_kafkas_messages(kafka, odd):
    topic, recs = odd
    got = _rows(read_range(kafka.conf, OffsetRange(topic, 0, 0, len(recs)), batch_size=5))
    assert got == _confluent_rows(kafka, topic, len(recs))
    # and what was produced (a header with a NULL value stays null, an empty one empty)
    assert [(r["key"], r["value"]) for r in got] == [(k, v) for k, v, _ in recs]
    assert got[2]["headers"] == [{"key": "h", "value": None}]
    assert got[3]["headers"] == [{"key": "", "value": b""}]
    assert got[0]["headers"] is None and len(got[6]["headers"]) == 300


def test_batches_split_when_a_buffer_would_pass_the_byte_limit(kafka, odd, monkeypatch):
    """int32 offsets: a batch whose bytes pass the limit becomes several (limit lowered here)."""
    topic, recs = odd
    whole = pa.Table.from_batches(read_range(kafka.conf, OffsetRange(topic, 0, 7, len(recs))))
    monkeypatch.setattr(_batch_kernel, "MAX_BUFFER_BYTES", 12)
    batches = list(read_range(kafka.conf, OffsetRange(topic, 0, 7, len(recs))))
    assert len(batches) > 1
    for b in batches:
        assert all(b.schema == RAW_ARROW_SCHEMA for b in batches)
        keys = sum(len(k) for k in b.column("key").to_pylist() if k)
        values = sum(len(v) for v in b.column("value").to_pylist() if v)
        assert (keys <= 12 and values <= 12) or b.num_rows == 1
    assert pa.Table.from_batches(batches).equals(whole)


def test_header_bytes_split_too(kafka, odd, monkeypatch):
    """Records with no key or value but headers: only the header buffers pass the limit."""
    topic, _ = odd
    for i in range(4):
        kafka.produce(topic, None, partition=1, headers=[("abc", b"xy%d" % i)])
    kafka.flush()
    whole = pa.Table.from_batches(read_range(kafka.conf, OffsetRange(topic, 1, 0, 4)))
    monkeypatch.setattr(_batch_kernel, "MAX_BUFFER_BYTES", 5)  # 3 + 3 bytes do not fit
    batches = list(read_range(kafka.conf, OffsetRange(topic, 1, 0, 4)))
    assert [b.num_rows for b in batches] == [1, 1, 1, 1]
    assert pa.Table.from_batches(batches).equals(whole)


def test_byte_limit_splits_and_the_range_end_inside_one_window(kafka, odd, monkeypatch):
    """One window (batch_size 100) holds records past the range end: the compiled pass splits
    at the byte limit several times, stops exactly at the end and gives back every message
    (the consumer closes; a message still held would hang it)."""
    topic, recs = odd
    before = consumer_stats()["open"]
    whole = pa.Table.from_batches(read_range(kafka.conf, OffsetRange(topic, 0, 7, 30), batch_size=100))
    assert whole.column("offset").to_pylist() == list(range(7, 30))
    monkeypatch.setattr(_batch_kernel, "MAX_BUFFER_BYTES", 6)
    batches = list(read_range(kafka.conf, OffsetRange(topic, 0, 7, 30), batch_size=100))
    assert len(batches) > 4
    assert pa.Table.from_batches(batches).equals(whole)
    assert consumer_stats()["open"] == before


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_no_handle_or_message_leaks_over_many_ranges(kafka, odd):
    """Every handle, queue and message is given back: consumers close (a message still held
    would block rd_kafka_destroy for ever), librdkafka's threads end, also after early stops."""
    topic, recs = odd
    list(read_range(kafka.conf, OffsetRange(topic, 0, 0, 3)))  # warm: kernels, metadata
    threads = _threads()
    before = consumer_stats()
    for i in range(12):
        ranges = [OffsetRange(topic, 0, a, a + 9) for a in range(0, 36, 9)]
        gen = read_ranges(kafka.conf, ranges, batch_size=4)
        if i % 3 == 0:
            next(gen)
            gen.close()  # stops early with messages still in the window and ranges ahead
        else:
            assert sum(b.num_rows for _, b in gen) == 36
    after = consumer_stats()
    assert after["open"] == before["open"] == 0
    assert after["created"] - before["created"] == 12 * 4  # the ranges share a partition: one each
    assert _threads() <= threads + 2  # librdkafka runs several threads per handle


def test_one_consumer_reads_a_tasks_ranges_of_several_partitions(kafka):
    """A task's ranges of distinct partitions share one consumer, each read from its partition's
    own queue (no record of one range lands in another); a range of a partition read before in
    the task gets a consumer of its own; an early stop closes every consumer."""
    topic = f"task-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 4)
    for p in range(4):
        kafka.produce_many(topic, [b"%d-%d" % (p, i) for i in range(20)], partition=p, flush=False)
    kafka.flush()
    ranges = [OffsetRange(topic, p, 0, 10) for p in range(4)] + [OffsetRange(topic, 2, 10, 20)]
    before = consumer_stats()
    got = {}
    for rng, b in read_ranges(kafka.conf, ranges, batch_size=3):
        assert b.column("partition").to_pylist() == [rng.partition] * b.num_rows
        got.setdefault((rng.partition, rng.start), []).extend(b.column("value").to_pylist())
    assert got == {(r.partition, r.start): [b"%d-%d" % (r.partition, i) for i in range(r.start, r.end)]
                   for r in ranges}
    assert consumer_stats()["created"] - before["created"] == 2
    one_by_one = {(rng.partition, rng.start): [] for rng in ranges}
    for rng, b in read_ranges(kafka.conf, ranges, batch_size=7, ahead=0):
        one_by_one[(rng.partition, rng.start)].extend(b.column("value").to_pylist())
    assert one_by_one == got
    for ahead in (0, 7):
        gen = read_ranges(kafka.conf, ranges, batch_size=3, ahead=ahead)
        next(gen)
        gen.close()
    assert consumer_stats()["open"] == before["open"]


def test_librdkafka_logs_go_to_the_python_logger_not_stderr(caplog, capfd):
    import socket

    from connector.errors import KafkaReadError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    capfd.readouterr()
    with caplog.at_level(logging.DEBUG, logger="connector.kafka._consume"), \
            pytest.raises(KafkaReadError, match="no records received"):
        list(read_range({"bootstrap.servers": f"127.0.0.1:{port}"}, OffsetRange("t", 0, 0, 5),
                        poll_timeout_s=1.5))
    logged = [r.getMessage() for r in caplog.records if r.name == "connector.kafka._consume"]
    assert any("rdkafka#consumer-" in m and str(port) in m for m in logged), logged
    assert "rdkafka#consumer" not in capfd.readouterr().err


def test_ranges_ending_in_transaction_marker_gaps(kafka):
    """Transaction markers are offset gaps; a range ending in one ends when the next record is
    past it, also when that record starts a fetch of its own (batch_size=3). (The mock cluster
    returns aborted records even to read_committed, as confluent-kafka's consumer shows there:
    the isolation level itself is librdkafka's and is not checked here.)"""
    from confluent_kafka import Producer

    if kafka.external:
        pytest.skip("uses a transactional producer; checked on the mock cluster")
    topic = f"gaps-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic)
    producer = Producer({**kafka.conf, "transactional.id": topic, "log_level": 0})
    producer.init_transactions(10)
    for values, commit in (([b"a", b"b", b"c"], True), ([b"x", b"y"], False), ([b"d", b"e"], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce(topic, v, partition=0)
        producer.flush(10)
        (producer.commit_transaction if commit else producer.abort_transaction)(10)
    # a b c | marker 3 | x y (aborted) | marker 6 | d e | marker 9
    assert kafka.watermarks(topic, 0)[1] == 10
    every = [(0, b"a"), (1, b"b"), (2, b"c"), (4, b"x"), (5, b"y"), (7, b"d"), (8, b"e")]
    for batch_size in (3, 100):
        for end in (4, 7, 10):
            got = [(o, v) for b in read_range(kafka.conf, OffsetRange(topic, 0, 0, end), batch_size=batch_size,
                                              isolation_level="read_uncommitted", poll_timeout_s=30)
                   for o, v in zip(b.column("offset").to_pylist(), b.column("value").to_pylist())]
            assert got == [r for r in every if r[0] < end], (batch_size, end)
    # ranges that are nothing but a marker: before more records, and at the end of the log
    for start, end in ((3, 4), (6, 7), (9, 10)):
        assert list(read_range(kafka.conf, OffsetRange(topic, 0, start, end), poll_timeout_s=30)) == []
