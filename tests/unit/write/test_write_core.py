"""The sink's core without Spark (issue 36, item 3): ``connector.write`` plans a write from an Arrow
schema, checks the input layout on Arrow types, and a task's ``write_batches`` produces Arrow batches
to a real Kafka peer (the librdkafka mock cluster), read back without Spark by ``connector.read.peek``."""
from __future__ import annotations

import json
import pickle
import uuid

import pyarrow as pa
import pytest

from connector.errors import ConfigError
from connector.options._parse import parse_options
from connector.write import EncodedBatch, WriteResult, build_write_setup, encode_batch, write_batches
from connector.write._types import EncodingMode

ORDER = {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
         "required": ["id"]}
KEY = {"type": "object", "properties": {"k": {"type": "integer"}}}
VALUE = pa.struct([("id", pa.int64()), ("note", pa.string())])
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _doc(bootstrap: str = "127.0.0.1:9092", *, address: str = "orders", key: bool = False,
         messages=("Order",)) -> str:
    bindings = {"bindings": {"kafka": {"key": KEY}}} if key else {}
    return json.dumps({
        "asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
        "servers": {"local": {"host": bootstrap, "protocol": "kafka"}},
        "channels": {"orders": {"address": address, "messages": {
            m: {"name": m, "payload": ORDER, **bindings} for m in messages}}},
        "operations": {"op": {"action": "send", "channel": {"$ref": "#/channels/orders"}}}})


def _setup(schema: pa.Schema, doc: str | None = None, **opts):
    return build_write_setup(parse_options({"asyncapi": doc or _doc(), "channel": "orders", **opts},
                                           direction="write"), schema)


# -- the input layout, checked on Arrow types ------------------------------------------------------------
@pytest.mark.parametrize("schema, fragment", [
    (pa.schema([("value", VALUE), ("topic", pa.int64())]), "column 'topic' must be a string, got int64"),
    (pa.schema([("value", VALUE), ("partition", pa.string())]), "column 'partition' must be an integer, got string"),
    (pa.schema([("value", VALUE), ("partition", pa.int8())]), "column 'partition' must be an integer"),
    (pa.schema([("value", VALUE), ("headers", pa.list_(pa.struct([("k", pa.string()), ("v", pa.binary())])))]),
     "column 'headers' must be array<struct<key: string, value: binary>>"),
    (pa.schema([("value", VALUE), ("headers", pa.map_(pa.string(), pa.binary()))]), "column 'headers' must be"),
    (pa.schema([("key", pa.struct([("k", pa.int64())])), ("value", VALUE)]), "declare no key schema"),
    (pa.schema([("value", pa.binary())]), "column 'value' is binary, but the channel's message has a schema"),
    (pa.schema([("key", pa.string())]), "no 'value' column and no other columns"),
])
def test_the_layout_is_checked_on_arrow_types(schema, fragment):
    with pytest.raises(ConfigError) as e:
        _setup(schema)
    assert fragment in str(e.value)


@pytest.mark.parametrize("partition", [pa.int16(), pa.int32(), pa.int64()])
def test_accepted_layouts(partition):
    setup = _setup(pa.schema([("key", pa.large_binary()), ("value", VALUE), ("partition", partition),
                              ("headers", pa.large_list(pa.struct([("key", pa.large_string()),
                                                                   ("value", pa.string())])))]))
    assert setup.key.mode is EncodingMode.BYTES and setup.value.mode is EncodingMode.ENCODE
    assert setup.has_partition and setup.has_headers


def test_a_key_of_the_documents_key_schema_is_encoded_and_checked():
    doc = _doc(key=True)
    setup = _setup(pa.schema([("key", pa.struct([("k", pa.int64())])), ("value", VALUE)]), doc)
    assert setup.key.mode is EncodingMode.ENCODE
    with pytest.raises(Exception, match="column 'key' lacks field"):
        _setup(pa.schema([("key", pa.struct([("bogus", pa.int64())])), ("value", VALUE)]), doc)


