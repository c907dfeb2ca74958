"""The vectorized screen of free-form unions of objects (``_screen``) never passes a value
python-jsonschema refuses.

Each schema holds a free-form leaf whose schema is a union of objects in one of the shapes the
screen takes (``anyOf``; ``oneOf`` told apart by a tag; ``oneOf`` told apart by required members).
Hypothesis draws values near every branch and across them — the tag nested instead of at the top,
absent, a string of another branch, members of two branches at once, required members null, keys
repeated — and the decoded row must be an error exactly when python-jsonschema calls the record
invalid. The screen is checked to be on (it passes the valid values), so the test exercises it.
"""
from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for

from connector.formats import build_decoder, decode_column
from connector.formats.json_schema._engine import JsonEngine
from connector.formats.json_schema._screen import leaf_screen
from connector.formats import DecodeOptions
from tests.unit.decode.decode_helpers import Spec
from wireformat import Framing

D7 = "http://json-schema.org/draft-07/schema#"
CHARGE = {"type": "object", "properties": {"object": {"enum": ["charge"]}, "amount": {"type": "integer"},
                                           "meta": {"type": "object", "additionalProperties": {"type": "string"}}}}
REFUND = {"type": "object", "properties": {"object": {"const": "refund"}, "amount": {"type": "integer", "minimum": 0},
                                           "reason": {"type": "string", "pattern": "^[a-z]+$"}}}
CREATED = {"type": "object", "required": ["orderId", "lines"],
           "properties": {"orderId": {"type": "string", "minLength": 1}, "lines": {"type": "array"}}}
CANCELLED = {"type": "object", "required": ["orderId"], "properties": {
    "orderId": {"type": "string"}, "reason": {"enum": ["customer", "fraud"]}}, "additionalProperties": False}
SHIPPED = {"type": "object", "required": ["orderId", "carrier"],
           "properties": {"orderId": {"type": "string"}, "carrier": {"type": "string"}}}


def _schema(union):
    return {"$schema": D7, "type": "object", "definitions": {"charge": CHARGE, "refund": REFUND},
            "properties": {"id": {"type": "string"}, "data": union}}


SCHEMAS = {
    "anyOf-tagged": _schema({"anyOf": [{"$ref": "#/definitions/charge"}, {"$ref": "#/definitions/refund"}]}),
    "oneOf-tagged": _schema({"oneOf": [{"$ref": "#/definitions/charge"}, {"$ref": "#/definitions/refund"}]}),
    "oneOf-members": _schema({"oneOf": [CREATED, CANCELLED, SHIPPED]}),
    "anyOf-members": _schema({"anyOf": [CREATED, SHIPPED]}),
    "oneOf-members-open": _schema({"oneOf": [
        {"type": "object", "required": ["orderId", "carrier"], "properties": {
            "orderId": {"type": "string"}, "carrier": {"type": "string"}}},
        {"type": "object", "required": ["orderId"], "properties": {"orderId": {"type": "string"}, "lines": {}}}]}),
    "oneOf-members-extra": _schema({"oneOf": [
        {"type": "object", "required": ["orderId", "carrier"], "properties": {
            "orderId": {"type": "string"}, "carrier": {"type": "string"}}},
        {"type": "object", "required": ["orderId"], "properties": {"orderId": {"type": "string"}},
         "additionalProperties": {"type": ["string", "array", "integer"]}}]}),
}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "a", "b c", "x\n"]))
tags = st.sampled_from(["charge", "refund", "other", 5, None])
# mostly values some branch accepts (so values meeting two branches, or one, are common), else anything
GOOD = {"object": st.sampled_from(["charge", "refund"]), "amount": st.just(1),
        "meta": st.sampled_from([{"object": "charge"}, {"object": "refund"}, {"k": "a"}]),
        "reason": st.sampled_from(["customer", "ok"]), "orderId": st.just("o1"), "lines": st.just([1]),
        "carrier": st.just("ups")}
