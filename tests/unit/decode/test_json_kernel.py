"""The compiled JSON kernel's own mechanics: rows redone after a column grows, date-times and
dates parsed in the kernel equal Arrow's cast, JSON-text numbers written as msgspec writes
them, and keys repeated in one object decided as the reference decides them."""
from __future__ import annotations

import datetime as dt
import json

import msgspec
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.formats import DecodeOptions
from connector.formats.json_schema._decode import JsonCodec
from connector.formats.json_schema._schema import parse_json_schema
from connector.formats.json_schema._types import finish

pytestmark = pytest.mark.timeout(300)


def _codec(schema) -> JsonCodec:
    # the kernel's mechanics, not validation (null ids below are not strings)
    return JsonCodec(parse_json_schema(json.dumps(schema)), DecodeOptions(validate_json=False))


def test_a_row_redone_after_growth_keeps_its_members_apart_from_the_next_rows():
    """Growing a column mid-group redoes a row in a second kernel call; object stamps that
    restarted there once matched stamps of the first call, so a member looked seen and its
    column came out one value short (Hypothesis found these two rows)."""
    c = _codec({"type": "object", "properties": {"id": {"type": "string"}, "data": {}}})
    rows = [b'{"id":null,"zz_unknown":null,"data":{"0\xf0\x90\x80\x80":{"":null,"0":null,"\\u001f":null}}}',
            b'{"data":{"":1.4942549152069463e-240}}']
    vals, errs = c.decode(pa.array(rows, pa.binary()), "1")
    assert errs == [None, None]
    assert vals.to_pylist() == [{"id": None, "data": '{"0\U00010000":{"":null,"0":null,"\\u001f":null}}'},
                                {"id": None, "data": '{"":1.4942549152069463e-240}'}]


_DATE_TIMES = st.one_of(
    st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31), timezones=st.sampled_from(
        [None, dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30)),
         dt.timezone(-dt.timedelta(hours=11))])).flatmap(
        lambda t: st.sampled_from([t.isoformat(), t.isoformat(sep=" "), t.isoformat().replace("+00:00", "Z"),
                                   t.isoformat(timespec="milliseconds"), t.isoformat(timespec="seconds")])),
    st.sampled_from(["2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z",
                     "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z", "2024-01-01T00:00:60Z",
                     "2024-01-01t00:00:00z", "2024-01-01T00:00:00.1234567Z", "2024-01-01T00:00:00.Z",
                     "2024-01-01T00:00:00+0530", "2024-01-01T00:00:00+05", "2024-01-01T00:00",
                     "2024-01-01", "0000-01-01T00:00:00Z", "2024-1-01T00:00:00Z", "x", ""]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_DATE_TIMES, min_size=1, max_size=20))
def test_date_times_parsed_in_the_kernel_equal_arrows_cast(texts):
    node = parse_json_schema('{"type": "object", "properties": {"t": {"type": "string", "format": "date-time"}}}')
    vals, errs = JsonCodec(node, DecodeOptions()).decode(
        pa.array([json.dumps({"t": t}).encode() for t in texts], pa.binary()), "1")
    t_node = node.fields[0][1]
    got = vals.field("t").cast(pa.int64()).to_pylist()  # µs: years 0 and 9999 fit, datetime may not
    for i, t in enumerate(texts):
        try:
            want = finish(pa.array([t]), t_node).cast(pa.int64()).to_pylist()[0]
        except (pa.ArrowException, ValueError):
            assert errs[i] is not None, (t, got[i])
            continue
        assert errs[i] is None and got[i] == want, (t, got[i], want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)).map(dt.date.isoformat),
                          st.sampled_from(["2023-02-29", "2024-02-30", "2024-00-10", "2024-1-1", "20240101"])),
                min_size=1, max_size=20))
