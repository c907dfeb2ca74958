"""What Kafka clusters do every day, ridden out: leader moves, rolling restarts, transient errors.

A 3-broker librdkafka mock cluster is driven through its C fault API (``mock_cluster.py``)
while the stream reader runs micro-batches the way Spark's engine calls it (``initialOffset`` →
``latestOffset`` → ``partitions`` → ``read``, in this process) and the sink's
``BatchProducer`` writes. Every record carries a unique id; each case checks that every id
written is read exactly once, or, for a broker down longer than ``kafkaConsumer.pollTimeoutMs``,
that the failure is clear and the restart from the checkpointed offsets exact. One case runs
the same through a real SparkSession (source and sink).

Mirrors Spark's ``KafkaMicroBatchSourceSuite`` / ``KafkaSourceStressSuite`` (streams under
topic churn) and librdkafka's ``0104-fetch_from_follower_mock`` / ``0117-mock_errors`` tests.

Not testable here: partitions added to a live topic need CreatePartitions, which neither the
mock cluster nor tansu implements (the mock has no admin API; tansu refuses CreatePartitions).
The closest case that is testable, a new topic matching the channel's address template
appearing mid-stream, goes through the same planning path (partitions in the latest offsets
that the start lacks are read from their earliest offset) and is covered below; the offset
arithmetic of added partitions is unit-tested in ``test_broker_faults.py``.
"""
from __future__ import annotations

import collections
import json
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from connector.errors import DeliveryError, KafkaReadError
from connector.kafka import KafkaOffsetReader, OffsetRange, read_range
from connector.kafka._produce import BatchProducer

from tests.reliability.conftest import closed_port, plain_setup
from tests.reliability.mock_cluster import ApiKey, Err, MockCluster, wait_for

pytestmark = pytest.mark.kafka

TOPIC = "faults"
PARTITIONS = 4
#: Driver look-ups retry quickly here (Spark's defaults: 3 retries, 1 s apart).
FAST = {"fetchOffset.retryIntervalMs": "100", "fetchOffset.numRetries": "50", "fetchOffset.timeoutMs": "20000",
        "kafkaConsumer.pollTimeoutMs": "20000", "maxBatchRows": "100",
        # small fetches, so that faults land in the middle of a range
        "kafka.fetch.max.bytes": "4000", "kafka.max.partition.fetch.bytes": "2000",
        "kafka.message.max.bytes": "2000", "kafka.queued.max.messages.kbytes": "4", "kafka.log_level": "0"}


def uid(n: int) -> bytes:
    return b"id-%06d" % n


@pytest.fixture()
def cluster():
    mc = MockCluster(3)
    mc.create_topic(TOPIC, PARTITIONS)  # leaders spread over the brokers
    yield mc
    mc.close()


class Stream:
    """The stream reader driven as Spark's micro-batch engine drives it, in this process.

    ``offset`` is what Spark would have checkpointed after the last completed micro-batch.
    """

    def __init__(self, bootstrap: str, topic: str = TOPIC, start: dict | None = None, **options):
        from connector.spark._stream import StreamReader

        opts = {**FAST, "startingOffsets": "earliest", **options}
        self.reader = StreamReader(plain_setup(bootstrap, topic, **opts))
        self.offset = start if start is not None else json.loads(json.dumps(self.reader.initialOffset()))
        self.batches = 0

    def plan(self) -> tuple[dict, list]:
        from pyspark.sql.streaming.datasource import ReadAllAvailable

        end = json.loads(json.dumps(self.reader.latestOffset(self.offset, ReadAllAvailable())))
        return end, self.reader.partitions(self.offset, end)

    def run(self, parts) -> list[bytes]:
        return [v for p in parts for b in self.reader.read(p) for v in b.column("value").to_pylist()]

    def micro_batch(self) -> list[bytes]:
        end, parts = self.plan()
        values = self.run(parts)
        self.offset = end  # the batch completed: Spark commits `end`
        self.batches += 1
        return values

    def read_until(self, seen: collections.Counter, want: int, timeout_s: float, keep_going=lambda: False) -> None:
        """Micro-batches until ``want`` distinct ids were seen and ``keep_going()`` is false,
        then one more (anything it returns is a duplicate or a stray)."""
        deadline = time.monotonic() + timeout_s
        while len(seen) < want or keep_going():
            seen.update(self.micro_batch())
            assert time.monotonic() < deadline, f"read {len(seen)} of {want} ids in {timeout_s}s"
        seen.update(self.micro_batch())

    def stop(self) -> None:
        self.reader.stop()


