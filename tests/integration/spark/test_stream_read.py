"""spark.readStream.format("asyncapi-kafka") end to end: librdkafka mock cluster, embedded
registry, local[2] SparkSession, real checkpoint directories.

Modelled on Spark's ``KafkaMicroBatchSourceSuite`` / ``KafkaDontFailOnDataLossSuite``: each
test names the Spark test it mirrors. Synchronisation is ``processAllAvailable()`` or
``Trigger.AvailableNow`` + ``awaitTermination()``; foreachBatch callbacks run in this (the
driver's) Python process, so they can record batches and produce records mid-query.
"""
from __future__ import annotations

import datetime as dt
import json
import time
import uuid

import pytest

from tests.integration.spark.helpers import ORDER_AVRO, avro_doc, unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

UTC = dt.timezone.utc
BASE = dt.datetime(2026, 1, 1, tzinfo=UTC)

ORDER_AVRO_V2 = {**ORDER_AVRO, "fields": ORDER_AVRO["fields"] + [
    {"name": "channel", "type": "string", "default": "web"}]}


def _orders(ids, *, customer=None, **extra):
    return [{"id": i, "customer": customer or f"c{i % 7}", "amount": i * 1.5,
             "status": ["NEW", "PAID", "SHIPPED"][i % 3], "placed_at": BASE + dt.timedelta(seconds=i),
             "note": None, **extra} for i in ids]


class Producer:
    """Avro records through confluent-kafka's own serializer (registers the schema)."""

    def __init__(self, kafka, registry_url: str, schema: dict = ORDER_AVRO):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroSerializer

        self.kafka = kafka
        self.client = SchemaRegistryClient({"url": registry_url})
        self.ser = AvroSerializer(self.client, json.dumps(schema))

    def send(self, topic: str, records, *, partition: int | None = None) -> None:
        from confluent_kafka.serialization import MessageField, SerializationContext

        ctx = SerializationContext(topic, MessageField.VALUE)
        # Serialize first so the records leave in as few produce requests as possible.
        values = [(f"k{r['id']}".encode(), self.ser(r, ctx)) for r in records]
        for key, value in values:
            self.kafka.produce(topic, value, key=key, partition=partition)
        self.kafka.flush()


@pytest.fixture(scope="module", autouse=True)
def _registered(spark):
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)


@pytest.fixture()
def setup(kafka, registry_server, write_doc, tmp_path):
    """A fresh topic (all 4 partitions exist), its document and a producer."""
    topic = unique_topic("stream")
    kafka.create_topic(topic)
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))
    return topic, path, Producer(kafka, registry_server.url)


def _stream(spark, path, **options):
    reader = spark.readStream.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load()


def _ends(kafka, topic, partitions=range(4)):
    return {p: kafka.watermarks(topic, p)[1] for p in partitions}


class Batches:
    """A foreachBatch sink that keeps each micro-batch's rows (on the driver)."""

    def __init__(self, on_batch=None):
        self.batches: list[tuple[int, list]] = []
        self.on_batch = on_batch

    def __call__(self, df, batch_id):
        rows = [tuple(r) for r in df.select("partition", "offset", "value.id", "schemaId").collect()]
        self.batches.append((batch_id, rows))
        if self.on_batch is not None:
            self.on_batch(batch_id, rows)

    @property
    def rows(self):
        return [r for _, rs in self.batches for r in rs]

    @property
    def ids(self):
        return sorted(r[2] for r in self.rows)


def _for_each(df, sink: Batches, checkpoint, *, available_now=False):
    w = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
    if available_now:
        w = w.trigger(availableNow=True)
    return w.start()


def _to_parquet(df, out, checkpoint):
    return (df.select("partition", "offset", "value.id").writeStream.format("parquet")
            .option("path", str(out)).option("checkpointLocation", str(checkpoint)).start())


def _run_available_now(query):
    query.awaitTermination()
    assert query.exception() is None


