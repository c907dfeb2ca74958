"""Driver-side planning of a write (no Spark, no JVM, no broker): which operation, topic, layout is
accepted. The input's columns are an Arrow schema, as the Spark sink hands them over."""
import json
import pickle

import pyarrow as pa
import pytest

from connector.errors import ConfigError
from connector.options._parse import parse_options
from connector.write import build_write_setup
from connector.write._types import EncodingMode

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


VALUE = pa.struct([("id", pa.int64()), ("note", pa.string())])
SCHEMA = pa.schema([("key", pa.string()), ("value", VALUE)])


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
    by_column = _setup(doc, SCHEMA.append(pa.field("region", pa.string())), channel="orders")
    assert by_column.topic is None and ("param", "region") in by_column.address_parts


def test_binary_value_with_a_schema_is_refused(tmp_path):
    schema = pa.schema([("value", pa.binary())])
    with pytest.raises(ConfigError, match="binary"):
        _setup(_doc(tmp_path), schema, channel="orders")


def test_top_level_fields_form_the_message(tmp_path):
    setup = _setup(_doc(tmp_path), pa.schema([*VALUE, pa.field("partition", pa.int64())]), channel="orders")
    assert setup.value_column is None and setup.value_fields == ("id", "note") and setup.has_partition


def test_extra_field_fails_before_any_task(tmp_path):
    value = pa.struct([*VALUE, pa.field("bogus", pa.int64())])
    with pytest.raises(Exception, match="bogus"):
        _setup(_doc(tmp_path), pa.schema([("value", value)]), channel="orders")


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
