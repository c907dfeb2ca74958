"""read_range against a real Kafka peer: exact rows, batching, consumers closed per range, data loss."""
from __future__ import annotations

import logging
import uuid
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from connector.errors import DataLossError, KafkaReadError
from connector.kafka import (
    RAW_ARROW_SCHEMA, RAW_ARROW_SCHEMA_NO_HEADERS, KafkaOffsetReader, OffsetRange, plan_ranges, read_range,
    read_ranges, validate_ranges
)
from connector.kafka._ranges import COULD_NOT_READ_OFFSET_RANGE, START_OFFSET_RESET
from connector.kafka._consume import consumer_stats
from connector.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka

BASE_TS = 1_700_000_000_000


def _records(n: int):
    """(key, value, headers, timestamp) with tombstones, null keys and odd headers."""
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else b"k%d" % i
        value = None if i % 7 == 3 else b"value-%d-" % i + bytes([i % 256]) * (i % 11)
        headers = None
        if i % 3 == 1:
            headers = [("trace", b"t%d" % i), ("empty", None), ("trace", b"dup")]
        out.append((key, value, headers, BASE_TS + 17 * i))
    return out


@pytest.fixture(scope="module")
def filled(kafka):
    topic = f"read-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic)
    recs = _records(60)
    for key, value, headers, ts in recs:
        kafka.produce(topic, value, key=key, partition=1, headers=headers, timestamp=ts)
    kafka.flush()
    return topic, recs


def _rows(batches):
    table = pa.Table.from_batches(batches)
    return table.to_pylist()


def _expected(topic, recs, start, end):
    out = []
    for off in range(start, end):
        key, value, headers, ts = recs[off]
        out.append({"key": key, "value": value, "topic": topic, "partition": 1, "offset": off,
                    "timestamp": datetime.fromtimestamp(ts / 1000, tz=timezone.utc),
                    "timestampType": 0,
                    "headers": [{"key": k, "value": v} for k, v in headers] if headers else None})
    return out


@pytest.mark.parametrize("start,end", [(0, 60), (0, 1), (17, 42), (59, 60)])
def test_read_range_returns_exactly_the_produced_records(kafka, filled, start, end):
    topic, recs = filled
    batches = list(read_range(kafka.conf, OffsetRange(topic, 1, start, end)))
    assert all(b.schema == RAW_ARROW_SCHEMA for b in batches)
    assert _rows(batches) == _expected(topic, recs, start, end)


def test_without_headers_the_column_is_omitted(kafka, filled):
    topic, recs = filled
    batches = list(read_range(kafka.conf, OffsetRange(topic, 1, 0, 10), include_headers=False))
    assert all(b.schema == RAW_ARROW_SCHEMA_NO_HEADERS for b in batches)
    expected = [{k: v for k, v in row.items() if k != "headers"}
                for row in _expected(topic, recs, 0, 10)]
    assert _rows(batches) == expected


def test_split_ranges_give_the_same_rows_as_one(kafka, filled):
    topic, _ = filled
    whole = _rows(list(read_range(kafka.conf, OffsetRange(topic, 1, 0, 60))))
    parts = plan_ranges({(topic, 1): 0}, {(topic, 1): 60}, min_partitions=3)
    assert len(parts) == 3
    pieces = [row for r in parts for row in _rows(list(read_range(kafka.conf, r)))]
    assert pieces == whole


def test_batches_are_bounded(kafka, filled):
    topic, _ = filled
    batches = list(read_range(kafka.conf, OffsetRange(topic, 1, 0, 60), batch_size=7))
    assert max(b.num_rows for b in batches) <= 7
    assert sum(b.num_rows for b in batches) == 60
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == list(range(60))


def test_consumer_is_closed_after_every_range(kafka, filled):
    """No idle consumers survive a task: an idle consumer crashes the worker when its topic is
    recreated (tests/reliability), and a fresh one is not slower on small ranges."""
    topic, _ = filled
    before = consumer_stats()
    for a, b in [(0, 10), (10, 20), (20, 30)]:
        assert sum(x.num_rows for x in read_range(kafka.conf, OffsetRange(topic, 1, a, b))) == 10
    # a task that stops early (e.g. a LIMIT) still closes its consumer
    gen = read_range(kafka.conf, OffsetRange(topic, 1, 0, 60), batch_size=5)
    next(gen)
    gen.close()
    after = consumer_stats()
    assert after["created"] - before["created"] == 4
    assert after["open"] == before["open"] == 0


def test_read_ranges_reads_each_range_in_order_and_closes_consumers_opened_ahead(kafka, filled):
    """A packed task's ranges (some opened ahead of their turn) give exactly their rows, in the
    given order, and no consumer survives the task, also when it stops early."""
    topic, _ = filled
    ranges = [OffsetRange(topic, 1, 40, 50), OffsetRange(topic, 1, 5, 5), OffsetRange(topic, 1, 0, 12),
              OffsetRange(topic, 1, 12, 13), OffsetRange(topic, 1, 30, 60)]
    before = consumer_stats()
    got = [(rng, b.column("offset").to_pylist()) for rng, b in read_ranges(kafka.conf, ranges, ahead=2, batch_size=4)]
    assert [o for _, offs in got for o in offs] == [*range(40, 50), *range(0, 13), *range(30, 60)]
    assert all(rng.start <= o < rng.end for rng, offs in got for o in offs)
    assert consumer_stats()["open"] == before["open"] == 0
    gen = read_ranges(kafka.conf, ranges, ahead=3, batch_size=4)
    next(gen)
    assert consumer_stats()["open"] == 4  # the current range's consumer and three opened ahead
    gen.close()
    after = consumer_stats()
    assert after["open"] == 0
    assert after["created"] - before["created"] == 4 + 4  # the empty range opens none


