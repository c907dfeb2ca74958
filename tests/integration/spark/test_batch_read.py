"""spark.read.format("asyncapi-kafka") end to end: librdkafka mock cluster, embedded registry
(a real HTTP server), local[2] SparkSession, data written by independent serializers."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from tests.integration.spark.helpers import ORDER_AVRO, avro_doc, unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

UTC = dt.timezone.utc


def _orders(n: int):
    base = dt.datetime(2026, 1, 1, tzinfo=UTC)
    return [{"id": i, "customer": f"c{i % 7}", "amount": i * 1.5, "status": ["NEW", "PAID", "SHIPPED"][i % 3],
             "placed_at": base + dt.timedelta(seconds=i), "note": None if i % 2 else f"n{i}"} for i in range(n)]


def _produce_avro(kafka, registry_url: str, topic: str, records, *, key_fn=lambda r: f"k{r['id']}", partition=None,
                  headers=None, conf=None):
    import json

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": registry_url})
    ser = AvroSerializer(client, json.dumps(ORDER_AVRO), conf=conf or {})
    out = []
    for r in records:
        ctx = SerializationContext(topic, MessageField.VALUE, headers)
        value = ser(r, ctx)
        out.append((key_fn(r).encode(), value))
        kafka.produce(topic, value, key=key_fn(r).encode(), partition=partition, headers=headers)
    kafka.flush()
    return out


def _read(spark, path, **options):
    reader = spark.read.format("asyncapi-kafka").option("asyncapi", path)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


@pytest.fixture()
def avro_topic(kafka, registry_server, write_doc, spark):
    topic = unique_topic("orders")
    records = _orders(40)
    _produce_avro(kafka, registry_server.url, topic, records)
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic,
                              key_schema={"type": "string"}))
    return topic, records, path


def test_auto_registered_format_reads_typed_rows(spark, avro_topic):
    import pyspark_asyncapi_kafka  # noqa: F401  (what PySpark imports by itself)

    topic, records, path = avro_topic
    df = _read(spark, path, channel="orders")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,amount:double,status:string,placed_at:timestamp,note:string>")
    assert df.schema["key"].dataType.simpleString() == "string"
    rows = sorted(df.collect(), key=lambda r: r.value.id)
    assert len(rows) == len(records)
    for row, rec in zip(rows, records):
        assert row.key == f"k{rec['id']}"
        v = row.value
        assert (v.id, v.customer, v.amount, v.status, v.note) == (
            rec["id"], rec["customer"], rec["amount"], rec["status"], rec["note"])
        assert v.placed_at.replace(tzinfo=UTC) == rec["placed_at"] or v.placed_at == rec["placed_at"].replace(tzinfo=None)
        assert row.topic == topic
        assert row.schemaId >= 1
    # Offsets are dense per partition and start at 0 on a fresh topic.
    by_part = {}
    for r in rows:
        by_part.setdefault(r.partition, []).append(r.offset)
    for offsets in by_part.values():
        assert sorted(offsets) == list(range(len(offsets)))


def test_explicit_registration_works_too(spark, avro_topic):
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)
    _, records, path = avro_topic
    assert _read(spark, path, channel="orders").count() == len(records)


def test_min_partitions_and_max_records_split_give_the_same_rows(spark, avro_topic):
    _, records, path = avro_topic
    base = sorted((r.partition, r.offset, r.value.id) for r in _read(spark, path, channel="orders").collect())
    split = _read(spark, path, channel="orders", minPartitions="9")
    # Spark's calculator: each of the 4 ranges gets round(size / total * 9) = 2 parts.
    assert split.rdd.getNumPartitions() == 8
    assert sorted((r.partition, r.offset, r.value.id) for r in split.collect()) == base
    capped = _read(spark, path, channel="orders", maxRecordsPerPartition="3")
    assert capped.rdd.getNumPartitions() >= len(records) // 3
    assert sorted((r.partition, r.offset, r.value.id) for r in capped.collect()) == base


def test_small_ranges_share_tasks_and_give_the_same_rows(spark, avro_topic):
    _, records, path = avro_topic
    rows = lambda df: sorted((r.partition, r.offset, r.value.id) for r in df.collect())
    alone = _read(spark, path, channel="orders", minRecordsPerPartition="0")
    packed = _read(spark, path, channel="orders")  # default: 4 ranges of ~10 records, one task
    assert alone.rdd.getNumPartitions() == 4
    assert packed.rdd.getNumPartitions() == 1
    assert rows(packed) == rows(alone) and len(rows(alone)) == len(records)
    # minPartitions asks for tasks: no packing then
    assert _read(spark, path, channel="orders", minPartitions="4").rdd.getNumPartitions() == 4


def test_starting_and_ending_offsets_json(spark, avro_topic):
    topic, records, path = avro_topic
    all_rows = _read(spark, path, channel="orders").collect()
    counts = {}
    for r in all_rows:
        counts[r.partition] = counts.get(r.partition, 0) + 1
    p = max(counts, key=counts.get)
    parts = range(4)
    # Like Spark, specific offsets must name every partition: the others read in full (-2/-1).
    start = json.dumps({topic: {str(q): (1 if q == p else -2) for q in parts}})
    end = json.dumps({topic: {str(q): (counts[p] - 1 if q == p else -1) for q in parts}})
    rows = _read(spark, path, channel="orders", startingOffsets=start, endingOffsets=end).collect()
    assert sorted(r.offset for r in rows if r.partition == p) == list(range(1, counts[p] - 1))
    assert len([r for r in rows if r.partition != p]) == len(all_rows) - counts[p]
    with pytest.raises(Exception, match="must specify all TopicPartitions"):
        _read(spark, path, channel="orders", startingOffsets=json.dumps({topic: {str(p): 1}})).collect()
    # Like Spark's Kafka source, a batch read cannot start at 'latest'.
    with pytest.raises(Exception, match="latest"):
        _read(spark, path, channel="orders", startingOffsets="latest").collect()


def test_permissive_mode_keeps_bad_records_with_an_error(spark, kafka, registry_server, write_doc):
    topic = unique_topic("orders.bad")
    _produce_avro(kafka, registry_server.url, topic, _orders(5), partition=0)
    kafka.produce(topic, b"\x07garbage", key=b"bad", partition=0)        # unknown magic byte
    kafka.produce(topic, b"\x00\x00\x00", key=b"short", partition=0)     # truncated header
    kafka.flush()
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))
    rows = sorted(_read(spark, path, channel="orders", mode="PERMISSIVE").collect(), key=lambda r: r.offset)
    assert len(rows) == 7
    good, bad = rows[:5], rows[5:]
    assert all(r.value is not None and r._error is None and r._raw_value is None for r in good)
    assert all(r.value is None and r._error for r in bad)
    assert bytes(bad[0]._raw_value) == b"\x07garbage"
    dropped = _read(spark, path, channel="orders", mode="DROPMALFORMED").collect()
    assert sorted(r.offset for r in dropped) == [0, 1, 2, 3, 4]
    with pytest.raises(Exception) as err:
        _read(spark, path, channel="orders").collect()
    text = str(err.value)
    assert topic in text and "offset=5" in text and "partition=0" in text


def test_bad_options_fail_at_load_with_a_clear_message(spark, avro_topic):
    _, _, path = avro_topic
    with pytest.raises(Exception, match="unknown option 'startingofsets'"):
        _read(spark, path, channel="orders", startingOfsets="earliest").schema
    with pytest.raises(Exception, match="enable.auto.commit"):
        _read(spark, path, channel="orders", **{"kafka.enable.auto.commit": "true"}).schema
    with pytest.raises(Exception, match="nosuch"):
        _read(spark, path, channel="nosuch").schema
