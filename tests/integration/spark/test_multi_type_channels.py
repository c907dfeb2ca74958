"""Several message types on one channel without schema ids (issue 37), on every path: the batch and
stream reads, the batch and stream writes, ``from_registry`` — against the librdkafka mock cluster,
with the raw records read by plain confluent-kafka as the reference.

The channel ``mixed.{run}`` carries two JSON messages whose headers schemas fix Spring's
``__TypeId__``; framing ``none`` (no registry)."""
from __future__ import annotations

import json

import pytest

from tests.integration.raw_records import raw_records
from tests.integration.spark.helpers import unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

A = {"type": "object", "title": "A", "properties": {"foo": {"type": "string"}}}
B = {"type": "object", "title": "B", "properties": {"foo": {"type": "integer"}, "bar": {"type": "boolean"}}}
VALUE = "value struct<A: struct<foo: string>, B: struct<foo: bigint, bar: boolean>>"
HEADERS = "headers array<struct<key: string, value: binary>>"


def _doc(tmp_path, kafka) -> str:
    def message(name, schema):
        return {"name": name, "payload": schema, "headers": {"type": "object", "properties": {
            "__TypeId__": {"type": "string", "const": f"com.acme.{name}"}}}}
    doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "servers": {"local": {"host": kafka.bootstrap_servers, "protocol": "kafka"}},
           "channels": {"mixed": {"address": "mixed.{run}", "parameters": {"run": {}},
                                  "messages": {"A": message("A", A), "B": message("B", B)}}}}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _source(spark):
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)


def _raw(kafka, topic: str) -> dict:
    """(key) -> (value bytes, headers) of every record, read by confluent-kafka itself."""
    return {m.key().decode(): (m.value(), m.headers() or []) for m in raw_records(kafka.bootstrap_servers, topic)}


ROWS = [("k0", {"A": {"foo": "x"}, "B": None}), ("k1", {"A": None, "B": {"foo": 7, "bar": True}}),
        ("k2", {"A": {"foo": "y"}, "B": None}), ("k3", {"A": None, "B": {"foo": -1, "bar": None}})]


def _frame(spark, rows=ROWS, trace=True):
    data = [(k, v, [("trace", f"t-{k}".encode())] if trace else None) for k, v in rows]
    return spark.createDataFrame(data, f"key string, {VALUE}, {HEADERS}")


def _write(df, doc, run, **options):
    w = df.write.format("asyncapi-kafka").mode("append").option("asyncapi", doc).option("channel", "mixed") \
        .option("channel.param.run", run)
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def _read(spark, doc, run, **options):
    r = spark.read.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "mixed") \
        .option("channel.param.run", run).option("mode", "PERMISSIVE")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_a_write_of_several_messages_reads_back_as_written_with_the_spring_type_header(spark, kafka, tmp_path):
    _source(spark)
    doc, run = _doc(tmp_path, kafka), unique_topic("w")
    _write(_frame(spark), doc, run)
    raw = _raw(kafka, f"mixed.{run}")
    # what a Spring consumer reads: its own header, then __TypeId__ naming the class of the payload
    for key, value in ROWS:
        body, headers = raw[key]
        name = "A" if value["A"] is not None else "B"
        assert headers == [("trace", f"t-{key}".encode()), ("__TypeId__", f"com.acme.{name}".encode())]
        assert {k: v for k, v in json.loads(body).items() if v is not None} == \
            {k: v for k, v in value[name].items() if v is not None}
    got = {bytes(r.key).decode(): r for r in _read(spark, doc, run, includeHeaders="true").collect()}
    assert {k: got[k].value.asDict(recursive=True) for k in got} == dict(ROWS)
    assert all(r._error is None for r in got.values())

    # written back as a read gives it (headers included): the same records, the type header once
    again = unique_topic("w2")
    _write(_read(spark, doc, run, includeHeaders="true").select("key", "value", "headers"), doc, again)
    raw2 = _raw(kafka, f"mixed.{again}")
    assert {k: (v, sorted(h)) for k, (v, h) in raw2.items()} == {k: (v, sorted(h)) for k, (v, h) in raw.items()}


