"""JSON Schema validation on read, keyword by keyword and draft by draft, against python-jsonschema.

Each case is (schema, record, valid?) with the verdict written out as the drafts define it; the
test also asks python-jsonschema, so a case cannot disagree with the reference unnoticed. A
record the schema refuses is a row error that names the keyword and the JSON path (the first
error python-jsonschema reports, as its ``validate`` raises); a valid one decodes. Every case is
decoded among valid neighbours in one batch (the vectorized path: kernel flags, column checks),
and alone with the per-record reference path.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from connector.formats import DecodeOptions, build_decoder, decode_column
from connector.formats.json_schema._reference import Reference, validator_class
from tests.unit.decode.decode_helpers import Spec
from wireformat import Framing

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"


def obj(props, **kw):
    return {"type": "object", "properties": props, **kw}


S = {"type": "string"}
TAG_A = {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}}
TAG_B = {"type": "object", "properties": {"kind": {"enum": ["b"]}, "y": {"type": "string"}}}
TAG_C = {"type": "object", "properties": {"kind": {"const": "c"}, "y": {"type": "string"}}}
REQ_X = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
REQ_Y = {"type": "object", "properties": {"y": {"type": "integer"}}, "required": ["y"]}
I = {"type": "integer"}  # noqa: E741
N = {"type": "number"}

# (id, schema, record, valid, keyword named when invalid)
CASES = [
    # required, and what is not a required member
    ("required-present", obj({"a": I}, required=["a"]), {"a": 1}, True, None),
    ("required-missing", obj({"a": I, "b": S}, required=["a"]), {"b": "x"}, False, "required"),
    ("required-none-of-the-properties", obj({"a": I, "b": S}, required=["a"]), {"zz": 1}, False, "required"),
    ("no-required-none-of-the-properties", obj({"a": I, "b": S}), {"zz": 1}, True, None),
    ("required-null-allowed", obj({"a": {"type": ["integer", "null"]}}, required=["a"]), {"a": None}, True, None),
    ("required-null-refused", obj({"a": I}, required=["a"]), {"a": None}, False, "type"),
    ("required-not-a-property", obj({"a": I}, required=["x"]), {"a": 1}, False, "required"),
    ("required-not-a-property-present", obj({"a": I}, required=["x"]), {"a": 1, "x": [1]}, True, None),
    # type, per draft
    ("type-string", obj({"a": S}), {"a": 5}, False, "type"),
    ("type-null-refused", obj({"a": S}), {"a": None}, False, "type"),
    ("type-list-null", obj({"a": {"type": ["string", "null"]}}), {"a": None}, True, None),
    ("integer-2.0-draft7", {"$schema": D7, **obj({"a": I})}, {"a": 2.0}, True, None),
    ("integer-2.0-draft6", {"$schema": D6, **obj({"a": I})}, {"a": 2.0}, True, None),
    ("integer-2.0-draft4", {"$schema": D4, **obj({"a": I})}, {"a": 2.0}, False, "type"),
    ("integer-1.5", obj({"a": I}), {"a": 1.5}, False, "type"),
    ("number-takes-integer", obj({"a": N}), {"a": 3}, True, None),
    ("boolean", obj({"a": {"type": "boolean"}}), {"a": 1}, False, "type"),
    ("null-type", obj({"a": {"type": "null"}}), {"a": 0}, False, "type"),
    ("root-null-object", obj({"a": I}), None, False, "type"),
    ("union-of-types", obj({"a": {"type": ["integer", "string"]}}), {"a": True}, False, "type"),
    # enum, const (jsonschema's equality: 1 == 1.0, true != 1)
    ("enum-string", obj({"a": {"enum": ["x", "y"]}}), {"a": "z"}, False, "enum"),
    ("enum-string-ok", obj({"a": {"enum": ["x", "y"]}}), {"a": "y"}, True, None),
    ("enum-null-member", obj({"a": {"type": ["string", "null"], "enum": ["x", None]}}), {"a": None}, True, None),
    ("enum-null-not-member", obj({"a": {"type": ["string", "null"], "enum": ["x"]}}), {"a": None}, False, "enum"),
    ("enum-int-float", obj({"a": {"type": "integer", "enum": [1.0, 2]}}), {"a": 1}, True, None),
    ("enum-int-bool", obj({"a": {"type": "boolean", "enum": [1]}}), {"a": True}, False, "enum"),
    ("const-draft6", {"$schema": D6, **obj({"a": {"type": "string", "const": "k"}})}, {"a": "j"}, False, "const"),
    ("const-ignored-draft4", {"$schema": D4, **obj({"a": {"type": "string", "const": "k"}})}, {"a": "j"}, True,
     None),
    ("const-number", obj({"a": {"type": "number", "const": 0.5}}), {"a": 0.25}, False, "const"),
    # numeric bounds, per draft
    ("minimum", obj({"a": {"type": "integer", "minimum": 5}}), {"a": 4}, False, "minimum"),
    ("minimum-edge", obj({"a": {"type": "integer", "minimum": 5}}), {"a": 5}, True, None),
    ("maximum-float-bound-int", obj({"a": {"type": "integer", "maximum": 4.5}}), {"a": 5}, False, "maximum"),
    ("exclusiveMinimum-draft7", {"$schema": D7, **obj({"a": {"type": "number", "exclusiveMinimum": 0}})},
     {"a": 0}, False, "exclusiveMinimum"),
    ("exclusiveMaximum-draft4-bool", {"$schema": D4, **obj({"a": {"type": "number", "maximum": 5,
                                                                  "exclusiveMaximum": True}})},
     {"a": 5}, False, "maximum"),
    ("exclusiveMaximum-draft4-false", {"$schema": D4, **obj({"a": {"type": "number", "maximum": 5,
                                                                   "exclusiveMaximum": False}})},
     {"a": 5}, True, None),
    ("maximum-big-integer-in-number", obj({"a": {"type": "number", "maximum": 9007199254740992}}),
     {"a": 9007199254740993}, False, "maximum"),
    ("multipleOf-int", obj({"a": {"type": "integer", "multipleOf": 3}}), {"a": 10}, False, "multipleOf"),
    ("multipleOf-float-division", obj({"a": {"type": "number", "multipleOf": 0.01}}), {"a": 19.01}, False,
     "multipleOf"),
    ("multipleOf-float-ok", obj({"a": {"type": "number", "multipleOf": 0.5}}), {"a": 2.5}, True, None),
    # lengths count code points
    ("minLength", obj({"a": {"type": "string", "minLength": 2}}), {"a": "é"}, False, "minLength"),
    ("maxLength-code-points", obj({"a": {"type": "string", "maxLength": 2}}), {"a": "😀😀"}, True, None),
    ("maxLength-escapes", obj({"a": {"type": "string", "maxLength": 2}}), {"a": "\n\t\""}, False, "maxLength"),
    ("date-time-maxLength", obj({"a": {"type": "string", "format": "date-time", "maxLength": 10}}),
     {"a": "2024-01-01T00:00:00Z"}, False, "maxLength"),
    ("date-time-maxLength-ok", obj({"a": {"type": "string", "format": "date-time", "maxLength": 30}}),
     {"a": "2024-01-01T00:00:00Z"}, True, None),
    ("date-minLength-2", obj({"a": {"type": "string", "format": "date", "minLength": 11}}),
     {"a": "2024-01-01"}, False, "minLength"),
    # pattern: Python's re.search, as jsonschema ($ also before a final newline)
    ("pattern", obj({"a": {"type": "string", "pattern": "^[0-9]{4}$"}}), {"a": "12345"}, False, "pattern"),
    ("pattern-search", obj({"a": {"type": "string", "pattern": "[0-9]"}}), {"a": "ab1"}, True, None),
    ("pattern-final-newline", obj({"a": {"type": "string", "pattern": "^ab$"}}), {"a": "ab\n"}, True, None),
    ("pattern-unicode-digit", obj({"a": {"type": "string", "pattern": "^\\d$"}}), {"a": "٣"}, True, None),
    # arrays
    ("minItems", obj({"a": {"type": "array", "items": I, "minItems": 2}}), {"a": [1]}, False, "minItems"),
    ("maxItems", obj({"a": {"type": "array", "items": I, "maxItems": 2}}), {"a": [1, 2, 3]}, False, "maxItems"),
    ("items-type", obj({"a": {"type": "array", "items": I}}), {"a": [1, "x"]}, False, "type"),
    ("items-null", obj({"a": {"type": "array", "items": I}}), {"a": [1, None]}, False, "type"),
    ("uniqueItems-strings", obj({"a": {"type": "array", "items": S, "uniqueItems": True}}), {"a": ["x", "x"]},
     False, "uniqueItems"),
    ("uniqueItems-1-and-1.0", obj({"a": {"type": "array", "items": N, "uniqueItems": True}}), {"a": [1, 1.0]},
     False, "uniqueItems"),
    ("uniqueItems-zeros", obj({"a": {"type": "array", "items": N, "uniqueItems": True}}), {"a": [0.0, -0.0]},
     False, "uniqueItems"),
    ("uniqueItems-ok", obj({"a": {"type": "array", "items": I, "uniqueItems": True}}), {"a": [1, 2]}, True, None),
    ("uniqueItems-objects", obj({"a": {"type": "array", "items": obj({"k": I}), "uniqueItems": True}}),
     {"a": [{"k": 1}, {"k": 1}]}, False, "uniqueItems"),
    ("contains", {"$schema": D7, **obj({"a": {"type": "array", "items": I, "contains": {"minimum": 5}}})},
     {"a": [1, 2]}, False, "contains"),
    ("prefixItems", {"$schema": D2020, **obj({"a": {"type": "array", "prefixItems": [S]}})}, {"a": [1]}, False,
     "type"),
    # objects: members
    ("additionalProperties-false", obj({"a": I}, additionalProperties=False), {"a": 1, "b": 2}, False,
     "additionalProperties"),
    ("additionalProperties-false-ok", obj({"a": I}, additionalProperties=False), {"a": 1}, True, None),
    ("additionalProperties-schema", obj({"a": I}, additionalProperties=S), {"a": 1, "b": 2}, False, "type"),
    ("additionalProperties-schema-ok", obj({"a": I}, additionalProperties=S), {"a": 1, "b": "x"}, True, None),
    ("map-values", {"type": "object", "additionalProperties": I}, {"k": "x"}, False, "type"),
    ("patternProperties", obj({"a": I}, patternProperties={"^x": S}), {"a": 1, "xy": 2}, False, "type"),
    ("propertyNames", {"$schema": D7, **obj({"a": I}, propertyNames={"maxLength": 2})}, {"abc": 1}, False,
     "maxLength"),
    ("minProperties", obj({"a": I, "b": I}, minProperties=2), {"a": 1}, False, "minProperties"),
    ("maxProperties-map", {"type": "object", "additionalProperties": I, "maxProperties": 1}, {"a": 1, "b": 2},
     False, "maxProperties"),
    ("dependencies-draft7", {"$schema": D7, **obj({"a": I, "b": I}, dependencies={"a": ["b"]})}, {"a": 1},
     False, "dependencies"),
    ("dependentRequired-2019", {"$schema": D2019, **obj({"a": I, "b": I}, dependentRequired={"a": ["b"]})},
     {"a": 1}, False, "dependentRequired"),
    ("dependentRequired-ignored-draft7", {"$schema": D7, **obj({"a": I, "b": I}, dependentRequired={"a": ["b"]})},
     {"a": 1}, True, None),
    ("dependentSchemas", {"$schema": D2020, **obj({"a": I, "b": I},
                                                  dependentSchemas={"a": {"required": ["b"]}})}, {"a": 1},
     False, "required"),
    ("unevaluatedProperties", {"$schema": D2020, **obj({"a": I}, unevaluatedProperties=False)}, {"a": 1, "b": 2},
     False, "unevaluatedProperties"),
    # combinators
    ("oneOf-nullable-null", obj({"a": {"oneOf": [{"type": "null"}, obj({"k": I})]}}), {"a": None}, True, None),
    ("oneOf-nullable-both-take-null", obj({"a": {"oneOf": [{"type": "null"}, {"properties": {"k": I}}]}}),
     {"a": None}, False, "oneOf"),
    ("oneOf-objects-two-match", obj({"a": {"oneOf": [obj({"x": I}), obj({"y": I})]}}), {"a": {"x": 1}}, False,
     "oneOf"),
    ("oneOf-objects-one-match", obj({"a": {"oneOf": [obj({"x": I}, required=["x"]),
                                                    obj({"y": I}, required=["y"])]}}), {"a": {"x": 1}}, True, None),
    ("oneOf-types", obj({"a": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}), {"a": 1}, False, "oneOf"),
    ("oneOf-types-disjoint", obj({"a": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}), {"a": 1}, True,
     None),
    ("anyOf", obj({"a": {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]}}), {"a": 1}, False,
     "minimum"),
    # unions told apart by a member fixed per branch (only the named branch is checked)
    ("oneOf-tagged-named-branch-refuses", obj({"a": {"oneOf": [TAG_A, TAG_B]}}), {"a": {"kind": "a", "x": "s"}},
     False, "enum"),  # jsonschema's best match: the other branch's tag
    ("oneOf-tagged-unknown-tag", obj({"a": {"oneOf": [TAG_A, TAG_B]}}), {"a": {"kind": "c"}}, False, "oneOf"),
    ("oneOf-tagged-ok", obj({"a": {"oneOf": [TAG_A, TAG_B]}}), {"a": {"kind": "b", "y": "s"}}, True, None),
    ("oneOf-tagged-no-tag-matches-both", obj({"a": {"oneOf": [TAG_A, TAG_B]}}), {"a": {}}, False, "oneOf"),
    ("anyOf-tagged-no-tag", obj({"a": {"anyOf": [TAG_A, TAG_B]}}), {"a": {"x": 1}}, True, None),
    ("oneOf-const-ignored-draft4", {"$schema": D4, **obj({"a": {"oneOf": [TAG_A, TAG_C]}})}, {"a": {"kind": "a"}},
     False, "oneOf"),  # draft 4 has no const: both branches hold
    ("oneOf-by-required", obj({"a": {"oneOf": [REQ_X, REQ_Y]}}), {"a": {"x": 1}}, True, None),
    ("oneOf-by-required-both", obj({"a": {"oneOf": [REQ_X, REQ_Y]}}), {"a": {"x": 1, "y": 2}}, False, "oneOf"),
    ("oneOf-by-required-refused", obj({"a": {"oneOf": [REQ_X, REQ_Y]}}), {"a": {"x": "s"}}, False, "type"),
    ("anyOf-by-required-none", obj({"a": {"anyOf": [REQ_X, REQ_Y]}}), {"a": {"z": 1}}, False, "anyOf"),
    ("anyOf-tagged-by-ref", {"definitions": {"a": TAG_A, "b": TAG_B},
                             **obj({"a": {"anyOf": [{"$ref": "#/definitions/a"}, {"$ref": "#/definitions/b"}]}})},
     {"a": {"kind": "a", "x": 1.5}}, False, "enum"),
    ("allOf", obj({"a": {"allOf": [{"type": "integer"}, {"minimum": 5}]}}), {"a": 1}, False, "minimum"),
    ("not", obj({"a": {"type": "integer", "not": {"enum": [3]}}}), {"a": 3}, False, "not"),
    ("if-then-else", {"$schema": D7, **obj({"a": I, "b": I}, **{"if": {"required": ["a"]},
                                                                "then": {"required": ["b"]}})}, {"a": 1}, False,
     "required"),
    ("false-schema", obj({"a": False}), {"a": 1}, False, "false"),
    # $ref and its siblings, per draft
    ("ref-siblings-ignored-draft7", {"$schema": D7, "definitions": {"s": S},
                                     **obj({"a": {"$ref": "#/definitions/s", "maxLength": 1}})}, {"a": "long"},
     True, None),
    ("ref-siblings-apply-2020", {"$schema": D2020, "$defs": {"s": S},
                                 **obj({"a": {"$ref": "#/$defs/s", "maxLength": 1}})}, {"a": "long"}, False,
     "maxLength"),
    ("ref-required", {"definitions": {"o": obj({"k": I}, required=["k"])}, **obj({"a": {"$ref": "#/definitions/o"}})},
     {"a": {}}, False, "required"),
    # format is an annotation (no format checker): a bad email is valid
    ("format-not-asserted", obj({"a": {"type": "string", "format": "email"}}), {"a": "nope"}, True, None),
    # free-form (JSON-text) leaves carry their schema part
    ("free-form-required", obj({"a": {"type": ["object", "string"], "required": ["k"]}}), {"a": {}}, False,
     "required"),
    ("free-form-minLength", obj({"a": {"type": ["object", "string"], "minLength": 3}}), {"a": "ab"}, False,
     "minLength"),
]


def _decode(schema, records, fast=True, validate=True):
    options = DecodeOptions(fast_path=fast, validate_json=validate)
    dec = build_decoder(Spec("json", json.dumps(schema)), options=options)
    payloads = pa.array([json.dumps(r).encode() for r in records], pa.binary())
    res = decode_column(payloads, framing=Framing.NONE, decoder=dec)
    return res.values.to_pylist(), res.errors.to_pylist()


def _neighbour(schema):
    """A record of ``schema`` that is valid (every case's schema takes ``{}`` or ``{"a": ...}``)."""
    return {}


@pytest.mark.parametrize("name,schema,record,valid,keyword", CASES, ids=[c[0] for c in CASES])
def test_keyword(name, schema, record, valid, keyword):
    reference = validator_class(schema)(schema)
    assert reference.is_valid(record) is valid, "the case disagrees with python-jsonschema"
    for fast in (True, False):
        records = [_neighbour(schema), record, _neighbour(schema)] if fast else [record]
        vals, errs = _decode(schema, records, fast=fast)
        err = errs[1] if fast else errs[0]
        if fast and reference.is_valid({}):
            assert errs[0] is None and errs[2] is None, errs
        if valid:
            assert err is None, err
        else:
            assert err is not None and "not valid against its schema: " in err, (fast, err)
            assert f"'{keyword}'" in err, err
            assert (vals[1] if fast else vals[0]) is None


def test_the_message_is_jsonschemas_first_error_with_its_path():
    schema = obj({"items": {"type": "array", "items": obj({"sku": S, "qty": I}, required=["sku"])}})
    record = {"items": [{"sku": "a"}, {"sku": "b"}, {"sku": "c"}, {"qty": 1}]}
    _, errs = _decode(schema, [record])
    assert errs[0].endswith("not valid against its schema: $.items[3].sku: 'required' — 'sku' is a required "
                            "property")
    assert Reference(schema).why(record) == "$.items[3].sku: 'required' — 'sku' is a required property"


def test_a_name_that_is_not_an_identifier_is_quoted_in_the_path():
    schema = obj({"odd key": {"type": "array", "items": I}})
    _, errs = _decode(schema, [{"odd key": [1, "x"]}])
    assert "$['odd key'][1]: 'type'" in errs[0]


def test_without_validation_every_record_the_mapping_holds_decodes():
    schema = obj({"a": I}, required=["a"], additionalProperties=False)
    vals, errs = _decode(schema, [{"b": 1}, {"a": None}], validate=False)
    assert errs == [None, None] and vals == [{"a": None}, {"a": None}]


def test_a_value_the_column_cannot_hold_is_a_row_error_but_not_a_validation_error():
    """The schema takes any string; the mapping reads ``format: date-time`` as a timestamp."""
    schema = obj({"t": {"type": "string", "format": "date-time"}})
    assert validator_class(schema)(schema).is_valid({"t": "not a time"})
    _, errs = _decode(schema, [{"t": "not a time"}])
    assert errs[0] is not None and "not valid against its schema" not in errs[0]


def test_a_schema_its_meta_schema_refuses_fails_the_decoder_not_the_records():
    from connector.errors import SchemaMappingError

    with pytest.raises(SchemaMappingError, match="not valid under draft7"):
        build_decoder(Spec("json", json.dumps({"$schema": D7, "type": "object", "required": "a"})))


def test_the_option_reaches_the_decoder_on_every_path():
    """``jsonSchemaValidation`` is parsed by the option table: the source, peek and the CLI get it
    through ``SchemaRequest.from_options``, and so do the column functions (``from_registry``'s
    arguments are options of its scope in the same table)."""
    from connector.options import FROM_REGISTRY, parse_any, parse_arguments
    from connector.schema import SchemaRequest
    from connector.spark.functions import _request

    opts = parse_any({"asyncapi": "-", "channel": "-", "jsonSchemaValidation": "false"})
    assert SchemaRequest.from_options(opts).decode_options().validate_json is False
    assert SchemaRequest.from_options(parse_any({"asyncapi": "-", "channel": "-"})).decode_options().validate_json
    assert _request(parse_arguments(FROM_REGISTRY, {}, {"jsonSchemaValidation": "false"})).validate_json is False
    assert _request(parse_arguments(FROM_REGISTRY, {})).validate_json is True  # on by default
