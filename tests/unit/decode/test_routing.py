"""Several message types on one channel without schema ids (issue 37): each record goes to its own
message by its type header, else by the one schema that accepts it; anything else is a row error.

Before this, every record of such a channel was decoded as the channel's first message."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.decode.decode_helpers import avro_bytes
from tests.unit.decode.routing_helpers import (
    A,
    B,
    decoder_of,
    document,
    headers_column,
    plan_of,
    read,
    typed,
    which,
)

from connector.errors import AsyncApiDocumentError
from connector.formats import TYPE_HEADERS, Claim, RouteHeader, Routing
from wireformat import Framing


# -- Spring's __TypeId__ -----------------------------------------------------------------------------
def test_spring_type_id_routes_each_record_to_its_message():
    dec = decoder_of(document({"A": A, "B": B}, typed("__TypeId__", A="com.acme.A", B="com.acme.B")))
    values, errors = read(dec, [{"foo": "x"}, {"foo": 1}, {"bar": True}, {}],
                          [[("__TypeId__", "com.acme.A")], [("__TypeId__", "com.acme.B")],
                           [("__TypeId__", "com.acme.B")], [("__TypeId__", "com.acme.A")]])
    assert [which(v) for v in values] == ["A", "B", "B", "A"]
    assert values[0]["A"] == {"foo": "x"} and values[1]["B"] == {"foo": 1, "bar": None}
    assert errors == [None] * 4


def test_a_record_is_decoded_only_with_the_schema_its_header_names():
    """{"foo": 1} is B's; with A's header it is A's row error, never a B row nor A with a null."""
    dec = decoder_of(document({"A": A, "B": B}, typed("__TypeId__", A="com.acme.A", B="com.acme.B")))
    values, errors = read(dec, [{"foo": 1}], [[("__TypeId__", "com.acme.A")]])
    assert values == [None] and errors[0] is not None


def test_an_unknown_type_named_by_a_documented_header_is_a_row_error():
    dec = decoder_of(document({"A": A, "B": B}, typed("__TypeId__", A="com.acme.A", B="com.acme.B")))
    values, errors = read(dec, [{"foo": "x"}], [[("__TypeId__", "com.acme.Refund")]])
    assert values == [None]
    assert "__TypeId__='com.acme.Refund' names none of the channel's messages ['A', 'B']" in errors[0]
    assert "'com.acme.A'" in errors[0]


def test_the_last_occurrence_of_a_header_counts_and_json_quoted_values_are_unquoted():
    dec = decoder_of(document({"A": A, "B": B}, typed("__TypeId__", A="com.acme.A", B="com.acme.B")))
    values, errors = read(dec, [{"foo": 1}, {"foo": "x"}],
                          [[("__TypeId__", "com.acme.A"), ("x", "y"), ("__TypeId__", "com.acme.B")],
                           [("__TypeId__", '"com.acme.A"')]])
    assert [which(v) for v in values] == ["B", "A"] and errors == [None, None]


def test_a_declared_type_header_without_values_names_each_message_by_its_names():
    """springwolf's AnotherPayloadDto declares __TypeId__ without a value: its name is the value."""
    headers = {"A": {"type": "object", "properties": {"__TypeId__": {"type": "string"}}},
               "B": typed("__TypeId__", B="com.acme.B")["B"]}
    dec = decoder_of(document({"com.acme.A": A, "B": B}, {"com.acme.A": headers["A"], "B": headers["B"]}))
    values, errors = read(dec, [{"foo": "x"}, {"foo": "y"}, {"foo": 2}],
                          [[("__TypeId__", "com.acme.A")], [("__TypeId__", "A")], [("__TypeId__", "com.acme.B")]])
    assert [which(v) for v in values] == ["com.acme.A", "com.acme.A", "B"] and errors == [None] * 3


