"""KafkaOffsetReader against a real Kafka peer (the librdkafka mock cluster by default)."""
from __future__ import annotations

import socket
import uuid

import pytest

from connector.errors import ConfigError, KafkaReadError
from connector.kafka import (
    KafkaOffsetReader,
    commit_offsets,
    parse_offsets_option,
)

pytestmark = pytest.mark.kafka


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def reader(kafka):
    with KafkaOffsetReader(kafka.conf, timeout_s=10) as r:
        yield r


def _filled_topic(kafka, counts: dict[int, int]) -> str:
    topic = _name("offsets")
    kafka.create_topic(topic)
    for p, n in counts.items():
        for i in range(n):
            kafka.produce(topic, b"v%d" % i, partition=p)
    kafka.flush()
    return topic


def test_discovery_by_names_and_pattern(kafka, reader):
    run = uuid.uuid4().hex[:8]
    a, b, other = f"orders-{run}", f"payments-{run}", f"audit-{run}"
    parts = {t: kafka.create_topic(t) for t in (a, b, other)}
    expected = sorted((t, p) for t in (a, b) for p in parts[t])
    assert reader.partitions_for([b, a]) == expected
    assert reader.partitions_for(pattern=rf"(orders|payments)-{run}") == expected
    # full match, like Java's Pattern.matches: a prefix does not select anything
    assert reader.partitions_for(pattern="orders") == []
    # names and pattern together are a union
    both = reader.partitions_for([other], pattern=rf"orders-{run}")
    assert both == sorted([(a, p) for p in parts[a]] + [(other, p) for p in parts[other]])


def test_missing_topic_is_an_error_and_is_not_created(kafka, reader):
    present = _filled_topic(kafka, {0: 1})
    missing = _name("missing")
    with pytest.raises(KafkaReadError) as info:
        reader.partitions_for([present, missing])
    assert missing in str(info.value)
    assert present in str(info.value)  # the message lists what exists
    # the mock cluster auto-creates topics on a metadata request for that topic; the reader
    # must never have issued one
    with KafkaOffsetReader(kafka.conf, timeout_s=10) as fresh:
        assert missing not in fresh._metadata().topics


def test_earliest_latest_and_per_partition_json(kafka, reader):
    topic = _filled_topic(kafka, {0: 5, 1: 3, 3: 2})
    tps = reader.partitions_for([topic])
    assert reader.earliest(tps) == {tp: 0 for tp in tps}
    assert reader.latest(tps) == {(topic, 0): 5, (topic, 1): 3, (topic, 2): 0, (topic, 3): 2}
    spec = parse_offsets_option(
        "startingOffsets", f'{{"{topic}":{{"0":2,"1":-2,"2":-1,"3":-1}}}}', is_ending=False)
    assert reader.resolve(spec, tps) == {(topic, 0): 2, (topic, 1): 0, (topic, 2): 0,
                                         (topic, 3): 2}
    ending = parse_offsets_option("endingOffsets", "latest", is_ending=True)
    assert reader.resolve(ending, tps) == reader.latest(tps)
    partial = parse_offsets_option("startingOffsets", f'{{"{topic}":{{"0":1}}}}',
                                   is_ending=False)
    with pytest.raises(ConfigError, match="must specify all TopicPartitions"):
        reader.resolve(partial, tps)


def test_timestamp_options_use_the_brokers_answer(kafka, reader):
    # The mock cluster answers ListOffsets-by-timestamp with "no match" (-1) for every
    # timestamp (and tansu answers 0), so what can be checked against a real peer is how an
    # unmatched timestamp resolves: Spark errors for a start unless the strategy is 'latest',
    # and resolves an unmatched end to latest. The matching arithmetic itself is unit-tested.
    topic = _filled_topic(kafka, {0: 4, 2: 1})
    tps = reader.partitions_for([topic])
    found = reader._list_offsets(tps, 1_700_000_000_000, "probe")
    if any(v >= 0 for v in found.values()):
        pytest.skip("this broker implements timestamp lookup; covered by the unit tests")
    latest = reader.latest(tps)
    start = parse_offsets_option("startingTimestamp", "1", is_ending=False)
    with pytest.raises(KafkaReadError, match="startingOffsetsByTimestampStrategy"):
        reader.resolve(start, tps)
    start_latest = parse_offsets_option("startingTimestamp", "1", is_ending=False, strategy="latest")
    assert reader.resolve(start_latest, tps) == latest
    by_part = parse_offsets_option(
        "endingOffsetsByTimestamp",
        "{" + f'"{topic}":' + "{" + ",".join(f'"{p}":5' for _, p in tps) + "}}",
        is_ending=True)
    assert reader.resolve(by_part, tps) == latest


def test_unreachable_broker_fails_within_timeout_without_secrets():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "sasl.username": "bob",
            "sasl.password": "hunter2-secret", "log_level": "0"}
    with KafkaOffsetReader(conf, timeout_s=1) as r:
        with pytest.raises(KafkaReadError) as info:
            r.partitions_for(["anything"])
    text = str(info.value)
    assert f"127.0.0.1:{port}" in text
    assert "hunter2" not in text and "hunter2" not in repr(r)


def test_commit_offsets_for_lag_monitoring(kafka):
    from confluent_kafka import Consumer, TopicPartition

    topic = _filled_topic(kafka, {0: 3, 1: 2})
    group = _name("lag")
    commit_offsets(kafka.conf, group, {(topic, 0): 3, (topic, 1): 1})
    c = Consumer({**kafka.conf, "group.id": group, "log_level": 0})
    try:
        got = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    finally:
        c.close()
    assert {(x.partition, x.offset) for x in got} == {(0, 3), (1, 1)}


def test_first_offsets_at_follows_the_brokers_time_index_and_distrusts_a_broker_without_one(kafka):
    # The lower bound of a pushed timestamp filter: Kafka's earliest offset at or after the time,
    # timestamps out of order; past the last record, the latest offset. The mock cluster says
    # "no match" for every time (and for MAX_TIMESTAMP): None, so the read starts where it would.
    from confluent_kafka import Producer

    from connector.kafka import KafkaOffsetReader
    from connector.testing import NoidaBroker

    times = [1000, 3000, 2000, 5000, 4000, 6000]

    def produce(bootstrap, topic):
        p = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
        for t in times:
            p.produce(topic, b"v", partition=0, timestamp=t)
        assert p.flush(30) == 0

    topic = f"times-{uuid.uuid4().hex[:8]}"
    produce(kafka.bootstrap_servers, topic)
    with KafkaOffsetReader(kafka.conf) as r:
        assert r.first_offsets_at([(topic, 0)], 2500) == {(topic, 0): None}
    if not NoidaBroker.available():
        pytest.skip("noida-db is not installed: no local broker looks offsets up by time")
    with NoidaBroker() as broker:
        broker.create_topic(topic, partitions=1)
        produce(broker.bootstrap_servers, topic)
        with KafkaOffsetReader(broker.conf) as r:
            got = {ts: r.first_offsets_at([(topic, 0)], ts)[(topic, 0)] for ts in (500, 1500, 2500, 4500, 6000, 7000)}
    assert got == {500: 0, 1500: 1, 2500: 1, 4500: 3, 6000: 5, 7000: 6}
