"""Driver-side planning of a write (no JVM, no broker): which operation, topic, layout is accepted."""
import json
import pickle

import pytest
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from connector.errors import ConfigError
from connector.options import parse_options
from connector.spark._write_types import EncodingMode
from connector.spark._write import build_write_setup

ORDER = {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}}


def _doc(tmp_path, *, address="orders", action="send", messages=("Order",), v2=False) -> str:
    if v2:
        doc = {"asyncapi": "2.6.0", "info": {"title": "t", "version": "1"},
               "servers": {"local": {"url": "127.0.0.1:9092", "protocol": "kafka"}},
               "channels": {address: {action: {"operationId": "op", "message": {
                   "name": "Order", "payload": ORDER}}}}}
    else:
        doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
               "servers": {"local": {"host": "127.0.0.1:9092", "protocol": "kafka"}},
               "channels": {"orders": {"address": address, "messages": {
                   m: {"name": m, "payload": ORDER} for m in messages}}},
               "operations": {"op": {"action": action, "channel": {"$ref": "#/channels/orders"}}}}
        if "{" in address:
            doc["channels"]["orders"]["parameters"] = {"region": {}}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return str(path)


VALUE = StructType([StructField("id", LongType()), StructField("note", StringType())])
SCHEMA = StructType([StructField("key", StringType()), StructField("value", VALUE)])


def _setup(doc, schema=SCHEMA, **opts):
    return build_write_setup(parse_options({"asyncapi": doc, **opts}, direction="write"), schema)


def test_send_operation_is_accepted_and_setup_pickles(tmp_path):
    setup = _setup(_doc(tmp_path), operation="op", **{"kafka.sasl.password": "hunter2"})
    assert setup.topic == "orders" and setup.value.mode is EncodingMode.ENCODE and setup.key.mode is EncodingMode.BYTES
    assert pickle.loads(pickle.dumps(setup)).topic == "orders"
    assert "hunter2" not in repr(setup)


def test_receive_operation_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="action: send"):
        _setup(_doc(tmp_path, action="receive"), operation="op")


def test_asyncapi_2_subscribe_is_a_send(tmp_path):
    assert _setup(_doc(tmp_path, action="subscribe", v2=True), operation="op").topic == "orders"
    with pytest.raises(ConfigError, match="subscribe"):
        _setup(_doc(tmp_path, action="publish", v2=True), operation="op")


def test_templated_address_needs_a_topic_source(tmp_path):
    doc = _doc(tmp_path, address="orders.{region}")
    with pytest.raises(ConfigError, match="region"):
        _setup(doc, channel="orders")
    assert _setup(doc, channel="orders", **{"channel.param.region": "eu"}).topic == "orders.eu"
    assert _setup(doc, channel="orders", topic="orders.us").topic == "orders.us"
    with pytest.raises(ConfigError, match="payments.us"):
        _setup(doc, channel="orders", topic="payments.us")
    by_column = _setup(doc, StructType(list(SCHEMA.fields) + [StructField("region", StringType())]),
                       channel="orders")
    assert by_column.topic is None and ("param", "region") in by_column.address_parts


def test_binary_value_with_a_schema_is_refused(tmp_path):
    schema = StructType([StructField("value", BinaryType())])
    with pytest.raises(ConfigError, match="binary"):
        _setup(_doc(tmp_path), schema, channel="orders")


def test_top_level_fields_form_the_message(tmp_path):
    setup = _setup(_doc(tmp_path), StructType(list(VALUE.fields) + [StructField("partition", LongType())]),
                   channel="orders")
    assert setup.value_column is None and setup.value_fields == ("id", "note") and setup.has_partition


def test_extra_field_fails_before_any_task(tmp_path):
    value = StructType(list(VALUE.fields) + [StructField("bogus", LongType())])
    with pytest.raises(Exception, match="bogus"):
        _setup(_doc(tmp_path), StructType([StructField("value", value)]), channel="orders")


def test_several_messages_need_a_choice(tmp_path):
    doc = _doc(tmp_path, messages=("A", "B"))
    with pytest.raises(ConfigError, match="message"):
        _setup(doc, channel="orders")
    assert _setup(doc, channel="orders", message="B").value.mode is EncodingMode.ENCODE


def test_registry_framing_without_registry_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="registry"):
        _setup(_doc(tmp_path), channel="orders", wireFormat="confluent")
    with pytest.raises(ConfigError, match="reading"):
        _setup(_doc(tmp_path), channel="orders", wireFormat="auto")


def test_overwrite_is_refused(tmp_path):
    from connector.spark._source import AsyncApiKafkaDataSource

    ds = AsyncApiKafkaDataSource({"asyncapi": _doc(tmp_path), "channel": "orders"})
    with pytest.raises(ConfigError, match="append-only"):
        ds.writer(SCHEMA, True)
    assert ds.writer(SCHEMA, False).setup.topic == "orders"
