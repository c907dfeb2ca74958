"""Reads and writes through Spark against the stand-in and a real registry, Karapace 3.16 (issue 34).

Each test runs on both peers (``registry_peer``). Topics, subjects and record names are unique per
test (Karapace lives for the session). The issue's failure was the write's default mode
(``auto.register.schemas=false``) refusing a Protobuf schema Karapace holds: Karapace stores it
reprinted, and the sink compared texts; now the registry's look-up answers.
"""
from __future__ import annotations

import json

import pytest

from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark import write_helpers as wh
from tests.integration.spark.helpers import unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.karapace]


def _doc(tmp_path, kafka, peer, topic: str, fmt: str) -> str:
    path = tmp_path / f"{topic}.json"
    path.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt=fmt, registry_url=peer.url,
                                key_schema={"type": "string"}))
    return str(path)


def _ids(kafka, topic: str, n: int) -> set[int]:
    """The schema ids framing the ``n`` records of ``topic``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"g-{topic}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(mh.PARTITIONS)])
    ids: list[int] = []
    try:
        while len(ids) < n:
            batch = c.consume(n - len(ids), timeout=10)
            if not batch:
                break
            ids += [int.from_bytes(m.value()[1:5], "big") for m in batch if m.error() is None]
    finally:
        c.close()
    assert len(ids) == n
    return set(ids)


@pytest.mark.parametrize("fmt", ["protobuf", "avro", "json"])
def test_default_mode_frames_the_id_the_registry_holds(spark, kafka, registry_peer, tmp_path, fmt):
    """``auto.register.schemas=false`` (the default) with the document's schema registered: the
    records carry the registered id, and nothing is registered (the issue's Protobuf case)."""
    peer = registry_peer
    topic = unique_topic(f"peer.{fmt}")
    text = mh.ORDER_PROTO if fmt == "protobuf" else json.dumps(mh.DOC_SCHEMAS[fmt], indent=2)
    sid = peer.register(f"{topic}-value", text, mh.REGISTRY_TYPES[fmt])
    doc = _doc(tmp_path, kafka, peer, topic, fmt)
    wh.write(wh.frame(spark, fmt, 6), doc)
    assert _ids(kafka, topic, 6) == {sid}
    assert peer.versions(f"{topic}-value") == [1]
    wh.check_read_back(wh.read(spark, doc), fmt, 6)


def test_registration_modes(spark, kafka, registry_peer, tmp_path):
    """auto.register.schemas with normalize.schemas, then the default mode with it; use.latest.version;
    use.schema.id."""
    peer = registry_peer
    topic = unique_topic("peer.modes")
    subject = f"{topic}-value"
    doc = _doc(tmp_path, kafka, peer, topic, "protobuf")
    wh.write(wh.frame(spark, "protobuf", 4), doc, **{"auto.register.schemas": "true", "normalize.schemas": "true"})
    assert peer.versions(subject) == [1]
    sid = peer.get(f"/subjects/{subject}/versions/1")["id"]
    wh.write(wh.frame(spark, "protobuf", 4, start=4), doc, **{"normalize.schemas": "true"})
    assert peer.versions(subject) == [1]
    # a newer version with a field more: use.latest.version encodes with it and frames its id
    newer = mh.ORDER_PROTO.replace("optional string note = 6;", "optional string note = 6;\n  string channel = 7;")
    sid2 = peer.register(subject, newer, "PROTOBUF")
    with_channel = wh.frame(spark, "protobuf", 4, start=8).selectExpr(
        "key", "partition", "headers", "struct(value.*, 'app' as channel) as value")
    wh.write(with_channel, doc, **{"use.latest.version": "true"})
    wh.write(wh.frame(spark, "protobuf", 4, start=12), doc, **{"use.schema.id": str(sid)})
    assert _ids(kafka, topic, 16) == {sid, sid2}
    rows = wh.read(spark, doc).collect()  # each record by its writer's schema
    assert sorted(r.value.id for r in rows) == list(range(16))


def test_incompatible_registration_is_refused_before_writing(spark, kafka, registry_peer, tmp_path):
    peer = registry_peer
    topic = unique_topic("peer.incompatible")
    subject = f"{topic}-value"
    peer.set_compatibility("BACKWARD", subject)
    renamed = dict(mh.ORDER_AVRO, fields=[{"name": "ref", "type": "string"}])
    peer.register(subject, json.dumps(renamed))
    doc = _doc(tmp_path, kafka, peer, topic, "avro")
    with pytest.raises(Exception) as info:
        wh.write(wh.frame(spark, "avro", 3), doc, **{"auto.register.schemas": "true"})
    text = str(info.value)
    assert "IncompatibleSchemaError" in text and subject in text and "409" in text
    assert peer.versions(subject) == [1]
    assert topic not in kafka._producer.list_topics(timeout=10).topics


def test_each_subject_strategy_names_the_subject_of_a_write(spark, kafka, registry_peer, tmp_path):
    peer = registry_peer
    ns = f"shop.t{peer.token}"
    schema = dict(mh.ORDER_AVRO, namespace=ns)
    for strategy, subject in (("TopicNameStrategy", "{topic}-value"), ("RecordNameStrategy", f"{ns}.Order"),
                              ("TopicRecordNameStrategy", f"{{topic}}-{ns}.Order")):
        topic = unique_topic("peer.strategy")
        doc = json.loads(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt="avro",
                                     registry_url=peer.url, key_schema={"type": "string"}))
        doc["components"]["messages"]["Order"]["payload"]["schema"] = schema
        path = tmp_path / f"{topic}.json"
        path.write_text(json.dumps(doc))
        wh.write(wh.frame(spark, "avro", 2), str(path), **{"auto.register.schemas": "true",
                                                           "schema.subject.strategy": strategy})
        registered = peer.get(f"/subjects/{subject.format(topic=topic)}/versions/latest")
        assert _ids(kafka, topic, 2) == {registered["id"]}, strategy
        wh.check_read_back(wh.read(spark, str(path)), "avro", 2)


