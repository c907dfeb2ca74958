"""``to_registry`` → ``from_registry`` round trips through Spark, registration modes, row errors."""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json

import fastavro
import pyarrow as pa
import pytest

from connector.spark.functions import from_registry, to_registry
from wireformat import parse_frames

pytestmark = pytest.mark.slow

AVRO = {"type": "record", "name": "Order", "namespace": "t", "fields": [
    {"name": "id", "type": "long"}, {"name": "qty", "type": "int"},
    {"name": "name", "type": ["null", "string"]},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "int"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    {"name": "line", "type": ["null", {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "n", "type": "int"}]}]}]}
DDL = ("id long, qty int, name string, ts timestamp, amount decimal(10,2), tags array<string>, "
       "attrs map<string,int>, kind string, line struct<sku: string, n: int>")


def _rows(n):
    base = dt.datetime(2024, 5, 1, 12, 0, 0)
    return [(i, i % 7, None if i % 5 == 0 else f"n{i}", base + dt.timedelta(seconds=i),
             decimal.Decimal(i) / 4, [f"t{j}" for j in range(i % 3)], {"a": i} if i % 2 else {},
             "AB"[i % 2], None if i % 4 == 0 else (f"s{i}", i)) for i in range(n)]


def _plain(obj):
    if hasattr(obj, "asDict"):
        return {k: _plain(v) for k, v in obj.asDict().items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj


def test_avro_auto_register_round_trip(spark, registry_server):
    src = spark.createDataFrame(_rows(300), DDL).repartition(3)
    from pyspark.sql.functions import struct

    value = to_registry(struct(*src.columns),
                        schema=json.dumps(AVRO), subject="orders-value", auto_register=True,
                        registry_url=registry_server.url)
    framed = src.select("id", value.alias("value"))
    back = framed.select("id", from_registry("value", subject="orders-value",
                                             registry_url=registry_server.url).alias("r"))
    got = {r.id: _plain(r.r) for r in back.collect()}
    want = {r.id: _plain(r) for r in src.collect()}
    assert got == want
    # the bytes are plain Confluent frames of the registered id, readable by fastavro
    sid = registry_server.register("orders-value", json.dumps(AVRO))  # same text: same id
    raw = [r.value for r in framed.orderBy("id").limit(3).collect()]
    pf = parse_frames(pa.array(raw), "confluent")
    assert pf.int_id.to_pylist() == [sid] * 3
    rec = fastavro.schemaless_reader(io.BytesIO(pf.payload[1].as_py()), fastavro.parse_schema(AVRO))
    assert rec["id"] == 1 and rec["kind"] == "B"


def test_pinned_id_latest_version_and_row_errors(spark, registry_server):
    from pyspark.sql.functions import struct

    schema = {"type": "record", "name": "Small", "fields": [{"name": "k", "type": "int"}]}
    sid = registry_server.register("small-value", json.dumps(schema))
    df = spark.createDataFrame([(1,), (1 << 40,), (None,)], "k long").coalesce(1)
    col = struct("k")
    permissive = df.select(to_registry(col, schema_id=sid, registry_url=registry_server.url,
                                       with_errors=True).alias("o")).collect()
    assert permissive[0].o.error is None and permissive[0].o.value[:5] == b"\x00" + sid.to_bytes(4, "big")
    assert permissive[1].o.value is None and "'value.k'" in permissive[1].o.error
    assert permissive[2].o.value is None and "null for a non-nullable Avro int" in permissive[2].o.error
    latest = df.limit(1).select(to_registry(col, subject="small-value", use_latest_version=True,
                                            registry_url=registry_server.url).alias("v")).first().v
    assert latest == permissive[0].o.value
    with pytest.raises(Exception) as info:
        df.select(to_registry(col, schema_id=sid, registry_url=registry_server.url)).collect()
    assert "EncodeError" in str(info.value) and "row 1" in str(info.value)


def test_json_and_protobuf_round_trip(spark, registry_server):
    from pyspark.sql.functions import struct

    js = {"title": "P", "type": "object", "properties": {"id": {"type": "integer", "minimum": 0},
                                                         "name": {"type": "string"}}}
    proto = 'syntax = "proto3"; package t; message P { int64 id = 1; string name = 2; }'
    df = spark.createDataFrame([(i, f"n{i}") for i in range(50)], "id long, name string")
    for fmt, schema in (("json", json.dumps(js)), ("protobuf", proto)):
        enc = df.select("id", to_registry(struct("id", "name"), schema=schema, format=fmt,
                                          subject=f"p-{fmt}-value", auto_register=True,
                                          registry_url=registry_server.url).alias("value"))
        back = enc.select("id", from_registry("value", subject=f"p-{fmt}-value",
                                              registry_url=registry_server.url).alias("r"))
        assert sorted((r.id, r.r.id, r.r.name) for r in back.collect()) == \
            [(i, i, f"n{i}") for i in range(50)], fmt
    bad = spark.createDataFrame([(-1, "x")], "id long, name string")
    row = bad.select(to_registry(struct("id", "name"), schema=json.dumps(js), format="json",
                                 subject="p-json-value", auto_register=True, registry_url=registry_server.url,
                                 with_errors=True).alias("o")).first().o
    assert row.value is None and "minimum" in row.error


def test_incompatible_registration_fails_on_the_driver(spark, registry_server):
    from registry import IncompatibleSchemaError

    registry_server.fail_next(1, 409, path_prefix="/subjects/x-value")
    with pytest.raises(IncompatibleSchemaError, match="incompatible"):
        to_registry("v", schema='"string"', subject="x-value", auto_register=True,
                    registry_url=registry_server.url)


@pytest.mark.parametrize("wire_format, compression", [("confluent-guid", None), ("glue", "zlib")])
def test_guid_framings_read_back_with_auto(spark, registry_server, wire_format, compression):
    from pyspark.sql.functions import struct

    schema = {"type": "record", "name": "G", "fields": [{"name": "k", "type": "long"},
                                                        {"name": "s", "type": "string"}]}
    df = spark.createDataFrame([(i, "x" * i) for i in range(20)], "k long, s string")
    enc = df.select(to_registry(struct("k", "s"), schema=json.dumps(schema), subject="g-value",
                                auto_register=True, registry_url=registry_server.url,
                                wire_format=wire_format, compression=compression).alias("value"))
    first = enc.first().value
    assert first[0] == (1 if wire_format == "confluent-guid" else 3)
    back = enc.select(from_registry("value", schema=json.dumps(schema), wire_format="auto",
                                    registry_url=registry_server.url).alias("r"))
    assert sorted((r.r.k, r.r.s) for r in back.collect()) == [(i, "x" * i) for i in range(20)]


def test_protobuf_apicurio_framing_round_trips_without_confluent_indexes(spark, registry_server):
    """Apicurio's Protobuf serde writes no Confluent message indexes; to_registry used to add
    them for apicurio-new, so from_registry (and Apicurio consumers) read the index byte as data."""
    from pyspark.sql.functions import struct

    proto = 'syntax = "proto3"; package t; message A { int64 id = 1; string name = 2; }'
    df = spark.createDataFrame([(i, f"n{i}") for i in range(20)], "id long, name string")
    enc = df.select(to_registry(struct("id", "name"), schema=proto, format="protobuf", subject="pa-value",
                                auto_register=True, registry_url=registry_server.url,
                                wire_format="apicurio-new").alias("value"))
    first = enc.first().value
    assert first[0] == 0 and first[5:] == b"\x12\x02n0"  # 5-byte header, then field 2 (id 0 is omitted)
    back = enc.select(from_registry("value", schema=proto, format="protobuf", wire_format="apicurio-new",
                                    registry_url=registry_server.url).alias("r"))
    assert sorted((r.r.id, r.r.name) for r in back.collect()) == [(i, f"n{i}") for i in range(20)]
