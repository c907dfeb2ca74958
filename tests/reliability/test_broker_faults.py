"""Broker faults: unreachable, topic missing, topic deleted and recreated, partitions added,
records aged out mid-read, broker gone mid-read. Nothing lost beyond what the broker
discarded, nothing duplicated, and the data-loss decision follows ``failOnDataLoss``.

Mirrors Spark's ``KafkaMicroBatchSourceSuite`` / ``KafkaSourceStressForDontFailOnDataLossSuite``
/ ``KafkaRelationSuite`` and librdkafka's ``0075-retry`` / ``0088-produce_metadata_timeout``
broker-down tests.
"""
from __future__ import annotations

import json
import logging
import re

import pytest

from connector.errors import ConfigError, DataLossError, KafkaReadError
from connector.kafka import OffsetRange, read_range, report_data_loss, validate_ranges
from connector.kafka._ranges import (
    ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO, PARTITION_OFFSET_CHANGED, PARTITIONS_DELETED,
    START_OFFSET_RESET
)
from connector.testing import EmbeddedKafka, TansuBroker
from connector.spark import _offsets as off

from tests.reliability.conftest import SASL_PASSWORD, closed_port
from tests.reliability.conftest import plain_doc as _doc
from tests.reliability.conftest import plain_setup as _setup

A0, A1 = ("a", 0), ("a", 1)


# ------------------------------------------------------------------ planning
@pytest.mark.timeout(60)
def test_unreachable_broker_fails_planning_within_the_timeout_naming_servers_not_secrets():
    """Broker down when the query starts (Spark's ``fetchOffset.numRetries``/``timeoutMs``,
    ``KafkaOffsetReaderSuite``): a ``KafkaReadError`` after ``fetchOffset.timeoutMs`` that
    names the bootstrap servers, and no SASL password."""
    from connector.spark._batch import BatchReader

    port = closed_port()
    setup = _setup(f"127.0.0.1:{port}", "orders", **{
        "fetchOffset.timeoutMs": "1500", "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "bob", "kafka.sasl.password": SASL_PASSWORD})
    with pytest.raises(KafkaReadError) as ei:
        BatchReader(setup).partitions()
    msg = str(ei.value)
    # What was tried, how often, for how long and under which limit (not "within 30s" when it did not wait).
    assert f"127.0.0.1:{port}" in msg and "fetchOffset.timeoutMs=1500" in msg
    tried = re.search(r"(\d+) attempts? in (\d+\.\d)s", msg)
    assert tried and 1.4 <= float(tried.group(2)) < 5, msg
    assert SASL_PASSWORD not in msg + repr(ei.value.__cause__)


@pytest.mark.kafka
def test_missing_topic_lists_available_topics_and_is_not_auto_created():
    """``subscribe`` to a missing topic (Spark ``KafkaRelationSuite`` "topic not found" with
    ``allow.auto.create.topics=false``): the error lists existing topics; the planning request
    did not create the topic on a broker that auto-creates on metadata requests. A cluster of
    its own: the shared one holds more topics than the message lists (it shows 50 and a count)."""
    from confluent_kafka import Consumer

    from connector.spark._batch import BatchReader
    from tests.integration.spark.helpers import unique_topic

    kafka = EmbeddedKafka()
    try:
        present = unique_topic("present")
        kafka.produce(present, b"x", partition=0)
        kafka.flush()
        missing = unique_topic("missing")
        with pytest.raises(KafkaReadError) as ei:
            BatchReader(_setup(kafka.bootstrap_servers, missing, **{"fetchOffset.timeoutMs": "5000"})).partitions()
        assert missing in str(ei.value) and present in str(ei.value)
        probe = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "probe",
                          "allow.auto.create.topics": False, "log_level": 0})
        try:
            assert missing not in probe.list_topics(timeout=10).topics
        finally:
            probe.close()
    finally:
        kafka.close()