# -- CloudEvents -------------------------------------------------------------------------------------
@pytest.mark.parametrize("header", ["ce_type", "ce-type"])
def test_cloudevents_type_routes(header):
    dec = decoder_of(document({"A": A, "B": B}, typed(header, A="com.acme.a.v1", B=["com.acme.b.v1", "com.acme.b.v2"])))
    values, errors = read(dec, [{"foo": "x"}, {"foo": 3}, {"foo": 4}, {"foo": 5}],
                          [[(header, "com.acme.a.v1")], [(header, "com.acme.b.v2")], [(header, "com.acme.b.v1")],
                           [(header, "com.acme.c.v1")]])
    assert [which(v) for v in values] == ["A", "B", "B", None]
    assert errors[:3] == [None] * 3 and "names none of the channel's messages" in errors[3]


def test_undocumented_type_headers_match_message_names_and_otherwise_leave_it_to_validation():
    """No headers schema at all: ce_type / __TypeId__ values that are message names route; others
    do not count (validation decides), since the document never said what the values are."""
    dec = decoder_of(document({"OrderA": A, "OrderB": B}))
    assert [h.name for h in dec.routing.headers] == list(TYPE_HEADERS) and not dec.routing.documented
    values, errors = read(dec, [{}, {}, {"foo": "x"}, {}],
                          [[("ce_type", "OrderB")], [("__TypeId__", "com.shop.OrderA")],
                           [("ce_type", "com.shop.Refund")], [("ce_type", "com.shop.Refund")]])
    assert [which(v) for v in values] == ["OrderB", "OrderA", "OrderA", None]
    assert errors[:3] == [None] * 3 and "fits several of the channel's messages" in errors[3]


# -- any header the document fixes per message ----------------------------------------------------------
def test_a_header_every_message_fixes_routes():
    headers = {"A": {"type": "object", "properties": {"eventType": {"const": "a"}, "v": {"const": "1"}}},
               "B": {"type": "object", "properties": {"eventType": {"enum": ["b", "b2"]}, "v": {"const": "1"}}}}
    plan = plan_of(document({"A": A, "B": B}, headers))
    assert [h.name for h in plan.routing.documented] == ["eventType"]  # v is "1" everywhere: no type
    dec = decoder_of(document({"A": A, "B": B}, headers))
    values, errors = read(dec, [{"foo": 1}, {"foo": "z"}, {"foo": "z"}],
                          [[("eventType", "b2"), ("v", "1")], [("eventType", "a")], [("eventType", "c")]])
    assert [which(v) for v in values] == ["B", "A", None]
    assert "eventType='c' names none" in errors[2]


def test_a_header_only_some_messages_fix_is_not_a_type_header():
    headers = {"A": {"type": "object", "properties": {"my_uuid": {"enum": ["0000"]}}}}
    plan = plan_of(document({"A": A, "B": B}, headers))
    assert plan.routing.documented == ()


# -- no header: the one schema that accepts the record ---------------------------------------------------
def test_without_a_header_the_one_accepting_schema_decides():
    dec = decoder_of(document({"A": A, "B": B}))
    values, errors = read(dec, [{"foo": "x"}, {"foo": 7, "bar": False}, {}, {"foo": [1]}, b"not json", None])
    assert [which(v) for v in values[:2]] == ["A", "B"]
    assert values[0]["A"] == {"foo": "x"} and values[1]["B"] == {"foo": 7, "bar": False}
    assert values[2:] == [None] * 4
    assert errors[:2] == [None, None]
    assert "fits several of the channel's messages ['A', 'B']" in errors[2]
    assert "fits none of the channel's messages ['A', 'B'] (A: " in errors[3] and "; B: " in errors[3]
    assert "fits none" in errors[4]
    assert errors[5] is None  # a tombstone stays a null value without an error


def test_a_header_value_several_messages_share_leaves_the_choice_to_validation():
    dec = decoder_of(document({"A": A, "B": B}, typed("__TypeId__", A=["shared", "a"], B=["shared"])))
    values, errors = read(dec, [{"foo": "x"}, {"foo": 1}, {}], [[("__TypeId__", "shared")]] * 3)
    assert [which(v) for v in values] == ["A", "B", None]
    assert "header __TypeId__: the record fits several" in errors[2]


