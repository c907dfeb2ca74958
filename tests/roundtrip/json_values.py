"""JSON Schema: Hypothesis documents valid for a schema, and their Arrow form.

:func:`documents` draws JSON documents from the schema itself (``type`` lists with ``null``,
``required``, ``enum``/``const``, ``default``, string lengths and ``pattern``, number bounds,
``items``/``minItems``/``maxItems``/``uniqueItems``, ``additionalProperties`` with a schema,
``oneOf``/``anyOf`` branches, local ``$ref``), each one checked against the schema with
``jsonschema`` (and fastjsonschema, which asserts ``format``, as the Glue package does) so a
draw the generator got wrong is discarded rather than tested.
:func:`arrow_form` is what ``decode_column`` returns for a document under the project's
mapping (``connector.formats.json_schema._schema``); :func:`normal` makes two Arrow-form
values comparable (JSON-text leaves compared parsed).
"""
from __future__ import annotations

import copy
import datetime as dt
import json
import re

from hypothesis import strategies as st

from connector.formats.json_schema._schema import JNode
from tests.roundtrip.common import keys, texts

UTC = dt.timezone.utc
INT64 = (-(1 << 63), (1 << 63) - 1)
_US = dt.timedelta(microseconds=1)

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(*INT64),
                     st.floats(allow_nan=False, allow_infinity=False), texts(8))
FREE = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(keys(), inner, max_size=3)),
                    max_leaves=6)


def _datetimes() -> st.SearchStrategy:
    """RFC 3339 text: µs, ms or no fraction; ``Z`` or an offset (years 2..9998, so the UTC
    instant stays in 1..9999)."""
    def text(args):
        when, frac, off = args
        local = when.astimezone(dt.timezone(dt.timedelta(minutes=off)))
        body = f"{local.year:04d}-{local.month:02d}-{local.day:02d}T{local.hour:02d}:{local.minute:02d}:" \
            f"{local.second:02d}"
        if frac == 6:
            body += f".{local.microsecond:06d}"
        elif frac == 3:
            body += f".{local.microsecond // 1000:03d}"
        if off == 0:
            return body + "Z"
        sign = "+" if off > 0 else "-"
        return f"{body}{sign}{abs(off) // 60:02d}:{abs(off) % 60:02d}"

    def trim(args):
        when, frac, off = args
        us = when.microsecond
        us = us if frac == 6 else us // 1000 * 1000 if frac == 3 else 0
        return when.replace(microsecond=us), frac, off

    return st.tuples(st.datetimes(dt.datetime(2, 1, 1), dt.datetime(9998, 12, 31), timezones=st.just(UTC)),
                     st.sampled_from([0, 3, 6]), st.sampled_from([0, 0, 330, -300, 60, -720])).map(trim).map(text)


