"""``schema.message``: the Protobuf reader message when the registry's ``.proto`` declares
several top-level messages (issue 14). Without it the read fails at ``load()`` naming the
messages and the option; with it, records written as that message (message index ``[1]``)
decode and records written as another one are row errors."""
from __future__ import annotations

import pytest
from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark.helpers import unique_topic

TWO = """\
syntax = "proto3";
package shop;
message Order { int64 id = 1; string customer = 2; }
message Refund { int64 order_id = 1; string reason = 2; double amount = 3; }
"""


@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


def _read(spark, doc, **options):
    reader = spark.read.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "orders")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_schema_message_chooses_the_reader(spark, kafka, registry, tmp_path):
    from wireformat import encode_frame, encode_protobuf_indexes

    from connector.formats.protobuf._schema import compile_proto

    topic = unique_topic("refunds")
    kafka.create_topic(topic)
    sid = registry.register(f"{topic}-value", TWO, "PROTOBUF")
    compiled = compile_proto(TWO)
    refund = compiled.message_class(compiled.find("shop.Refund"))
    order = compiled.message_class(compiled.find("shop.Order"))
    for i in range(6):
        payload = encode_protobuf_indexes([1]) + refund(order_id=i, reason=f"r{i}", amount=i / 2).SerializeToString()
        kafka.produce(topic, encode_frame("confluent", sid, payload), key=f"k{i}".encode(), partition=i % 2)
    bad = encode_protobuf_indexes([0]) + order(id=99, customer="c").SerializeToString()
    kafka.produce(topic, encode_frame("confluent", sid, bad), key=b"k6", partition=0)
    kafka.flush()
    doc = tmp_path / "refunds.json"
    doc.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt=None,
                               registry_url=registry.url))

    with pytest.raises(Exception, match=r"several messages \(shop.Order, shop.Refund\).*schema.message"):
        _read(spark, str(doc))
    with pytest.raises(Exception, match="shop.Nope"):
        _read(spark, str(doc), **{"schema.message": "shop.Nope"})

    df = _read(spark, str(doc), **{"schema.message": "shop.Refund", "mode": "PERMISSIVE"})
    assert df.schema["value"].dataType.simpleString() == "struct<order_id:bigint,reason:string,amount:double>"
    rows = sorted(df.collect(), key=lambda r: r.key)
    assert [r.value.asDict() if r.value else None for r in rows] == \
        [{"order_id": i, "reason": f"r{i}", "amount": i / 2} for i in range(6)] + [None]
    assert all(r._error is None for r in rows[:6])
    assert "shop.Order does not match the reader's shop.Refund" in rows[6]._error