# -- Avro and Protobuf: a binary payload cannot be tried --------------------------------------------------
AVRO_A = {"type": "record", "name": "A", "namespace": "ev", "fields": [{"name": "x", "type": "long"}]}
AVRO_B = {"type": "record", "name": "B", "namespace": "ev", "fields": [{"name": "y", "type": "string"}]}
AVRO = "application/vnd.apache.avro+json;version=1.9.0"


def test_avro_without_ids_is_routed_by_its_documented_header():
    dec = decoder_of(document({"A": AVRO_A, "B": AVRO_B}, typed("__TypeId__", A="ev.A", B="ev.B"), fmt=AVRO))
    values, errors = read(dec, [avro_bytes(AVRO_B, {"y": "q"}), avro_bytes(AVRO_A, {"x": 3}),
                                avro_bytes(AVRO_A, {"x": 3}), avro_bytes(AVRO_A, {"x": 3})],
                          [[("__TypeId__", "ev.B")], [("__TypeId__", "ev.A")], None, [("__TypeId__", "ev.C")]])
    assert values[:2] == [{"A": None, "B": {"y": "q"}}, {"A": {"x": 3}, "B": None}]
    assert values[2:] == [None, None]
    assert "avro payloads cannot be told apart by trying their schemas" in errors[2]
    assert "names none of the channel's messages" in errors[3]


def test_avro_declared_type_header_uses_the_record_full_name():
    declared = {"type": "object", "properties": {"__TypeId__": {"type": "string"}}}
    dec = decoder_of(document({"a": AVRO_A, "b": AVRO_B}, {"a": declared, "b": declared}, fmt=AVRO))
    values, errors = read(dec, [avro_bytes(AVRO_B, {"y": "q"})], [[("__TypeId__", "ev.B")]])
    assert values == [{"a": None, "b": {"y": "q"}}] and errors == [None]


@pytest.mark.parametrize("headers", [None, typed("x-kind", A="a")], ids=["no headers", "one message's header"])
def test_avro_without_ids_and_without_a_type_header_is_refused_at_planning(headers):
    doc = document({"A": AVRO_A, "B": AVRO_B}, headers, fmt=AVRO)
    with pytest.raises(AsyncApiDocumentError) as e:
        decoder_of(doc)
    assert "cannot be told apart by trying the schemas" in str(e.value) and "__TypeId__" in str(e.value)
    assert e.value.path == "channels.mixed.messages.A.headers"
    decoder_of(doc, Framing.CONFLUENT)  # with schema ids the registry tells them apart


PROTO = 'syntax = "proto3"; package ev; message PA { int64 x = 1; } message PB { string y = 1; }'


def test_protobuf_without_ids_is_refused_unless_a_header_tells_the_messages_apart():
    fmt = "application/vnd.google.protobuf;version=3"
    payloads = {"PA": PROTO, "PB": PROTO}
    with pytest.raises(AsyncApiDocumentError):
        decoder_of(document(payloads, fmt=fmt))
    dec = decoder_of(document(payloads, typed("ce_type", PA="ev.PA", PB="ev.PB"), fmt=fmt))
    from google.protobuf import descriptor_pb2  # noqa: F401 - protobuf is there
    values, errors = read(dec, [b"\x0a\x01q"], [[("ce_type", "ev.PB")]])
    assert values == [{"PA": None, "PB": {"y": "q"}}] and errors == [None]