class Writer(threading.Thread):
    """The sink's producer writing ids ``[first, n)`` in tasks of ``task`` records (``finish``
    after each, as a Spark write task does before it commits), round-robin over partitions."""

    def __init__(self, bootstrap: str, n: int, task: int = 100, topic: str = TOPIC, pace_s: float = 0.0,
                 first: int = 0):
        super().__init__(daemon=True, name="writer")
        self.conf = {"bootstrap.servers": bootstrap, "linger.ms": "2", "log_level": "0"}
        self.n, self.task, self.topic, self.pace_s, self.first = n, task, topic, pace_s, first
        self.tasks = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        bp = BatchProducer(self.conf)
        try:
            for frm in range(self.first, self.n, self.task):
                ids = range(frm, min(frm + self.task, self.n))
                bp.produce(self.topic, [uid(i) for i in ids], None, [i % PARTITIONS for i in ids], None)
                bp.finish(60)
                self.tasks += 1
                if self.pace_s:
                    time.sleep(self.pace_s)  # spread the writes over the faults
        except BaseException as e:  # reported by the test
            self.error = e

    def join_ok(self, timeout_s: float) -> None:
        self.join(timeout_s)
        assert not self.is_alive(), f"writer still running after {timeout_s}s ({self.tasks} tasks done)"
        assert self.error is None, f"the sink failed under a transient fault: {self.error!r}"


class Chaos(threading.Thread):
    """Runs ``step(i)`` every ``every_s`` until stopped; counts the steps."""

    def __init__(self, step, every_s: float):
        super().__init__(daemon=True, name="chaos")
        self.step, self.every_s = step, every_s
        self.done = threading.Event()
        self.steps = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.done.wait(self.every_s):
                self.step(self.steps)
                self.steps += 1
        except BaseException as e:
            self.error = e

    def stop(self) -> None:
        self.done.set()
        self.join(10)
        assert self.error is None, repr(self.error)


def assert_exactly_once(seen: collections.Counter, n: int) -> None:
    dup = sorted(k for k, c in seen.items() if c > 1)
    missing = sorted(set(map(uid, range(n))) - set(seen))
    stray = sorted(set(seen) - set(map(uid, range(n))))
    assert not dup and not missing and not stray, (
        f"{len(dup)} duplicated (e.g. {dup[:3]}), {len(missing)} lost (e.g. {missing[:3]}), "
        f"{len(stray)} unexpected")


def produce(bootstrap: str, ids, topic: str = TOPIC) -> None:
    # small record batches, so that a range takes many fetches
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "batch.num.messages": 20, "log_level": 0})
    for i in ids:
        p.produce(topic, uid(i), partition=i % PARTITIONS)
    assert p.flush(30) == 0


# ------------------------------------------------------------------ the two failures of issue 23
@pytest.mark.timeout(60)
def test_driver_offset_lookups_survive_a_leader_move(cluster):
    """A leader moved since the driver's last look-up: ListOffsets answered
    ``NOT_LEADER_OR_FOLLOWER`` failed the query (``listing earliest offsets failed ... within
    30s: ... Not leader for partition``). Now the look-up refreshes metadata and retries
    (default ``fetchOffset.*``: 3 retries, 1 s apart)."""
    produce(cluster.bootstrap_servers, range(40))
    with KafkaOffsetReader({"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0"}) as reader:
        tps = reader.partitions_for([TOPIC])
        assert reader.latest(tps) == {(TOPIC, p): 10 for p in range(PARTITIONS)}
        for p, leader in cluster.leaders(TOPIC).items():
            cluster.set_leader(TOPIC, p, 1 + leader % 3)  # the next broker
        assert reader.earliest(tps) == {(TOPIC, p): 0 for p in range(PARTITIONS)}
        for p, leader in cluster.leaders(TOPIC).items():
            cluster.set_leader(TOPIC, p, 1 + leader % 3)
        assert reader.latest(tps) == {(TOPIC, p): 10 for p in range(PARTITIONS)}


