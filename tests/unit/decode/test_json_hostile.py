"""Hostile JSON payloads and schema ids: each is a row error naming the schema id, never a
value, and never fails the good rows beside it. Every case here was accepted (or misread)
by the decoder before the strict engine, except where a test says otherwise."""
from __future__ import annotations

import json

import pyarrow as pa
from wireformat import Limits
import pytest

from connector.formats import DecodeOptions, build_decoder
from registry import SchemaNotFound
from tests.unit.decode.decode_helpers import Registry, Spec, framed

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "amount": {"type": "number"}, "name": {"type": "string"},
    "lines": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}}}}
GOOD = b'{"id": 7, "amount": 1.5, "name": "ok", "lines": [{"x": 1}]}'
GOOD_ROW = {"id": 7, "amount": 1.5, "name": "ok", "lines": [{"x": 1}]}


DEFAULT = DecodeOptions()


def decode(payloads, schema=SCHEMA, options=DEFAULT, registry=None, sid=3):
    reg = registry or Registry()
    if registry is None:
        reg.add(sid, schema, "JSON")
    d = build_decoder(Spec("json", schema), options=options)
    res = d.decode(framed([(sid, p) for p in payloads]), reg.lookup)
    return res.values.to_pylist(), res.errors.to_pylist()


def only_bad(payload: bytes, schema=SCHEMA, **kw) -> str:
    """Decode [good, payload, good]: the middle row alone fails; return its error."""
    vals, errs = decode([GOOD, payload, GOOD], schema, **kw)
    assert errs[0] is None and errs[2] is None, errs
    assert vals[1] is None and errs[1] is not None, (vals[1], errs)
    assert errs[1].startswith("json decode failed for schema id 3"), errs[1]
    return errs[1]


@pytest.mark.parametrize("payload", [
    b'{"id": 1, "name": "caf\xe9"}',          # latin-1 byte in a field that is read
    b'{"id": 1, "other": "\xff\xfe"}',         # in a field the reader ignores
    b'{"\xff": 1, "id": 1}',                   # in a key
    b'{"id": 1, "name": "\xed\xa0\x80"}',      # an encoded surrogate
])
def test_invalid_utf8_is_a_row_error(payload):
    assert "UTF-8" in only_bad(payload)


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinity_literals_are_row_errors(literal):
    only_bad(b'{"id": 1, "amount": ' + literal + b"}")
    only_bad(b'{"id": 1, "ignored": ' + literal + b"}")


@pytest.mark.parametrize("payload", [
    b'{"id": 1} trailing', b'{"id": 1}{"id": 2}', b'{"id": 1}\n{"id": 2}', b'{"id": 1},',
    b'{"id": 1', b'', b'   ', b'{"id": "1\\ud800"}',
])
def test_trailing_bytes_and_broken_text_are_row_errors(payload):
    """(Trailing bytes were already refused by the orjson fallback; kept as a guard.)"""
    only_bad(payload)


def test_payloads_cannot_borrow_structure_from_their_neighbours():
    """An unfinished object, its continuation and a two-object payload used to line up as
    three well-formed rows of the newline-joined stream, each with a neighbour's values."""
    vals, errs = decode([b'{"id": 1, "lines": [', b'{"x": 2}]}', b'{"id": 3}\n{"id": 4}', GOOD])
    assert vals[:3] == [None, None, None] and all(errs[:3]), (vals, errs)
    assert vals[3] == GOOD_ROW and errs[3] is None


@pytest.mark.parametrize("value", [b'"12"', b"1.5", b"true", b"9223372036854775808", b"15e-1",
                                   b"-9223372036854775809", b"[1]", b"{}", b"9007199254740992.0"])
def test_no_integer_coercion(value):
    """(Already refused before; kept as a guard on the new readers.)"""
    only_bad(b'{"id": ' + value + b"}")


DRAFT4 = {**SCHEMA, "$schema": "http://json-schema.org/draft-04/schema#"}


@pytest.mark.parametrize("value", [b"1.0", b"1e2", b"-0.0"])
def test_integral_numbers_written_with_a_fraction_are_integers_from_draft_6_on_only(value):
    vals, errs = decode([b'{"id": ' + value + b"}"])
    assert errs == [None] and vals[0]["id"] == int(float(value))
    only_bad(b'{"id": ' + value + b"}", DRAFT4)  # draft 4: an integer has no fraction nor exponent


def test_integer_range_edges_decode():
    vals, errs = decode([b'{"id": 9223372036854775807}', b'{"id": -9223372036854775808}'])
    assert errs == [None, None] and [v["id"] for v in vals] == [2**63 - 1, -2**63]


