"""The vectorized JSON engine equals a reference on random documents of every test schema.

Reference: ``json.loads`` (NaN/Infinity refused, UTF-8 checked) and a strict validation of
the value against the decoder's type mapping written here, independent of the engine.
Documents are mostly valid, with wrong-typed values, unknown fields, broken payloads
(trailing bytes, NaN, invalid UTF-8, a JSON ``null`` or array at the top) mixed in.
"""
from __future__ import annotations

import datetime as dt
import json

import msgspec
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.json_engine_bench import EVENT_SCHEMAS
from benchmarks.wide_bench import json_schema as wide_schema
from connector.formats import DecodeOptions
from connector.formats.json_schema._decode import JsonCodec
from connector.formats.json_schema._schema import JNode, parse_json_schema

UTC = dt.timezone.utc
# the type mapping alone (its own reference below): validation is tested in test_json_validation.py
MAPPING = DecodeOptions(validate_json=False)

ALL_SHAPES = {
    "title": "Shapes", "type": "object",
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}},
    "properties": {
        "id": {"type": "integer"}, "name": {"type": ["string", "null"]}, "ok": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time"}, "day": {"type": "string", "format": "date"},
        "nothing": {"type": "null"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "when": {"type": "object", "additionalProperties": {"type": "string", "format": "date-time"}},
        "u": {"type": ["integer", "string", "null"]}, "num_or_str": {"type": ["number", "string"]},
        "any": {}, "obj": {"type": "object"}, "arr": {"type": "array"},
        "choice": {"anyOf": [{"$ref": "#/$defs/point"}, {"type": "array", "items": {"type": "integer"}}]},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "pts": {"type": "array", "items": {"$ref": "#/$defs/point"}},
        "nested": {"type": "object", "properties": {
            "label": {"type": "string"}, "seen": {"type": "string", "format": "date-time"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "deeper": {"type": "object", "properties": {
                "d": {"type": "string", "format": "date"}, "free": {"type": ["object", "array"]}}}}},
        "events": {"type": "array", "items": {"type": "object", "properties": {
            "t": {"type": "string", "format": "date-time"}, "v": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
            "attrs": {"type": "object", "additionalProperties": {"type": ["number", "null"]}}}}},
    }}
SCHEMAS = {"shapes": ALL_SHAPES, "wide": wide_schema(), **EVENT_SCHEMAS,
           "top-map": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
           "top-free": {}, "top-array": {"type": "array", "items": {"type": "integer"}}}


# -- reference ---------------------------------------------------------------------------
class Bad(Exception):
    pass


def _no_constant(name):
    raise Bad(f"{name} is not JSON")


def _jtype(v) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    return {float: "number", str: "string", dict: "object", list: "array"}.get(type(v), "null")


def _ts(s: str) -> dt.datetime:
    t = dt.datetime.fromisoformat(s)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def check(n: JNode, v):
    """The decoder's value for JSON value ``v`` of node ``n``, or raise Bad."""
    if v is None:
        return None
    k = n.kind
    if k == "struct":
        if type(v) is not dict:
            raise Bad("object expected")
        return {name: check(t, v.get(name)) for name, t in n.fields}
    if k == "map":
        if type(v) is not dict:
            raise Bad("object expected")
        return [(key, check(n.items, x)) for key, x in v.items()]
    if k == "list":
        if type(v) is not list:
            raise Bad("array expected")
        return [check(n.items, x) for x in v]
    if k in ("string", "timestamp", "date"):
        if type(v) is not str:
            raise Bad("string expected")
        try:
            return v if k == "string" else _ts(v) if k == "timestamp" else dt.date.fromisoformat(v)
        except ValueError as e:
            raise Bad(str(e)) from e
    if k == "int":
        if n.integral and type(v) is float and v.is_integer() and abs(v) < 2**53:  # 2.0 (draft 6 on)
            return int(v)
        if type(v) is not int or not -2**63 <= v < 2**63:
            raise Bad("int64 expected")
        return v
    if k == "float":
        if type(v) not in (int, float):
            raise Bad("number expected")
        return float(v)
    if k == "bool":
        if type(v) is not bool:
            raise Bad("boolean expected")
        return v
    if k == "null":
        raise Bad("null expected")
    jt = _jtype(v)
    if n.allowed is not None and jt not in n.allowed and not (jt == "integer" and "number" in n.allowed) \
            and not (n.integral and type(v) is float and v.is_integer() and "integer" in n.allowed):
        raise Bad(f"{jt} not allowed")
    return msgspec.json.encode(v).decode()


def reference(n: JNode, payload: bytes):
    text = payload.decode("utf-8")  # UnicodeDecodeError is a ValueError
    v = json.loads(text, parse_constant=_no_constant)
    if n.kind == "json":
        return text
    return check(n, v)


# -- documents ---------------------------------------------------------------------------
_any_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3), max_leaves=6)
_wrong = st.sampled_from(["12", 1.5, 1.0, True, [1], {"z": 1}, 2**63, -2**63 - 1, "2024-02-30", ""])
_offsets = st.sampled_from([None, UTC, dt.timezone(dt.timedelta(hours=2)),
                            dt.timezone(-dt.timedelta(hours=5, minutes=30))])


