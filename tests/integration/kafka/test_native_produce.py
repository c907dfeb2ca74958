"""The sink's native produce path (:class:`BatchProducer` over librdkafka, batches handed over by
the compiled kernel) against the librdkafka mock cluster, read back with confluent-kafka's own
consumer: exact bytes, nulls vs empties, headers, partitions, many topics, a full local queue,
failure reports, purge on abandon, handles released."""
from __future__ import annotations

import logging
import os
import socket
import time
import uuid

import pyarrow as pa
import pytest

from connector.errors import DeliveryError, HeaderNameError
from connector.kafka import Headers, producer_for
from connector.kafka._produce import BatchProducer

pytestmark = pytest.mark.kafka


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read(kafka, topic: str, n: int, partitions=range(4), timeout_s: float = 30.0) -> list[tuple]:
    """(partition, key, value, headers) of the first ``n`` records of ``topic``, per partition in
    offset order."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "native-produce-test",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        out: list[tuple] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < n and time.monotonic() < deadline:
            for m in c.consume(500, 0.2):
                assert m.error() is None, m.error()
                out.append((m.partition(), m.key(), m.value(), m.headers()))
        assert len(out) == n, f"read {len(out)} of {n}"
        return sorted(out, key=lambda r: r[0])  # stable: offset order within a partition
    finally:
        c.close()


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_null_and_empty_keys_values_and_headers_round_trip(kafka):
    topic = _topic("native-nulls")
    kafka.create_topic(topic)
    # slices (a non-zero Arrow offset), as Spark's batches and filters hand over
    values = pa.array([b"x", b"v0", None, b"", b"\x00\xff", b"tail"], pa.binary()).slice(1, 4)
    keys = pa.array([b"y", None, b"", b"k2", b"k3", b"z"], pa.binary()).slice(1, 4)
    headers = Headers(rows=pa.array([[{"key": "a", "value": b"1"}], None,
                                     [{"key": "n", "value": None}, {"key": "e", "value": b""}], []],
                                    pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
                      common=(("schema", b"\x00\x01"),))
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        assert bp.produce(topic, values, keys, [0, 0, 0, 0], headers) == 4
        bp.finish(30)
    finally:
        bp.close()
    got = _read(kafka, topic, 4, partitions=[0])
    assert [(k, v) for _, k, v, _ in got] == [(None, b"v0"), (b"", None), (b"k2", b""), (b"k3", b"\x00\xff")]
    assert [h for *_, h in got] == [
        [("a", b"1"), ("schema", b"\x00\x01")],
        [("schema", b"\x00\x01")],
        [("n", None), ("e", b""), ("schema", b"\x00\x01")],
        [("schema", b"\x00\x01")],
    ]


def test_a_header_name_holding_nul_fails_the_batch_naming_the_record(kafka):
    # librdkafka takes header names NUL-terminated: "trace\x00id" would have gone out as "trace"
    topic = _topic("native-nul")
    kafka.create_topic(topic)
    htype = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    rows = pa.array([None, [{"key": "ok", "value": b"1"}], [], [{"key": "a", "value": b""},
                                                             {"key": "trace\x00id", "value": b"2"}]], htype)
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        with pytest.raises(HeaderNameError, match=r"record 3 .*'native-nul.*'trace\\x00id'"):
            bp.produce(topic, [b"a", b"b", b"c", b"d"], None, [0, 0, 0, 0], Headers(rows=rows))
        with pytest.raises(HeaderNameError, match="NUL"):  # a framing header too
            bp.produce(topic, [b"a"], None, [0], Headers(common=(("id\x00", b"\x01"),)))
        assert bp.produce(topic, [b"e"], None, [0], Headers(rows=rows.slice(1, 1))) == 1
        bp.finish(30)
    finally:
        bp.close()
    assert [(v, h) for _, _, v, h in _read(kafka, topic, 1, partitions=[0])] == [(b"e", [("ok", b"1")])]


def test_headerless_batches_of_one_topic_keep_nulls_empties_keys_partitions_and_order(kafka):
    # one topic, no headers: the rd_kafka_produce_batch path (windows of records per call)
    topic = _topic("native-batch")
    kafka.create_topic(topic)
    n = 25_000  # three windows
    # slices (a non-zero Arrow offset), as Spark's batches and filters hand over
    values = pa.array([b"x", b"y"] + [None if i % 7 == 3 else b"" if i % 7 == 4 else i.to_bytes(4, "big")
                                      for i in range(n)], pa.binary()).slice(2)
    keys = pa.array([b"z"] + [None if i % 5 == 1 else b"" if i % 5 == 2 else b"k%d" % i for i in range(n)],
                    pa.binary()).slice(1)
    parts = pa.array([None if i % 3 == 0 else i % 4 for i in range(n)], pa.int32())  # None: the partitioner
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        assert bp.produce(topic, values, keys, parts, None) == n
        bp.finish(60)
    finally:
        bp.close()
    got = _read(kafka, topic, n)
    seen: dict[int, list[int]] = {}
    for p, k, v, h in got:
        assert h is None
        if k:  # a named record: its value and partition
            i = int(k[1:])
            assert v == values[i].as_py() and (i % 3 == 0 or p == i % 4), (i, p, k, v)
            seen.setdefault(p, []).append(i)
    assert len(got) == n
    def order(kv):
        return repr(kv)

    assert sorted(((k, v) for _, k, v, _ in got if not k), key=order) == sorted(
        ((keys[i].as_py(), values[i].as_py()) for i in range(n) if i % 5 in (1, 2)), key=order), \
        "null/empty keys or values"
    assert all(s == sorted(s) for s in seen.values()), "records of a partition out of order"


def test_plain_lists_and_no_headers_give_headerless_records(kafka):
    topic = _topic("native-lists")
    kafka.create_topic(topic)
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        bp.produce(topic, [b"a", b"b"], None, [1, 1], None)
        bp.finish(30)
    finally:
        bp.close()
    got = _read(kafka, topic, 2, partitions=[1])
    assert [(p, k, v, h) for p, k, v, h in got] == [(1, None, b"a", None), (1, None, b"b", None)]


def test_explicit_partitions_and_many_topics_in_one_batch(kafka):
    topics = [_topic(f"native-many{i}") for i in range(3)]
    for t in topics:
        kafka.create_topic(t)
    n = 300
    per_row = pa.array([topics[i % 3] for i in range(n)], pa.string())
    parts = pa.array([None if i % 10 == 0 else i % 4 for i in range(n)], pa.int32())
    values = pa.array([f"{i}".encode() for i in range(n)], pa.binary())
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        assert bp.produce(per_row, values, None, parts, None) == n
        bp.finish(30)
    finally:
        bp.close()
    for j, t in enumerate(topics):
        got = _read(kafka, t, n // 3)
        seen = {int(v): p for p, _, v, _ in got}
        assert sorted(seen) == [i for i in range(n) if i % 3 == j]
        assert all(p == i % 4 for i, p in seen.items() if i % 10), "an explicit partition was not honoured"


def test_a_full_local_queue_is_served_and_the_batch_resumes_in_order(kafka):
    topic = _topic("native-qfull")
    kafka.create_topic(topic)
    n = 3000
    values = pa.array([i.to_bytes(4, "big") for i in range(n)], pa.binary())
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers, "queue.buffering.max.messages": 50,
                        "linger.ms": 1})
    try:
        assert bp.produce(topic, values, None, pa.array([2] * n, pa.int32()), None) == n
        bp.finish(60)
    finally:
        bp.close()
    got = _read(kafka, topic, n, partitions=[2])
    assert [int.from_bytes(v, "big") for _, _, v, _ in got] == list(range(n))


def test_unknown_partition_fails_at_once_naming_row_topic_and_partition(kafka):
    topic = _topic("native-nopart")
    kafka.create_topic(topic)
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        bp.produce(topic, [b"a"], None, [0], None)
        bp.finish(30)  # metadata known: partition 99 is refused by the produce call itself
        with pytest.raises(DeliveryError) as info:
            bp.produce(topic, [b"a", b"b"], None, [1, 99], None)
        assert f"record 1 to topic {topic!r} partition 99" in str(info.value) and bp.broken
    finally:
        bp.close()


def test_delivery_failures_name_topic_and_partition_or_why_none():
    bp = BatchProducer({"bootstrap.servers": f"127.0.0.1:{_closed_port()}", "message.timeout.ms": 300,
                        "log_level": 0})
    try:
        bp.produce("orders", [b"a", b"b"], None, [3, -1], None)
        with pytest.raises(DeliveryError) as info:
            bp.finish(30)
    finally:
        bp.close()
    failures = info.value.failures
    assert {(t, p) for t, p, _ in failures} == {("orders", 3), ("orders", None)}, failures
    assert all("timed out" in text.lower() for *_, text in failures), failures


def test_abandon_purges_what_is_still_queued():
    bp = BatchProducer({"bootstrap.servers": f"127.0.0.1:{_closed_port()}", "message.timeout.ms": 120_000,
                        "log_level": 0})
    try:
        bp.produce("orders", [b"x"] * 100, None, None, None)
        assert bp.queued() >= 100
        bp.abandon()
        deadline = time.monotonic() + 10
        while bp.queued() and time.monotonic() < deadline:
            bp.abandon()
        assert bp.queued() == 0 and bp.broken
    finally:
        bp.close()


def test_closed_and_replaced_producers_release_their_threads(kafka):
    conf = {"bootstrap.servers": kafka.bootstrap_servers, "client.id": "native-leak"}
    bp = producer_for(conf)  # warm: the pool's one producer for this conf
    bp.produce(_topic("native-leak"), [b"a"], None, None, None)
    bp.finish(30)
    base = _threads()
    replaced = []  # still referenced: only an explicit close releases them
    for _ in range(3):
        bp.broken = True  # as after a failed task: the pool replaces it and closes the old one
        new = producer_for(conf)
        assert new is not bp
        replaced.append(bp)
        bp = new
    for _ in range(3):
        BatchProducer(conf).close()
    deadline = time.monotonic() + 10
    while _threads() > base and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _threads() <= base, "a librdkafka handle was not destroyed"
    assert len(replaced) == 3
    closed = BatchProducer(conf)
    closed.close()
    with pytest.raises(DeliveryError, match="closed"):
        closed.produce("t", [b"a"])  # a destroyed handle is never used again
    bp.close()


def test_librdkafka_logs_go_to_the_connector_logger(caplog):
    caplog.set_level(logging.DEBUG, logger="asyncapi_kafka")
    bp = BatchProducer({"bootstrap.servers": f"127.0.0.1:{_closed_port()}", "message.timeout.ms": 2000})
    try:
        bp.produce("orders", [b"a"], None, None, None)
        with pytest.raises(DeliveryError):
            bp.finish(30)
    finally:
        bp.close()
    assert any(r.name == "asyncapi_kafka" and r.getMessage().startswith("librdkafka ") for r in caplog.records)


def test_header_sizes_count_names_values_and_common_headers():
    rows = pa.array([[{"key": "ab", "value": b"123"}], None, [{"key": "n", "value": None},
                     {"key": "", "value": b""}]],
                    pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
    sizes = Headers(rows=rows, common=(("s", b"xy"),)).sizes(3)
    assert sizes.to_pylist() == [2 + 3 + 4 + 7, 7, 1 + 4 + 4 + 7]
    assert Headers(rows=rows.slice(1), common=()).sizes(2).to_pylist() == [0, 9]


def test_a_forked_worker_gets_its_own_producer_and_leaves_the_parents_alone(kafka):
    """Spark forks Python workers: the child's pool is reset, so it builds its own producer, and
    the parent's handle keeps working after the child dropped its inherited copy."""
    conf = {"bootstrap.servers": kafka.bootstrap_servers, "client.id": "native-fork"}
    topic = _topic("native-fork")
    kafka.create_topic(topic)
    parent = producer_for(conf)
    parent.produce(topic, [b"p0"], None, [0], None)
    parent.finish(30)
    pid = os.fork()
    if pid == 0:  # the child: its exit status says what went wrong
        code = 1
        try:
            import gc
            import signal

            signal.alarm(30)  # a hang (destroying the parent's handle here) ends the child
            child = producer_for(conf)
            code = 2
            if child is not parent:
                del parent, child
                gc.collect()  # the inherited producer is dropped: its finalizer must skip
                mine = producer_for(conf)
                mine.produce(topic, [b"c"], None, [0], None)
                mine.finish(30)
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    parent.produce(topic, [b"p1"], None, [0], None)  # the parent's handle still works
    parent.finish(30)
    assert sorted(v for _, _, v, _ in _read(kafka, topic, 3, partitions=[0])) == [b"c", b"p0", b"p1"]


