"""JSON Schema: mapping, fast path ≡ orjson reference, bad rows, interop with confluent."""
from __future__ import annotations

import datetime as dt
import json

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions, build_decoder
from connector.formats.json_schema._decode import JsonCodec
from connector.formats.json_schema._schema import parse_json_schema
from connector.errors import SchemaMappingError
from tests.unit.decode.decode_helpers import FAST, REFERENCE, Spec, binary, framed

UTC = dt.timezone.utc
SCHEMA = {
    "title": "Order", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "amount": {"type": "number"}, "ok": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time"}, "day": {"type": "string", "format": "date"},
        "note": {"type": ["string", "null"]}, "status": {"enum": ["NEW", "DONE"]},
        "customer": {"$ref": "#/definitions/Customer"},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
        "maybe": {"oneOf": [{"type": "null"}, {"type": "integer"}]},
    },
    "definitions": {"Customer": {"type": "object", "properties": {"name": {"type": "string"}}}},
    "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"},
                                                        "qty": {"type": "integer"}}}},
}
ARROW = pa.struct([
    ("id", pa.int64()), ("amount", pa.float64()), ("ok", pa.bool_()),
    ("at", pa.timestamp("us", "UTC")), ("day", pa.date32()), ("note", pa.string()),
    ("status", pa.string()), ("customer", pa.struct([("name", pa.string())])),
    ("lines", pa.list_(pa.field("element", pa.struct([("sku", pa.string()), ("qty", pa.int64())])))),
    ("maybe", pa.int64())])


def codec(schema=SCHEMA, options=FAST):
    return JsonCodec(parse_json_schema(json.dumps(schema)), options)


def doc(i):
    return {"id": i, "amount": i * 1.5, "ok": i % 2 == 0, "at": f"2024-03-0{1 + i % 9}T10:00:00.5Z",
            "day": "2024-02-29", "note": None if i % 2 else "n", "status": "NEW",
            "customer": {"name": f"c{i}", "extra": 1}, "lines": [{"sku": "a", "qty": i}],
            "maybe": None if i % 3 else i, "unknown_field": [1, 2]}


def test_mapping():
    assert codec().arrow_type == ARROW
    m = parse_json_schema('{"type":"object","additionalProperties":{"type":"integer"}}')
    assert m.arrow == pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int64()))
    assert parse_json_schema('{"oneOf":[{"type":"string"},{"type":"integer"}]}').arrow == pa.string()
    assert parse_json_schema(None).kind == "json"


def test_fast_path_equals_reference_and_ignores_extra_fields():
    payloads = binary([orjson.dumps(doc(i)) for i in range(20)] + [b'{\n "id": 99\n}'])
    c = codec()
    assert c.fast and c._engine is not None
    a, ea = c.decode(payloads, "1")
    b, eb = codec(options=REFERENCE).decode(payloads, "1")
    assert ea == eb == [None] * 21 and a.type == ARROW and a.equals(b)
    row = a.to_pylist()[3]
    assert row["at"] == dt.datetime(2024, 3, 4, 10, 0, 0, 500000, tzinfo=UTC)
    assert row["day"] == dt.date(2024, 2, 29) and row["customer"] == {"name": "c3"}
    assert row["maybe"] == 3 and row["note"] is None and a.to_pylist()[20]["id"] == 99


def test_bad_rows_fail_alone():
    payloads = [orjson.dumps(doc(0)), b"{not json", b'{"id": "text"}', b"  ", b"[1,2]",
                orjson.dumps(doc(5)), b'{"id": 1.5}', b'{"day": "2024-13-45"}']
    vals, errs = codec().decode(binary(payloads), "4")
    assert [e is None for e in errs] == [True, False, False, False, False, True, False, False]
    assert all(e.startswith("json decode failed for schema id 4") for e in errs if e)
    assert vals.to_pylist()[5]["id"] == 5 and vals.null_count == 6


