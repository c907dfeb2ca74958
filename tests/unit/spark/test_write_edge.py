"""The Spark sink is a thin edge over ``connector.write`` (no JVM): the DataFrame's ``StructType``
becomes the Arrow schema the write plans with, the task's ``WriteResult`` becomes Spark's commit
message, and an exactly-once task takes its identity from Spark's task context."""
import json
import pickle

import pytest
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from connector.errors import ConfigError
from connector.options._parse import parse_options
from connector.spark._sink import WriteCommit, task_identity
from connector.spark._write import build_write_setup
from connector.write import WriteResult
from connector.write._types import EncodingMode

ORDER = {"type": "object", "properties": {"id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
                                          "tags": {"type": "array", "items": {"type": "string"}}}}
VALUE = StructType([StructField("id", LongType()), StructField("at", TimestampType()),
                    StructField("tags", ArrayType(StringType()))])
SCHEMA = StructType([StructField("key", StringType()), StructField("value", VALUE)])


def _doc(tmp_path) -> str:
    doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "servers": {"local": {"host": "127.0.0.1:9092", "protocol": "kafka"}},
           "channels": {"orders": {"address": "orders", "messages": {"Order": {"name": "Order", "payload": ORDER}}}},
           "operations": {"op": {"action": "send", "channel": {"$ref": "#/channels/orders"}}}}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_the_dataframes_schema_reaches_the_write_as_arrow(tmp_path):
    schema = StructType(list(SCHEMA.fields) + [StructField("partition", ShortType()),
                                               StructField("headers", ArrayType(StructType([
                                                   StructField("key", StringType()),
                                                   StructField("value", BinaryType())])))])
    setup = build_write_setup(parse_options({"asyncapi": _doc(tmp_path), "channel": "orders"}, direction="write"),
                              schema)
    assert setup.value.mode is EncodingMode.ENCODE and setup.has_partition and setup.has_headers
    bad = StructType([StructField("value", VALUE), StructField("topic", LongType())])
    with pytest.raises(ConfigError, match="column 'topic' must be a string, got int64"):
        build_write_setup(parse_options({"asyncapi": _doc(tmp_path), "channel": "orders"}, direction="write"), bad)


def test_overwrite_is_refused(tmp_path):
    from connector.spark._source import AsyncApiKafkaDataSource

    ds = AsyncApiKafkaDataSource({"asyncapi": _doc(tmp_path), "channel": "orders"})
    with pytest.raises(ConfigError, match="append-only"):
        ds.writer(SCHEMA, True)
    assert ds.writer(SCHEMA, False).setup.topic == "orders"


def test_a_tasks_result_is_sparks_commit_message():
    result = WriteResult(rows=5, topics=("orders",), pid=1, replayed=2, mismatch="differs")
    commit = WriteCommit.of(result)
    assert isinstance(commit, WriterCommitMessage)
    assert pickle.loads(pickle.dumps(commit)) == WriteCommit(rows=5, topics=("orders",), pid=1, replayed=2,
                                                             mismatch="differs")


def test_an_exactly_once_task_needs_a_spark_task_context(tmp_path):
    opts = parse_options({"asyncapi": _doc(tmp_path), "channel": "orders", "deliveryGuarantee": "exactly-once",
                          "writeId": "w1"}, direction="write")
    setup = build_write_setup(opts, SCHEMA)
    with pytest.raises(ConfigError, match="outside a Spark task"):
        task_identity(setup)
