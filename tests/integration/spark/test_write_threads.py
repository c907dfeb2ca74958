"""Writes and reads from a Python thread that is not the one that built the session (issue 24).

Spark looks a Python data source up through the calling thread's *active* session, which a
new thread does not have: ``df.write.format("asyncapi-kafka")`` there failed with
``DATA_SOURCE_NOT_FOUND`` even after ``spark.dataSource.register(...)`` (notebooks and
orchestrators run jobs in threads). Each job below runs in a fresh ``threading.Thread`` on the
shared session, with a DataFrame built in the main thread.
"""
from __future__ import annotations

import threading

import pytest

from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark import write_helpers as wh
from tests.integration.spark.helpers import unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


def _in_thread(fn):
    """Run ``fn`` in a new thread; return its result or raise what it raised."""
    box: dict = {}

    def run():
        try:
            box["result"] = fn()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name="not-main")
    t.start()
    t.join(300)
    assert not t.is_alive(), "the job did not finish"
    if "error" in box:
        raise box["error"]
    return box.get("result")


def test_batch_and_stream_writes_and_reads_from_another_thread(spark, kafka, tmp_path):
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)
    topic, copy = unique_topic("thread.write"), unique_topic("thread.copy")
    doc, copy_doc = tmp_path / "doc.json", tmp_path / "copy.json"
    for path, address in ((doc, topic), (copy_doc, copy)):
        path.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=address, fmt="json",
                                    key_schema={"type": "string"}))
    df = wh.frame(spark, "json", 10)  # built in the main thread

    _in_thread(lambda: wh.write(df, str(doc)))
    got = _in_thread(lambda: wh.read(spark, str(doc)).collect())
    assert sorted(r.key for r in got) == sorted(f"k{i}" for i in range(10))

    def stream_copy():  # a streaming read and a streaming write, both named in this thread
        q = (spark.readStream.format("asyncapi-kafka").option("asyncapi", str(doc)).option("channel", "orders")
             .option("startingOffsets", "earliest").load().select("key", "value", "partition")
             .writeStream.format("asyncapi-kafka").option("asyncapi", str(copy_doc)).option("channel", "orders")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None, q.exception()

    _in_thread(stream_copy)
    wh.check_read_back(wh.read(spark, str(copy_doc)), "json", 10)