def _drain(query):
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def test_restart_from_checkpoint_loses_and_duplicates_nothing(spark, kafka, setup, tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "(de)serialization of initial offsets" and the
    ``StopStream`` / ``StartStream`` steps of "maxOffsetsPerTrigger", with data added while
    stopped: the union of both runs is every record exactly once."""
    topic, path, prod = setup
    out, ck = tmp_path / "out", tmp_path / "ck"
    prod.send(topic, _orders(range(0, 30)))
    q = _to_parquet(_stream(spark, path, startingOffsets="earliest"), out, ck)
    q.processAllAvailable()
    prod.send(topic, _orders(range(30, 50)))
    _drain(q)
    prod.send(topic, _orders(range(50, 75)))          # while stopped
    q = _to_parquet(_stream(spark, path, startingOffsets="earliest"), out, ck)
    q.processAllAvailable()
    prod.send(topic, _orders(range(75, 80)))          # and after the restart
    _drain(q)

    rows = [tuple(r) for r in spark.read.parquet(str(out)).collect()]
    assert sorted(r[2] for r in rows) == list(range(80))
    expected = {(p, o) for p, end in _ends(kafka, topic).items() for o in range(end)}
    assert len({(r[0], r[1]) for r in rows}) == len(rows)
    assert {(r[0], r[1]) for r in rows} == expected


def test_max_offsets_per_trigger_bounds_every_batch(spark, setup, tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "maxOffsetsPerTrigger"."""
    topic, path, prod = setup
    prod.send(topic, _orders(range(60)))
    sink = Batches()
    q = _for_each(_stream(spark, path, startingOffsets="earliest", maxOffsetsPerTrigger=20), sink, tmp_path / "ck")
    _drain(q)
    sizes = [len(rows) for _, rows in sink.batches if rows]
    assert max(sizes) <= 20
    assert len(sizes) >= 3                           # 60 / 20
    assert sink.ids == list(range(60))
    progress = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert max(progress) <= 20 and sum(progress) == 60


def test_available_now_reads_the_snapshot_and_stops(spark, kafka, setup, tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "Trigger.AvailableNow" (records added after the
    query started are left for the next run), with maxOffsetsPerTrigger splitting the snapshot."""
    topic, path, prod = setup
    prod.send(topic, _orders(range(40)))

    def produce_more(batch_id, rows):
        if batch_id == 0:
            prod.send(topic, _orders(range(1000, 1010)))

    first = Batches(produce_more)
    q = _for_each(_stream(spark, path, startingOffsets="earliest", maxOffsetsPerTrigger=15), first,
                  tmp_path / "ck", available_now=True)
    _run_available_now(q)
    assert first.ids == list(range(40))
    assert len([b for b in first.batches if b[1]]) >= 3 and max(len(b[1]) for b in first.batches) <= 15
    assert sum(_ends(kafka, topic).values()) == 50   # the extra records were there to be read

    second = Batches()
    _run_available_now(_for_each(_stream(spark, path, startingOffsets="earliest"), second,
                                 tmp_path / "ck", available_now=True))
    assert second.ids == list(range(1000, 1010))


@pytest.fixture()
def aging(kafka, registry_server, write_doc, tmp_path, spark):
    """Partition 0 of a fresh topic: batch 0 reads [0, 10); batch 1 is planned as [10, 30) but
    its sink fails; then ~7 MB more records age out everything below the low watermark, so the
    re-run of batch 1 finds its whole range gone and batch 2 starts below the low watermark."""
    from pyspark.errors import StreamingQueryException

    topic = unique_topic("aging")
    kafka.create_topic(topic)
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))
    prod = Producer(kafka, registry_server.url)
    prod.send(topic, _orders(range(10)), partition=0)
    ck = tmp_path / "ck"
    first = Batches()
    _run_available_now(_for_each(_stream(spark, path, startingOffsets="earliest"), first, ck, available_now=True))
    assert first.ids == list(range(10))
    prod.send(topic, _orders(range(10, 30)), partition=0)

    def fail(batch_id, rows):
        raise RuntimeError("sink down")

    q = _for_each(_stream(spark, path), Batches(fail), ck)
    with pytest.raises(StreamingQueryException, match="sink down"):
        q.awaitTermination()
    prod.send(topic, _orders(range(30, 730), customer="x" * 10_000), partition=0)
    low, high = kafka.watermarks(topic, 0)
    assert low > 30 and high == 730
    return path, ck, low, first


def test_aged_out_records_fail_the_query(spark, aging):
    """The failOnDataLoss=true side of ``KafkaDontFailOnDataLossSuite``'s "failOnDataLoss=false
    should not return duplicated records: microbatch v2": the query fails, nothing is output."""
    from pyspark.errors import StreamingQueryException

    path, ck, _, _ = aging
    sink = Batches()
    q = _for_each(_stream(spark, path, failOnDataLoss="true"), sink, ck, available_now=True)
    with pytest.raises(StreamingQueryException) as err:
        q.awaitTermination()
    assert "KAFKA_DATA_LOSS" in str(err.value)
    assert sink.rows == []


def test_aged_out_records_are_skipped_without_duplicates(spark, aging):
    """Mirrors ``KafkaDontFailOnDataLossSuite``: "failOnDataLoss=false should not return
    duplicated records: microbatch v2" (a re-run batch whose whole range aged out, then a
    batch starting below the low watermark)."""
    path, ck, low, first = aging
    sink = Batches()
    _run_available_now(_for_each(_stream(spark, path, failOnDataLoss="false"), sink, ck, available_now=True))
    rows = first.rows + sink.rows
    assert len({(p, o) for p, o, _, _ in rows}) == len(rows)
    assert sorted(o for _, o, _, _ in rows) == list(range(10)) + list(range(low, 730))
    assert sorted(i for _, _, i, _ in rows) == list(range(10)) + list(range(low, 730))


def test_new_schema_version_mid_stream_decodes_with_the_fixed_reader(spark, kafka, registry_server, setup, tmp_path):
    """No Spark counterpart (Spark's source has no schemas): schema evolution under a running
    query, in the style of ``KafkaMicroBatchSourceSuite``'s ``AddKafkaData`` then ``CheckAnswer``."""
    topic, path, prod = setup
    prod.send(topic, _orders(range(10)))
    sink = Batches()
    q = _for_each(_stream(spark, path, startingOffsets="earliest"), sink, tmp_path / "ck")
    q.processAllAvailable()
    v2 = Producer(kafka, registry_server.url, ORDER_AVRO_V2)
    v2.send(topic, _orders(range(10, 20), channel="app"))
    _drain(q)
    v1_id, v2_id = (_schema_id(registry_server.url, f"{topic}-value", v) for v in (1, 2))
    assert v2_id != v1_id
    assert sink.ids == list(range(20))
    by_id = {r[2]: r[3] for r in sink.rows}
    assert {by_id[i] for i in range(10)} == {v1_id} and {by_id[i] for i in range(10, 20)} == {v2_id}


def _schema_id(url, subject, version):
    """Schema id of one version, from a fresh client (confluent-kafka caches 'latest')."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": url}).get_version(subject, version).schema_id


def test_latest_start_survives_a_restart_before_the_first_batch_commits(spark, setup, tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "starting offset is latest by default" and
    "deserialization of initial offset written by future version" (the initial offset must
    not move when the query restarts before batch 0 completes)."""
    from pyspark.errors import StreamingQueryException

    topic, path, prod = setup
    prod.send(topic, _orders(range(5)))            # before the start: never read

    def fail(batch_id, rows):
        raise RuntimeError("sink down")

    q = _for_each(_stream(spark, path), Batches(fail), tmp_path / "ck")
    with pytest.raises(StreamingQueryException, match="sink down"):
        q.awaitTermination()
    prod.send(topic, _orders(range(100, 120)))     # after the first start, before the restart
    sink = Batches()
    q = _for_each(_stream(spark, path), sink, tmp_path / "ck")
    q.processAllAvailable()
    prod.send(topic, _orders(range(200, 205)))
    _drain(q)
    assert sink.ids == list(range(100, 120)) + list(range(200, 205))


def test_min_offsets_per_trigger_waits_for_enough_records(spark, setup, tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "minOffsetsPerTrigger" (the first batch always
    runs; then no batch until the minimum is reached), from the default ``latest`` start:
    records arriving while the minimum is not reached are kept, not skipped."""
    topic, path, prod = setup
    prod.send(topic, _orders(range(3)))              # before the start: never read
    sink = Batches()
    q = _for_each(_stream(spark, path, minOffsetsPerTrigger=30, maxTriggerDelay="1h"), sink, tmp_path / "ck")
    q.processAllAvailable()
    # One partition, one produce request: the running query sees each send whole, never a
    # part of the second that would already pass the minimum and strand the rest.
    prod.send(topic, _orders(range(10, 20)), partition=0)
    q.processAllAvailable()                          # 10 < 30: no batch reads anything yet
    assert sink.ids == []
    prod.send(topic, _orders(range(20, 45)), partition=0)
    _drain(q)
    assert sink.ids == list(range(10, 45))
    assert [len(rows) for _, rows in sink.batches if rows] == [35]


def test_templated_channel_picks_up_a_new_matching_topic(spark, kafka, registry_server, write_doc, tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "subscribing topic by pattern with topic
    creation" (a topic created after the start is read from its beginning)."""
    base = f"tmpl-{uuid.uuid4().hex[:8]}"
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url,
                              address=base + ".{region}", parameters={"region": {"description": "region"}}))
    prod = Producer(kafka, registry_server.url)
    seen = []
    df = _stream(spark, path).select("topic", "region", "value.id")   # no topic matches yet
    q = (df.writeStream.foreachBatch(lambda b, i: seen.extend(tuple(r) for r in b.collect()))
         .option("checkpointLocation", str(tmp_path / "ck")).start())
    q.processAllAvailable()
    assert seen == []
    prod.send(f"{base}.eu", _orders(range(10)))
    q.processAllAvailable()
    assert sorted(seen) == [(f"{base}.eu", "eu", i) for i in range(10)]
    prod.send(f"{base}.us", _orders(range(10, 25)))
    _drain(q)
    assert sorted(r for r in seen if r[1] == "us") == [(f"{base}.us", "us", i) for i in range(10, 25)]
    assert len(seen) == 25


def test_topic_created_while_a_latest_start_restarts_is_read_in_full(spark, kafka, registry_server, write_doc,
                                                                     tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "subscribing topic by pattern from latest offsets"
    with a restart before batch 0 commits: the re-resolved initial offset names a topic that
    batch 0's planned end does not know. That is a new topic, not a deleted partition."""
    from pyspark.errors import StreamingQueryException

    base = f"tmpl-{uuid.uuid4().hex[:8]}"
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url,
                              address=base + ".{region}", parameters={"region": {"description": "region"}}))
    prod = Producer(kafka, registry_server.url)
    prod.send(f"{base}.eu", _orders(range(5)))             # before the start: never read

    def fail(batch_id, rows):
        raise RuntimeError("sink down")

    q = _for_each(_stream(spark, path), Batches(fail), tmp_path / "ck")
    with pytest.raises(StreamingQueryException, match="sink down"):
        q.awaitTermination()
    prod.send(f"{base}.eu", _orders(range(100, 110)))
    prod.send(f"{base}.us", _orders(range(200, 215)))      # a new topic while stopped
    sink = Batches()
    _run_available_now(_for_each(_stream(spark, path), sink, tmp_path / "ck", available_now=True))
    assert sink.ids == list(range(100, 110)) + list(range(200, 215))