@pytest.mark.timeout(60)
def test_one_transient_fetch_error_does_not_fail_the_read(cluster):
    """One Fetch answered ``REQUEST_TIMED_OUT`` killed the task (``Kafka error while reading
    ...: Fetch from broker 2 failed ...: Request timed out``); librdkafka fetches again by
    itself, so the read goes on and returns every record once."""
    produce(cluster.bootstrap_servers, range(400))
    leader = cluster.leaders(TOPIC)[1]
    cluster.push_broker_errors(leader, ApiKey.FETCH, Err.REQUEST_TIMED_OUT)
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0"}
    got = [v for b in read_range(conf, OffsetRange(TOPIC, 1, 0, 100), poll_timeout_s=20)
           for v in b.column("value").to_pylist()]
    assert cluster.pending_broker_errors(leader, ApiKey.FETCH) == 0, "the fault was not injected"
    assert got == [uid(i) for i in range(1, 400, PARTITIONS)]


# ------------------------------------------------------------------ leader moves
@pytest.mark.timeout(120)
def test_stream_rides_out_leaders_moving_repeatedly(cluster):
    """Every 50 ms one partition's leader moves to the next broker while the sink writes and a
    stream reads: every id is read exactly once, and no task or look-up failed."""
    n = 3000
    moves = collections.Counter()
    leaders = cluster.leaders(TOPIC)

    def move(i: int) -> None:
        p = i % PARTITIONS
        leaders[p] = 1 + leaders[p] % 3  # the next broker
        cluster.set_leader(TOPIC, p, leaders[p])
        moves[p] += 1

    stream = Stream(cluster.bootstrap_servers)
    writer = Writer(cluster.bootstrap_servers, n, task=100, pace_s=0.05)
    chaos = Chaos(move, 0.05)
    seen: collections.Counter = collections.Counter()
    try:
        chaos.start()
        writer.start()
        stream.read_until(seen, n, 90, keep_going=writer.is_alive)
        writer.join_ok(30)
    finally:
        chaos.stop()
        stream.stop()
    assert_exactly_once(seen, n)
    assert min(moves.values()) >= 5 and stream.batches >= 3, (moves, stream.batches)


# ------------------------------------------------------------------ rolling restart
@pytest.mark.timeout(120)
@pytest.mark.parametrize("controlled", [True, False], ids=["controlled-shutdown", "crash"])
def test_stream_rides_out_a_rolling_restart(cluster, controlled):
    """Each of the three brokers goes down and comes back in turn while the sink writes and a
    stream reads. ``controlled-shutdown``: leadership moves away first and back after (what a
    rolling upgrade does); ``crash``: the leader is just gone for a second, its partitions
    unavailable meanwhile (shorter than ``kafkaConsumer.pollTimeoutMs`` and the driver's
    retries). Every id is read exactly once; nothing failed."""
    n = 3000
    stream = Stream(cluster.bootstrap_servers)
    writer = Writer(cluster.bootstrap_servers, n, task=100, pace_s=0.05)
    restarted: list[int] = []
    done = threading.Event()
    batches_at = [0]
    home = cluster.leaders(TOPIC)

    def leaders_to(frm: int, to_other: bool) -> None:
        for p, b in home.items():
            if b == frm:
                cluster.set_leader(TOPIC, p, 1 + frm % 3 if to_other else b)

    def restart_all() -> None:
        try:
            for b in cluster.brokers:
                if controlled:
                    leaders_to(b, True)
                cluster.broker_down(b)
                # Down long enough that reads and writes meet it: the stream runs a micro-batch
                # (controlled) or a second passes (crash: its partitions' reads wait for it).
                batches_at[0] = stream.batches
                if controlled:
                    wait_for(lambda: stream.batches >= batches_at[0] + 1 or done.is_set(), 30, "a micro-batch")
                else:
                    done.wait(1.0)
                cluster.broker_up(b)
                if controlled:
                    leaders_to(b, False)
                restarted.append(b)
        finally:
            done.set()

    chaos = threading.Thread(target=restart_all, daemon=True)
    seen: collections.Counter = collections.Counter()
    try:
        writer.start()
        chaos.start()
        stream.read_until(seen, n, 100, keep_going=lambda: writer.is_alive() or chaos.is_alive())
        writer.join_ok(30)
    finally:
        done.set()
        chaos.join(30)
        stream.stop()
    assert restarted == cluster.brokers
    assert_exactly_once(seen, n)