UNION = {"type": "object", "properties": {
    "u": {"type": ["integer", "string", "null"]},
    "obj": {"type": "object"},
    "one": {"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "integer"}}]},
    "m": {"type": "object", "additionalProperties": {"type": "integer"}}}}


@pytest.mark.parametrize("payload", [
    b'{"u": {"a": 1}}', b'{"u": 1.5}', b'{"u": true}', b'{"obj": [1]}', b'{"obj": "text"}',
    b'{"one": 3}', b'{"one": "x"}', b'{"m": {"a": "1"}}', b'{"m": {"a": 1.5}}', b'{"m": [1]}',
])
def test_union_and_free_form_types_are_checked(payload):
    vals, errs = decode([b'{"u": 5, "obj": {"k": [1, 2]}, "one": [1], "m": {"a": 1}}', payload], UNION)
    assert errs[0] is None and vals[0] == {"u": "5", "obj": '{"k":[1,2]}', "one": "[1]", "m": [("a", 1)]}
    assert vals[1] is None and errs[1], (vals, errs)


def test_nesting_deeper_than_the_cap_is_a_row_error():
    from connector.formats.json_schema._guard import MAX_NESTING

    blob = {"type": "object", "properties": {"id": {"type": "integer"}, "blob": {}}}
    ok = b'{"id": 1, "blob": ' + b"[" * (MAX_NESTING - 1) + b"]" * (MAX_NESTING - 1) + b"}"
    deep = b'{"id": 1, "blob": ' + b"[" * (MAX_NESTING + 10) + b"]" * (MAX_NESTING + 10) + b"}"
    vals, errs = decode([ok, deep], blob)
    assert errs[0] is None and vals[0]["blob"].startswith("[[")
    assert vals[1] is None and "nested" in errs[1]
    # far deeper, in a field the reader ignores: bounded, and a row error, not a crash
    only_bad(b'{"id": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def test_collection_cap_is_a_row_error():
    opts = DecodeOptions(limits=Limits(max_collection_items=20))
    small = json.dumps({"id": 1, "lines": [{"x": i} for i in range(3)]}).encode()
    big = json.dumps({"id": 1, "lines": [{"x": i} for i in range(30)]}).encode()
    vals, errs = decode([small, big], options=opts)
    assert errs[0] is None and len(vals[0]["lines"]) == 3
    assert vals[1] is None and "max_collection_items" in errs[1]


def test_size_cap_is_a_row_error():
    vals, errs = decode([GOOD, b'{"name": "' + b"x" * 500 + b'"}'], options=DecodeOptions(limits=Limits(max_record_bytes=200)))
    assert errs[0] is None and "max_record_bytes" in errs[1] and vals[1] is None


class _Lookup(Registry):
    def lookup(self, key):
        self.calls += 1
        if key[1] not in self.by_id:
            # as the caching client raises it once the registry is verified (issue 15)
            raise SchemaNotFound(f"schema {key[1]} not found", status=404, fault="record")
        return self.by_id[key[1]]


def test_unknown_schema_id_is_a_row_error():
    reg = _Lookup()
    reg.add(3, SCHEMA, "JSON")
    d = build_decoder(Spec("json", SCHEMA), options=DecodeOptions())
    res = d.decode(framed([(3, GOOD), (404, GOOD), (3, GOOD)]), reg.lookup)
    errs = res.errors.to_pylist()
    assert errs[0] is None and errs[2] is None and res.values.to_pylist()[0] == GOOD_ROW
    assert res.values.to_pylist()[1] is None and "404" in errs[1]


def test_schema_id_of_another_format_is_a_row_error():
    reg = _Lookup()
    reg.add(3, SCHEMA, "JSON")
    reg.add(5, {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}, "AVRO")
    d = build_decoder(Spec("json", SCHEMA), options=DecodeOptions())
    res = d.decode(framed([(5, GOOD), (3, GOOD)]), reg.lookup)
    errs = res.errors.to_pylist()
    assert res.values.to_pylist() == [None, GOOD_ROW]
    assert "5" in errs[0] and "avro" in errs[0] and errs[1] is None


def test_a_refused_block_fails_only_its_bad_rows():
    """pyarrow refuses a whole block for one bad value: the other rows still decode.
    (Guard: the old fallback decoded the whole group per row.)"""
    payloads = [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in range(3000)]
    payloads[1234] = b'{"id": "1234"}'
    payloads[2999] = b'{"id": 1.5}'
    vals, errs = decode(payloads)
    assert [i for i, e in enumerate(errs) if e] == [1234, 2999]
    assert all(vals[i] == {"id": i, "amount": None, "name": f"n{i}", "lines": None}
               for i in range(3000) if i not in (1234, 2999))


def test_json_null_payload_is_a_row_error_against_an_object_schema_and_a_top_level_array_too():
    """``null`` text (not a tombstone) is a JSON value an object schema refuses, as
    python-jsonschema does; read without validation it is a null row."""
    vals, errs = decode([b"null", b"[1, 2]", GOOD])
    assert vals[0] is None and "'type' — None is not of type 'object'" in errs[0]
    assert vals[1] is None and errs[1]
    assert vals[2] == GOOD_ROW and errs[2] is None
    vals, errs = decode([b"null"], options=DecodeOptions(validate_json=False))
    assert vals == [None] and errs == [None]


def test_null_payload_is_a_row_error():
    d = build_decoder(Spec("json", SCHEMA), options=DecodeOptions())
    from connector.formats.json_schema._decode import JsonCodec  # noqa: F401 - the codec behind the decoder
    vals, errs = d._state().reader.codec.decode(pa.array([GOOD, None], pa.binary()), "3")
    assert vals.to_pylist() == [GOOD_ROW, None] and errs[0] is None and "null payload" in errs[1]