@st.composite
def _timestamp(draw):
    t = draw(st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=_offsets))
    s = t.isoformat(sep=draw(st.sampled_from(["T", " "])))
    return s.replace("+00:00", "Z") if draw(st.booleans()) else s


def docs(n: JNode, depth: int = 0):
    k = n.kind
    if k == "struct":
        good = st.fixed_dictionaries({}, optional={**{name: docs(t, depth + 1) for name, t in n.fields},
                                                   "zz_unknown": _any_json})
    elif k == "map":
        good = st.dictionaries(st.text(max_size=4), docs(n.items, depth + 1), max_size=3)
    elif k == "list":
        good = st.lists(docs(n.items, depth + 1), max_size=3)
    elif k == "string":
        good = st.text(max_size=6)
    elif k == "timestamp":
        good = _timestamp()
    elif k == "date":
        good = st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1)).map(dt.date.isoformat)
    elif k == "int":
        good = st.integers(-2**63, 2**63 - 1)
    elif k == "float":
        good = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10**6, 10**6)
    elif k == "bool":
        good = st.booleans()
    elif k == "null":
        good = st.none()
    else:
        good = _any_json
    # about one value in 50 is null and one in 50 of a wrong type, at every level
    return st.integers(0, 49).flatmap(lambda i: st.none() if i == 0 else _wrong if i == 1 else good)


_MUTATIONS = ["none"] * 12 + ["trailing", "nan", "utf8", "null", "array", "two"]


def payload_of(doc, fmt: int, mutation: str) -> bytes:
    if fmt == 0:
        b = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    elif fmt == 1:
        b = json.dumps(doc).encode()
    else:
        b = json.dumps(doc, indent=1).encode()  # newlines inside the payload
    if mutation == "trailing":
        return b + b" x"
    if mutation == "two":
        return b + b"\n" + b
    if mutation == "null":
        return b"null"
    if mutation == "array":
        return b"[" + b + b"]"
    if isinstance(doc, dict) and mutation in ("nan", "utf8"):
        extra = b'"q":NaN' if mutation == "nan" else b'"q":"\xff"'
        return b"{" + extra + (b"," + b[1:] if len(doc) else b"}")
    return b


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=int(__import__('os').environ.get('JSON_EXAMPLES', 40)), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(data=st.data())
def test_engine_equals_reference(name, data):
    node = parse_json_schema(json.dumps(SCHEMAS[name]))
    rows = data.draw(st.lists(st.tuples(docs(node), st.integers(0, 2), st.sampled_from(_MUTATIONS)),
                              min_size=1, max_size=12))
    payloads = [payload_of(d, f, m) for d, f, m in rows]
    expected, ok = [], []
    for p in payloads:
        try:
            expected.append(reference(node, p))
            ok.append(True)
        except (Bad, ValueError, RecursionError):
            expected.append(None)
            ok.append(False)
    vals, errs = JsonCodec(node, MAPPING).decode(pa.array(payloads, pa.binary()), "9")
    assert vals.type == node.arrow
    got = vals.to_pylist()
    for i, p in enumerate(payloads):
        assert (errs[i] is None) == ok[i], (p, errs[i], expected[i])
        assert got[i] == expected[i], (p, got[i], expected[i])
        if errs[i]:
            assert errs[i].startswith("json decode failed for schema id 9")


def test_a_bad_nested_timestamp_fails_only_its_row():
    """Row-by-row retry of a failed cast must not see a neighbour's values (sliced lists)."""
    node = parse_json_schema(json.dumps(ALL_SHAPES))
    payloads = [b"null", b'{"when": {"k": "12"}}', b'{"when": {"k": "2024-01-01T00:00:00Z"}}', b"{}"]
    vals, errs = JsonCodec(node, MAPPING).decode(pa.array(payloads, pa.binary()), "9")
    assert [e is None for e in errs] == [True, False, True, True]
    got = vals.to_pylist()
    assert got[0] is None and got[1] is None and got[3]["when"] is None
    assert got[2]["when"] == [("k", dt.datetime(2024, 1, 1, tzinfo=UTC))]
