"""Sink round trips (issue 16): every payload format × framing written with ``df.write`` and read
back with the reader, row for row; what the sink writes in the Glue framing (plain and zlib) is
read by the aws-glue-schema-registry package's deserializer (confluent-kafka's deserializers:
test_write_semantics.py).

How the sink gets each schema id (the registration modes under test):

================================  =================================================================
framing                           mode
================================  =================================================================
confluent, confluent-guid,        ``auto.register.schemas=true`` against the embedded registry
header-confluent
apicurio-new, header-apicurio-    ``auto.register.schemas=true`` through Apicurio's ccompat API (its
content                           ids are content ids)
apicurio-legacy, header-apicurio- ``use.schema.id`` = the artifact version's global id (the ccompat
global                            API does not return global ids)
glue (and zlib)                   ``use.latest.version=true``: the schema is created in moto's Glue
                                  first under the topic's name (AWS serializers' naming)
================================  =================================================================
"""
from __future__ import annotations

import json

import pytest

from tests.integration.spark import matrix_helpers as mh
from tests.integration.spark import write_helpers as wh
from tests.integration.spark.helpers import unique_topic

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


def _doc(tmp_path, kafka, topic: str, fmt: str, **kw) -> str:
    path = tmp_path / f"{topic}.json"
    path.write_text(mh.make_doc(bootstrap=kafka.bootstrap_servers, address=topic, fmt=fmt,
                                key_schema={"type": "string"}, **kw))
    return str(path)


def _case(name: str, fmt: str, tmp_path, kafka, registry, request):
    """(doc path, write options, read options) of one framing."""
    topic = unique_topic(f"write.{name}.{fmt}")
    if name in ("confluent", "confluent-guid", "header-confluent"):
        location, encoding = {"confluent": ("payload", "confluent"), "confluent-guid": ("payload", "guid"),
                              "header-confluent": ("header", None)}[name]
        doc = _doc(tmp_path, kafka, topic, fmt, registry_url=registry.url, location=location, encoding=encoding)
        return topic, doc, {"auto.register.schemas": "true"}, {}
    if name.startswith("glue"):
        moto_url = request.getfixturevalue("moto_url")
        glue = request.getfixturevalue("glue_client")
        text = json.dumps(mh.DOC_SCHEMAS[fmt]) if fmt != "protobuf" else mh.ORDER_PROTO
        glue.create_schema(RegistryId={"RegistryName": mh.GLUE_REGISTRY}, SchemaName=topic,
                           DataFormat=mh.REGISTRY_TYPES[fmt], Compatibility="NONE", SchemaDefinition=text)
        doc = _doc(tmp_path, kafka, topic, fmt, registry_url=moto_url, vendor="aws-glue")
        opts = dict(mh.glue_options(moto_url), **{"use.latest.version": "true"})
        if name == "glue-zlib":
            opts["glue.compression"] = "zlib"
        return topic, doc, opts, mh.glue_options(moto_url)
    location = "header" if name.startswith("header-") else "payload"
    encoding = "apicurio-new" if name in ("apicurio-new", "header-apicurio-content") else "apicurio-legacy"
    doc = _doc(tmp_path, kafka, topic, fmt, registry_url=registry.url, vendor="apicurio", location=location,
               encoding=encoding)
    if encoding == "apicurio-new":
        return topic, doc, {"auto.register.schemas": "true"}, {}
    registry.register(f"{topic}-other", json.dumps({"type": "record", "name": "X", "fields": []}))
    registry.register(f"{topic}-value", json.dumps(mh.DOC_SCHEMAS[fmt]), mh.REGISTRY_TYPES[fmt])
    return topic, doc, {"use.schema.id": str(registry.global_id_of(f"{topic}-value", 1))}, {}


@pytest.mark.parametrize("name", mh.ALL_CASES)
def test_write_then_read_matrix(spark, kafka, registry, tmp_path, request, name):
    framing, fmt = name.rsplit("-", 1)
    _, doc, wopts, ropts = _case(framing, fmt, tmp_path, kafka, registry, request)
    wh.write(wh.frame(spark, fmt), doc, **wopts)
    wh.check_read_back(wh.read(spark, doc, includeHeaders="true", **ropts), fmt)


@pytest.mark.parametrize("compression", ["none", "zlib"])
def test_glue_deserializer_reads_what_we_write(spark, kafka, registry, tmp_path, request, compression):
    """Interop: the aws-glue-schema-registry package's KafkaDeserializer decodes our Glue framing."""
    aws = pytest.importorskip("aws_schema_registry")
    from aws_schema_registry.serde import KafkaDeserializer

    from tests.integration.spark.test_write_semantics import _consume_all

    name = "glue-zlib" if compression == "zlib" else "glue"
    topic, doc, wopts, _ = _case(name, "avro", tmp_path, kafka, registry, request)
    wh.write(wh.frame(spark, "avro", 6), doc, **wopts)
    glue = request.getfixturevalue("glue_client")
    de = KafkaDeserializer(aws.SchemaRegistryClient(glue, registry_name=mh.GLUE_REGISTRY))
    msgs = _consume_all(kafka.bootstrap_servers, topic, 6)
    assert len(msgs) == 6
    for m in msgs:
        assert m.value()[1] == (5 if compression == "zlib" else 0)
        i = int(m.key().decode()[1:])
        got = de.deserialize(topic, m.value()).data
        want = mh.record(i, "avro")
        assert {k: v for k, v in got.items() if k != "placed_at"} == \
            {k: v for k, v in want.items() if k != "placed_at"}
        assert got["placed_at"] == want["placed_at"]


def test_glue_auto_register_creates_the_schema_then_reuses_its_version(spark, kafka, tmp_path, request):
    """auto.register.schemas against Glue (moto): the schema named after the topic is created on
    the first write; an identical definition later gets the same schema version id."""
    moto_url = request.getfixturevalue("moto_url")
    glue = request.getfixturevalue("glue_client")
    topic = unique_topic("write.glue.auto")
    doc = _doc(tmp_path, kafka, topic, "avro", registry_url=moto_url, vendor="aws-glue")
    opts = dict(mh.glue_options(moto_url), **{"auto.register.schemas": "true"})
    wh.write(wh.frame(spark, "avro", 4), doc, **opts)
    wh.write(wh.frame(spark, "avro", 4, start=4), doc, **opts)
    latest = glue.get_schema_version(SchemaId={"RegistryName": mh.GLUE_REGISTRY, "SchemaName": topic},
                                     SchemaVersionNumber={"LatestVersion": True})
    assert latest["VersionNumber"] == 1  # the second write reused the version
    vid = latest["SchemaVersionId"]
    rows = wh.read(spark, doc, **mh.glue_options(moto_url)).collect()
    assert sorted(r.key for r in rows) == sorted(f"k{i}" for i in range(8))
    assert {r.schemaId for r in rows} == {vid}