# -- the table: one owner, picklable, vectorized = a scalar reference -------------------------------------
def test_the_table_is_part_of_the_plan_and_pickles():
    plan = plan_of(document({"A": A, "B": B}, typed("__TypeId__", A="com.acme.A", B="com.acme.B")))
    again = pickle.loads(pickle.dumps(plan))
    assert again.routing == plan.routing and again.routing.header_for("B") == ("__TypeId__", "com.acme.B")
    dec = pickle.loads(pickle.dumps(decoder_of(document({"A": A, "B": B}, typed("__TypeId__", A="a", B="b")))))
    assert dec.routes_by_header and read(dec, [{"foo": 1}], [[("__TypeId__", "b")]])[0] == [{"A": None,
                                                                                           "B": {"foo": 1, "bar": None}}]


def test_message_option_keeps_the_table_of_the_whole_channel():
    plan = plan_of(document({"A": A, "B": B}, typed("__TypeId__", A="com.acme.A", B="com.acme.B")), message="B")
    assert [m.name for m in plan.value_messages] == ["B"]
    assert plan.routing.messages == ("A", "B") and plan.routing.header_for("B") == ("__TypeId__", "com.acme.B")


_KEYS = ["__TypeId__", "ce_type", "kind", "other"]
_VALUES = [b"a", b"b", b"shared", b"zzz", b'"a"', b"x.y.a", b" a ", b"\xff\xfea", b'"\\"', None]


def _reference(routing: Routing, row):
    """One record's verdict, the obvious way: the headers in order, the last occurrence of each."""
    for h in routing.headers:
        vals = [v for k, v in (row or []) if k == h.name]
        if not vals or vals[-1] is None:
            continue  # a header without a value says nothing: as if absent
        text = vals[-1].decode("utf-8", "replace").strip()
        if text is not None and text.startswith('"') and text.endswith('"') and len(text) >= 2:
            try:
                text = json.loads(text)
            except ValueError:
                pass
        found = h.candidates(text)
        if found:
            return found, False
        if h.documented:
            return (), True
    return routing.messages, False


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(_KEYS),
                                                        st.sampled_from(_VALUES)), max_size=4)),
                max_size=25),
       st.booleans(), st.booleans())
def test_vectorized_assignment_equals_a_scalar_reference(rows, documented, with_kind):
    headers = [RouteHeader("__TypeId__", documented, (Claim("a", "A", "const", ""), Claim("shared", "A", "enum", ""),
                                                      Claim("shared", "B", "enum", ""), Claim("b", "B", "name", "")))]
    if with_kind:
        headers.append(RouteHeader("kind", True, (Claim("b", "B", "const", ""), Claim("a", "A", "const", ""))))
    headers.append(RouteHeader("ce_type", False, (Claim("x.y.a", "A", "name", ""), Claim("b", "B", "name", ""))))
    routing = Routing(("A", "B"), tuple(headers))
    got: dict[int, tuple] = {}
    for route in routing.assign(headers_column(rows), len(rows)):
        for r in route.rows.tolist():
            assert r not in got
            got[r] = (route.candidates, route.error is not None)
    assert sorted(got) == list(range(len(rows)))
    assert [got[i] for i in range(len(rows))] == [_reference(routing, row) for row in rows]


def test_assignment_of_a_sliced_headers_column():
    routing = Routing(("A", "B"), (RouteHeader("k", True, (Claim("a", "A", "const", ""), Claim("b", "B", "const", ""))),))
    col = headers_column([[("k", "b")], [("k", "a")], None, [("k", "b")]]).slice(1)
    routes = {r.candidates: r.rows.tolist() for r in routing.assign(col, 3)}
    assert routes == {("A", "B"): [1], ("A",): [0], ("B",): [2]}
    assert np.array_equal(np.sort(np.concatenate([np.asarray(v) for v in routes.values()])), np.arange(3))
    assert routing.assign(pa.chunked_array([col]), 3)[0].rows.tolist() == [1]


