"""JSON Schema references across documents (issue 26): a schema split over several documents,
given as a registry's resolved references ``(name, text)``, maps, decodes and encodes exactly as
the same schema written in one document.

The schemas are our own: a small bike-rental invoice, laid out the ways real repositories split
theirs (names relative to each other, absolute ``$id``\\s, anchors, a bundle of ``$defs`` that each
carry an ``$id``, references from inside referenced documents).
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from connector.errors import SchemaMappingError
from connector.formats import DecodeOptions, EncodeOptions, build_decoder, build_encoder
from connector.formats.json_schema import bundle_schema
from connector.formats.json_schema._schema import parse_json_schema, schema_document
from connector.formats.json_schema._bundle import Registered
from registry import Schema, SchemaType
from wireformat import Framing, parse_frames

# -- one schema, written in one document ---------------------------------------------------------------
BUNDLED = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Invoice",
    "type": "object",
    "properties": {
        "invoiceId": {"type": "string"},
        "rider": {"$ref": "#/$defs/Rider"},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
        "total": {"$ref": "#/$defs/Money"},
    },
    "required": ["invoiceId"],
    "$defs": {
        "Money": {"type": "object", "properties": {"minor": {"type": "integer"},
                                                   "currency": {"enum": ["EUR", "GBP"]}},
                  "required": ["minor", "currency"]},
        "Rider": {"type": "object", "properties": {"name": {"type": "string"},
                                                   "home": {"$ref": "#/$defs/Address"}}},
        "Address": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}},
        "Line": {"type": "object", "properties": {"minutes": {"type": "integer"},
                                                  "price": {"$ref": "#/$defs/Money"}}},
    },
}
_DEFS = BUNDLED["$defs"]


def _root(**refs) -> dict:
    """The invoice with its property refs replaced."""
    out = json.loads(json.dumps({k: v for k, v in BUNDLED.items() if k != "$defs"}))
    out["properties"]["rider"] = {"$ref": refs["rider"]}
    out["properties"]["lines"]["items"] = {"$ref": refs["line"]}
    out["properties"]["total"] = {"$ref": refs["money"]}
    return out


def _with(d: dict, **props) -> dict:
    d = json.loads(json.dumps(d))
    for k, v in props.items():
        d["properties"][k] = v
    return d


def _layout_relative():
    """Names relative to each other; a referenced document refers on with a path of its own."""
    return _root(rider="people/rider.json", line="billing.json#/$defs/Line", money="billing.json#/$defs/Money"), (
        ("people/rider.json", _with(_DEFS["Rider"], home={"$ref": "address.json"})),
        ("people/address.json", _DEFS["Address"]),
        ("billing.json", {"$defs": {"Line": _with(_DEFS["Line"], price={"$ref": "#/$defs/Money"}),
                                    "Money": _DEFS["Money"]}}),
    )


def _layout_ids():
    """Absolute $ids that are not the reference names (found by $id), relative refs under an $id."""
    root = _root(rider="https://bikes.example/schemas/rider.json", line="line.json",
                 money="https://bikes.example/schemas/money.json")
    root["$id"] = "https://bikes.example/schemas/invoice.json"
    return root, (
        ("rider", {"$id": "https://bikes.example/schemas/rider.json", **_with(
            _DEFS["Rider"], home={"$ref": "address.json"})}),
        ("address", {"$id": "https://bikes.example/schemas/address.json", **_DEFS["Address"]}),
        ("line", {"$id": "https://bikes.example/schemas/line.json", **_with(
            _DEFS["Line"], price={"$ref": "money.json"})}),
        ("money", {"$id": "https://bikes.example/schemas/money.json", **_DEFS["Money"]}),
    )


def _layout_anchors():
    """Plain-name fragments: $anchor (2019-09+) and draft 7's $id: "#name"."""
    return _root(rider="people.json#rider", line="billing.json#line", money="billing.json#money"), (
        ("people.json", {"$defs": {"r": {"$anchor": "rider", **_with(_DEFS["Rider"], home={"$ref": "#addr"})},
                                   "a": {"$id": "#addr", **_DEFS["Address"]}}}),
        ("billing.json", {"$defs": {"l": {"$anchor": "line", **_with(_DEFS["Line"], price={"$ref": "#money"})},
                                    "m": {"$anchor": "money", **_DEFS["Money"]}}}),
    )


