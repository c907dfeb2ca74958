"""Filter pushdown through a real SparkSession (``spark.sql.python.filterPushdown.enabled``).

Each test reads the same query with pushdown off and on and compares the rows, and asserts the
offset ranges Spark planned (the pickled ``KafkaInputPartition`` objects inside the physical
plan) and that Spark kept no filter of its own for what the reader took over (the reader drops
exactly those rows). Topic, partition, offset and channel-parameter filters run on the librdkafka
mock cluster; timestamp filters need a broker that looks offsets up by time, which the mock and
tansu do not (noida-db does: ``connector.testing.NoidaBroker``).
"""
from __future__ import annotations

import datetime as dt
import io
import json
import pickle

import pytest

from tests.integration.spark.helpers import ORDER_AVRO, avro_doc, unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

SETTING = "spark.sql.python.filterPushdown.enabled"
UTC = dt.timezone.utc
BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _payload(i: int) -> bytes:
    import fastavro

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(ORDER_AVRO), {
        "id": i, "customer": f"c{i}", "amount": 1.0, "status": "NEW", "placed_at": 0, "note": None})
    return buf.getvalue()


def _produce(bootstrap: str, topic: str, n: int, partitions: int = 4, ts=None) -> None:
    """``n`` unframed Avro orders, round-robin over ``partitions``, record i at time ``ts(i)`` (ms)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    for i in range(n):
        producer.produce(topic, _payload(i), partition=i % partitions,
                         timestamp=ts(i) if ts else BASE_MS + i * 1000)
    assert producer.flush(30) == 0


def _doc(write_doc, bootstrap: str, address: str, parameters=None) -> str:
    """A channel of unframed Avro orders (no registry)."""
    doc = json.loads(avro_doc(bootstrap=bootstrap, registry_url=None, address=address, parameters=parameters))
    del doc["components"]["messages"]["Order"]["bindings"]
    return write_doc(json.dumps(doc))


def _load(spark, path: str, **options):
    reader = spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def planned(df) -> list[tuple[str, int, int, int]]:
    """The ranges Spark planned for ``df``: those of its BatchScan's input partitions, unpickled."""
    plan = df._jdf.queryExecution().sparkPlan()
    leaves = plan.collectLeaves()
    scans = [leaves.apply(i) for i in range(leaves.size())
             if leaves.apply(i).getClass().getSimpleName() == "BatchScanExec"]
    assert len(scans) == 1, plan.toString()
    out = []
    for part in scans[0].scan().toBatch().planInputPartitions():
        value = pickle.loads(bytes(part.pickedPartition()))
        # Spark turns an empty plan into InputPartition(None); a task may carry several small ranges
        out.extend(getattr(value, "ranges", ()))
    return sorted(out)


def explained(df) -> str:
    """``df.explain("formatted")`` as text."""
    return df.sparkSession._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "formatted")


def _keys(df) -> list[tuple]:
    return sorted((r.topic, r.partition, r.offset) for r in df.select("topic", "partition", "offset").collect())


def compare(spark, load, where: str):
    """Rows of ``load().where(where)`` with pushdown off and on (a fresh DataFrame each: see the
    README on PySpark reusing a DataFrame's pushed plan), the plan with pushdown on, and its text."""
    spark.conf.set(SETTING, "false")
    try:
        off_df = load().where(where)
        off = _keys(off_df)
        off_plan = explained(off_df)
        spark.conf.set(SETTING, "true")
        on_df = load().where(where)
        on = _keys(on_df)
        ranges = planned(on_df)
        text = explained(on_df)
    finally:
        spark.conf.unset(SETTING)
    assert on == off
    assert "Filter (" in off_plan and "PushedFilters: [I" not in off_plan  # off: Spark filters, nothing pushed
    return on, ranges, text


def _no_spark_filter(text: str) -> None:
    """The reader took over every filter: Spark evaluates none after the scan."""
    assert "Filter (" not in text, text


@pytest.fixture()
def shop(kafka, write_doc):
    topic = unique_topic("pushdown")
    _produce(kafka.bootstrap_servers, topic, 40)
    return topic, _doc(write_doc, kafka.bootstrap_servers, topic)


