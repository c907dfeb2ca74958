"""schemaEvolutionMode in a running stream (issue 18): a writer version with a new field
arrives mid-stream. ``rescue`` keeps the new field in ``_rescued_data`` (nothing lost);
``failOnNewFields`` stops the query naming the writer schema id, and a restart with the new
reader schema picks up exactly where it stopped."""
from __future__ import annotations

import json

import pytest

from tests.integration.spark.helpers import avro_doc, unique_topic
from tests.integration.spark.test_stream_read import ORDER_AVRO_V2, Producer, _orders

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


@pytest.fixture(scope="module", autouse=True)
def _registered(spark):
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)


@pytest.fixture()
def setup(kafka, registry_server, write_doc):
    topic = unique_topic("evolve")
    kafka.create_topic(topic)
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic))
    return topic, path, Producer(kafka, registry_server.url)


def _stream(spark, path, **options):
    reader = (spark.readStream.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders")
              .option("startingOffsets", "earliest"))
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load()


def test_rescue_keeps_the_new_field_of_a_writer_added_mid_stream(spark, kafka, registry_server, setup, tmp_path):
    topic, path, prod = setup
    prod.send(topic, _orders(range(10)))
    rows: list = []
    df = _stream(spark, path, schemaEvolutionMode="rescue")
    assert "_rescued_data" in df.columns
    q = (df.writeStream.foreachBatch(lambda b, _: rows.extend(
        tuple(r) for r in b.select("value.id", "_rescued_data").collect()))
        .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        q.processAllAvailable()
        Producer(kafka, registry_server.url, ORDER_AVRO_V2).send(topic, _orders(range(10, 20), channel="app"))
        q.processAllAvailable()
    finally:
        q.stop()
    by_id = dict(rows)
    assert sorted(by_id) == list(range(20)) and len(rows) == 20
    assert all(by_id[i] is None for i in range(10))
    assert all(json.loads(by_id[i]) == {"channel": "app"} for i in range(10, 20))


def test_fail_on_new_fields_stops_the_query_and_a_restart_with_the_new_reader_resumes(
        spark, kafka, registry_server, setup, tmp_path, write_doc):
    topic, path, prod = setup
    prod.send(topic, _orders(range(10)))
    ids: list = []

    def sink(b, _):
        ids.extend(r[0] for r in b.select("value.id").collect())

    ck = tmp_path / "ck"
    q = (_stream(spark, path, schemaEvolutionMode="failOnNewFields").writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(ck)).start())
    try:
        q.processAllAvailable()
        Producer(kafka, registry_server.url, ORDER_AVRO_V2).send(topic, _orders(range(10, 20), channel="app"))
        with pytest.raises(Exception) as e:
            q.processAllAvailable()
    finally:
        q.stop()
    text = str(e.value)
    assert "SCHEMA_EVOLUTION.NEW_FIELDS" in text and "channel" in text
    assert sorted(ids) == list(range(10))
    # the orchestrator restarts with the new reader schema: nothing lost, nothing duplicated
    v2_path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url,
                                 address=topic, schema=ORDER_AVRO_V2))
    q = (_stream(spark, v2_path, schemaEvolutionMode="failOnNewFields").writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    assert sorted(ids) == list(range(20))