def test_commit_offsets_to_group_for_lag_monitoring(spark, kafka, setup, tmp_path):
    """Mirrors Spark's ``KafkaMicroBatchSourceSuite`` consumer-group cases (Spark itself never
    commits; this is the option Spark users ask for): the operation's groupId sees the offsets
    of the previous batch, committed when the next batch starts."""
    from confluent_kafka import Consumer, TopicPartition

    topic, path, prod = setup
    prod.send(topic, _orders(range(20)))
    sink = Batches()
    q = _for_each(_stream(spark, path, startingOffsets="earliest", commitOffsetsToGroup="true"), sink,
                  tmp_path / "ck")
    q.processAllAvailable()
    first_end = _ends(kafka, topic)
    prod.send(topic, _orders(range(20, 30)))
    q.processAllAvailable()
    prod.send(topic, _orders(range(30, 35)))         # a third batch commits the second's end
    q.processAllAvailable()
    q.stop()
    assert sink.ids == list(range(35))
    ends, cur = [], {p: 0 for p in range(4)}
    for _, rows in sink.batches:
        for p, o, _, _ in rows:
            cur[p] = max(cur[p], o + 1)
        ends.append(dict(cur))
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "shop-readers",
                         "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(4)], timeout=10)
    finally:
        consumer.close()
    got = {c.partition: c.offset for c in committed}
    # commit(end) of a batch runs when the next one starts: the last batch's end is not there yet.
    assert len(ends) >= 3 and got == ends[-2]
    assert all(got[p] >= first_end[p] for p in range(4)) and got != ends[-1]


