"""Topics with a chosen partition count need CreateTopics, which only tansu serves here.

The librdkafka mock cluster has no admin APIs (every topic gets 4 partitions), so this test
uses tansu for topic creation. tansu's ListOffsets LATEST is not the high watermark (it is
the last batch's base offset + 1), so the test takes range ends from what it produced rather
than from the broker.
"""
from __future__ import annotations

import pytest

from connector.kafka import (
    KafkaOffsetReader,
    OffsetRange,
    read_range,
)
from connector.testing import TansuBroker

pytestmark = [pytest.mark.kafka, pytest.mark.tansu,
              pytest.mark.skipif(not TansuBroker.available(), reason="tansu binary not found")]


@pytest.fixture(scope="module")
def tansu():
    with TansuBroker() as broker:
        yield broker


def test_topic_with_n_partitions_is_discovered_and_read(tansu):
    from confluent_kafka import Producer

    tansu.create_topic("five", partitions=5)
    with KafkaOffsetReader(tansu.conf, timeout_s=10) as r:
        tps = r.partitions_for(["five"])
        assert tps == [("five", p) for p in range(5)]
    producer = Producer({**tansu.conf, "linger.ms": 0})
    counts = {p: p + 1 for p in range(5)}
    for p, n in counts.items():
        for i in range(n):
            producer.produce("five", b"%d-%d" % (p, i), key=b"k", partition=p)
    assert producer.flush(10) == 0
    for p, n in counts.items():
        rows = [v for b in read_range(tansu.conf, OffsetRange("five", p, 0, n), poll_timeout_s=20)
                for v in b.column("value").to_pylist()]
        assert rows == [b"%d-%d" % (p, i) for i in range(n)]


def test_broker_stops_cleanly():
    broker = TansuBroker()
    broker.start()
    proc = broker._proc
    broker.stop()
    assert proc.poll() is not None
    broker.stop()  # idempotent
