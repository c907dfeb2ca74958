"""Any / Struct / Value / ListValue as JSON text: the compiled renderer equals the reference
(``json_format.MessageToDict`` written with sorted keys, no spaces, UTF-8) on random values, and
what it does not write itself — an Any of another type, a field or key sent twice, a NaN —
is decided by protobuf: per value, or for the whole row on the reference path."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest
from google.protobuf import any_pb2, duration_pb2, json_format, struct_pb2, timestamp_pb2, wrappers_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions, build_decoder
from connector.formats.protobuf._wktjson import OK, PY, REDO, WKT_KIND, json_text, render
from tests.unit.decode.decode_helpers import Spec, binary
from tests.unit.decode.test_protobuf_engine import WKT

pytestmark = pytest.mark.timeout(300)

_json = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=4),
    max_leaves=12)


def _struct(d) -> struct_pb2.Struct:
    m = struct_pb2.Struct()
    json_format.ParseDict(d, m)
    return m


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.text(max_size=5), _json, max_size=5), min_size=1, max_size=10))
def test_structs_render_as_the_reference_writes_them(docs):
    msgs = [_struct(d) for d in docs]
    text, status = render(pa.array([m.SerializeToString() for m in msgs], pa.binary()),
                          WKT_KIND["google.protobuf.Struct"])
    assert list(status) == [OK] * len(msgs)
    assert text.to_pylist() == [json_text(m) for m in msgs]


@settings(max_examples=100, deadline=None)
@given(st.lists(_json, min_size=1, max_size=10))
def test_values_and_lists_render_as_the_reference_writes_them(items):
    values = []
    for x in items:
        v = struct_pb2.Value()
        json_format.ParseDict(x, v)
        values.append(v)
    lv = struct_pb2.ListValue()
    json_format.ParseDict(items, lv)
    for msgs, kind in ((values, "Value"), ([lv], "ListValue")):
        text, status = render(pa.array([m.SerializeToString() for m in msgs], pa.binary()),
                              WKT_KIND["google.protobuf." + kind])
        assert list(status) == [OK] * len(msgs) and text.to_pylist() == [json_text(m) for m in msgs]


def _any(inner) -> any_pb2.Any:
    a = any_pb2.Any()
    a.Pack(inner)
    return a


def test_anys_of_well_known_types_render_here_and_others_are_left_to_protobuf():
    here = [_any(timestamp_pb2.Timestamp(seconds=s, nanos=n)) for s, n in
            ((0, 0), (1700000000, 500_000_000), (-62135596800, 0), (253402300799, 999_999_999),
             (1, 1000), (1, 1))] + \
           [_any(duration_pb2.Duration(seconds=s, nanos=n)) for s, n in
            ((0, 0), (-3, -500), (315576000000, 0), (1, 500_000_000))] + \
           [_any(w) for w in (wrappers_pb2.Int64Value(value=-2**63), wrappers_pb2.UInt64Value(value=2**64 - 1),
                              wrappers_pb2.Int32Value(value=-5), wrappers_pb2.UInt32Value(value=2**32 - 1),
                              wrappers_pb2.BoolValue(value=True), wrappers_pb2.StringValue(value='q"\u00e9'),
                              wrappers_pb2.DoubleValue(value=0.1), wrappers_pb2.Int64Value())] + \
           [_any(_struct({"b": [1, {"c": None}], "a": "x"})), any_pb2.Any()]
    left = [_any(wrappers_pb2.BytesValue(value=b"ab")), _any(wrappers_pb2.FloatValue(value=0.5)),
            any_pb2.Any(type_url="example.com/unknown.Type", value=b"\x08\x01")]
    msgs = here + left
    text, status = render(pa.array([m.SerializeToString() for m in msgs], pa.binary()),
                          WKT_KIND["google.protobuf.Any"])
    assert list(status) == [OK] * len(here) + [PY] * len(left)
    assert text.to_pylist()[:len(here)] == [json_text(m) for m in here]
    assert json_text(left[-1]) == '{"@type":"example.com/unknown.Type","value":"CAE="}'


def test_unusual_bytes_send_their_row_to_protobuf():
    key_twice = (b"\x0a\x07\x0a\x01k\x12\x02\x20\x01" * 2)         # {"k": true} twice
    two_kinds = b"\x20\x01\x18\x02"                                # a Value: bool, then another field
    nan = struct_pb2.Value(number_value=math.nan).SerializeToString()
    unknown_field = b"\x0a\x00\x10\x01"                            # a Struct with field 2
    _, status = render(pa.array([key_twice, unknown_field], pa.binary()), WKT_KIND["google.protobuf.Struct"])
    assert list(status) == [REDO, REDO]
    _, status = render(pa.array([two_kinds, nan], pa.binary()), WKT_KIND["google.protobuf.Value"])
    assert list(status) == [REDO, REDO]


def test_a_value_whose_struct_or_list_is_followed_by_another_kind_goes_to_protobuf():
    """A Value whose struct_value or list_value is followed by more fields is read by protobuf as
    the last kind set (or the two structs merged): the renderer once wrote the first one."""
    number = struct_pb2.Value(number_value=1.0).SerializeToString()
    rows = [struct_pb2.Value(struct_value=_struct({"a": 1})).SerializeToString() + number,
            struct_pb2.Value(list_value=struct_pb2.ListValue()).SerializeToString() + b"\x20\x01",
            struct_pb2.Value(struct_value=_struct({"a": 1})).SerializeToString() * 2,
            struct_pb2.Value(struct_value=_struct({"a": 1})).SerializeToString()]
    text, status = render(pa.array(rows, pa.binary()), WKT_KIND["google.protobuf.Value"])
    assert list(status) == [REDO, REDO, REDO, OK]
    assert [json_text(struct_pb2.Value.FromString(b)) for b in rows[:2]] == ["1.0", "true"]
    assert text.to_pylist()[3] == '{"a":1.0}'


def test_rows_the_renderer_refuses_decode_as_the_reference_decides():
    fast = build_decoder(Spec("protobuf", WKT, "w.Doc"), options=DecodeOptions(max_recursion_depth=2))
    ref = build_decoder(Spec("protobuf", WKT, "w.Doc"),
                        options=DecodeOptions(max_recursion_depth=2, fast_path=False))
    Doc = fast._state().reader.codec.cls

    def doc(**kw) -> bytes:
        m = Doc()
        for k, v in kw.items():  # messages of the standard pool: copied by their bytes
            for x in (v if isinstance(v, list) else [v]):
                (getattr(m, k).add() if isinstance(v, list) else getattr(m, k)).MergeFromString(
                    x.SerializeToString())
                if not isinstance(v, list):
                    getattr(m, k).SetInParent()
        return m.SerializeToString()

    n5 = wrappers_pb2.Int64Value(value=5)
    rows = [doc(top=_struct({"a": 1})) + doc(top=_struct({"b": "x"})),   # a Struct twice: merged
            doc(values=[struct_pb2.Value(number_value=math.inf)]),           # protobuf refuses it
            doc(top=_struct({"kk": 1})).replace(b"kk", b"\xff\xfe"),        # a key not UTF-8
            doc(n=n5) + doc(n=wrappers_pb2.Int64Value()),                    # a oneof member twice
            doc(s=_struct({"q": [True]})), b""]
    a, ea = fast.decode_group(binary(rows), None, (), "5")
    b, eb = ref.decode_group(binary(rows), None, (), "5")
    assert [e is None for e in ea] == [e is None for e in eb] == [True, False, False, True, True, True]
    assert a.to_pylist() == b.to_pylist()
    got = a.to_pylist()
    assert got[0]["top"] == '{"a":1.0,"b":"x"}' and got[3]["n"] == 5 and got[4]["s"] == '{"q":[true]}'


def test_a_refused_value_takes_its_numbers_along():
    """A value the renderer gives up on after writing numbers (a NaN after 1.5) once left its
    numbers in the list, so the next values got their neighbours' numbers."""
    vals = [_struct({"a": 1.5, "b": 2.5}).SerializeToString()[:0] +
            struct_pb2.Struct(fields={"a": struct_pb2.Value(number_value=1.5),
                                      "b": struct_pb2.Value(number_value=math.nan)}).SerializeToString(),
            _struct({"c": 2.5, "d": [7]}).SerializeToString()]
    text, status = render(pa.array(vals, pa.binary()), WKT_KIND["google.protobuf.Struct"])
    assert list(status) == [REDO, OK] and text.to_pylist() == [None, '{"c":2.5,"d":[7.0]}']


