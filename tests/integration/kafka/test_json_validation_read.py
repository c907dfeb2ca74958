"""Issue 37's reproduction, as a user meets it: a channel with one JSON message (no registry,
records written by a plain producer) read with ``peek`` — the read the source runs, without
Spark — in each error mode. A record that lacks a ``required`` property, holds none of the
schema's properties or a value of the wrong type is a row error naming the keyword and the JSON
path, never a row of nulls; FAILFAST names the record; DROPMALFORMED drops it."""
from __future__ import annotations

import json
import uuid

import pytest

from connector.errors import DecodeError
from connector.read import peek

pytestmark = pytest.mark.kafka

DOC = """
asyncapi: 3.0.0
info: {title: json validation, version: 1.0.0}
servers:
  local: {host: localhost:9092, protocol: kafka}
channels:
  orders:
    address: TOPIC
    messages:
      order:
        payload:
          schemaFormat: application/schema+json;version=draft-07
          schema:
            type: object
            required: [foo]
            properties:
              foo: {type: integer}
              items:
                type: array
                items: {type: object, required: [sku], properties: {sku: {type: string}, qty: {type: integer}}}
"""
RECORDS = [
    {"foo": 1, "items": [{"sku": "a", "qty": 1}]},  # valid
    {"bar": 2},  # lacks foo
    {},  # none of the properties
    {"foo": "x"},  # foo of the wrong type
    {"foo": 3, "items": [{"sku": "a"}, {"sku": "b"}, {"sku": "c"}, {"qty": 4}]},  # items[3] lacks sku
    {"foo": 4},  # valid
]


@pytest.fixture(scope="module")
def channel(kafka, tmp_path_factory):
    name = f"jsonval-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, 1)
    for i, record in enumerate(RECORDS):
        kafka.produce(name, json.dumps(record).encode(), key=f"k{i}".encode(), partition=0)
    kafka.flush()
    path = tmp_path_factory.mktemp("jsonval") / "doc.yaml"
    path.write_text(DOC.replace("TOPIC", name))
    return str(path), {"kafka.bootstrap.servers": kafka.bootstrap_servers, "wireFormat": "none"}, name


def _peek(channel, mode):
    path, options, _ = channel
    return peek(path, "orders", n=len(RECORDS), options={**options, "mode": mode})


def test_permissive_records_the_schema_refuses_are_error_rows_naming_keyword_and_path(channel):
    rows = _peek(channel, "PERMISSIVE").to_pylist()
    assert [r["key"] for r in rows] == [f"k{i}".encode() for i in range(len(RECORDS))]
    errors = [r["_error"] for r in rows]
    assert errors[0] is None and errors[5] is None
    assert rows[0]["value"] == {"foo": 1, "items": [{"sku": "a", "qty": 1}]}
    assert "$.foo: 'required' — 'foo' is a required property" in errors[1]
    assert "$.foo: 'required'" in errors[2]
    assert "$.foo: 'type' — 'x' is not of type 'integer'" in errors[3]
    assert "$.items[3].sku: 'required' — 'sku' is a required property" in errors[4]
    for r in rows[1:5]:
        assert r["value"] is None and r["_raw_value"]  # never a row of nulls


def test_failfast_stops_at_the_first_invalid_record_and_names_it(channel):
    with pytest.raises(DecodeError) as e:
        _peek(channel, "FAILFAST")
    _, _, topic = channel
    assert e.value.topic == topic and e.value.partition == 0 and e.value.offset == 1
    assert "'required'" in str(e.value)


def test_dropmalformed_keeps_only_the_valid_records(channel):
    rows = _peek(channel, "DROPMALFORMED").to_pylist()
    assert [r["key"] for r in rows] == [b"k0", b"k5"]
    assert rows[1]["value"] == {"foo": 4, "items": None}


def test_json_schema_validation_false_reads_every_record_the_type_holds(channel):
    path, options, _ = channel
    rows = peek(path, "orders", n=len(RECORDS),
                options={**options, "mode": "PERMISSIVE", "jsonSchemaValidation": "false"}).to_pylist()
    errors = [r["_error"] for r in rows]
    assert errors[1] is None and rows[1]["value"] == {"foo": None, "items": None}  # what the user gave up
    assert errors[2] is None and errors[4] is None and errors[5] is None
    assert errors[3] and "not valid against its schema" not in errors[3]  # "x" is no integer column value