def test_partition_filters_select_partitions(spark, shop):
    topic, path = shop
    rows, ranges, text = compare(spark, lambda: _load(spark, path), "partition IN (1, 3)")
    assert ranges == [(topic, 1, 0, 10), (topic, 3, 0, 10)]
    assert {r[1] for r in rows} == {1, 3} and len(rows) == 20
    _no_spark_filter(text)
    assert "In(partition" in text or "partition IN" in text
    rows, ranges, _ = compare(spark, lambda: _load(spark, path), "partition > 2 AND NOT (partition = 7)")
    assert ranges == [(topic, 3, 0, 10)] and len(rows) == 10
    rows, ranges, _ = compare(spark, lambda: _load(spark, path), "partition = 9")
    assert ranges == [] and rows == []  # nothing planned, no task


def test_offset_filters_narrow_ranges_and_combine_with_the_offset_options(spark, shop):
    topic, path = shop
    rows, ranges, text = compare(spark, lambda: _load(spark, path), "offset >= 3 AND offset < 6")
    assert ranges == [(topic, p, 3, 6) for p in range(4)]
    assert sorted({r[2] for r in rows}) == [3, 4, 5] and len(rows) == 12
    _no_spark_filter(text)
    # IN: the values close together are read as one range; the rows are exactly the ones asked for
    rows, ranges, _ = compare(spark, lambda: _load(spark, path), "offset IN (1, 8) AND partition = 2")
    assert ranges == [(topic, 2, 1, 9)] and [r[2] for r in rows] == [1, 8]
    # the narrower bound wins: startingOffsets 5 on partition 0 vs offset >= 3; endingOffsets 7 vs < 9
    start = json.dumps({topic: {"0": 5, "1": -2, "2": -2, "3": -2}})
    end = json.dumps({topic: {"0": 7, "1": -1, "2": -1, "3": -1}})
    rows, ranges, _ = compare(spark, lambda: _load(spark, path, startingOffsets=start, endingOffsets=end),
                              "offset >= 3 AND offset < 9")
    assert ranges == [(topic, 0, 5, 7)] + [(topic, p, 3, 9) for p in (1, 2, 3)]
    assert len(rows) == 2 + 3 * 6
    rows, ranges, _ = compare(spark, lambda: _load(spark, path), "offset > 20")
    assert ranges == [] and rows == []


def test_topic_and_channel_parameter_filters_select_topics(spark, kafka, write_doc):
    prefix = unique_topic("stock")
    for wh in ("berlin", "bonn", "paris"):
        _produce(kafka.bootstrap_servers, f"{prefix}.{wh}", 8)
    path = _doc(write_doc, kafka.bootstrap_servers, prefix + ".{warehouse}", parameters={"warehouse": {}})

    def load():
        return _load(spark, path)

    rows, ranges, text = compare(spark, load, "warehouse = 'berlin'")
    assert {r[0] for r in ranges} == {f"{prefix}.berlin"} and len(ranges) == 4
    assert {r[0] for r in rows} == {f"{prefix}.berlin"} and len(rows) == 8
    _no_spark_filter(text)
    rows, ranges, _ = compare(spark, load, "warehouse IN ('bonn', 'paris') AND partition = 0")
    assert ranges == [(f"{prefix}.bonn", 0, 0, 2), (f"{prefix}.paris", 0, 0, 2)] and len(rows) == 4
    rows, ranges, text = compare(spark, load, f"topic LIKE '{prefix}.b%'")
    assert {r[0] for r in ranges} == {f"{prefix}.berlin", f"{prefix}.bonn"} and len(rows) == 16
    _no_spark_filter(text)
    rows, ranges, _ = compare(spark, load, "warehouse = 'rome'")
    assert ranges == [] and rows == []


@pytest.fixture(scope="module")
def noida():
    from connector.testing import NoidaBroker

    if not NoidaBroker.available():
        pytest.skip("noida-db is not installed (pip install noida-db): no local broker looks offsets up by time")
    with NoidaBroker() as broker:
        yield broker


def _ts(i: int) -> int:
    """Record i's time: seconds apart, but every 5th record (a late producer) 30 s in the past."""
    return BASE_MS + i * 1000 - (30_000 if i % 5 == 4 else 0)


