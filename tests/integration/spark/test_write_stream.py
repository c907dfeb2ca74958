"""``df.writeStream.format("asyncapi-kafka")`` with a checkpoint: restarts lose nothing.

The source is Spark's JSON file stream (replayable, its offsets in the checkpoint); the sink
writes the JSON orders channel of the matrix (framing none, so no registry is involved).
A micro-batch that fails (the broker unreachable) is not committed; the restarted query re-runs
it, so every record arrives; records of a micro-batch that failed half-way would arrive twice
(at-least-once, as Spark's Kafka sink), which the README states.
"""
from __future__ import annotations

import json

import pytest

from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark import write_helpers as wh
from tests.integration.spark.helpers import unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

SCHEMA = ("key string, partition int, value struct<id: bigint, customer: string, amount: double, "
          "status: string, note: string>")


def _drop(src, name: str, start: int, n: int) -> None:
    """Add one JSON file of orders start..start+n to the stream's source directory (atomically)."""
    tmp = src.parent / f".{name}"
    lines = []
    for i in range(start, start + n):
        rec = mh.record(i, "json")
        lines.append(json.dumps({"key": f"k{i}", "partition": i % mh.PARTITIONS, "value": rec}))
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(src / name)


def _run(spark, src, checkpoint, doc: str, **options) -> None:
    w = (spark.readStream.schema(SCHEMA).json(str(src)).writeStream.format("asyncapi-kafka")
         .option("asyncapi", doc).option("channel", "orders").option("checkpointLocation", str(checkpoint)))
    for k, v in options.items():
        w = w.option(k, v)
    q = w.trigger(availableNow=True).start()
    try:
        q.awaitTermination(300)
        if q.exception() is not None:
            raise q.exception()
    finally:
        q.stop()


def test_stream_write_survives_restarts_and_failed_batches(spark, kafka, tmp_path):
    topic = unique_topic("stream.write")
    doc = tmp_path / "doc.json"
    doc.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt="json",
                               key_schema={"type": "string"}))
    dead = tmp_path / "dead.json"  # same channel, a broker that is not there
    dead.write_text(mh.make_doc(bootstrap="127.0.0.1:9", address=topic, fmt="json",
                               key_schema={"type": "string"}))
    src, checkpoint = tmp_path / "src", tmp_path / "checkpoint"
    src.mkdir()

    _drop(src, "a.json", 0, 10)
    _run(spark, src, checkpoint, str(doc))
    wh.check_read_back(wh.read(spark, str(doc)), "json", 10)

    _drop(src, "b.json", 10, 10)
    with pytest.raises(Exception) as info:  # this micro-batch fails: nothing acknowledged
        _run(spark, src, checkpoint, str(dead), **{"kafka.delivery.timeout.ms": "2000",
                                                   "kafka.socket.connection.setup.timeout.ms": "1000"})
    assert "DeliveryError" in str(info.value)

    _drop(src, "c.json", 20, 5)
    _run(spark, src, checkpoint, str(doc))  # restart: the failed batch is re-run, then the new file
    wh.check_read_back(wh.read(spark, str(doc)), "json", 25)