def test_a_message_sent_twice_merges_its_json_fields_as_protobuf_does():
    """Two copies of a singular message field are one message to protobuf: their Value fields
    merge, so such rows go to the reference path even though each copy holds one Value."""
    fast = build_decoder(Spec("protobuf", WKT, "w.Doc"), options=DecodeOptions(max_recursion_depth=2))
    ref = build_decoder(Spec("protobuf", WKT, "w.Doc"),
                        options=DecodeOptions(max_recursion_depth=2, fast_path=False))
    Doc = fast._state().reader.codec.cls
    one, two = Doc(), Doc()
    one.inner.back.s.fields["a"].number_value = 1.0  # a oneof member: not made repeated
    two.inner.back.s.fields["b"].string_value = "x"
    row = one.SerializeToString() + two.SerializeToString()
    a, ea = fast.decode_group(binary([row]), None, (), "5")
    b, eb = ref.decode_group(binary([row]), None, (), "5")
    assert ea == eb == [None] and a.to_pylist() == b.to_pylist()
    assert a.to_pylist()[0]["inner"]["back"]["s"] == '{"a":1.0,"b":"x"}'  # merged, not the last


def test_bytes_a_later_copy_replaced_are_no_overflowing_varint():
    """The reference path's overflow check once flagged a varint-like run inside bytes that a
    second copy of the same field replaced (protobuf kept only the second)."""
    fast = build_decoder(Spec("protobuf", WKT, "w.Doc"), options=DecodeOptions(max_recursion_depth=1))
    ref = build_decoder(Spec("protobuf", WKT, "w.Doc"),
                        options=DecodeOptions(max_recursion_depth=1, fast_path=False))
    Doc = fast._state().reader.codec.cls
    first, second = Doc(), Doc()
    first.any.type_url, first.any.value = "a", b"\xff" * 9 + b"\x05"
    second.any.type_url, second.any.value = "b", b"ok"
    row = first.SerializeToString() + second.SerializeToString()
    for d in (fast, ref):
        vals, errs = d.decode_group(binary([row]), None, (), "5")
        assert errs == [None] and vals.to_pylist()[0]["any"] == '{"@type":"b","value":"b2s="}'