def test_a_write_with_the_message_option_puts_that_message_type_header(spark, kafka, tmp_path):
    _source(spark)
    doc, run = _doc(tmp_path, kafka), unique_topic("one")
    df = spark.createDataFrame([("k0", {"foo": 3, "bar": False})], "key string, value struct<foo: bigint, bar: boolean>")
    _write(df, doc, run, message="B")
    assert _raw(kafka, f"mixed.{run}")["k0"][1] == [("__TypeId__", b"com.acme.B")]
    row = _read(spark, doc, run).collect()[0]
    assert row.value.asDict(recursive=True) == {"A": None, "B": {"foo": 3, "bar": False}} and row._error is None


def test_rows_that_do_not_say_one_message_or_contradict_their_type_header_fail_the_write(spark, kafka, tmp_path):
    from pyspark.errors import PythonException

    _source(spark)
    doc = _doc(tmp_path, kafka)
    both = [("k0", {"A": {"foo": "x"}, "B": {"foo": 1, "bar": None}})]
    with pytest.raises(PythonException, match=r"set no message field or several.*row 0 .* sets \['A', 'B'\]"):
        _write(_frame(spark, both), doc, unique_topic("bad"))
    lying = spark.createDataFrame([("k0", {"A": {"foo": "x"}, "B": None}, [("__TypeId__", b"com.acme.B")])],
                                  f"key string, {VALUE}, {HEADERS}")
    with pytest.raises(PythonException, match="holds __TypeId__=b'com.acme.B', but the record is written as the "
                                              "message whose __TypeId__ is b'com.acme.A'"):
        _write(lying, doc, unique_topic("bad"))


def test_records_of_plain_producers_are_routed_by_header_or_validation_on_batch_and_stream_reads(
        spark, kafka, tmp_path):
    """What plain producers wrote (headers or none, unknown types, a record both schemas accept):
    each comes out as its own type or as a row error, on the batch and the stream read alike."""
    _source(spark)
    doc, run = _doc(tmp_path, kafka), unique_topic("plain")
    topic = f"mixed.{run}"
    records = [("h-A", {"foo": "x"}, [("__TypeId__", b"com.acme.A")]),
               ("h-B", {"foo": 5}, [("__TypeId__", b"com.acme.B")]),
               ("h-lie", {"foo": 5}, [("__TypeId__", b"com.acme.A")]),  # B's payload under A's header
               ("h-unknown", {"foo": "x"}, [("__TypeId__", b"com.acme.Refund")]),
               ("v-A", {"foo": "only a string fits A"}, None),
               ("v-B", {"foo": 9, "bar": True}, None),
               ("v-both", {}, None),
               ("v-none", {"foo": [1]}, None)]
    for key, value, headers in records:
        kafka.produce(topic, json.dumps(value).encode(), key=key.encode(), headers=headers)
    kafka.flush()
    expect = {"h-A": ("A", None), "h-B": ("B", None), "h-lie": (None, "row error"),
              "h-unknown": (None, "names none of the channel's messages"), "v-A": ("A", None), "v-B": ("B", None),
              "v-both": (None, "fits several of the channel's messages ['A', 'B']"),
              "v-none": (None, "fits none of the channel's messages ['A', 'B']")}

    def check(rows):
        got = {bytes(r.key).decode(): r for r in rows}
        assert sorted(got) == sorted(expect)
        for key, (field, error) in expect.items():
            r = got[key]
            filled = [k for k, v in (r.value.asDict() if r.value else {}).items() if v is not None]
            assert filled == ([field] if field else []), (key, r)
            assert (r._error is None) == (error is None), (key, r._error)
            if error and error != "row error":
                assert error in r._error, (key, r._error)

    check(_read(spark, doc, run).collect())

    # one message of the two: records A's header names are row errors, not B rows
    only_b = {bytes(r.key).decode(): r for r in _read(spark, doc, run, message="B").collect()}
    assert only_b["h-B"].value.asDict() == {"foo": 5, "bar": None} and only_b["h-B"]._error is None
    assert only_b["h-A"].value is None and "this read keeps B (option 'message')" in only_b["h-A"]._error
    assert only_b["v-B"].value.asDict() == {"foo": 9, "bar": True}

    batches: list = []
    q = (spark.readStream.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "mixed")
         .option("channel.param.run", run).option("mode", "PERMISSIVE").option("startingOffsets", "earliest")
         .load().writeStream.foreachBatch(lambda df, _: batches.extend(df.collect()))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    check(batches)