def test_dates_parsed_in_the_kernel_equal_arrows_cast(texts):
    c = _codec({"type": "object", "properties": {"d": {"type": "string", "format": "date"}}})
    vals, errs = c.decode(pa.array([json.dumps({"d": t}).encode() for t in texts], pa.binary()), "1")
    for i, t in enumerate(texts):
        try:
            want = pa.array([t]).cast(pa.date32()).to_pylist()[0]
        except (pa.ArrowException, ValueError):
            assert errs[i] is not None, t
            continue
        assert errs[i] is None and vals[i].as_py() == {"d": want}, (t, vals[i])


_TOKENS = ["0", "-0", "12", "-12345678901234567890123", "1.5", "1.50", "1E5", "1e+300", "1e-7", "1e-05",
           "2.5e-05", "0.000025", "0.00001", "-0.0", "0e10", "123456789.125", "1000000000000000.0",
           "1e16", "12345678901234567.0", "0.30000000000000004", "0.1000000000000000055511151231257827",
           "1.0000000000000002", "4.9e-324", "1.7976931348623157e308", "1e-400", "9007199254740993",
           "100", "1.25E-3", "3.0e0", "-156104.50497722765"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS) | st.floats(allow_nan=False, allow_infinity=False).map(repr),
                min_size=1, max_size=8))
def test_numbers_in_json_text_are_written_as_msgspec_writes_their_values(tokens):
    c = _codec({"type": "object", "properties": {"free": {}}})
    payloads = [b'{"free": [' + t.encode() + b', {"n": ' + t.encode() + b"}]}" for t in tokens]
    vals, errs = c.decode(pa.array(payloads, pa.binary()), "1")
    for i, p in enumerate(payloads):
        v = json.loads(p)["free"]
        want = msgspec.json.encode(v).decode()
        assert errs[i] is None and vals[i].as_py() == {"free": want}, (p, vals[i], want)