def _layout_embedded():
    """One document bundling several resources, each under $defs with its own $id: a `#/...`
    pointer inside one of them is relative to that resource, not to the document."""
    return _root(rider="urn:bikes:rider", line="urn:bikes:line", money="urn:bikes:money"), (
        ("catalog.json", {"$defs": {
            "rider": {"$id": "urn:bikes:rider", **_with(_DEFS["Rider"], home={"$ref": "#/$defs/where"}),
                      "$defs": {"where": _DEFS["Address"]}},
            "line": {"$id": "urn:bikes:line", **_with(_DEFS["Line"], price={"$ref": "urn:bikes:money"})},
            "money": {"$id": "urn:bikes:money", **_DEFS["Money"]},
        }}),
    )


LAYOUTS = {"relative": _layout_relative, "ids": _layout_ids, "anchors": _layout_anchors,
           "embedded": _layout_embedded}


def _refs(pairs) -> tuple:
    return tuple((name, json.dumps(doc)) for name, doc in pairs)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_split_schema_maps_to_the_bundled_schemas_type(layout):
    root, pairs = LAYOUTS[layout]()
    got = parse_json_schema(json.dumps(root), refs=_refs(pairs)).arrow
    assert got == parse_json_schema(json.dumps(BUNDLED)).arrow
    assert str(got) == ("struct<invoiceId: string, rider: struct<name: string, home: struct<city: string, "
                        "zip: string>>, lines: list<element: struct<minutes: int64, price: struct<minor: int64, "
                        "currency: string>>>, total: struct<minor: int64, currency: string>>")


PAYLOADS = [
    b'{"invoiceId": "i1", "rider": {"name": "Ada", "home": {"city": "Lyon", "zip": "69001"}}, '
    b'"lines": [{"minutes": 12, "price": {"minor": 240, "currency": "EUR"}}], '
    b'"total": {"minor": 240, "currency": "EUR"}}',
    b'{"invoiceId": "i2", "lines": []}',
    b'{"invoiceId": 3}',
]


def _decode(reader, payloads=PAYLOADS):
    decoder = build_decoder(reader, options=DecodeOptions())
    parsed = parse_frames(pa.array(payloads, pa.binary()), Framing.NONE)
    result = decoder.decode(parsed, lambda key: None)
    return decoder.arrow_type, result.values.to_pylist(), result.errors.to_pylist()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_registry_references_decode_to_the_bundled_schemas_rows(layout):
    root, pairs = LAYOUTS[layout]()
    refs = tuple((name, Schema(SchemaType.JSON, text, subject=f"s-{name}", version=1))
                 for name, text in _refs(pairs))
    registered = Schema(SchemaType.JSON, json.dumps(root), id=7, resolved_references=refs)
    bundled = Schema(SchemaType.JSON, json.dumps(BUNDLED), id=8)
    got, want = _decode(registered), _decode(bundled)
    assert got == want
    assert got[1][0]["rider"]["home"] == {"city": "Lyon", "zip": "69001"}
    assert got[2][2] is not None and got[1][2] is None  # the wrong-typed row is a row error