def test_a_stream_write_of_several_messages(spark, kafka, tmp_path):
    _source(spark)
    doc, run = _doc(tmp_path, kafka), unique_topic("sw")
    src = tmp_path / "src"
    src.mkdir()
    (src / "rows.json").write_text("\n".join(json.dumps({"key": k, "value": v}) for k, v in ROWS) + "\n")
    q = (spark.readStream.schema(f"key string, {VALUE}").json(str(src)).writeStream.format("asyncapi-kafka")
         .option("asyncapi", doc).option("channel", "mixed").option("channel.param.run", run)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    raw = _raw(kafka, f"mixed.{run}")
    assert {k: h for k, (_, h) in raw.items()} == {
        k: [("__TypeId__", f"com.acme.{'A' if v['A'] is not None else 'B'}".encode())] for k, v in ROWS}
    assert {bytes(r.key).decode(): r.value.asDict(recursive=True) for r in _read(spark, doc, run).collect()} == \
        dict(ROWS)


def test_from_registry_decodes_a_channel_of_several_messages_with_its_headers(spark, kafka, tmp_path):
    from pyspark.errors import PythonException

    from connector.errors import ConfigError
    from connector.spark.functions import from_registry

    doc = _doc(tmp_path, kafka)
    df = spark.createDataFrame([(json.dumps({"foo": 4}).encode(), [("__TypeId__", b"com.acme.B")]),
                                (json.dumps({"foo": "s"}).encode(), [("__TypeId__", b"com.acme.A")]),
                                (json.dumps({"foo": "s"}).encode(), [("__TypeId__", b"com.acme.B")])],
                               f"value binary, {HEADERS}")
    out = df.select(from_registry("value", asyncapi=doc, channel="mixed", headers="headers",
                                  with_errors=True).alias("r")).collect()
    assert out[0].r.value.asDict(recursive=True) == {"A": None, "B": {"foo": 4, "bar": None}}
    assert out[1].r.value.asDict(recursive=True) == {"A": {"foo": "s"}, "B": None}
    assert out[2].r.value is None and out[2].r.error is not None
    with pytest.raises(ConfigError, match="pass headers="):
        from_registry("value", asyncapi=doc, channel="mixed")
    with pytest.raises(PythonException, match=r"malformed record at row .*\$\.foo.* is not of type 'integer'"):
        df.select(from_registry("value", asyncapi=doc, channel="mixed", headers="headers")).collect()


def test_avro_messages_no_header_tells_apart_are_refused_at_load(spark, kafka, tmp_path):
    """Without schema ids a binary payload cannot be tried: load() fails with the document path."""
    from connector.errors import AsyncApiDocumentError
    from connector.read import peek

    _source(spark)
    avro = "application/vnd.apache.avro+json;version=1.9.0"
    doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "servers": {"local": {"host": kafka.bootstrap_servers, "protocol": "kafka"}},
           "channels": {"mixed": {"address": unique_topic("avro"), "messages": {
               name: {"name": name, "payload": {"schemaFormat": avro, "schema": {
                   "type": "record", "name": name, "fields": [{"name": "x", "type": "long"}]}}}
               for name in ("A", "B")}}}}
    path = tmp_path / "avro.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(Exception, match=r"carries 2 avro messages .* no header the document names tells "
                                        r"\['A', 'B'\] apart") as e:
        spark.read.format("asyncapi-kafka").option("asyncapi", str(path)).option("channel", "mixed").load()
    assert "channels.mixed.messages.A.headers" in str(e.value)
    with pytest.raises(AsyncApiDocumentError, match="cannot be told apart by trying the schemas"):
        peek(str(path), "mixed")