OTHER = {"object": tags, "amount": st.sampled_from([-2, 1.5, "1"]),
         "meta": st.one_of(st.dictionaries(st.sampled_from(["k", "object"]), tags, max_size=2), scalars),
         "reason": st.one_of(st.sampled_from(["fraud", "Bad"]), scalars), "orderId": st.one_of(st.just(""), scalars),
         "lines": scalars, "carrier": scalars}


@st.composite
def values(draw):
    names = draw(st.lists(st.sampled_from(sorted(GOOD) + ["zz"]), max_size=5, unique=True))
    value = {n: draw(scalars if n == "zz" else st.one_of(GOOD[n], GOOD[n], GOOD[n], OTHER[n])) for n in names}
    return draw(st.one_of(st.just(value), st.just(value), st.just(value), scalars, st.just([value])))


# values on the edges the screen must not pass: meeting two branches of a oneOf, a tag only nested
EDGES = [({"orderId": "o1", "lines": [1], "carrier": "ups"}, False), ({"orderId": "o1", "carrier": "ups"}, False),
         ({"meta": {"object": "charge"}}, False), ({"amount": 1, "meta": {"object": "refund"}}, False),
         ({"object": "charge", "amount": 1}, True), ({"orderId": "o1", "reason": "fraud"}, True),
         ({"orderId": None, "lines": None}, False), ({"orderId": "o1", "lines": 1}, False),
         ({"orderId": "o1", "carrier": None}, False)]


def _text(value, repeat: bool) -> bytes:
    body = json.dumps({"id": "e", "data": value})
    if repeat and isinstance(value, dict) and value:  # a repeated key: the last one counts (json.loads)
        k = next(iter(value))
        body = body.replace('"data": {', '"data": {' + json.dumps(k) + ': "dup", ', 1)
    return body.encode()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(values(), st.booleans()), min_size=1, max_size=25))
def test_the_screen_never_passes_a_value_python_jsonschema_refuses(rows):
    for name, schema in SCHEMAS.items():
        validator = validator_for(schema)(schema)
        payloads = [_text(v, rep) for v, rep in rows + EDGES]
        dec = build_decoder(Spec("json", schema))
        res = decode_column(pa.array(payloads, pa.binary()), framing=Framing.NONE, decoder=dec, lookup=None)
        errors = res.errors.to_pylist()
        for p, err in zip(payloads, errors):
            valid = validator.is_valid(json.loads(p))
            assert (err is None) == valid, (name, p, err)


def test_the_screen_is_on_for_each_shape_and_passes_valid_values():
    cases = {
        "anyOf-tagged": ['{"object":"charge","amount":1}', '{"object":"refund","reason":"ok"}', '{"amount":2}'],
        "oneOf-tagged": ['{"object":"charge","amount":1}', '{"object":"refund","reason":"ok"}'],
        "oneOf-members": ['{"orderId":"o","reason":"fraud"}', '{"orderId":"o"}'],
        "anyOf-members": ['{"orderId":"o","carrier":"x"}'],
        "oneOf-members-open": ['{"orderId":"o1"}', '{"orderId":"o1","lines":[1]}'],  # read in the branch's pass
        "oneOf-members-extra": ['{"orderId":"o1"}'],  # the presence pass
    }
    for name, texts in cases.items():
        root = SCHEMAS[name]
        screen = leaf_screen(root, root["properties"]["data"], DecodeOptions(), JsonEngine)
        assert screen is not None, name
        assert screen(pa.array(texts)).all(), name
    # what it must leave to the per-value check
    root = SCHEMAS["oneOf-tagged"]
    screen = leaf_screen(root, root["properties"]["data"], DecodeOptions(), JsonEngine)
    assert not screen(pa.array(['{"meta":{"object":"charge"}}', '{"amount":1}', '{"object":"refund","reason":"B"}'])).any()
    root = SCHEMAS["oneOf-members"]
    screen = leaf_screen(root, root["properties"]["data"], DecodeOptions(), JsonEngine)
    # valid (created alone), but nothing the screen reads shows cancelled refuses it (its
    # additionalProperties does): the per-value check judges it
    assert not screen(pa.array(['{"orderId":"o","lines":[1]}'])).any()