def test_a_fatal_producer_error_fails_the_batch_saying_so(kafka):
    """librdkafka's own fault hook (``rd_kafka_test_fatal_error``) puts the idempotent producer
    in its fatal state: the error event is read and every later produce or finish fails, naming it."""
    import ctypes

    from connector.kafka._librdkafka import api

    topic = _topic("native-fatal")
    kafka.create_topic(topic)
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        bp.produce(topic, [b"a"], None, [0], None)
        bp.finish(30)
        hook = api().lib.rd_kafka_test_fatal_error
        hook.restype, hook.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]
        assert hook(bp._rk, 47, b"injected by the test") == 0  # INVALID_PRODUCER_EPOCH
        with pytest.raises(DeliveryError) as info:
            bp.produce(topic, [b"b"], None, [0], None)
            bp.finish(30)
        text = str(info.value)
        assert "fatal producer error" in text and "injected by the test" in text and bp.broken, text
    finally:
        bp.close()


def test_a_broker_refusal_is_reported_with_topic_partition_and_the_brokers_error():
    """A produce request the broker answers with a permanent error: the failure report names the
    topic, the partition librdkafka chose and the broker's error (not a timeout)."""
    from tests.reliability.mock_cluster import ApiKey, Err, MockCluster

    mc = MockCluster(1)
    try:
        topic = _topic("native-refused")
        mc.create_topic(topic, 2)
        bp = BatchProducer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 0})
        try:
            bp.produce(topic, [b"warm"], None, [0], None)
            bp.finish(30)
            mc.push_broker_errors(1, ApiKey.PRODUCE, *[Err.TOPIC_AUTHORIZATION_FAILED] * 5)
            with pytest.raises(DeliveryError) as info:
                bp.produce(topic, [b"x"], None, [1], None)
                bp.finish(30)
        finally:
            bp.close()
    finally:
        mc.close()
    assert info.value.failures and info.value.failures[0][:2] == (topic, 1), info.value.failures
    assert "authoriz" in info.value.failures[0][2].lower(), info.value.failures