# ------------------------------------------------------------------ transient errors pushed onto brokers
TRANSIENT_FETCH = [Err.REQUEST_TIMED_OUT, Err.NOT_LEADER_OR_FOLLOWER, Err.NETWORK_EXCEPTION, Err.KAFKA_STORAGE_ERROR]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("error", TRANSIENT_FETCH, ids=lambda e: f"err{e}")
def test_transient_fetch_errors_are_ridden_out(cluster, error):
    """Three Fetch answers in a row carry a transient error, mid-range, on one partition's
    leader: the read returns every record of the range once, in order."""
    produce(cluster.bootstrap_servers, range(4000))
    leader = cluster.leaders(TOPIC)[2]
    # librdkafka prefetches at most ~4 KB (a few hundred of these records) ahead of the reader,
    # so most of the range is fetched after the errors are pushed.
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0", "fetch.max.bytes": "4000",
            "max.partition.fetch.bytes": "2000", "message.max.bytes": "2000", "queued.max.messages.kbytes": "4",
            "fetch.error.backoff.ms": "50"}
    it = read_range(conf, OffsetRange(TOPIC, 2, 0, 1000), batch_size=50, poll_timeout_s=20)
    got = next(it).column("value").to_pylist()
    cluster.push_broker_errors(leader, ApiKey.FETCH, error, error, error, rtt_ms=20)
    got += [v for b in it for v in b.column("value").to_pylist()]
    assert cluster.pending_broker_errors(leader, ApiKey.FETCH) == 0, "the faults were not all injected"
    assert got == [uid(i) for i in range(2, 4000, PARTITIONS)]


@pytest.mark.timeout(60)
def test_a_fatal_fetch_error_fails_the_task_at_once(cluster):
    """Authorization is no transient fault: the task fails at once (not after
    ``kafkaConsumer.pollTimeoutMs``), naming where and the broker's error."""
    produce(cluster.bootstrap_servers, range(400))
    cluster.push_broker_errors(cluster.leaders(TOPIC)[1], ApiKey.FETCH, Err.TOPIC_AUTHORIZATION_FAILED)
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0"}
    t0 = time.monotonic()
    with pytest.raises(KafkaReadError) as ei:
        for _ in read_range(conf, OffsetRange(TOPIC, 1, 0, 100), poll_timeout_s=60):
            pass
    assert time.monotonic() - t0 < 10
    msg = str(ei.value)
    assert f"topic {TOPIC}, partition 1, offset 0" in msg and "TOPIC_AUTHORIZATION_FAILED" in msg, msg
    assert "not retriable" in msg, msg


TRANSIENT_LIST_OFFSETS = [Err.NOT_LEADER_OR_FOLLOWER, Err.LEADER_NOT_AVAILABLE, Err.REQUEST_TIMED_OUT,
                          Err.NOT_COORDINATOR, Err.KAFKA_STORAGE_ERROR]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("error", TRANSIENT_LIST_OFFSETS, ids=lambda e: f"err{e}")