# -- the option 'message': one message of several ------------------------------------------------------
def test_reading_one_message_of_several_refuses_records_another_type_header_names():
    """message=B: a record whose __TypeId__ names A is a row error, never decoded with B's schema
    (as a Protobuf record of another message is); B's records, and records without a header, are B."""
    from connector.schema import SchemaRequest, value_decoder

    doc = document({"A": A, "B": B}, typed("__TypeId__", A="com.acme.A", B="com.acme.B"))
    dec = value_decoder(SchemaRequest(), plan=plan_of(doc, message="B"), registry=None, framing=Framing.NONE)
    assert dec.routes_by_header and pickle.loads(pickle.dumps(dec)).kept == "B"
    values, errors = read(dec, [{"foo": 1}, {"foo": 2}, {"foo": 3}, {"foo": 4}, None],
                          [[("__TypeId__", "com.acme.B")], [("__TypeId__", "com.acme.A")], None,
                           [("__TypeId__", "com.acme.C")], [("__TypeId__", "com.acme.A")]])
    assert values == [{"foo": 1, "bar": None}, None, {"foo": 3, "bar": None}, None, None]
    assert errors[0] is None and errors[2] is None and errors[4] is None  # a tombstone is no record of A
    assert "header __TypeId__: the record is A, and this read keeps B (option 'message')" in errors[1]
    assert "names none of the channel's messages" in errors[3]
    one = value_decoder(SchemaRequest(), plan=plan_of(document({"B": B}, typed("__TypeId__", B="x"))),
                        registry=None, framing=Framing.NONE)
    assert not one.routes_by_header  # a channel of one message has nothing to tell apart


# -- with JSON Schema validation on read (issue 37 item 1) -------------------------------------------
def test_validation_tells_apart_messages_by_required_properties_and_enums():
    """The issue's reproduction: A (required foo) and B (required someString, an enum): each record
    goes to the one message whose schema accepts it; a record of neither is a row error."""
    a = {"type": "object", "title": "A", "required": ["foo"], "properties": {"foo": {"type": "string"}}}
    b = {"type": "object", "title": "B", "required": ["someString"],
         "properties": {"someString": {"type": "string"}, "kind": {"enum": ["X", "Y"]}}}
    dec = decoder_of(document({"A": a, "B": b}))
    values, errors = read(dec, [{"foo": "x"}, {"someString": "s", "kind": "X"}, {"someString": "s", "kind": "Z"},
                                {"bar": 1}])
    assert [which(v) for v in values] == ["A", "B", None, None]
    assert errors[:2] == [None, None] and "fits none" in errors[2] and "fits none" in errors[3]


def test_springwolf_records_without_headers_route_by_their_required_properties():
    """Without headers, springwolf's MonetaryAmount (no `required`, any other property allowed)
    accepts every object: a record goes to another message only when MonetaryAmount rejects it,
    else the other candidates' `required` decide (python-jsonschema agrees: checked here)."""
    import json as _json
    import pathlib

    import jsonschema

    from connector.asyncapi import load_document, plan_read
    from connector.schema import SchemaRequest, value_decoder

    path = pathlib.Path("/work/shared/asyncapi-examples/springwolf-kafka-example-3.1.yaml")
    if not path.exists():
        pytest.skip(f"{path} not present")
    plan = plan_read(load_document(str(path)), channel="multi-payload-topic")
    dec = value_decoder(SchemaRequest(), plan=plan, registry=None, framing=Framing.NONE)
    records = [{"amount": 5, "currency": "USD"}, {"example": {"someEnum": "FOO2", "someString": "s"}, "foo": "bar"},
               {"someEnum": "FOO2", "someString": "s", "amount": "not a number"}]
    values, errors = read(dec, records)
    for record, value, error in zip(records, values, errors):
        fits = [m.name for m in plan.value_messages
                if jsonschema.Draft7Validator(_json.loads(m.payload.text)).is_valid(record)]
        assert (which(value) if len(fits) == 1 else None) == (fits[0] if len(fits) == 1 else None), (record, fits)
        assert (error is None) == (len(fits) == 1), (record, fits, error)
    assert [which(v) for v in values] == ["javax.money.MonetaryAmount", None,
                                          "io.github.springwolf.examples.kafka.dtos.ExamplePayloadDto"]
