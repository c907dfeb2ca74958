"""Tombstones (a null Kafka value: the delete marker of compacted and CDC topics) and null keys.

Spark's own Kafka source gives such a record as a row with ``value = null``; so must this
source in every mode (FAILFAST does not fail, PERMISSIVE has no ``_error``, DROPMALFORMED
keeps the row), with ``valueShape=flatten`` (every value column null), for binary values
and in the column functions. Records produced on the librdkafka mock cluster.
"""
from __future__ import annotations

import datetime as dt
import io
import json

import fastavro
import pyarrow as pa
import pytest

from wireformat import encode_frame

MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]}


def _avro(schema, record) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()


def _doc(bootstrap: str, registry_url: str | None, topic: str, *, key: bool = True, payload: bool = True) -> dict:
    server = {"host": bootstrap, "protocol": "kafka"}
    kafka_msg = {}
    if registry_url:
        server["bindings"] = {"kafka": {"schemaRegistryUrl": registry_url}}
        kafka_msg = {"schemaIdLocation": "payload", "schemaIdPayloadEncoding": "confluent"}
    if key:
        kafka_msg["key"] = {"type": "long"}  # an Avro key, framed like the value
    msg = {"name": "Order"}
    if kafka_msg:
        msg["bindings"] = {"kafka": kafka_msg}
    if payload:
        msg["payload"] = {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": ORDER}
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": {"k": server},
            "channels": {"c": {"address": topic, "messages": {"m": msg}}}}


# ------------------------------------------------------------------ the pipeline alone (no JVM)
def _setup(doc: dict, mode: str, **extra):
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    return build_setup(parse_options({"asyncapi": json.dumps(doc), "channel": "c", "mode": mode, **extra}))


def _raw(rows) -> pa.RecordBatch:
    from connector.kafka import RAW_ARROW_SCHEMA

    ts = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return pa.RecordBatch.from_pylist([
        {"key": k, "value": v, "topic": "orders", "partition": 0, "offset": i, "timestamp": ts,
         "timestampType": 0, "headers": []} for i, (k, v) in enumerate(rows)], schema=RAW_ARROW_SCHEMA)


@pytest.mark.parametrize("shape", ["struct", "flatten"])
@pytest.mark.parametrize("mode", MODES)
def test_pipeline_tombstone_is_a_null_row_without_error(registry_server, mode, shape):
    vid = registry_server.register("orders-value", json.dumps(ORDER))
    kid = registry_server.register("orders-key", '"long"')
    setup = _setup(_doc("127.0.0.1:9", registry_server.url, "orders"), mode, valueShape=shape)
    good = encode_frame("confluent", vid, _avro(ORDER, {"id": 1, "note": "x"}))
    key = encode_frame("confluent", kid, _avro("long", 7))
    out = setup.pipeline.process(_raw([(key, good), (key, None), (None, None), (None, good)]),
                                 setup.lookup()).to_pylist()
    assert len(out) == 4
    assert [r["key"] for r in out] == [7, 7, None, None]
    if shape == "struct":
        assert [r["value"] for r in out] == [{"id": 1, "note": "x"}, None, None, {"id": 1, "note": "x"}]
    else:
        assert [(r["id"], r["note"]) for r in out] == [(1, "x"), (None, None), (None, None), (1, "x")]
    if mode == "PERMISSIVE":
        assert [r["_error"] for r in out] == [None] * 4 and [r["_raw_value"] for r in out] == [None] * 4


@pytest.mark.parametrize("mode", MODES)
def test_pipeline_tombstone_with_binary_values(mode):
    """No schema anywhere: values stay binary; a null value is still a row without error."""
    setup = _setup(_doc("127.0.0.1:9", None, "orders", key=False, payload=False), mode)
    out = setup.pipeline.process(_raw([(b"k", b"abc"), (b"k", None)]), setup.lookup()).to_pylist()
    assert [r["value"] for r in out] == [b"abc", None]
    if mode == "PERMISSIVE":
        assert [r["_error"] for r in out] == [None, None]


def test_pipeline_bad_record_next_to_a_tombstone_still_fails_failfast(registry_server):
    """The tombstone rule must not hide real errors: a malformed record still fails FAILFAST."""
    from connector.errors import DecodeError

    registry_server.register("orders-value", json.dumps(ORDER))
    setup = _setup(_doc("127.0.0.1:9", registry_server.url, "orders", key=False), "FAILFAST")
    with pytest.raises(DecodeError, match="offset=1"):
        setup.pipeline.process(_raw([(None, None), (None, b"\x07garbage")]), setup.lookup())


# ------------------------------------------------------------------ through Spark
@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.parametrize("mode,shape", [(m, "struct") for m in MODES] + [("FAILFAST", "flatten"),
                                                                       ("PERMISSIVE", "flatten")])
def test_datasource_tombstones_and_null_keys_per_mode(spark, kafka, registry_server, write_doc, mode, shape):
    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("tombstones")
    vid = registry_server.register(f"{topic}-value", json.dumps(ORDER))
    kid = registry_server.register(f"{topic}-key", '"long"')
    key = encode_frame("confluent", kid, _avro("long", 7))
    records = [(key, encode_frame("confluent", vid, _avro(ORDER, {"id": 0, "note": None}))),
               (key, None),            # a delete marker
               (None, None),           # no key, no value
               (None, encode_frame("confluent", vid, _avro(ORDER, {"id": 3, "note": "n"})))]
    for k, v in records:
        kafka.produce(topic, v, key=k, partition=0)
    kafka.flush()
    path = write_doc(json.dumps(_doc(kafka.bootstrap_servers, registry_server.url, topic)))
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "c")
          .option("mode", mode).option("valueShape", shape).load())
    rows = sorted(df.collect(), key=lambda r: r.offset)
    assert [r.key for r in rows] == [7, 7, None, None]
    if shape == "struct":
        assert [r.value.id if r.value else None for r in rows] == [0, None, None, 3]
    else:
        assert [(r.id, r.note) for r in rows] == [(0, None), (None, None), (None, None), (3, "n")]
    if mode == "PERMISSIVE":
        assert [r._error for r in rows] == [None] * 4 and [r._raw_value for r in rows] == [None] * 4


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE"])
def test_column_function_tombstones_per_mode(spark, registry_server, mode):
    from connector.spark.functions import from_registry

    sid = registry_server.register("orders-value", json.dumps(ORDER))
    good = encode_frame("confluent", sid, _avro(ORDER, {"id": 1, "note": None}))
    df = spark.createDataFrame([(0, good), (1, None)], "i int, value binary")
    col = from_registry("value", schema_id=sid, registry_url=registry_server.url, mode=mode,
                        with_errors=(mode == "PERMISSIVE"))
    rows = sorted(df.select("i", col.alias("v")).collect(), key=lambda r: r.i)
    if mode == "PERMISSIVE":
        assert rows[0].v.value.id == 1 and rows[1].v.value is None and rows[1].v.error is None
    else:
        assert rows[0].v.id == 1 and rows[1].v is None