# ------------------------------------------------------------------ data-loss decision table
# (start, end, earliest, condition or None, (start_out, end_out) when failOnDataLoss=false)
BATCH_TABLE = [
    pytest.param({A0: 0}, {A0: 5}, {A0: 0}, None, ({A0: 0}, {A0: 5}), id="no-loss"),
    pytest.param({A0: 0}, {A0: 5, A1: 3}, {A0: 0, A1: 0}, None, ({A0: 0, A1: 0}, {A0: 5, A1: 3}),
                 id="partition-added-from-zero"),
    pytest.param({A0: 0}, {A0: 5, A1: 3}, {A0: 0, A1: 2}, ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO,
                 ({A0: 0, A1: 2}, {A0: 5, A1: 3}), id="partition-added-not-from-zero"),
    pytest.param({A0: 0, A1: 4}, {A0: 5}, {A0: 0}, PARTITIONS_DELETED, ({A0: 0}, {A0: 5}),
                 id="partition-deleted"),
    pytest.param({A0: 9}, {A0: 3}, {A0: 0}, PARTITION_OFFSET_CHANGED, ({}, {}), id="offsets-went-backwards"),
    pytest.param({A0: 2}, {A0: 9}, {A0: 5}, START_OFFSET_RESET, ({A0: 5}, {A0: 9}), id="aged-out-partly"),
    pytest.param({A0: 2}, {A0: 9}, {A0: 9}, START_OFFSET_RESET, ({A0: 9}, {A0: 9}), id="aged-out-entirely"),
]


@pytest.mark.parametrize("start, end, earliest, condition, lenient", BATCH_TABLE)
def test_batch_data_loss_decisions(start, end, earliest, condition, lenient, caplog):
    """``KafkaSource.getBatch``/``KafkaMicroBatchStream.planInputPartitions`` checks:
    ``failOnDataLoss=true`` raises the Spark condition, ``false`` warns and reads what exists."""
    if condition is None:
        assert validate_ranges(start, end, earliest, True) == lenient
    else:
        with pytest.raises(DataLossError) as ei:
            validate_ranges(start, end, earliest, True)
        assert ei.value.condition == condition and "failOnDataLoss" in str(ei.value)
    with caplog.at_level(logging.WARNING):
        assert validate_ranges(start, end, earliest, False) == lenient
    assert (condition is None) == (not any(r.levelno >= logging.WARNING for r in caplog.records))


# (start, latest, earliest, reported conditions, resolved start)
STREAM_TABLE = [
    pytest.param({A0: 3}, {A0: 9, A1: 4}, {A0: 0, A1: 0}, [], {A0: 3, A1: 0}, id="partition-added-from-zero"),
    pytest.param({A0: 3}, {A0: 9, A1: 4}, {A0: 0, A1: 2}, ["ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"],
                 {A0: 3, A1: 2}, id="partition-added-not-from-zero"),
    pytest.param({A0: 3, A1: 1}, {A0: 9}, {A0: 0}, ["PARTITIONS_DELETED"], {A0: 3}, id="partition-deleted"),
    pytest.param({A0: 7}, {A0: 2}, {A0: 0}, ["PARTITION_OFFSET_CHANGED"], {A0: 0}, id="topic-recreated"),
    pytest.param({A0: off.LATEST, A1: off.EARLIEST}, {A0: 9, A1: 9}, {A0: 1, A1: 1}, [], {A0: 9, A1: 1},
                 id="symbolic"),
    # Aged-out records are found by the executor's fetch (COULD_NOT_READ_OFFSET_RANGE), as in Spark.
    pytest.param({A0: 2}, {A0: 9}, {A0: 5}, [], {A0: 2}, id="aged-out-left-to-the-executor"),
]


@pytest.mark.parametrize("start, latest, earliest, reported, resolved", STREAM_TABLE)
@pytest.mark.parametrize("fail", [True, False], ids=["failOnDataLoss", "dontFail"])
def test_stream_data_loss_decisions(start, latest, earliest, reported, resolved, fail):
    """``KafkaMicroBatchStream`` start resolution when partitions appear, vanish or restart:
    the condition is reported once, the query fails or goes on from what exists."""
    seen = []

    def report(condition, message):  # conditions arrive with Spark's full name
        seen.append(condition.removeprefix("KAFKA_DATA_LOSS."))
        report_data_loss(condition, message, fail)

    if fail and reported:
        with pytest.raises(DataLossError) as ei:
            off.resolve_start(start, latest=latest, earliest=earliest, report=report)
        assert ei.value.condition == f"KAFKA_DATA_LOSS.{reported[0]}"
    else:
        assert off.resolve_start(start, latest=latest, earliest=earliest, report=report) == resolved
        assert seen == reported