def _at(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def test_timestamp_filters_start_at_the_brokers_offsets_for_times(spark, noida, write_doc):
    topic = unique_topic("events")
    noida.create_topic(topic, partitions=2)
    _produce(noida.bootstrap_servers, topic, 60, partitions=2, ts=_ts)
    path = _doc(write_doc, noida.bootstrap_servers, topic)

    def load(**o):
        return _load(spark, path, **o)

    # Record i sits at offset i // 2 of partition i % 2. The first record at or after
    # BASE + 40 s is i = 40 (offset 20 of partition 0) and i = 41 (offset 20 of partition 1);
    # records 44, 49, 54 and 59 inside those ranges are late (30 s earlier): the reader drops them.
    rows, ranges, text = compare(spark, load, f"timestamp >= '{_at(BASE_MS + 40_000)}'")
    assert ranges == [(topic, 0, 20, 30), (topic, 1, 20, 30)]
    assert (topic, 1, 24) not in rows and len(rows) == 20 - 4
    _no_spark_filter(text)
    # An upper bound does not shorten a range: records after the first one at or past it may be
    # earlier (a late record), so the read goes on and the reader drops rows one by one.
    rows, ranges, _ = compare(spark, load, f"timestamp < '{_at(BASE_MS + 10_000)}'")
    assert ranges == [(topic, 0, 0, 30), (topic, 1, 0, 30)]
    late = [(topic, i % 2, i // 2) for i in range(60) if _ts(i) < BASE_MS + 10_000]
    assert rows == sorted(late) and (topic, 1, 19) in rows  # i = 39, offset 19: late, at 9 s
    # = and the narrower bound: startingTimestamp later than the filter wins
    rows, ranges, _ = compare(spark, lambda: load(startingTimestamp=str(BASE_MS + 50_000)),
                              f"timestamp > '{_at(BASE_MS + 40_000)}' AND timestamp <= '{_at(BASE_MS + 55_000)}'")
    assert ranges == [(topic, 0, 25, 30), (topic, 1, 25, 30)]
    assert [r[1:] for r in rows] == [(0, 25), (0, 26), (1, 25), (1, 26), (1, 27)]  # 54 is late
    rows, ranges, _ = compare(spark, load, f"timestamp = '{_at(BASE_MS + 33_000)}'")
    assert ranges == [(topic, 0, 18, 30), (topic, 1, 16, 30)] and rows == [(topic, 1, 16)]
    # past the last record: the broker finds none, nothing is planned
    rows, ranges, _ = compare(spark, load, f"timestamp >= '{_at(BASE_MS + 3_600_000)}'")
    assert ranges == [] and rows == []


def test_timestamp_filters_on_a_broker_that_cannot_look_times_up(spark, kafka, write_doc):
    # The mock cluster answers "no record at or after" for every time: trusting it would plan
    # nothing. It finds no largest timestamp either, so the reader reads on and filters rows.
    topic = unique_topic("mocktime")
    _produce(kafka.bootstrap_servers, topic, 20, ts=_ts)
    path = _doc(write_doc, kafka.bootstrap_servers, topic)
    rows, ranges, _ = compare(spark, lambda: _load(spark, path), f"timestamp >= '{_at(BASE_MS + 10_000)}'")
    assert ranges == [(topic, p, 0, 5) for p in range(4)]
    assert len(rows) == 8  # i = 10..19 but 14 and 19 are late


def test_filters_the_reader_cannot_answer_stay_with_spark(spark, shop):
    topic, path = shop
    rows, ranges, text = compare(spark, lambda: _load(spark, path),
                                 "value.id % 2 = 0 AND partition = 0 OR value.id = 3")
    assert len(ranges) == 4  # an OR is not offered to the reader: everything is planned
    assert "Filter (" in text
    rows, ranges, text = compare(spark, lambda: _load(spark, path), "value.id >= 30 AND partition = 2")
    assert ranges == [(topic, 2, 0, 10)] and [r[2] for r in rows] == [7, 8, 9]
    assert "Filter (" in text  # value.id is Spark's


@pytest.mark.skipif(__import__("pyspark").__version__ >= "5", reason="fixed in PySpark 5 (SPARK-58551)")
def test_known_pyspark_issue_a_reused_dataframe_keeps_its_pushed_plan(spark, shop):
    # PySpark 4.1-4.3 store the plan made with the pushed filters on the DataFrame's relation
    # and reuse it for later queries of the same DataFrame object (README: load per question).
    topic, path = shop
    spark.conf.set(SETTING, "true")
    try:
        df = _load(spark, path)
        assert df.where("partition = 1").count() == 10
        assert df.count() == 10  # 40 with a fresh load(): the relation kept the pushed plan
        assert _load(spark, path).count() == 40
    finally:
        spark.conf.unset(SETTING)