def test_range_ending_in_an_offset_gap_terminates(kafka):
    """Transaction markers occupy offsets: a range whose end is a marker must not hang."""
    from confluent_kafka import Producer

    if kafka.external:
        pytest.skip("uses a transactional producer; covered on the mock cluster")
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic)
    producer = Producer({**kafka.conf, "transactional.id": topic, "log_level": 0})
    producer.init_transactions(10)
    for batch in ([b"a", b"b", b"c"], [b"d"]):
        producer.begin_transaction()
        for v in batch:
            producer.produce(topic, v, partition=0)
        producer.commit_transaction(10)
    low, high = kafka.watermarks(topic, 0)
    assert high == 6  # 4 records + 2 commit markers (offsets 3 and 5)
    for iso in ("read_committed", "read_uncommitted"):
        rows = _rows(list(read_range(kafka.conf, OffsetRange(topic, 0, 0, high),
                                     isolation_level=iso, poll_timeout_s=30)))
        assert [(r["offset"], r["value"]) for r in rows] == [(0, b"a"), (1, b"b"), (2, b"c"),
                                                              (4, b"d")]


def test_range_past_the_end_of_the_partition_is_data_loss(kafka, filled, caplog):
    """The partition is shorter than planned (truncated or recreated): never wait forever."""
    topic, recs = filled
    with pytest.raises(DataLossError) as info:
        list(read_range(kafka.conf, OffsetRange(topic, 1, 50, 65), poll_timeout_s=30))
    assert info.value.condition == COULD_NOT_READ_OFFSET_RANGE
    assert "[60, 65)" in str(info.value)
    with caplog.at_level(logging.WARNING):
        rows = _rows(list(read_range(kafka.conf, OffsetRange(topic, 1, 50, 65),
                                     fail_on_data_loss=False, poll_timeout_s=30)))
    assert rows == _expected(topic, recs, 50, 60)
    assert "[60, 65)" in caplog.text


def test_empty_range_yields_nothing(kafka, filled):
    topic, _ = filled
    assert list(read_range(kafka.conf, OffsetRange(topic, 1, 5, 5))) == []


def test_multi_broker_cluster_reads_every_partition():
    with EmbeddedKafka(num_brokers=3) as cluster:
        assert len(cluster.bootstrap_servers.split(",")) == 3
        cluster.create_topic("spread")
        for p in range(4):
            cluster.produce("spread", b"p%d" % p, partition=p)
        cluster.flush()
        with KafkaOffsetReader(cluster.conf, timeout_s=10) as r:
            tps = r.partitions_for(["spread"])
            ranges = plan_ranges(r.earliest(tps), r.latest(tps))
        values = [v for rng in ranges for b in read_range(cluster.conf, rng)
                  for v in b.column("value").to_pylist()]
        assert values == [b"p0", b"p1", b"p2", b"p3"]


def test_unreachable_broker_is_a_read_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "log_level": "0"}
    with pytest.raises(KafkaReadError, match="no records received"):
        list(read_range(conf, OffsetRange("t", 0, 0, 5), poll_timeout_s=0.5))


@pytest.fixture(scope="module")
def aged_out():
    """A partition whose oldest records were dropped: the mock keeps ~5 MB per partition."""
    with EmbeddedKafka() as cluster:
        topic = "aged"
        cluster.create_topic(topic)
        values = [i.to_bytes(4, "big") + bytes(10_000) for i in range(800)]  # ~8 MB
        cluster.produce_many(topic, values, partition=0)
        yield cluster, topic, values


@pytest.mark.slow
def test_aged_out_records_fail_the_read(aged_out):
    cluster, topic, _ = aged_out
    low, high = cluster.watermarks(topic, 0)
    assert low > 0 and high == 800  # the low watermark moved: records aged out
    with pytest.raises(DataLossError) as info:
        list(read_range(cluster.conf, OffsetRange(topic, 0, 0, high)))
    assert info.value.condition == COULD_NOT_READ_OFFSET_RANGE
    assert f"[0, {low})" in str(info.value)


@pytest.mark.slow
def test_aged_out_records_warn_and_return_the_rest(aged_out, caplog):
    cluster, topic, values = aged_out
    low, high = cluster.watermarks(topic, 0)
    with caplog.at_level(logging.WARNING):
        batches = list(read_range(cluster.conf, OffsetRange(topic, 0, 0, high),
                                  fail_on_data_loss=False, batch_size=100))
    assert COULD_NOT_READ_OFFSET_RANGE in caplog.text
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == list(range(low, high))  # everything still there, nothing twice
    got = [v for b in batches for v in b.column("value").to_pylist()]
    assert got == values[low:high]


@pytest.mark.slow
def test_planning_detects_aged_out_start(aged_out, caplog):
    cluster, topic, _ = aged_out
    with KafkaOffsetReader(cluster.conf, timeout_s=10) as r:
        tps = [(topic, 0)]
        earliest, latest = r.earliest(tps), r.latest(tps)
    with pytest.raises(DataLossError) as info:
        validate_ranges({(topic, 0): 0}, latest, earliest, True)
    assert info.value.condition == START_OFFSET_RESET
    with caplog.at_level(logging.WARNING):
        start, end = validate_ranges({(topic, 0): 0}, latest, earliest, False)
    assert start == earliest and end == latest