def test_reads_latest_and_pinned(spark, kafka, registry_peer, tmp_path):
    """Records of two versions: the latest version is the reader when the document has no payload
    schema; a reader pinned by subject version or by id wins."""
    import io

    import fastavro

    from wireformat import encode_frame

    peer = registry_peer
    topic = unique_topic("peer.read")
    v1 = {"type": "record", "name": "Order", "namespace": f"shop.t{peer.token}",
          "fields": [{"name": "id", "type": "long"}]}
    v2 = dict(v1, fields=[*v1["fields"], {"name": "channel", "type": "string", "default": "web"}])
    id1, id2 = peer.register(f"{topic}-value", json.dumps(v1)), peer.register(f"{topic}-value", json.dumps(v2))
    for i in range(4):
        schema, rec = (v1, {"id": i}) if i % 2 else (v2, {"id": i, "channel": "app"})
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), rec)
        kafka.produce(topic, encode_frame("confluent", id1 if i % 2 else id2, buf.getvalue()), partition=0)
    kafka.flush()
    doc = _doc(tmp_path, kafka, peer, topic, None)
    latest = wh.read(spark, doc).collect()
    assert sorted((r.value.id, r.value.channel) for r in latest) == [(0, "app"), (1, "web"), (2, "app"), (3, "web")]
    pinned = wh.read(spark, doc, **{"schema.subject": f"{topic}-value", "schema.version": "1"})
    assert pinned.schema["value"].dataType.simpleString() == "struct<id:bigint>"
    assert sorted(r.value.id for r in pinned.collect()) == [0, 1, 2, 3]
    by_id = wh.read(spark, doc, **{"schema.id": str(id2)})
    assert sorted(r.value.channel for r in by_id.collect()) == ["app", "app", "web", "web"]


def test_protobuf_with_imports_registered_as_references(spark, kafka, registry_peer, tmp_path):
    """A .proto that imports another, registered with a reference (as confluent-kafka's serializer
    registers imports): the sink writes with it (use.latest.version), the source reads it back, and
    ``to_registry`` in the default mode finds it by the registry's look-up."""
    from pyspark.sql.functions import struct

    from connector.spark.functions import from_registry, to_registry

    peer = registry_peer
    topic = unique_topic("peer.imports")
    pkg = f"shop.t{peer.token}"
    money_path = f"t{peer.token}/money.proto"
    money = f'syntax = "proto3";\npackage {pkg};\nmessage Money {{ int64 minor = 1; string currency = 2; }}\n'
    order = (f'syntax = "proto3";\npackage {pkg};\nimport "{money_path}";\n'
             f"message Order {{ int64 id = 1; {pkg}.Money total = 2; }}\n")
    peer.register(money_path, money, "PROTOBUF")
    sid = peer.register(f"{topic}-value", order, "PROTOBUF", [(money_path, money_path, 1)])
    doc = _doc(tmp_path, kafka, peer, topic, None)
    df = spark.createDataFrame([(f"k{i}", (i, (100 * i, "EUR"))) for i in range(5)],
                               "key string, value struct<id: bigint, total: struct<minor: bigint, currency: string>>")
    wh.write(df, doc, **{"use.latest.version": "true"})
    assert _ids(kafka, topic, 5) == {sid}
    rows = wh.read(spark, doc).collect()
    assert sorted((r.value.id, r.value.total.minor, r.value.total.currency) for r in rows) == \
        [(i, 100 * i, "EUR") for i in range(5)]
    enc = df.select(to_registry(struct("value.id", "value.total"), subject=f"{topic}-value", use_latest_version=True,
                                registry_url=peer.url).alias("v"))
    back = enc.select(from_registry("v", subject=f"{topic}-value", registry_url=peer.url).alias("r")).collect()
    assert sorted(r.r.total.minor for r in back) == [0, 100, 200, 300, 400]


def test_to_registry_default_mode_finds_the_registered_protobuf(spark, registry_peer):
    from pyspark.sql.functions import struct

    from connector.spark.functions import from_registry, to_registry

    peer = registry_peer
    subject = peer.unique("payments-value")
    proto = (f'syntax = "proto3";\npackage p{peer.token};\n'
             "message Payment {\n  message Line { string sku = 1; }\n  int64 id = 1;\n  repeated Line lines = 2;\n}\n")
    sid = peer.register(subject, proto, "PROTOBUF")
    df = spark.createDataFrame([(i, [(f"s{i}",)]) for i in range(3)], "id long, lines array<struct<sku: string>>")
    enc = df.select(to_registry(struct("id", "lines"), schema=proto, format="protobuf", subject=subject,
                                registry_url=peer.url).alias("v"))
    values = [r.v for r in enc.collect()]
    assert {int.from_bytes(v[1:5], "big") for v in values} == {sid}
    back = enc.select(from_registry("v", subject=subject, registry_url=peer.url).alias("r")).collect()
    assert sorted((r.r.id, r.r.lines[0].sku) for r in back) == [(i, f"s{i}") for i in range(3)]
    assert peer.versions(subject) == [1]
