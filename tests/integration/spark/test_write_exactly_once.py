"""``deliveryGuarantee=exactly-once`` through the shared SparkSession, on noida-db (it implements
transactions, keeps transactional offsets and honours read_committed): a batch write re-run with
the same ``writeId`` writes nothing twice; a stream's micro-batches commit their markers under
the checkpoint's query id, and a restart continues without rewriting. The fault cases (failed
task attempts, a killed driver, speculation, transient errors) are in
``tests/reliability/test_exactly_once*.py``; this checks the Spark plumbing (task context:
partition id, query id, batch id) in the usual session."""
from __future__ import annotations

import collections
import json

import pytest

from connector.testing import NoidaBroker

from tests.reliability.kafka_log import read_log
from tests.reliability.test_exactly_once import consumer_committed, exactly_once, uid

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


@pytest.fixture(scope="module")
def noida():
    if not NoidaBroker.available():
        pytest.skip("noida-db not installed")
    with NoidaBroker() as b:
        yield b


def _doc(tmp_path, bootstrap: str, *channels: str) -> str:
    doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "servers": {"k": {"host": bootstrap, "protocol": "kafka"}},
           "channels": {c: {"address": c, "messages": {"m": {"name": "M"}}} for c in channels}}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _frame(spark, ids):
    return spark.createDataFrame([(uid(i),) for i in ids], "value binary").repartition(3)


def _write(df, doc: str, channel: str, **options) -> None:
    w = (df.write.format("asyncapi-kafka").mode("append").option("asyncapi", doc).option("channel", channel)
         .option("deliveryGuarantee", "exactly-once"))
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def test_a_batch_write_run_again_with_its_write_id_writes_nothing_twice(spark, noida, tmp_path):
    noida.create_topic("eos-batch", partitions=2)
    doc = _doc(tmp_path, noida.bootstrap_servers, "eos-batch")
    _write(_frame(spark, range(300)), doc, "eos-batch", writeId="load-1")
    _write(_frame(spark, range(300)), doc, "eos-batch", writeId="load-1")  # a re-run of the same write
    exactly_once(consumer_committed(noida.bootstrap_servers, "eos-batch"), range(300))
    _write(_frame(spark, range(300, 400)), doc, "eos-batch", writeId="load-2")  # a new write
    exactly_once(consumer_committed(noida.bootstrap_servers, "eos-batch"), range(400))
    with pytest.raises(Exception, match="writeId"):
        _write(_frame(spark, range(1)), doc, "eos-batch")


def test_a_stream_commits_each_micro_batch_once_across_a_restart(spark, noida, tmp_path):
    from confluent_kafka import Producer

    for t in ("eos-in", "eos-out"):
        noida.create_topic(t, partitions=2)
    doc = _doc(tmp_path, noida.bootstrap_servers, "eos-in", "eos-out")
    p = Producer({"bootstrap.servers": noida.bootstrap_servers, "log_level": 0})

    def produce(ids) -> None:
        for i in ids:
            p.produce("eos-in", uid(i), partition=i % 2)
        assert p.flush(30) == 0

    def run() -> None:
        q = (spark.readStream.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "eos-in")
             .option("startingOffsets", "earliest").option("minRecordsPerPartition", "0")
             .option("maxOffsetsPerTrigger", "100").load()
             .select("value").writeStream.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "eos-out")
             .option("deliveryGuarantee", "exactly-once").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None, q.exception()

    produce(range(250))
    run()
    produce(range(250, 400))
    run()  # restarted from the checkpoint: same query id, same transactional ids
    exactly_once(consumer_committed(noida.bootstrap_servers, "eos-out"), range(400))
    logs = read_log(noida.bootstrap_servers, "eos-out")
    exactly_once(collections.Counter(v for lg in logs.values() for _, _, v in lg.visible), range(400))
    assert sum(lg.markers for lg in logs.values()) >= 4  # one transaction per task and micro-batch