def test_writes_validate_against_the_referenced_schemas():
    root, pairs = _layout_ids()
    refs = tuple((name, Schema(SchemaType.JSON, text)) for name, text in _refs(pairs))
    schema = Schema(SchemaType.JSON, json.dumps(root), id=7, resolved_references=refs)
    money = {"minor": 100, "currency": "EUR"}
    good = {"invoiceId": "a", "rider": {"name": "Bo", "home": {"city": "Gent", "zip": "90000"}},
            "lines": [{"minutes": 5, "price": money}], "total": money}
    bad_zip = {**good, "rider": {"name": "Bo", "home": {"city": "Gent", "zip": "9000"}}}  # pattern in address
    bad_currency = {**good, "total": {"minor": 1, "currency": "USD"}}  # enum in money
    for fast in (True, False):
        encoder = build_encoder(schema, options=EncodeOptions(fast_path=fast))
        result = encoder.encode(pa.array([good, bad_zip, bad_currency], encoder.arrow_type))
        errors = result.errors.to_pylist()
        assert errors[0] is None and "zip" in errors[1] and "currency" in errors[2], (fast, errors)
        assert json.loads(result.payloads[0].as_py()) == good


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_recursion_across_references_is_cut_at_the_same_depth(depth):
    one = {"title": "Route", "type": "object",
           "properties": {"stop": {"type": "string"}, "legs": {"type": "array", "items": {"$ref": "#/$defs/Leg"}},
                          "detour": {"$ref": "#"}},
           "$defs": {"Leg": {"type": "object", "properties": {"km": {"type": "number"},
                                                              "then": {"$ref": "#/$defs/Leg"}}}}}
    split = {"title": "Route", "type": "object",
             "properties": {"stop": {"type": "string"}, "legs": {"type": "array", "items": {"$ref": "leg.json"}},
                            "detour": {"$ref": "#"}}}
    leg = {"type": "object", "properties": {"km": {"type": "number"}, "then": {"$ref": "leg.json"}}}
    want = parse_json_schema(json.dumps(one), max_depth=depth).arrow
    assert parse_json_schema(json.dumps(split), max_depth=depth, refs=(("leg.json", json.dumps(leg)),)).arrow == want
    with pytest.raises(SchemaMappingError, match="recursive"):
        parse_json_schema(json.dumps(split), max_depth=0, refs=(("leg.json", json.dumps(leg)),))


def test_a_schema_without_outside_references_is_left_as_it_is():
    assert schema_document(BUNDLED) is BUNDLED


def test_the_root_draft_is_kept_and_ids_are_left_out():
    root, pairs = _layout_ids()
    out = schema_document(json.dumps(root), _refs(pairs))
    assert out["$schema"] == BUNDLED["$schema"]
    assert "$id" not in json.dumps(out)


# -- what does not resolve -----------------------------------------------------------------------------
def test_an_unknown_reference_names_the_references_there_are():
    root, pairs = _layout_relative()
    with pytest.raises(SchemaMappingError, match=r"no schema reference is named 'billing.json'.*"
                                                 r"people/address.json, people/rider.json"):
        parse_json_schema(json.dumps(root), refs=_refs(pairs[:2]))


def test_without_references_an_outside_ref_is_a_mapping_error():
    with pytest.raises(SchemaMappingError, match="references: none"):
        parse_json_schema(json.dumps(_layout_relative()[0]))


def test_a_dangling_pointer_or_anchor_in_a_reference():
    root = {"type": "object", "properties": {"a": {"$ref": "x.json#/$defs/Nope"}, "b": {"$ref": "x.json#nope"}}}
    refs = (("x.json", json.dumps({"$defs": {}})),)
    with pytest.raises(SchemaMappingError, match="nothing at /\\$defs/Nope"):
        parse_json_schema(json.dumps(root), refs=refs)
    root["properties"].pop("a")
    with pytest.raises(SchemaMappingError, match="no anchor 'nope'"):
        parse_json_schema(json.dumps(root), refs=refs)


def test_a_cycle_of_pure_references_across_documents():
    root = {"type": "object", "properties": {"a": {"$ref": "a.json"}}}
    refs = (("a.json", '{"$ref": "b.json"}'), ("b.json", '{"$ref": "a.json#"}'))
    with pytest.raises(SchemaMappingError, match="cycle"):
        parse_json_schema(json.dumps(root), refs=refs)


def test_an_exponential_dag_of_references_is_capped():
    docs = {f"l{i}.json": {"type": "array", "items": [{"$ref": f"l{i + 1}.json"}, {"$ref": f"l{i + 1}.json"}]}
            for i in range(30)}
    docs["l30.json"] = {"type": "string"}
    with pytest.raises(SchemaMappingError, match="expands to more than 5000 nodes"):
        bundle_schema({"$ref": "l0.json"}, Registered(_refs(docs.items())), max_nodes=5000)


def test_a_reference_text_that_is_not_json():
    with pytest.raises(SchemaMappingError, match="reference 'x.json' is not valid JSON"):
        parse_json_schema('{"$ref": "x.json"}', refs=(("x.json", "{nope"),))