# ------------------------------------------------------------------ executor-side faults
def _small_prefetch(bootstrap: str) -> dict:
    # Keep librdkafka from prefetching the whole range, so faults land mid-read.
    return {"bootstrap.servers": bootstrap, "queued.max.messages.kbytes": "200",
            "fetch.max.bytes": "120000", "message.max.bytes": "110000", "max.partition.fetch.bytes": "120000",
            "fetch.wait.max.ms": "10", "log_level": "0"}


@pytest.mark.kafka
@pytest.mark.timeout(120)
@pytest.mark.parametrize("fail", [True, False], ids=["failOnDataLoss", "dontFail"])
def test_records_aged_out_mid_read(fail):
    """Retention deletes records while a task reads them (``KafkaDontFailOnDataLossSuite``,
    the mock cluster keeps about 5 MB per partition): every record still on the broker when
    fetched is returned once, in order; only records below the final log start are missing;
    ``failOnDataLoss`` decides between ``COULD_NOT_READ_OFFSET_RANGE`` and going on."""
    record = b"r" * 50_000
    with EmbeddedKafka() as k:
        k.produce_many("aging", [record] * 60, partition=0)
        low1, high1 = k.watermarks("aging", 0)
        conf = _small_prefetch(k.bootstrap_servers)
        it = read_range(conf, OffsetRange("aging", 0, low1, high1), batch_size=2, fail_on_data_loss=fail,
                        poll_timeout_s=10)
        got = [o for o in next(it).column("offset").to_pylist()]
        k.produce_many("aging", [record] * 200, partition=0)  # ~10 MB more: the range ages out
        low2, _ = k.watermarks("aging", 0)
        assert low2 > got[-1] + 1, "the test needs records to age out under the reader"
        try:
            for batch in it:
                got.extend(batch.column("offset").to_pylist())
            raised = None
        except DataLossError as e:
            raised = e
    assert got == sorted(set(got)), "duplicated or reordered offsets"
    assert all(low1 <= o < high1 for o in got)
    missing = set(range(low1, high1)) - set(got)
    assert missing and all(o < low2 for o in missing), "lost records the broker still had"
    if fail:
        assert raised is not None and raised.condition == "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"
    else:
        assert raised is None


@pytest.mark.kafka
@pytest.mark.timeout(120)
def test_broker_going_away_mid_read_raises_typed_error_not_a_hang():
    """The cluster disappears while a task iterates (librdkafka ``0088`` "all brokers down";
    Spark ``KafkaDataConsumer`` fetch timeout ``kafkaConsumer.pollTimeoutMs``): a typed
    ``KafkaReadError``/``DataLossError`` after the poll timeout, never a hang."""
    k = EmbeddedKafka()
    try:
        k.produce_many("going", [b"v" * 1000] * 3000, partition=0)
        _, high = k.watermarks("going", 0)
        it = read_range(_small_prefetch(k.bootstrap_servers), OffsetRange("going", 0, 0, high), batch_size=20,
                        poll_timeout_s=1)
        first = next(it)
        assert first.num_rows == 20
    finally:
        k.close()  # the mock cluster dies with its producer
    got = first.num_rows
    with pytest.raises((KafkaReadError, DataLossError)) as ei:
        for batch in it:
            got += batch.num_rows
    assert got < high
    assert "going" in str(ei.value)


# ------------------------------------------------------------------ topic deleted and recreated
tansu_only = pytest.mark.skipif(not TansuBroker.available(), reason="tansu binary not found")


@pytest.fixture()
def tansu():
    broker = TansuBroker()
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def _produce_one_batch_each(bootstrap: str, topic: str, values) -> None:
    # tansu's ListOffsets LATEST is "base offset of the last batch + 1": one record per batch
    # (flush after each) keeps it equal to the high watermark.
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
    for v in values:
        p.produce(topic, v, partition=0)
        assert p.flush(10) == 0


