"""JSON Schema encoding: the vectorized path ≡ the per-record reference (jsonschema-validated),
and what we write validates, parses with json.loads and decodes back with our decoder."""
from __future__ import annotations

import datetime as dt
import json

import jsonschema
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions, build_decoder
from connector.formats import EncodeOptions, build_encoder
from tests.unit.encode.encode_helpers import UTC, Spec
from wireformat import frame_payloads, parse_frames


def _scalar():
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("integer")},
                              optional={"minimum": st.integers(-5, 5), "maximum": st.integers(-5, 50),
                                        "exclusiveMinimum": st.integers(-5, 5)}),
        st.fixed_dictionaries({"type": st.just("number")}, optional={"maximum": st.floats(-10, 10)}),
        st.fixed_dictionaries({"type": st.just("string")},
                              optional={"minLength": st.integers(0, 3), "maxLength": st.integers(0, 6),
                                        "pattern": st.sampled_from(["^a", "b+", "[0-9]"])}),
        st.just({"type": "string", "enum": ["A", "B", "c\"q"]}),
        st.just({"type": "boolean"}),
        st.just({"type": "string", "format": "date-time"}),
        st.just({"type": "string", "format": "date"}),
        st.just({"type": ["integer", "null"]}),
        st.just({"type": "string", "format": "date-time", "maxLength": 27, "pattern": "^1"}),
        st.just({"type": "string", "format": "date", "minLength": 11}),
        # free-form leaves: anything, a union of types, objects of either shape
        st.just({}),
        st.just({"type": ["integer", "string"]}),
        st.just({"type": ["object", "null"], "description": "a free-form object"}),
        st.just({"type": ["number", "boolean"]}),
        st.just({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]},
                           {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                            "additionalProperties": False}]}),
    )


def _schema(depth=2):
    if depth == 0:
        return _scalar()
    inner = _schema(depth - 1)
    return st.one_of(
        _scalar(),
        st.builds(lambda it, lo: {"type": "array", "items": it, **({"minItems": lo} if lo else {})},
                  inner, st.integers(0, 2)),
        st.builds(lambda it: {"type": "array", "items": it, "uniqueItems": True},
                  st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": ["boolean", "null"]},
                                   {"type": "string", "format": "date"}])),
        st.builds(lambda v: {"type": "object", "additionalProperties": v}, inner),
        _object(inner),
        # the nullable-type pattern, and allOf, over any of the above
        st.builds(lambda x: {"oneOf": [{"type": "null"}, x]}, inner),
        st.builds(lambda x: {"anyOf": [x, {"type": "null"}]}, inner),
        st.builds(lambda x: {"oneOf": [x, {"type": "null"}, {"type": "null"}]}, inner),
        st.builds(lambda o: {**o, "allOf": [{"required": sorted(o["properties"])[:1]}]}, _object(inner)),
    )


def _object(inner):
    @st.composite
    def obj(draw):
        props = draw(st.dictionaries(st.sampled_from(["a", "b", "c\"x", "d\\y", "é"]), inner, min_size=1,
                                     max_size=4))
        req = draw(st.lists(st.sampled_from(sorted(props)), unique=True, max_size=2))
        closed = draw(st.booleans()) and draw(st.booleans())
        return {"type": "object", "properties": props, **({"required": req} if req else {}),
                **({"additionalProperties": False} if closed else {})}
    return obj()


def _value(n):
    k = n.kind
    if k == "struct":
        return st.one_of(st.none(), st.fixed_dictionaries({name: _value(t) for name, t in n.fields}))
    if k == "list":
        return st.one_of(st.none(), st.lists(_value(n.items), max_size=3))
    if k == "map":
        return st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=3), _value(n.items)), max_size=3,
                                             unique_by=lambda kv: kv[0]))
    base = {"int": st.integers(-10, 60), "float": st.floats(-20, 20),
            "string": st.one_of(st.text(max_size=7), st.sampled_from(["A", "B", "c\"q", "ab", "bb1"])),
            "bool": st.booleans(),
            "timestamp": st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
                                      timezones=st.just(UTC)),
            "date": st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)),
            "json": st.sampled_from(['{"k": "a"}', '{"n": 2}', '{"n": 2, "k": "a"}', '{"n": "x"}', "null",
                                     "1", '"s"', "[1, {\"a\": null}]", "not json", " 7 ", "1.50",
                                     '{"k": "a", "n": 1}', "NaN", '{"n": 3.0}'])}[k]
    return st.one_of(st.none(), base)