def test_map_and_free_form_fields_decode_on_the_vectorized_path():
    schema = {"type": "object", "properties": {
        "attrs": {"type": "object", "additionalProperties": {"type": "number"}},
        "blob": {}, "either": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}
    c = codec(schema)
    assert c.fast and c._engine is not None
    vals, errs = c.decode(binary([b'{"attrs": {"a": 1, "b": 2.5}, "blob": {"x": [1]}, "either": "s"}']), "1")
    assert errs == [None]
    assert vals.to_pylist() == [{"attrs": [("a", 1.0), ("b", 2.5)], "blob": '{"x":[1]}', "either": '"s"'}]


def test_no_schema_gives_json_text(registry):
    registry.add(1, {"type": "object"}, "JSON")
    d = build_decoder(None, fmt="json")
    assert d.arrow_type == pa.string()
    res = d.decode(framed([(1, b'{"a": 1}'), (1, b"nope")]), registry.lookup)
    assert res.values.to_pylist() == ['{"a": 1}', None] and res.errors.to_pylist()[1]
    assert registry.calls == 1  # the id is checked once per batch, the payload's text is kept


def test_recursive_ref_refused():
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    with pytest.raises(SchemaMappingError, match="recursive"):
        build_decoder(Spec("json", tree), options=DecodeOptions())


def test_non_string_format_is_ignored():
    # found by mypy: a non-string "format" was used as a dict key (TypeError on a list)
    assert parse_json_schema({"type": "string", "format": ["date"]}).kind == "string"


@pytest.mark.parametrize("tree", [
    {"type": {}}, {"type": [[], "string"]}, {"$ref": None}, {"properties": True},
    {"oneOf": None}, "[" * 100_000, '{"items":' * 5_000 + "{}" + "}" * 5_000,
])
def test_malformed_schema_is_a_mapping_error(tree):
    with pytest.raises(SchemaMappingError):
        parse_json_schema(tree, max_depth=2)


_keys = st.sampled_from(["type", "format", "$ref", "properties", "items", "oneOf", "anyOf", "enum",
                         "additionalProperties", "$defs", "a"])
_leaves = st.none() | st.booleans() | st.integers() | st.sampled_from(
    ["#", "#/$defs/a", "#/properties/a", "string", "object", "array", "null", "integer", "date"])
_schemas = st.recursive(_leaves, lambda c: st.lists(c, max_size=3) | st.dictionaries(_keys, c, max_size=4),
                        max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_schemas)
def test_any_json_value_maps_or_is_a_mapping_error(tree):
    try:
        node = parse_json_schema(tree, max_depth=2)
    except SchemaMappingError:
        return
    assert isinstance(node.arrow, pa.DataType)


def test_confluent_json_serializer_interop(registry):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": "mock://decode-json"})
    ser = JSONSerializer(json.dumps(SCHEMA), client)
    ctx = SerializationContext("orders", MessageField.VALUE)
    values = [ser(doc(i) | {"unknown_field": None}, ctx) for i in range(4)]
    registry.add(int.from_bytes(values[0][1:5], "big"), SCHEMA, "JSON")
    d = build_decoder(Spec("json", SCHEMA), options=DecodeOptions())
    res = d.decode(framed(values), registry.lookup)
    assert res.errors.null_count == 4
    assert [r["id"] for r in res.values.to_pylist()] == [0, 1, 2, 3]


scalars = st.none() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=5) | st.booleans()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.fixed_dictionaries({}, optional={"id": scalars, "amount": scalars, "note": scalars,
                                                    "ok": scalars}), min_size=1, max_size=10))
def test_fast_equals_reference_on_generated_documents(docs):
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "amount": {"type": "number"},
                                               "note": {"type": "string"}, "ok": {"type": "boolean"}}}
    payloads = binary([orjson.dumps(d) for d in docs])
    a, ea = codec(schema).decode(payloads, "1")
    b, eb = codec(schema, REFERENCE).decode(payloads, "1")
    assert [e is None for e in ea] == [e is None for e in eb]
    assert a.to_pylist() == b.to_pylist()