def test_starting_offsets_forms(spark, kafka, setup, tmp_path):
    """Mirrors ``KafkaMicroBatchSourceSuite``: "assign from specific offsets", "subscribing
    topic by name from earliest offsets" and the startingTimestamp cases (on the mock cluster
    every timestamp look-up answers "no match", so strategy=latest starts at the end)."""
    topic, path, prod = setup
    for p in range(4):
        prod.send(topic, _orders(range(p * 10, p * 10 + 10)), partition=p)

    def run(name, **opts):
        sink = Batches()
        _run_available_now(_for_each(_stream(spark, path, **opts), sink, tmp_path / name, available_now=True))
        return sink

    assert run("earliest", startingOffsets="earliest").ids == list(range(40))
    start = json.dumps({topic: {"0": 7, "1": -2, "2": -1, "3": 3}})
    got = run("json", startingOffsets=start)
    assert sorted((p, o) for p, o, _, _ in got.rows) == (
        [(0, o) for o in range(7, 10)] + [(1, o) for o in range(10)] + [(3, o) for o in range(3, 10)])
    assert run("latest", startingOffsets="latest").ids == []
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException, match="must specify all TopicPartitions"):
        run("json-partial", startingOffsets=json.dumps({topic: {"0": 1}}))
    # (strategy=latest is covered by test_timestamp_start_without_a_match_survives_a_restart)
    with pytest.raises(StreamingQueryException, match="timestamp"):
        run("ts-error", startingTimestamp=str(int(time.time() * 1000)))


