"""Data contracts through Spark: records confluent-kafka's serializers encrypted (local KMS) read back
decrypted by ``format("asyncapi-kafka")`` and ``from_registry``; what ``df.write`` and
``to_registry`` write with the same rules, confluent-kafka's deserializers decrypt. The rules,
the KMS secret (``rules.secret``) and the DEKs travel to executors as the source's options do."""
from __future__ import annotations

import pytest

from tests.integration.spark.helpers import avro_doc, unique_topic
from tests.unit.contracts.contract_helpers import (
    AVRO,
    ROWS,
    SECRET,
    Fmt,
    confluent_client,
    ctx,
    encrypt_rule,
)

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


def _consume(kafka, topic, n, timeout=30.0):
    import time

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"g-{topic}", "enable.auto.commit": False})
    parts = c.list_topics(topic, timeout=10).topics[topic].partitions
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append(m.value())
    c.close()
    return out


def test_source_reads_decrypted_and_sink_writes_encrypted(spark, kafka, registry_server, write_doc):
    fmt = Fmt("avro")
    topic = unique_topic("users")
    client = confluent_client(registry_server.url)
    fmt.register(client, f"{topic}-value", [encrypt_rule()])
    ser = fmt.serializer(client)
    for r in ROWS["avro"]:
        kafka.produce(topic, ser(dict(r), ctx(topic)), partition=0)
    kafka.flush()
    path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url, address=topic,
                              schema=AVRO))
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders")
          .option("rules.secret", SECRET).load())
    rows = [r.value.asDict() for r in df.orderBy("offset").collect()]
    assert rows == ROWS["avro"]
    # peek reads through the same setup and read core, so it decrypts too
    from connector import peek

    peeked = peek(path, "orders", n=len(ROWS["avro"]), options={"rules.secret": SECRET})
    assert peeked.column("value").to_pylist() == ROWS["avro"]
    # without the secret, the read keeps the ciphertext (the rule's onFailure on read is NONE)
    blind = (spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "orders")
             .option("rules.secret", "not-the-secret").load().orderBy("offset").first().value)
    assert blind.ssn != ROWS["avro"][0]["ssn"] and blind.name == ROWS["avro"][0]["name"]

    # the sink: framed with the subject's latest schema, whose rule encrypts the tagged fields
    out_topic = unique_topic("users-out")
    client.register_schema(f"{out_topic}-value", client.get_latest_version(f"{topic}-value").schema)
    out_path = write_doc(avro_doc(bootstrap=kafka.bootstrap_servers, registry_url=registry_server.url,
                                  address=out_topic, schema=AVRO), name="out.yaml")
    (df.select("value").write.format("asyncapi-kafka").option("asyncapi", out_path).option("channel", "orders")
     .option("use.latest.version", "true").option("rules.secret", SECRET).mode("append").save())
    values = _consume(kafka, out_topic, len(ROWS["avro"]))
    assert len(values) == len(ROWS["avro"])
    assert not any(r["ssn"].encode() in v for r in ROWS["avro"] for v in values if r["ssn"])
    deser = fmt.deserializer(client)
    got = sorted((deser(v, ctx(out_topic)) for v in values), key=lambda d: d["name"])
    assert got == sorted(ROWS["avro"], key=lambda d: d["name"])


@pytest.mark.parametrize("name", ["json", "protobuf"])
def test_column_functions_decrypt_and_encrypt(spark, registry_server, name):
    from pyspark.sql.functions import col

    from connector.spark.functions import from_registry, to_registry

    fmt = Fmt(name)
    client = confluent_client(registry_server.url)
    fmt.register(client, "t-value", [encrypt_rule()])
    ser = fmt.serializer(client)
    values = [ser(fmt.obj(r), ctx("t")) for r in ROWS[name]]
    df = spark.createDataFrame([(v, "t") for v in values], "value binary, topic string")
    opts = {"rules.secret": SECRET}
    # the reader is the subject's latest; the DEK subject comes from each row's topic column
    decoded = df.select(from_registry("value", subject="t-value", registry_url=registry_server.url,
                                      options=opts, topic=col("topic")).alias("v"))
    rows = [r.v.asDict() for r in decoded.collect()]
    assert rows == [fmt.plain(fmt.obj(r)) for r in ROWS[name]]
    encoded = decoded.select(to_registry("v", subject="t-value", use_latest_version=True,
                                         registry_url=registry_server.url, options=opts, topic="t").alias("b"))
    out = [r.b for r in encoded.collect()]
    assert not any(r["ssn"].encode() in v for r, v in zip(ROWS[name], out) if r["ssn"])
    deser = fmt.deserializer(client)
    assert [fmt.plain(deser(v, ctx("t"))) for v in out] == [fmt.plain(fmt.obj(r)) for r in ROWS[name]]