@st.composite
def case(draw):
    from connector.formats.json_schema._schema import parse_json_schema

    schema = draw(_object(_schema(2)))
    draft = draw(st.sampled_from([None, "http://json-schema.org/draft-07/schema#",
                                  "http://json-schema.org/draft-06/schema#"]))
    if draft:  # a named draft 6/7: free-form parts are checked by fastjsonschema, else jsonschema
        schema["$schema"] = draft
    node = parse_json_schema(json.dumps(schema))
    rows = draw(st.lists(_value(node), max_size=6))
    return schema, rows


@settings(max_examples=int(__import__('os').environ.get('HX','200')), deadline=None, suppress_health_check=list(HealthCheck))
@given(case())
def test_vectorized_equals_reference_and_validates(c):
    schema, rows = c
    spec = Spec("json", schema)
    fast = build_encoder(spec)
    ref = build_encoder(spec, options=EncodeOptions(fast_path=False))
    assert fast._state().json.plan is not None  # these schemas are all vectorizable
    arr = pa.array(rows, fast.arrow_type)
    got, want = fast.encode(arr), ref.encode(arr)
    assert [e is None for e in got.errors.to_pylist()] == [e is None for e in want.errors.to_pylist()], \
        (got.errors.to_pylist(), want.errors.to_pylist())
    loads = lambda ps: [None if p is None else json.loads(p) for p in ps.to_pylist()]
    assert loads(got.payloads) == loads(want.payloads)
    ok = [p is not None for p in got.payloads.to_pylist()]
    for doc in loads(got.payloads):
        if doc is not None:
            jsonschema.validate(doc, schema)
    # the project's decoder reads back what we wrote (rows that encoded)
    dec = build_decoder(spec, options=DecodeOptions())
    frames = parse_frames(frame_payloads(got.payloads, "confluent", 1).values, "confluent")
    back = dec.decode(frames, lambda key: None).values.to_pylist()
    for r, b, good in zip(arr.to_pylist(), back, ok):
        if good:
            assert _same_json(fast._state().json.node, b) == _same_json(fast._state().json.node, r)


def _same_json(n, v):
    """A value with its free-form leaves parsed (their text is written back compact)."""
    if v is None:
        return None
    if n.kind == "json":
        return json.loads(v)
    if n.kind == "struct":
        return {name: _same_json(t, v.get(name)) for name, t in n.fields}
    if n.kind == "list":
        return [_same_json(n.items, x) for x in v]
    if n.kind == "map":
        return [(k, _same_json(n.items, x)) for k, x in v]
    return v


def test_errors_name_the_path_and_nan_is_a_row_error():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0},
                                               "x": {"type": "number"},
                                               "s": {"type": "array", "items": {"type": "string"}}},
              "required": ["n"]}
    enc = build_encoder(Spec("json", schema))
    rows = [{"n": 1, "x": 1.5, "s": ["a"]}, {"n": -1, "x": 0.0, "s": []}, {"n": None, "x": None, "s": None},
            {"n": 2, "x": float("nan"), "s": None}, {"n": 3, "x": None, "s": ["a", None]}, None]
    res = enc.encode(pa.array(rows, enc.arrow_type))
    errs = res.errors.to_pylist()
    assert errs[0] is None and errs[5] is None and res.payloads[5].as_py() is None
    assert "value/n" in errs[1] and "minimum" in errs[1]
    assert "'n' is a required property" in errs[2]
    assert "NaN" in errs[3] or "nan" in errs[3]
    assert errs[4] is not None
    assert json.loads(res.payloads[0].as_py()) == {"n": 1, "x": 1.5, "s": ["a"]}


def test_unplannable_schemas_go_per_row_and_still_validate():
    schema = {"type": "object", "properties": {"v": {"type": "integer", "multipleOf": 3},
                                               "free": {}}}
    enc = build_encoder(Spec("json", schema))
    assert enc._state().json.plan is None
    res = enc.encode(pa.array([{"v": 3, "free": '{"a": [1]}'}, {"v": 4, "free": None}], enc.arrow_type))
    assert json.loads(res.payloads[0].as_py()) == {"v": 3, "free": {"a": [1]}}
    assert "multiple of 3" in res.errors[1].as_py()


def test_asyncapi_annotations_do_not_leave_the_vectorized_path():
    schema = {"type": "object", "x-parser-schema-id": "Order", "discriminator": "kind",
              "properties": {"kind": {"type": "string", "x-foo": 1, "examples": ["a"]}}}
    enc = build_encoder(Spec("json", schema))
    assert enc._state().json.plan is not None
    assert enc.encode(pa.array([{"kind": "a"}], enc.arrow_type)).payloads.to_pylist() == [b'{"kind":"a"}']


