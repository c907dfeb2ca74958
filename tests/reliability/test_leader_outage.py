"""A partition leader down for 10 s with no new leader elected, ridden out with default settings
(issue 38).

3-broker mock cluster, replication 3: the mock moves no leadership when a broker goes down, so
the partitions it leads are unavailable for the whole outage and every request to them is
refused at once. Before, the driver's look-up counted each of those instant refusals against
``fetchOffset.numRetries`` (3) and gave up after about 10 s ("still failing with retriable
errors after 4 attempts in 9.8s"), so whether the stream survived depended on when in the outage
the look-up began. Now only attempts that waited out their time count (Spark's meaning: each of
its attempts blocks up to the consumer's timeout), and the look-up is bounded by
``fetchOffset.timeoutMs`` (30 s).
"""
from __future__ import annotations

import collections
import threading
import time

import pytest

from connector.kafka import KafkaOffsetReader
from connector.options._table import OPTIONS

from tests.reliability.mock_cluster import MockCluster
from tests.reliability.test_cluster_faults import PARTITIONS, TOPIC, Stream, Writer, assert_exactly_once, produce

pytestmark = pytest.mark.kafka

OUTAGE_S = 10.0


def default(name: str) -> str:
    return next(o.default for o in OPTIONS if o.name == name)


#: The stream's options: the suite's small fetches, but the driver's look-ups at their defaults.
DEFAULT_LOOKUPS = {"fetchOffset.numRetries": default("fetchOffset.numRetries"),
                   "fetchOffset.retryIntervalMs": default("fetchOffset.retryIntervalMs"),
                   "fetchOffset.timeoutMs": default("fetchOffset.timeoutMs")}


@pytest.fixture()
def cluster():
    mc = MockCluster(3)
    mc.create_topic(TOPIC, PARTITIONS, replication=3)
    yield mc
    mc.close()


def _outage(cluster, broker: int, seconds: float) -> threading.Thread:
    """Take ``broker`` down now and up again after ``seconds`` (in a thread)."""
    cluster.broker_down(broker)

    def up() -> None:
        time.sleep(seconds)
        cluster.broker_up(broker)

    t = threading.Thread(target=up, daemon=True, name="outage")
    t.start()
    return t


@pytest.mark.timeout(90)
def test_a_look_up_started_in_the_outage_first_second_rides_out_a_10s_outage(cluster):
    produce(cluster.bootstrap_servers, range(40))
    with KafkaOffsetReader({"bootstrap.servers": cluster.bootstrap_servers, "log_level": "0"}) as reader:
        assert (reader.num_retries, reader.retry_interval_s, reader.timeout_s) == (3, 1.0, 30.0)  # the defaults
        tps = reader.partitions_for([TOPIC])
        down = cluster.leaders(TOPIC)[0]
        outage = _outage(cluster, down, OUTAGE_S)
        t0 = time.monotonic()
        assert reader.earliest(tps) == {(TOPIC, p): 0 for p in range(PARTITIONS)}
        waited = time.monotonic() - t0
        outage.join()
    assert OUTAGE_S - 1.5 <= waited < OUTAGE_S + 8, waited  # it waited for the broker, within the budget


@pytest.mark.timeout(120)
def test_stream_rides_out_a_leader_down_for_10s_nothing_lost_or_duplicated(cluster):
    n = 1200
    produce(cluster.bootstrap_servers, range(n // 2))
    stream = Stream(cluster.bootstrap_servers, **DEFAULT_LOOKUPS)
    seen: collections.Counter = collections.Counter()
    try:
        seen.update(stream.micro_batch())
        outage = _outage(cluster, cluster.leaders(TOPIC)[1], OUTAGE_S)
        writer = Writer(cluster.bootstrap_servers, n, task=100, first=n // 2)  # into the outage
        writer.start()
        stream.read_until(seen, n, 100, keep_going=lambda: writer.is_alive() or outage.is_alive())
        writer.join_ok(60)
    finally:
        stream.stop()
    assert_exactly_once(seen, n)