def test_transient_list_offsets_errors_are_retried_on_the_driver(cluster, error):
    """ListOffsets answered with a transient error twice (on every broker): the stream's next
    micro-batch plans the right offsets and reads every new id once."""
    produce(cluster.bootstrap_servers, range(200))
    stream = Stream(cluster.bootstrap_servers)
    try:
        seen = collections.Counter(stream.micro_batch())
        produce(cluster.bootstrap_servers, range(200, 400))
        for b in cluster.brokers:
            cluster.push_broker_errors(b, ApiKey.LIST_OFFSETS, error, error)
        seen.update(stream.micro_batch())
        seen.update(stream.micro_batch())  # nothing new: nothing read twice
    finally:
        stream.stop()
    assert sum(cluster.pending_broker_errors(b, ApiKey.LIST_OFFSETS) for b in cluster.brokers) < 6, \
        "no fault was injected"
    assert_exactly_once(seen, 400)


def test_a_non_retriable_list_offsets_error_fails_at_once_saying_what_was_tried(cluster):
    """Authorization is not transient: the look-up fails on its first attempt, and says so."""
    produce(cluster.bootstrap_servers, range(8))
    with KafkaOffsetReader({"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0"},
                           retry_interval_s=0.05) as reader:
        tps = reader.partitions_for([TOPIC])
        reader.latest(tps)
        for b in cluster.brokers:
            cluster.push_broker_errors(b, ApiKey.LIST_OFFSETS, Err.TOPIC_AUTHORIZATION_FAILED)
        t0 = time.monotonic()
        with pytest.raises(KafkaReadError) as ei:
            reader.earliest(tps)
    assert time.monotonic() - t0 < 5
    msg = str(ei.value)
    assert "listing earliest offsets" in msg and "not retriable" in msg and "uthoriz" in msg, msg
    assert "1 attempt" in msg and "within 30s" not in msg, msg


