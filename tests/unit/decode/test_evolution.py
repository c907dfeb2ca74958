"""schemaEvolutionMode at the decoder (issue 18): fields a writer has and the reader lacks
are dropped (none), kept as JSON (rescue) or stop the query (failOnNewFields)."""
from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from connector.decode import DecodeOptions, SchemaEvolutionError, build_decoder
from registry import Schema, SchemaType
from wireformat import encode_frame, parse_frames

READER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer_name", "type": "string", "aliases": ["customer"]},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}]}},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}]}}},
]}
WRITER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},                      # renamed: reader alias
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}]}},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "channel", "type": "string"},
    {"name": "raw", "type": "bytes"},
]}


class _Spec:
    format = "avro"
    text = json.dumps(READER)


def _encode(schema, rec) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), rec)
    return buf.getvalue()


def _decode(mode, records, schema_id=7, writer=WRITER):
    schemas = {7: Schema(SchemaType.AVRO, json.dumps(writer), id=7),
               8: Schema(SchemaType.AVRO, json.dumps(READER), id=8)}
    values = pa.array([None if r is None else encode_frame("confluent", schema_id, _encode(writer, r))
                       for r in records], pa.binary())
    dec = build_decoder(_Spec(), options=DecodeOptions(evolution=mode))
    return dec.decode(parse_frames(values, "confluent"), lambda key: schemas[key[1]])


REC = {"id": 1, "customer": "ann", "address": {"city": "Oslo", "zip": "0150"},
       "lines": [{"sku": "a", "qty": 2}], "channel": "app", "raw": b"\x00\xff"}


def test_none_drops_new_fields_and_keeps_renamed_ones():
    res = _decode("none", [REC])
    assert res.values.to_pylist() == [{"id": 1, "customer_name": "ann", "address": {"city": "Oslo"},
                                       "lines": [{"sku": "a"}]}]
    assert res.rescued is None


def test_rescue_keeps_every_new_field_as_json():
    res = _decode("rescue", [REC, {**REC, "id": 2, "address": {"city": "Bergen", "zip": None}}])
    assert res.errors.null_count == 2
    first, second = (json.loads(x) for x in res.rescued.to_pylist())
    assert first == {"address": {"zip": "0150"}, "lines": [{"sku": "a", "qty": 2}], "channel": "app",
                     "raw": "AP8="}
    assert second["address"] == {"zip": None}  # a written null is data, kept
    assert res.values.to_pylist()[0]["customer_name"] == "ann"  # the alias is not a new field


def test_rescue_is_null_for_rows_of_the_reader_schema():
    reader_rec = {"id": 5, "customer_name": "bo", "address": {"city": "X"}, "lines": []}
    res = _decode("rescue", [reader_rec], schema_id=8, writer=READER)
    assert res.rescued is None or res.rescued.to_pylist() == [None]
    assert res.values.to_pylist()[0]["id"] == 5


def test_fail_on_new_fields_names_the_writer_and_fields():
    with pytest.raises(SchemaEvolutionError) as e:
        _decode("failOnNewFields", [REC])
    assert e.value.schema_id == "7"
    assert set(e.value.fields) == {"address.zip", "lines[].qty", "channel", "raw"}
    assert "SCHEMA_EVOLUTION.NEW_FIELDS" in str(e.value)


def test_fail_on_new_fields_accepts_the_reader_schema_itself():
    reader_rec = {"id": 5, "customer_name": "bo", "address": {"city": "X"}, "lines": []}
    res = _decode("failOnNewFields", [reader_rec], schema_id=8, writer=READER)
    assert res.values.to_pylist()[0]["id"] == 5


def test_bad_evolution_mode_refused():
    from connector.errors import ConfigError

    with pytest.raises(ConfigError):
        DecodeOptions(evolution="merge")
