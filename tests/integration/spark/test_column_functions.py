"""Column functions over DataFrames of raw framed bytes, against a real registry on loopback.

``from_registry`` must give the same typed rows as decoding the same bytes directly with
``wireformat`` + ``connector.formats``, resolve mixed writer versions to the reader, fail or
null bad rows per mode, and ask the registry once per distinct id per worker process.
"""
from __future__ import annotations

import datetime
import io
import json
import uuid

import fastavro
import orjson
import pyarrow as pa
import pytest

from connector.spark.functions import from_registry, schema_id, strip_header
from wireformat import encode_frame, header_for_id, parse_frames

pytestmark = pytest.mark.slow

WORKERS = 2  # local[2]: at most this many Python worker processes run the UDF concurrently

V1 = {"type": "record", "name": "Reading", "namespace": "t", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "unit", "type": "string", "default": "C"}]}
JSON_SCHEMA = {"title": "Reading", "type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "ok": {"type": "boolean"}}}
PROTO = """syntax = "proto3";
package t;
message Other { string x = 1; }
message Reading { int64 id = 1; string name = 2; double value = 3; }
"""


def _avro(schema: dict, record: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()


def _direct(values: list, reader, lookup, framing="confluent", protobuf_indexes=False):
    from connector.formats import DecodeOptions, build_decoder

    dec = build_decoder(reader, options=DecodeOptions())
    parsed = parse_frames(pa.array(values, pa.binary()), framing, protobuf_indexes=protobuf_indexes)
    return dec.decode(parsed, lookup).values.to_pylist()


def _plain(obj):
    """Spark Rows → plain dicts/lists, for comparison with Arrow's to_pylist."""
    if hasattr(obj, "asDict"):
        return {k: _plain(v) for k, v in obj.asDict().items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def _naive_utc(obj):
    """Arrow gives tz-aware UTC datetimes; Spark collects them naive in the session zone (UTC)."""
    if isinstance(obj, dict):
        return {k: _naive_utc(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_naive_utc(v) for v in obj]
    if isinstance(obj, datetime.datetime) and obj.tzinfo is not None:
        return obj.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return obj


def test_avro_mixed_versions_match_direct_decode_and_hit_registry_once_per_id(spark, registry_server):
    from registry import RegistryConfig, client_for

    id1 = registry_server.register("readings-value", json.dumps(V1))
    id2 = registry_server.register("readings-value", json.dumps(V2))
    values = []
    for i in range(1200):
        if i % 2:
            rec = {"id": i, "name": f"n{i}", "ts": 1_700_000_000_000_000 + i, "kind": "B", "unit": "F"}
            values.append(encode_frame("confluent", id2, _avro(V2, rec)))
        else:
            rec = {"id": i, "name": f"n{i}", "ts": 1_700_000_000_000_000 + i, "kind": "A"}
            values.append(encode_frame("confluent", id1, _avro(V1, rec)))
    df = spark.createDataFrame([(v,) for v in values], "value binary").repartition(4)
    registry_server.reset_counts()

    out = df.select("value", from_registry("value", subject="readings-value", registry_url=registry_server.url)
                    .alias("r")).collect()

    # the driver fetched the reader (latest); workers fetched each writer id at most once each
    for sid in (id1, id2):
        assert 1 <= registry_server.request_count(f"/schemas/ids/{sid}") <= WORKERS
    assert [f.name for f in df.select(from_registry("value", schema=json.dumps(V2))).schema[0].dataType] == \
        ["id", "name", "ts", "kind", "unit"]

    got = {bytes(r.value): _plain(r.r) for r in out}
    client = client_for(RegistryConfig.from_options({"schema.registry.url": registry_server.url}))
    want = _naive_utc(_direct(values, client.get_latest("readings-value"), client.lookup))
    assert [got[v] for v in values] == want
    assert want[0]["unit"] == "C" and want[1]["unit"] == "F"  # v1 rows took the reader default
    assert want[1]["ts"].year == 2023


def test_failfast_names_cause_and_schema_id_permissive_nulls(spark, registry_server):
    sid = registry_server.register("r-value", json.dumps(V1))
    good = encode_frame("confluent", sid, _avro(V1, {"id": 1, "name": "a", "ts": 0, "kind": "A"}))
    corrupt = encode_frame("confluent", sid, b"\x02")  # truncated record
    df = spark.createDataFrame([(good,), (corrupt,), (None,), (b"junk!",)], "value binary").coalesce(1)

    with pytest.raises(Exception) as info:
        df.select(from_registry("value", schema_id=sid, registry_url=registry_server.url)).collect()
    text = str(info.value)
    assert "DecodeError" in text and f"schemaId={sid}" in text and "decode failed" in text

    rows = df.select(from_registry("value", schema_id=sid, registry_url=registry_server.url,
                                   mode="PERMISSIVE").alias("v")).collect()
    assert [r.v.id if r.v else None for r in rows] == [1, None, None, None]

    rows = df.select(from_registry("value", schema_id=sid, registry_url=registry_server.url,
                                   with_errors=True).alias("v")).collect()
    errors = [r.v.error for r in rows]
    assert errors[0] is None and errors[2] is None  # good row and null (tombstone) input
    assert f"schema id {sid}" in errors[1]
    assert "magic byte" in errors[3]
    assert rows[0].v.value.name == "a" and rows[1].v.value is None


def test_inline_schema_without_registry_reads_with_reader_as_writer(spark):
    values = [encode_frame("confluent", 99, _avro(V1, {"id": i, "name": "x", "ts": 5, "kind": "B"}))
              for i in range(10)]
    df = spark.createDataFrame([(v,) for v in values], "value binary")
    rows = df.select(from_registry("value", schema=V1).alias("v")).collect()
    assert sorted(r.v.id for r in rows) == list(range(10))
    assert {r.v.kind for r in rows} == {"B"}


def test_json_schema_from_registry(spark, registry_server):
    sid = registry_server.register("j-value", json.dumps(JSON_SCHEMA), schema_type="JSON")
    recs = [{"id": i, "name": f"n{i}", "ok": i % 2 == 0} for i in range(200)]
    values = [encode_frame("confluent", sid, orjson.dumps(r)) for r in recs]
    df = spark.createDataFrame([(v,) for v in values], "value binary")
    rows = df.select("value", from_registry("value", subject="j-value", registry_url=registry_server.url)
                     .alias("v")).collect()
    got = {bytes(r.value): _plain(r.v) for r in rows}
    assert [got[v] for v in values] == recs


def test_protobuf_with_message_indexes(spark, registry_server, tmp_path):
    sid = registry_server.register("p-value", PROTO, schema_type="PROTOBUF")
    cls = _proto_class(tmp_path)
    values = []
    for i in range(100):
        payload = cls(id=i, name=f"n{i}", value=i / 2).SerializeToString()
        values.append(encode_frame("confluent", sid, payload, message_indexes=[1]))
    df = spark.createDataFrame([(v,) for v in values], "value binary")
    rows = df.select(from_registry("value", schema_id=sid, registry_url=registry_server.url,
                                   message="t.Reading").alias("v")).collect()
    assert sorted((r.v.id, r.v.name, r.v.value) for r in rows) == [(i, f"n{i}", i / 2) for i in range(100)]


def _proto_class(tmp_path):
    """The Reading message class, compiled by protoc (independent of our .proto compiler)."""
    import importlib
    import sys

    from grpc_tools import protoc

    (tmp_path / "cf_reading.proto").write_text(PROTO)
    assert protoc.main(["protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
                        str(tmp_path / "cf_reading.proto")]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module("cf_reading_pb2").Reading
    finally:
        sys.path.remove(str(tmp_path))


GUID = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")


@pytest.mark.parametrize("framing, ident", [
    ("confluent", 7), ("confluent-guid", GUID), ("glue", GUID), ("apicurio-legacy", 2 ** 40),
    ("apicurio-new", 9), ("header-confluent", GUID), ("header-apicurio-global", 11),
    ("header-apicurio-content", 12), ("none", None), ("auto", 5)])
def test_strip_header_every_framing(spark, framing, ident):
    header_framing = framing.startswith("header-")
    enc_framing = "confluent" if framing == "auto" else framing
    payloads = [b"p%d" % i for i in range(5)]
    rows = []
    for p in payloads:
        value = p if framing == "none" else encode_frame(enc_framing, ident, p)
        headers = [header_for_id(framing, ident)] if header_framing else []
        rows.append((value, headers))
    rows.append((b"\x07bad", []))
    df = spark.createDataFrame(rows, "value binary, headers array<struct<key: string, value: binary>>")
    kw = {"headers": "headers"} if header_framing else {}
    out = df.select(strip_header("value", framing, **kw).alias("h")).collect()
    good, bad = out[:5], out[5].h
    assert [bytes(r.h.payload) for r in good] == payloads
    expect_framing = "confluent" if framing == "auto" else framing
    assert {r.h.framing for r in good} == {expect_framing}
    assert {r.h.error for r in good} == {None}
    if isinstance(ident, uuid.UUID):
        assert {r.h.schema_guid for r in good} == {str(GUID)} and {r.h.schema_id for r in good} == {None}
    else:
        assert {r.h.schema_id for r in good} == {ident} and {r.h.schema_guid for r in good} == {None}
    if framing not in ("none",) and not header_framing:
        assert bad.error is not None and bad.payload is None
    # schema_id is the same header-only function
    ids = df.select(schema_id("value", framing, **kw).schema_id.alias("i")).collect()
    assert [r.i for r in ids] == [r.h.schema_id for r in out]


def test_bad_arguments_fail_on_the_driver(spark):
    from connector.errors import ConfigError

    with pytest.raises(ConfigError, match="wire_format"):
        from_registry("value", schema=V1, wire_format="nope")
    with pytest.raises(ConfigError, match="headers"):
        strip_header("value", "header-confluent")
    with pytest.raises(ConfigError, match="schema.registry"):
        from_registry("value", schema=V1, options={"bootstrap.servers": "x"})
    with pytest.raises(ConfigError, match="reader schema"):
        from_registry("value", subject="s")


def test_header_framing_reads_ids_from_the_headers_column(spark, registry_server):
    sid = registry_server.register("h-value", json.dumps(V1))
    guid = registry_server.guid_of(sid)
    rows = [(_avro(V1, {"id": i, "name": "h", "ts": 0, "kind": "A"}), [header_for_id("header-confluent", guid)])
            for i in range(20)]
    df = spark.createDataFrame(rows, "value binary, headers array<struct<key: string, value: binary>>")
    out = df.select(from_registry("value", schema_id=sid, registry_url=registry_server.url,
                                  wire_format="header-confluent", headers="headers").alias("v")).collect()
    assert sorted(r.v.id for r in out) == list(range(20))
    assert registry_server.request_count("/schemas/guids/") >= 1  # writer looked up by GUID