TRANSIENT_PRODUCE = [Err.NOT_LEADER_OR_FOLLOWER, Err.NOT_ENOUGH_REPLICAS, Err.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                     Err.REQUEST_TIMED_OUT, Err.LEADER_NOT_AVAILABLE]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("error", TRANSIENT_PRODUCE, ids=lambda e: f"err{e}")
def test_transient_produce_errors_are_retried_by_the_idempotent_producer(cluster, error):
    """Produce answered with a transient error (twice, on every broker) while the sink writes:
    the idempotent producer retries within ``delivery.timeout.ms``; every id lands once."""
    n = 600
    for b in cluster.brokers:
        cluster.push_broker_errors(b, ApiKey.PRODUCE, error, error)
    writer = Writer(cluster.bootstrap_servers, n, task=200)
    writer.run()  # in this thread
    assert writer.error is None, f"the sink failed under a transient fault: {writer.error!r}"
    answered = 6 - sum(cluster.pending_broker_errors(b, ApiKey.PRODUCE) for b in cluster.brokers)
    assert answered >= 2, "no fault was injected"
    seen = collections.Counter(
        v for p in range(PARTITIONS)
        for b in read_range({"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0"},
                            OffsetRange(TOPIC, p, 0, n // PARTITIONS), poll_timeout_s=20)
        for v in b.column("value").to_pylist())
    assert_exactly_once(seen, n)
    assert _high_watermarks(cluster.bootstrap_servers) == {p: n // PARTITIONS for p in range(PARTITIONS)}


def _high_watermarks(bootstrap: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw", "log_level": 0})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10, cached=False)[1]
                for p in range(PARTITIONS)}
    finally:
        c.close()


# ------------------------------------------------------------------ broker down for too long
@pytest.mark.timeout(90)
def test_leader_down_longer_than_the_poll_timeout_fails_clearly_and_the_restart_is_exact(cluster):
    """The only leader of a partition stays down longer than ``kafkaConsumer.pollTimeoutMs``
    while a micro-batch reads it: the task fails naming the topic, partition, offset, how long
    it waited and the last Kafka error. Spark re-runs the batch from the checkpointed offsets
    once the broker is back: every id exactly once."""
    produce(cluster.bootstrap_servers, range(400))
    stream = Stream(cluster.bootstrap_servers, **{"kafkaConsumer.pollTimeoutMs": "1500"})
    try:
        seen = collections.Counter(stream.micro_batch())
        produce(cluster.bootstrap_servers, range(400, 800))
        end, parts = stream.plan()
        down = cluster.leaders(TOPIC)[0]
        cluster.broker_down(down)
        t0 = time.monotonic()
        with pytest.raises(KafkaReadError) as ei:
            stream.run(parts)
        waited = time.monotonic() - t0
        msg = str(ei.value)
        assert "no records received for" in msg and "kafkaConsumer.pollTimeoutMs=1500" in msg, msg
        assert f"topic {TOPIC}, partition 0, offset 100" in msg and "range end 200" in msg, msg
        assert 1.5 <= waited < 15
        cluster.broker_up(down)
        # The batch never completed: Spark runs it again from the same offsets.
        again_end, again = stream.plan()
        assert again_end == end
        seen.update(stream.run(again))
        stream.offset = end
        seen.update(stream.micro_batch())
    finally:
        stream.stop()
    assert_exactly_once(seen, 800)


@pytest.mark.timeout(60)
def test_driver_look_up_with_the_leader_down_fails_within_the_timeout_saying_what_was_tried(cluster):
    """The driver's look-up cannot reach a partition's only leader: it fails within
    ``fetchOffset.timeoutMs``, saying how many attempts it made over how long."""
    produce(cluster.bootstrap_servers, range(8))
    with KafkaOffsetReader({"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0"}, timeout_s=2,
                           retry_interval_s=0.1, num_retries=50) as reader:
        tps = reader.partitions_for([TOPIC])
        cluster.broker_down(cluster.leaders(TOPIC)[0])
        t0 = time.monotonic()
        with pytest.raises(KafkaReadError) as ei:
            reader.latest(tps)
        waited = time.monotonic() - t0
    msg = str(ei.value)
    assert waited < 6, waited
    assert "listing latest offsets failed" in msg and "fetchOffset.timeoutMs=2000" in msg, msg
    assert "attempt" in msg and cluster.bootstrap_servers.split(",")[0] in msg, msg


# ------------------------------------------------------------------ new partitions mid-stream
@pytest.mark.timeout(60)
def test_topic_appearing_mid_stream_is_read_from_offset_zero_while_leaders_move(cluster):
    """New partitions mid-stream (the part of "partitions added" the mock can do: a new topic
    matching the channel's address template). Its partitions are read from offset 0, every
    id once, while a leader of the first topic moves."""
    from connector.spark._stream import StreamReader

    doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "servers": {"k": {"host": cluster.bootstrap_servers, "protocol": "kafka"}},
           "channels": {"c": {"address": "region.{name}", "parameters": {"name": {}},
                              "messages": {"m": {"name": "M"}}}}}
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    cluster.create_topic("region.eu", PARTITIONS)
    produce(cluster.bootstrap_servers, range(100), topic="region.eu")
    setup = build_setup(parse_options({"asyncapi": json.dumps(doc), "channel": "c", **FAST,
                                       "startingOffsets": "earliest"}))
    stream = Stream.__new__(Stream)
    stream.reader, stream.batches = StreamReader(setup), 0
    stream.offset = json.loads(json.dumps(stream.reader.initialOffset()))
    try:
        seen = collections.Counter(stream.micro_batch())
        cluster.create_topic("region.us", PARTITIONS)
        produce(cluster.bootstrap_servers, range(100, 200), topic="region.us")
        produce(cluster.bootstrap_servers, range(200, 300), topic="region.eu")
        cluster.set_leader("region.eu", 0, 3)
        stream.read_until(seen, 300, 30)
    finally:
        stream.stop()
    assert_exactly_once(seen, 300)


# ------------------------------------------------------------------ delivery errors say where
def test_delivery_error_names_the_topic_and_why_no_partition_was_chosen():
    """Unreachable brokers: the records time out before a partition was chosen. The error named
    them ``orders[None]``; it names the topic and says why the partition is unknown."""
    bp = BatchProducer({"bootstrap.servers": f"127.0.0.1:{closed_port()}", "message.timeout.ms": "500",
                        "log_level": "0"})
    bp.produce("orders", [b"a", b"b"], None, None, None)
    bp.produce("orders", [b"c"], None, [3], None)
    with pytest.raises(DeliveryError) as ei:
        bp.finish(30)
    msg = str(ei.value)
    assert "[None]" not in msg and "3 record(s) were not delivered" in msg, msg
    assert "topic 'orders', no partition assigned" in msg and "brokers unreachable" in msg, msg
    assert "topic 'orders' partition 3" in msg and "delivery.timeout.ms" in msg, msg


# ------------------------------------------------------------------ through Spark
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_spark_stream_from_kafka_to_kafka_rides_out_leader_moves_and_a_rolling_restart(spark, tmp_path):
    """A real streaming query, ``asyncapi-kafka`` source to ``asyncapi-kafka`` sink, both on the
    faulty cluster, while ids are written into its input: leaders of both topics move, then
    each broker is restarted in turn (controlled shutdown). Every id lands in the output topic
    exactly once: no task failed, so the sink's at-least-once retries never came into play."""
    n = 2000
    with MockCluster(3) as mc:
        for t in ("in", "out"):
            mc.create_topic(t, PARTITIONS)
        doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
               "servers": {"k": {"host": mc.bootstrap_servers, "protocol": "kafka"}},
               "channels": {c: {"address": c, "messages": {"m": {"name": "M"}}} for c in ("in", "out")}}
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(doc))
        home = {t: mc.leaders(t) for t in ("in", "out")}
        stop = threading.Event()

        def chaos() -> None:
            for i in range(12):  # leaders move, one partition at a time
                if stop.wait(0.25):
                    return
                t, p = ("in", "out")[i % 2], (i // 2) % PARTITIONS
                mc.set_leader(t, p, 1 + home[t][p] % 3)
            for b in mc.brokers:  # rolling restart, leadership moved away and back
                for t in home:
                    for p, leader in home[t].items():
                        mc.set_leader(t, p, 1 + leader % 3 if leader == b else leader)
                mc.broker_down(b)
                if stop.wait(1.0):
                    return
                mc.broker_up(b)

        reader = spark.readStream.format("asyncapi-kafka").option("asyncapi", str(path)).option("channel", "in")
        for k, v in {**FAST, "startingOffsets": "earliest"}.items():
            if not k.startswith("kafka."):
                reader = reader.option(k, v)
        q = (reader.load().select("value").writeStream.format("asyncapi-kafka").option("asyncapi", str(path))
             .option("channel", "out").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="300 milliseconds").start())
        writer = Writer(mc.bootstrap_servers, n, task=100, topic="in", pace_s=0.05)
        faults = threading.Thread(target=chaos, daemon=True)
        try:
            writer.start()
            faults.start()
            writer.join_ok(120)
            faults.join(60)
            wait_for(lambda: q.exception() is not None or sum(_out_watermarks(mc.bootstrap_servers)) >= n,
                     120, "every id in the output topic")
            assert q.exception() is None, q.exception()
        finally:
            stop.set()
            q.stop()
        seen = collections.Counter(
            v for p, high in enumerate(_out_watermarks(mc.bootstrap_servers))
            for b in read_range({"bootstrap.servers": mc.bootstrap_servers, "log_level": "0"},
                                OffsetRange("out", p, 0, high), poll_timeout_s=20)
            for v in b.column("value").to_pylist())
    assert_exactly_once(seen, n)


def _out_watermarks(bootstrap: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw", "log_level": 0})
    try:
        return [c.get_watermark_offsets(TopicPartition("out", p), timeout=10, cached=False)[1]
                for p in range(PARTITIONS)]
    finally:
        c.close()