def test_arrow_type_is_the_decoders_for_every_format():
    from tests.unit.encode.test_protobuf_encode import PROTO3

    for spec in (Spec("json", {"type": "object", "properties": {"t": {"type": "string", "format": "date-time"},
                                                               "m": {"additionalProperties": {"type": "integer"}}}}),
                 Spec("protobuf", PROTO3, "t.All")):
        assert build_encoder(spec).arrow_type == build_decoder(spec).arrow_type


NULLABLE_REQUIRED = {"type": "object", "required": ["carrier", "eta", "dest", "n"], "properties": {
    "carrier": {"type": ["string", "null"]},
    "eta": {"type": ["string", "null"], "format": "date-time"},
    "dest": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {"city": {"type": "string"}}}]},
    "n": {"type": "integer"},
    "note": {"type": "string"}}}


def test_nullable_required_properties_are_written_as_null():
    """A property both required and nullable takes null (issue 24: it was refused as missing);
    a required one that is not nullable is a row error naming it; an optional null is left out."""
    for fast in (True, False):
        enc = build_encoder(Spec("json", NULLABLE_REQUIRED), options=EncodeOptions(fast_path=fast))
        rows = [{"carrier": None, "eta": None, "dest": None, "n": 1, "note": None},
                {"carrier": "dhl", "eta": dt.datetime(2024, 5, 1, tzinfo=UTC), "dest": {"city": "Oslo"}, "n": 2,
                 "note": "x"},
                {"carrier": None, "eta": None, "dest": None, "n": None, "note": None}]
        res = enc.encode(pa.array(rows, enc.arrow_type))
        errs = res.errors.to_pylist()
        assert errs[:2] == [None, None], (fast, errs)
        docs = [json.loads(p) for p in res.payloads.to_pylist()[:2]]
        assert docs[0] == {"carrier": None, "eta": None, "dest": None, "n": 1}
        for d in docs:
            jsonschema.validate(d, NULLABLE_REQUIRED)
        assert "value/n: null is not allowed: 'n' is a required property" in errs[2], (fast, errs[2])
        assert res.payloads[2].as_py() is None


def test_numbers_keep_their_fraction_and_sign():
    """-0.0 and 394.0 are written as JSON readers read them back as the same floats (Arrow's
    text '-0' / '394' came back as the integer 0 / 394, the sign of -0.0 lost)."""
    schema = {"type": "object", "properties": {"x": {"type": "number"}}}
    for fast in (True, False):
        enc = build_encoder(Spec("json", schema), options=EncodeOptions(fast_path=fast))
        res = enc.encode(pa.array([{"x": -0.0}, {"x": 394.0}, {"x": 1e16}, {"x": 2.5}], enc.arrow_type))
        got = [json.loads(p)["x"] for p in res.payloads.to_pylist()]
        assert [(type(v), repr(v)) for v in got] == [(float, "-0.0"), (float, "394.0"), (float, "1e+16"),
                                                     (float, "2.5")], fast


def _corpus_json():
    from benchmarks.corpus._gen import cases

    return [c for c in cases() if c.fmt == "json"]


@pytest.mark.parametrize("case", _corpus_json(), ids=lambda c: c.name)
def test_corpus_schemas_encode_column_wise_as_the_reference_does(case):
    """Every corpus JSON Schema (oneOf/anyOf, uniqueItems, free-form values, $ref roots) takes the
    vectorized path, and it accepts, refuses and writes exactly what the per-record path does."""
    from benchmarks.corpus._gen import generate
    from benchmarks.corpus_bench import UNIQUE

    batch = generate(case, UNIQUE, seed=1)
    rows = build_decoder(case.spec, options=case.options).decode(
        parse_frames(batch.values, "confluent"), batch.lookup).values
    opts = dict(max_recursion_depth=case.options.max_recursion_depth)
    fast = build_encoder(case.spec, options=EncodeOptions(**opts))
    ref = build_encoder(case.spec, options=EncodeOptions(fast_path=False, **opts))
    assert fast._state().json.plan is not None
    got, want = fast.encode(rows), ref.encode(rows)
    assert [e is None for e in got.errors.to_pylist()] == [e is None for e in want.errors.to_pylist()]
    loads = lambda ps: [None if p is None else json.loads(p) for p in ps.to_pylist()]
    assert loads(got.payloads) == loads(want.payloads)  # floats may be spelled differently
    assert got.errors.null_count > 0  # some rows of each schema are valid