def test_timestamp_start_without_a_match_survives_a_restart(spark, setup, tmp_path):
    """Like the ``latest`` case above, for ``startingTimestamp`` with strategy ``latest`` when no
    record matches (always, on the mock cluster): the start stays where the first run put it."""
    from pyspark.errors import StreamingQueryException

    topic, path, prod = setup
    prod.send(topic, _orders(range(5)))
    opts = dict(startingTimestamp=str(int(time.time() * 1000) + 3_600_000),
                startingOffsetsByTimestampStrategy="latest")

    def fail(batch_id, rows):
        raise RuntimeError("sink down")

    q = _for_each(_stream(spark, path, **opts), Batches(fail), tmp_path / "ck")
    with pytest.raises(StreamingQueryException, match="sink down"):
        q.awaitTermination()
    prod.send(topic, _orders(range(100, 110)))
    sink = Batches()
    _run_available_now(_for_each(_stream(spark, path, **opts), sink, tmp_path / "ck", available_now=True))
    assert sink.ids == list(range(100, 110))


def test_throughput_of_an_available_now_run(spark, setup, tmp_path):
    """Not an assertion on speed: prints records/s of a 20k-record AvailableNow run (noop sink)."""
    topic, path, prod = setup
    n = 20_000
    prod.send(topic, _orders(range(n)))
    t0 = time.perf_counter()
    q = (_stream(spark, path, startingOffsets="earliest").writeStream.format("noop")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    _run_available_now(q)
    wall = time.perf_counter() - t0
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    assert rows == n
    batches = [p for p in q.recentProgress if p["numInputRows"]]
    print(f"\nstream throughput: {n / wall:,.0f} records/s wall ({wall:.1f}s incl. query start); per batch: "
          + ", ".join(f"{p['numInputRows']} rows in {p['durationMs']['triggerExecution']} ms "
                      f"({p['processedRowsPerSecond']:,.0f}/s)" for p in batches))