class Gen:
    """Document strategies for one schema (``root`` resolves local ``$ref``)."""

    def __init__(self, root):
        self.root = root

    def resolve(self, s, depth=0):
        while isinstance(s, dict) and "$ref" in s and depth < 32:
            node = self.root
            for part in [p for p in s["$ref"][1:].split("/") if p]:
                node = node[part.replace("~1", "/").replace("~0", "~")]
            s, depth = node, depth + 1
        return s

    def doc(self, s, depth: int = 0, large: bool = False) -> st.SearchStrategy:
        s = self.resolve(s)
        if s is True or s is None or s == {} or depth > 12:
            return FREE
        if s is False:
            return st.nothing()
        out = self._doc(s, depth, large)
        if "default" in s:
            out = st.one_of(st.just(s["default"]), out)
        return out

    def _doc(self, s, depth: int, large: bool) -> st.SearchStrategy:
        for key in ("oneOf", "anyOf"):
            if key in s:
                base = {k: v for k, v in s.items() if k not in (key, "default")}
                return st.one_of(*[self.doc({**base, **self.resolve(b)} if base else b, depth + 1, large)
                                   for b in s[key]])
        if "enum" in s:
            return st.sampled_from(s["enum"])
        if "const" in s:
            return st.just(s["const"])
        t = s.get("type")
        if t is None:
            t = "object" if "properties" in s or "additionalProperties" in s else "array" if "items" in s else None
        if t is None:
            return FREE
        if isinstance(t, list):
            return st.one_of(*[self._typed(x, s, depth, large) for x in t])
        return self._typed(t, s, depth, large)

    def _typed(self, t: str, s: dict, depth: int, large: bool) -> st.SearchStrategy:
        if t == "null":
            return st.none()
        if t == "boolean":
            return st.booleans()
        if t == "integer":
            lo = s.get("minimum", INT64[0])
            hi = s.get("maximum", INT64[1])
            if "exclusiveMinimum" in s:
                lo = max(lo, s["exclusiveMinimum"] + 1)
            if "exclusiveMaximum" in s:
                hi = min(hi, s["exclusiveMaximum"] - 1)
            return st.integers(int(lo), int(hi))
        if t == "number":
            kw = {k: s[k] for k in ("minimum", "maximum") if k in s}
            lo, hi = kw.get("minimum"), kw.get("maximum")
            ints = st.integers(int(lo) if lo is not None else -(1 << 53), int(hi) if hi is not None else 1 << 53)
            floats = st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False,
                               exclude_min="exclusiveMinimum" in s, exclude_max="exclusiveMaximum" in s)
            if "exclusiveMinimum" in s:
                floats = st.floats(min_value=s["exclusiveMinimum"], max_value=hi, allow_nan=False,
                                   allow_infinity=False, exclude_min=True)
                ints = ints.filter(lambda v: v > s["exclusiveMinimum"])
            return st.one_of(floats, ints)
        if t == "string":
            return self._string(s)
        if t == "array":
            item = self.doc(s.get("items", {}), depth + 1)
            lo, hi = s.get("minItems", 0), s.get("maxItems")
            unique = (lambda v: json.dumps(v, sort_keys=True)) if s.get("uniqueItems") else None
            small = st.lists(item, min_size=lo, max_size=max(lo, min(hi if hi is not None else 4, 4)),
                             unique_by=unique)
            if large and depth == 1 and hi is None:
                return st.one_of(small, st.lists(item, min_size=130, max_size=135, unique_by=unique))
            return small
        if t == "object":
            return self._object(s, depth, large)
        return FREE

    def _string(self, s: dict) -> st.SearchStrategy:
        fmt = s.get("format")
        if fmt == "date-time":
            return _datetimes()
        if fmt == "date":
            return st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)).map(dt.date.isoformat)
        if fmt == "uuid":
            return st.uuids().map(str)
        if fmt in ("uri", "uri-reference", "iri", "iri-reference"):  # strict validators assert these
            uri = st.from_regex(r"\A(https?|urn|s3):(//[a-z0-9]{1,8}(\.[a-z]{2,4})?)?(/[A-Za-z0-9._~-]{0,6}){0,3}\Z")
            return st.one_of(uri, st.from_regex(r"\A(/[A-Za-z0-9._~-]{0,6}){0,3}\Z")) if "reference" in fmt else uri
        lo, hi = s.get("minLength", 0), s.get("maxLength")
        if "pattern" in s:
            base = st.from_regex(s["pattern"])
        elif lo or hi is not None:
            base = st.text(min_size=lo, max_size=max(lo, min(hi if hi is not None else 24, 24)))
        else:
            base = texts()
        return base.filter(lambda v: lo <= len(v) <= (hi if hi is not None else 1 << 30))

    def _object(self, s: dict, depth: int, large: bool) -> st.SearchStrategy:
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        req = set(s.get("required") or ())
        if not props:
            if isinstance(extra, dict):
                value = self.doc(extra, depth + 1)
                small = st.dictionaries(keys(), value, max_size=4)
                if large and depth == 1:
                    return st.one_of(small, st.dictionaries(keys(), value, min_size=130, max_size=135))
                return small
            return st.dictionaries(keys(), FREE, max_size=3)
        fields = {name: self.doc(sub, depth + 1, large) for name, sub in props.items()}
        required = {k: v for k, v in fields.items() if k in req}
        optional = {k: v for k, v in fields.items() if k not in req}
        return st.fixed_dictionaries(required, optional=optional)


def documents(schema: dict, large: bool = False) -> st.SearchStrategy:
    """Documents ``schema`` accepts (checked with jsonschema; a top-level null is never drawn:
    it is a tombstone, not a value)."""
    import fastjsonschema
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    # the Glue package's validator, which asserts formats (compile rewrites $ref in place: a copy)
    strict = fastjsonschema.compile(copy.deepcopy(schema))

    def valid(d) -> bool:
        if d is None or not validator.is_valid(d):
            return False
        try:
            strict(d)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    return Gen(schema).doc(schema, 0, large).filter(valid)


# -- the Arrow form --------------------------------------------------------------------------------
def _timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(re.sub("Z$", "+00:00", text)).astimezone(UTC)


def arrow_form(n: JNode, v):
    """What the decoder returns for document ``v`` (JSON leaves as compact JSON text)."""
    k = n.kind
    if k == "json":
        return None if v is None else json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if v is None:
        return None
    if k == "struct":
        return {name: arrow_form(t, v.get(name)) for name, t in n.fields}
    if k == "map":
        return [(key, arrow_form(n.items, x)) for key, x in v.items()]
    if k == "list":
        return [arrow_form(n.items, x) for x in v]
    if k == "timestamp":
        return _timestamp(v)
    if k == "date":
        return dt.date.fromisoformat(v)
    if k == "float":
        return float(v)
    return v


def normal(n: JNode, v):
    """``v`` (Arrow form) with JSON-text leaves parsed, so equal values compare equal."""
    k = n.kind
    if v is None:
        return None
    if k == "json":
        return ("json", json.loads(v))
    if k == "struct":
        return {name: normal(t, v.get(name)) for name, t in n.fields}
    if k == "map":
        return [(key, normal(n.items, x)) for key, x in v]
    if k == "list":
        return [normal(n.items, x) for x in v]
    return v