def test_a_struct_of_the_channels_messages_is_a_write_of_several_messages():
    doc = _doc(messages=("A", "B"))
    setup = _setup(pa.schema([("value", pa.struct([("A", VALUE), ("B", VALUE)]))]), doc)
    assert setup.value.mode is EncodingMode.MESSAGES and [n for n, _ in setup.value.writers] == ["A", "B"]
    with pytest.raises(Exception, match="value.B"):
        _setup(pa.schema([("value", pa.struct([("A", VALUE), ("B", pa.struct([("x", pa.int8())]))]))]), doc)


# -- one check of glue.compression, one message, for the sink and to_registry -------------------------
def test_glue_compression_is_checked_once_with_one_message():
    from connector.options import parse_arguments

    with pytest.raises(ConfigError) as sink:
        _setup(pa.schema([("value", VALUE)]), **{"glue.compression": "zlib"})
    from connector.options import glue_compression

    with pytest.raises(ConfigError) as fn:
        opts = parse_arguments("to_registry", {"compression": "zlib"})
        glue_compression(opts, opts.wire_format)
    assert str(sink.value) == ("option 'glue.compression' applies to the glue framing only; this write's framing "
                               "is none")
    assert str(fn.value) == ("to_registry(compression=...) applies to the glue framing only; this write's framing "
                             "is confluent")


# -- the per-batch core and a task's write, against a real Kafka peer --------------------------------------
def test_encode_batch_names_its_parts():
    setup = _setup(pa.schema([("key", pa.string()), ("value", VALUE), ("partition", pa.int32())]))
    batch = pa.record_batch([pa.array(["a", "b"]), pa.array([{"id": 1, "note": "x"}, {"id": 2, "note": None}], VALUE),
                             pa.array([None, 3], pa.int32())], names=["key", "value", "partition"])
    out = encode_batch(setup, batch)
    assert isinstance(out, EncodedBatch) and out.topics == "orders" and out.rows == 2
    assert [json.loads(v) for v in out.values.to_pylist()] == [{"id": 1, "note": "x"}, {"id": 2}]
    assert out.keys.to_pylist() == [b"a", b"b"] and out.partitions.to_pylist() == [-1, 3]
    assert out.topic_names() == ["orders"] and out.headers is None


@pytest.mark.kafka
def test_a_task_writes_arrow_batches_without_spark_and_peek_reads_them_back(kafka):
    from connector.read import peek

    topic = f"wcore-{uuid.uuid4().hex[:8]}"
    doc = _doc(kafka.bootstrap_servers, address=topic)
    schema = pa.schema([("key", pa.string()), ("value", VALUE), ("headers", HEADERS), ("partition", pa.int32())])
    setup = _setup(schema, doc)
    setup = pickle.loads(pickle.dumps(setup))  # as it reaches an executor
    n = 120

    def batches():
        for start in range(0, n, 50):
            ids = range(start, min(start + 50, n))
            yield pa.record_batch([
                pa.array([f"k{i}" for i in ids]),
                pa.array([{"id": i, "note": None if i % 3 else f"n{i}"} for i in ids], VALUE),
                pa.array([[{"key": "trace", "value": f"t{i}".encode()}] for i in ids], HEADERS),
                pa.array([i % 2 for i in ids], pa.int32())], schema=schema)
        yield pa.record_batch([pa.array([], t) for t in schema.types], schema=schema)  # an empty batch is skipped

    result = write_batches(setup, batches())
    assert isinstance(result, WriteResult) and result.rows == n and result.topics == (topic,)
    back = peek(doc, "orders", n=n + 10, options={"includeHeaders": "true"}).to_pylist()
    assert len(back) == n
    by_key = {bytes(r["key"]).decode(): r for r in back}
    for i in range(n):
        r = by_key[f"k{i}"]
        assert r["value"] == {"id": i, "note": None if i % 3 else f"n{i}"}
        assert r["partition"] == i % 2 and [(h["key"], h["value"]) for h in r["headers"]] == [("trace", f"t{i}".encode())]


def test_a_row_the_schema_cannot_hold_fails_the_batch_naming_it():
    from connector.formats import EncodeError

    setup = _setup(pa.schema([("value", VALUE)]))
    batch = pa.record_batch([pa.array([{"id": 1, "note": "x"}, {"id": None, "note": "y"}], VALUE)], names=["value"])
    with pytest.raises(EncodeError, match="row 1 \\(topic 'orders'\\)"):
        encode_batch(setup, batch)
