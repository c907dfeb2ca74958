"""The Protobuf message of a multi-message ``.proto`` is chosen the same way on every path (issue 22):
the sink and ``to_registry`` write the message ``schema.message`` / ``message=`` names (before, a
write could only fail "declares several messages"), confluent-kafka's ``ProtobufDeserializer`` reads
it back, and a read without ``schema.message`` picks the message every record's index names."""
from __future__ import annotations

import json

import pytest

from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark.helpers import unique_topic
from tests.integration.spark.test_write_semantics import _consume_all

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

TWO = """\
syntax = "proto3";
package shop;
message Order { int64 id = 1; string customer = 2; }
message Refund { int64 order_id = 1; string reason = 2; double amount = 3; }
"""
N = 12


@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


def _doc(tmp_path, kafka, registry, topic: str) -> str:
    doc = json.loads(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt="protobuf",
                                 registry_url=registry.url))
    msg = doc["components"]["messages"]["Order"]
    msg["payload"]["schema"] = TWO
    msg["name"] = "Event"  # a message name that is no .proto message: the document names none
    doc["operations"]["sendOrders"] = {"action": "send", "channel": {"$ref": "#/channels/orders"}}
    path = tmp_path / f"{topic}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _refunds(spark):
    return spark.createDataFrame([(f"k{i}", (i, f"r{i}", i / 2)) for i in range(N)],
                                 "key string, value struct<order_id: bigint, reason: string, amount: double>")


def _read(spark, doc, **options):
    r = spark.read.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "orders")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_sink_writes_the_second_message_and_a_read_infers_it(spark, kafka, registry, tmp_path):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from connector.formats.protobuf import compile_proto

    topic = unique_topic("refund.write")
    doc = _doc(tmp_path, kafka, registry, topic)
    (_refunds(spark).write.format("asyncapi-kafka").mode("append").option("asyncapi", doc)
     .option("channel", "orders").option("schema.message", "shop.Refund")
     .option("auto.register.schemas", "true").save())

    # confluent-kafka's own deserializer reads every record as shop.Refund
    compiled = compile_proto(TWO)
    refund = compiled.message_class(compiled.find("shop.Refund"))
    de = ProtobufDeserializer(refund, {"use.deprecated.format": False})
    msgs = _consume_all(kafka.bootstrap_servers, topic, N)
    assert len(msgs) == N
    for m in msgs:
        i = int(m.key().decode()[1:])
        assert m.value()[5] == 2 and m.value()[6] == 2  # message indexes [1]: count 1, index 1 (zigzag)
        got = de(m.value(), SerializationContext(topic, MessageField.VALUE))
        assert (got.order_id, got.reason, got.amount) == (i, f"r{i}", i / 2)

    want = sorted((f"k{i}", {"order_id": i, "reason": f"r{i}", "amount": i / 2}) for i in range(N))
    # our reader, told the message ...
    told = _read(spark, doc, **{"schema.message": "shop.Refund"}).collect()
    assert sorted((r.key.decode(), r.value.asDict()) for r in told) == want
    # ... and not told: every record's index path names shop.Refund, so that message is read
    inferred = _read(spark, doc)
    assert inferred.schema["value"].dataType.simpleString() == "struct<order_id:bigint,reason:string,amount:double>"
    assert sorted((r.key.decode(), r.value.asDict()) for r in inferred.collect()) == want
    # the stream path resolves it the same way
    out = tmp_path / "refunds_stream"
    q = (spark.readStream.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "orders")
         .option("startingOffsets", "earliest").load().select("key", "value")
         .writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None
    streamed = spark.read.parquet(str(out)).collect()
    assert sorted((r.key.decode(), r.value.asDict()) for r in streamed) == want


def test_mixed_message_indexes_are_not_guessed(spark, kafka, registry, tmp_path):
    """Records of both messages on one topic: nothing to infer, load() names the messages and the option."""
    from wireformat import encode_frame, encode_protobuf_indexes

    from connector.formats.protobuf import compile_proto

    topic = unique_topic("refund.mixed")
    doc = _doc(tmp_path, kafka, registry, topic)
    kafka.create_topic(topic)
    sid = registry.register(f"{topic}-value", TWO, "PROTOBUF")
    compiled = compile_proto(TWO)
    order = compiled.message_class(compiled.find("shop.Order"))
    refund = compiled.message_class(compiled.find("shop.Refund"))
    kafka.produce(topic, encode_frame("confluent", sid, encode_protobuf_indexes([0]) + order(id=1).SerializeToString()))
    kafka.produce(topic, encode_frame("confluent", sid, encode_protobuf_indexes([1]) +
                                      refund(order_id=1).SerializeToString()))
    kafka.flush()
    with pytest.raises(Exception, match=r"several messages \(shop.Order, shop.Refund\); the sampled records "
                                        r"carry the index paths \[\[0\], \[1\]\].*schema.message"):
        _read(spark, doc).schema


def test_column_functions_write_and_read_the_named_message(spark, registry):
    from connector.spark.functions import from_registry, to_registry

    subject = unique_topic("refund.fn") + "-value"
    df = _refunds(spark)
    framed = df.select("key", to_registry("value", schema=TWO, format="protobuf", message="shop.Refund",
                                          subject=subject, auto_register=True,
                                          registry_url=registry.url).alias("bytes"))
    assert {bytes(r.bytes)[5:7] for r in framed.collect()} == {b"\x02\x02"}  # message index [1]
    back = framed.select("key", from_registry("bytes", schema=TWO, format="protobuf", message="shop.Refund",
                                              registry_url=registry.url).alias("v"))
    assert sorted((r.key, r.v.asDict()) for r in back.collect()) == \
        sorted((f"k{i}", {"order_id": i, "reason": f"r{i}", "amount": i / 2}) for i in range(N))
    with pytest.raises(Exception, match=r"several messages \(shop.Order, shop.Refund\).*message="):
        framed.select(from_registry("bytes", schema=TWO, format="protobuf", registry_url=registry.url))