def test_keys_repeated_in_one_object_keep_the_last_value_as_the_reference_does():
    c = _codec({"type": "object", "properties": {
        "a": {"type": "integer"}, "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {}}})
    payloads = [b'{"a": 1, "a": 2}', b'{"m": {"k": "x", "j": "y", "k": "z"}}',
                b'{"free": {"q": 1, "r": [1], "q": {"s": 2}}}', b'{"a": 3}']
    vals, errs = c.decode(pa.array(payloads, pa.binary()), "1")
    assert errs == [None] * 4
    got = vals.to_pylist()
    assert got[0]["a"] == 2 and got[3]["a"] == 3
    assert got[1]["m"] == [("k", "z"), ("j", "y")]
    assert got[2]["free"] == msgspec.json.encode(json.loads(payloads[2])["free"]).decode()


def _integral_forms(v: int, k: int) -> list[str]:
    """``v`` written with a fraction or an exponent, as JSON writers do (``2.0``, ``1e2``)."""
    sign, s = ("-" if v < 0 else ""), str(abs(v))
    forms = [f"{v}.0", f"{v}.{'0' * k}", f"{v}e0", f"{v}E+0", f"{sign}{s}{'0' * k}e-{k}" if v else f"0e-{k}"]
    if 0 < k < len(s):
        forms.append(f"{sign}{s[:-k]}.{s[-k:]}e{k}")
    return forms


_DRAFTS = {None: True, "http://json-schema.org/draft-07/schema#": True,
           "https://json-schema.org/draft/2020-12/schema": True,
           "http://json-schema.org/draft-04/schema#": False}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(-(2 ** 53) + 1, 2 ** 53 - 1), st.integers(1, 20), st.sampled_from(sorted(_DRAFTS, key=str)))
def test_integral_numbers_with_a_fraction_or_exponent_are_integers_from_draft_6_on(v, k, draft):
    """JSON Schema draft 6 made ``integer`` mean a number with a zero fraction (python-jsonschema,
    which confluent-kafka's JSONDeserializer validates with, agrees): Python writes ``2.0`` for
    an integral float. Draft 4 meant a number written without fraction or exponent. The kernel
    leaves such a token to its slow path, which reads it exactly (a Decimal); the reference
    path (``fast_path=False``) reads doubles, which agree below 2^53 for the forms drawn here."""
    schema = {"type": "object", "properties": {"q": {"type": "integer"}, "j": {"type": ["integer", "string"]}}}
    if draft:
        schema["$schema"] = draft
    forms = _integral_forms(v, k)
    payloads = pa.array([b'{"q": %s, "j": %s}' % (t.encode(), t.encode()) for t in forms]
                        + [b'{"q": %d.5}' % v, b'{"j": %d5e-1}' % v], pa.binary())
    node = parse_json_schema(json.dumps(schema))
    for fast in (True, False):
        vals, errs = JsonCodec(node, DecodeOptions(fast_path=fast)).decode(payloads, "1")
        got = vals.to_pylist()
        for i, t in enumerate(forms):
            if _DRAFTS[draft]:
                text = msgspec.json.encode(json.loads(t)).decode()  # JSON text as msgspec writes it
                assert errs[i] is None and got[i] == {"q": v, "j": text}, (fast, t, errs[i], got[i])
            else:
                assert errs[i] is not None and got[i] is None, (fast, t, got[i])
        # v + 0.5 is not an integer, in every draft; the reference reads a double, which holds
        # v + 0.5 exactly only below 2^52 (above, it rounds to an integer as json.loads does)
        if fast or abs(v) < 2 ** 52:
            assert errs[-2] is not None and errs[-1] is not None, (fast, v)


def test_integral_numbers_are_read_exactly_and_taken_below_2_53_only():
    c = _codec({"type": "object", "properties": {"q": {"type": "integer"}, "j": {"type": ["integer", "string"]},
                                                 "f": {"type": "number"}}})
    toks = [b"9007199254740992.0", b"-9007199254740992e0", b"1e16", b"1e999999", b"12345678901234567890.0",
            b"1e-400", b"4503599627370496.5", b"1.00000000000000000001",
            b"-0.0", b"9007199254740991.000", b"0e999999", b"1.5e1", b"-100e-2"]
    vals, errs = c.decode(pa.array([b'{"q": %s, "j": %s}' % (t, t) for t in toks], pa.binary()), "1")
    assert [e is None for e in errs] == [False] * 8 + [True] * 5, errs
    assert [v["q"] for v in vals.to_pylist()[8:]] == [0, 9007199254740991, 0, 15, -1]
    assert [v["j"] for v in vals.to_pylist()[8:]] == ["-0.0", "9007199254740991.0", "0.0", "15.0", "-1.0"]
    assert "2^53" in errs[0] and "2^53" in errs[2]
    # a row the kernel leaves to its slow path keeps its float columns as before
    vals, errs = c.decode(pa.array([b'{"q": 2.0, "f": 0.1}', b'{"q": 2.0, "f": 1e400}'], pa.binary()), "1")
    assert errs[0] is None and vals[0].as_py()["f"] == 0.1 and errs[1] is not None


def test_rows_left_to_the_slow_path_keep_their_own_values_and_errors():
    """The slow path converts its rows in one go; a bad one still fails alone, in place."""
    c = _codec({"type": "object", "properties": {"q": {"type": "integer"}, "when": {"type": "string",
                                                                                     "format": "date-time"}}})
    payloads = [b'{"q": 1.0, "when": "2024-01-01T00:00:00Z"}', b'{"q": 2.5}', b'{"q": 3}',
                b'{"q": 4.0, "when": "not a time"}', b'{"q": 5e0}', b'{"q": 6.0, "q": 7.0}']
    vals, errs = c.decode(pa.array(payloads, pa.binary()), "1")
    assert [e is None for e in errs] == [True, False, True, False, True, True], errs
    got = vals.to_pylist()
    assert [g and g["q"] for g in got] == [1, None, 3, None, 5, 7]
    assert got[0]["when"] == dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