def _recreate(broker: TansuBroker, topic: str) -> None:
    admin = broker.admin()
    admin.delete_topics([topic], operation_timeout=10)[topic].result(15)
    broker.create_topic(topic, partitions=1)


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.tansu
@tansu_only
def test_topic_recreated_between_micro_batches_fails_the_query_with_data_loss(spark, tansu, tmp_path, write_doc):
    """Spark ``KafkaMicroBatchSourceSuite`` "delete a topic when a Spark job is running" with
    ``failOnDataLoss=true``: offsets went backwards between micro-batches, the query fails
    with a ``KAFKA_DATA_LOSS`` condition and delivers nothing from the new topic. tansu is
    used because it is the only peer here with DeleteTopics/CreateTopics (the librdkafka mock
    cluster has no admin APIs)."""
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JJavaError

    topic = "recreated-strict"
    tansu.create_topic(topic, partitions=1)
    _produce_one_batch_each(tansu.bootstrap_servers, topic, [f"old-{i}".encode() for i in range(5)])
    path = write_doc(json.dumps(_doc(tansu.bootstrap_servers, topic)))
    checkpoint = str(tmp_path / "ck")
    seen: list[tuple[int, bytes]] = []

    def run():
        df = (spark.readStream.format("asyncapi-kafka").option("asyncapi", path).option("channel", "c")
              .option("startingOffsets", "earliest").option("failOnDataLoss", "true")
              .option("fetchOffset.timeoutMs", "10000").option("kafkaConsumer.pollTimeoutMs", "10000").load())
        q = (df.select("offset", "value").writeStream
             .foreachBatch(lambda b, _i: seen.extend((r.offset, bytes(r.value)) for r in b.collect()))
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        finally:
            q.stop()

    run()
    assert sorted(seen) == [(i, f"old-{i}".encode()) for i in range(5)]
    _recreate(tansu, topic)
    _produce_one_batch_each(tansu.bootstrap_servers, topic, [b"new-0", b"new-1"])
    del seen[:]
    with pytest.raises((PySparkException, Py4JJavaError)) as ei:
        run()
    assert "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED" in str(ei.value)
    assert seen == []


@pytest.mark.kafka
@pytest.mark.tansu
@tansu_only
@pytest.mark.timeout(120)
def test_topic_recreated_between_micro_batches_continues_without_duplicates(tansu, caplog):
    """Same scenario with ``failOnDataLoss=false`` (``KafkaDontFailOnDataLossSuite``), driving
    the stream reader exactly as Spark's micro-batch engine does (``initialOffset`` →
    ``latestOffset`` → ``partitions`` → ``read``) in this process: a warning names the
    condition, then the new topic's records are read once, none of the old ones again.
    (An idle consumer kept across tasks would crash the Python worker here: see
    ``test_worker_survives_topic_recreation``, why every range closes its consumer.)"""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from connector.spark._stream import StreamReader

    topic = "recreated-lenient"
    tansu.create_topic(topic, partitions=1)
    _produce_one_batch_each(tansu.bootstrap_servers, topic, [f"old-{i}".encode() for i in range(5)])
    setup = _setup(tansu.bootstrap_servers, topic, startingOffsets="earliest", failOnDataLoss="false",
                   **{"fetchOffset.timeoutMs": "10000", "kafkaConsumer.pollTimeoutMs": "10000"})

    def micro_batch(reader, start):
        end = reader.latestOffset(start, ReadAllAvailable())
        rows = [(o, v) for p in reader.partitions(start, end) for b in reader.read(p)
                for o, v in zip(b.column("offset").to_pylist(), b.column("value").to_pylist())]
        return end, rows

    reader = StreamReader(setup)
    try:
        start = json.loads(json.dumps(reader.initialOffset()))
        end, rows = micro_batch(reader, start)
        assert rows == [(i, f"old-{i}".encode()) for i in range(5)]
        _recreate(tansu, topic)
        _produce_one_batch_each(tansu.bootstrap_servers, topic, [b"new-0", b"new-1"])
        with caplog.at_level(logging.WARNING):
            end2, rows2 = micro_batch(reader, end)
        assert rows2 == [(0, b"new-0"), (1, b"new-1")]
        assert "PARTITION_OFFSET_CHANGED" in caplog.text
        _, rows3 = micro_batch(reader, end2)
        assert rows3 == []  # nothing duplicated afterwards
    finally:
        reader.stop()


_POOL_SCRIPT = """
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from connector.kafka import OffsetRange, read_range
conf = {"bootstrap.servers": sys.argv[1]}
def produce(values):
    p = Producer({**conf, "linger.ms": 0, "log_level": 0})
    for v in values:
        p.produce("pooled", v, partition=0)
        assert p.flush(10) == 0
produce([b"a", b"b"])
assert sum(b.num_rows for b in read_range(conf, OffsetRange("pooled", 0, 0, 2), poll_timeout_s=10)) == 2
admin = AdminClient({**conf, "log_level": 0})
admin.delete_topics(["pooled"], operation_timeout=10)["pooled"].result(15)
admin.create_topics([NewTopic("pooled", 1, 1)], operation_timeout=10)["pooled"].result(15)
produce([b"c"])
rows = [v for b in read_range(conf, OffsetRange("pooled", 0, 0, 1), poll_timeout_s=10)
        for v in b.column("value").to_pylist()]
assert rows == [b"c"], rows
print("ok")
"""


@pytest.mark.kafka
@pytest.mark.tansu
@tansu_only
@pytest.mark.timeout(120)
def test_worker_survives_topic_recreation(tansu):
    """Spark ``KafkaMicroBatchSourceSuite`` "Recreate a topic": the executor process that read
    the old topic must read the new one (consumers are closed after each range; an idle one
    used to crash the process inside librdkafka)."""
    _run_in_own_process(_POOL_SCRIPT, tansu.bootstrap_servers)


def test_config_error_for_owned_settings_is_typed():
    """Settings the source owns are refused up front (``KafkaSourceProvider`` validation):
    ``kafka.auto.offset.reset`` would silently turn data loss into skipped records."""
    with pytest.raises(ConfigError, match="failOnDataLoss|startingOffsets"):
        _setup("127.0.0.1:9", "orders", **{"kafka.auto.offset.reset": "latest"})


_PRODUCER_SCRIPT = """
import sys
from confluent_kafka.admin import AdminClient, NewTopic
from connector.kafka import OffsetRange, producer_for, read_range
conf = {"bootstrap.servers": sys.argv[1], "log_level": 0}
bp = producer_for(conf)
bp.produce("pooled-out", [b"a", b"b"], None, [0, 0], None)
bp.finish(30)
admin = AdminClient(conf)
admin.delete_topics(["pooled-out"], operation_timeout=10)["pooled-out"].result(15)
admin.create_topics([NewTopic("pooled-out", 1, 1)], operation_timeout=10)["pooled-out"].result(15)
again = producer_for(conf)
assert again is bp, "the pooled producer was not reused"
again.produce("pooled-out", [b"c"], None, [0], None)
again.finish(30)
rows = [v for b in read_range(conf, OffsetRange("pooled-out", 0, 0, 1), poll_timeout_s=10)
        for v in b.column("value").to_pylist()]
assert rows == [b"c"], rows
print("ok")
"""


@pytest.mark.kafka
@pytest.mark.tansu
@tansu_only
@pytest.mark.timeout(120)
def test_pooled_producer_survives_topic_recreation(tansu):
    """The sink's per-process producer (kept across tasks like Spark's ``CachedKafkaProducer``)
    writes to a topic that was deleted and recreated between two tasks: the record lands in
    the new topic and the worker process lives (an idle pooled *consumer* used to crash it)."""
    _run_in_own_process(_PRODUCER_SCRIPT, tansu.bootstrap_servers)


def _run_in_own_process(script: str, bootstrap: str) -> None:
    """Run ``script`` in a fresh interpreter (a crash inside librdkafka must fail the test, not
    pytest) and expect it to print ``ok``."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", script, bootstrap], capture_output=True,
                          text=True, timeout=100, cwd=root)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-2000:])
