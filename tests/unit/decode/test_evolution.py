"""schemaEvolutionMode at the decoder (issue 18): fields a writer has and the reader lacks
are dropped (none), kept as JSON (rescue) or stop the query (failOnNewFields)."""
from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from connector.formats import DecodeOptions, EvolutionMode, build_decoder
from connector.formats.core import SchemaEvolutionError
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
    dec = build_decoder(_Spec(), options=DecodeOptions(evolution=EvolutionMode.parse(mode)))
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


# -- Protobuf: the same rule through the decoded Arrow types ------------------------------------
PROTO_READER = 'syntax = "proto3"; package shop; message Order { int64 id = 1; string name = 2; }'
PROTO_WRITER = ('syntax = "proto3"; package shop; message Order { int64 id = 1; string name = 2; '
                'string channel = 3; message Addr { string zip = 1; } Addr addr = 4; }')


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _ld(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _proto_order(i: int) -> bytes:  # hand-written wire bytes: id, name, channel, addr.zip
    return (_varint(1 << 3) + _varint(i) + _ld(2, b"ann") + _ld(3, b"app") + _ld(4, _ld(1, b"0150")))


def _proto_decode(mode):
    from wireformat import encode_protobuf_indexes

    class Spec:
        format, text = "protobuf", PROTO_READER

    schemas = {9: Schema(SchemaType.PROTOBUF, PROTO_WRITER, id=9)}
    values = pa.array([encode_frame("confluent", 9, encode_protobuf_indexes([0]) + _proto_order(i))
                       for i in range(3)], pa.binary())
    dec = build_decoder(Spec(), options=DecodeOptions(evolution=EvolutionMode.parse(mode)))
    return dec.decode(parse_frames(values, "confluent", protobuf_indexes=True), lambda key: schemas[key[1]])


def test_protobuf_rescue_and_fail_on_new_fields():
    res = _proto_decode("rescue")
    assert res.values.to_pylist()[1] == {"id": 1, "name": "ann"}
    assert [json.loads(x) for x in res.rescued.to_pylist()] == [{"channel": "app", "addr": {"zip": "0150"}}] * 3
    with pytest.raises(SchemaEvolutionError) as e:
        _proto_decode("failOnNewFields")
    assert set(e.value.fields) == {"channel", "addr"} and e.value.schema_id == "9"
