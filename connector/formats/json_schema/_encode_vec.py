"""Vectorized JSON: the JSON text of a whole column built with Arrow string kernels, and
the common JSON Schema keywords checked column-wise.

Text, per node of the decoder's type tree (``connector.formats.json_schema._schema``):

=================  ==============================================================
kind               text
=================  ==============================================================
object (struct)    ``"name":`` joined to each field's text, fields joined with ``,``
                   skipping nulls (a null field is left out, a ``required`` one is
                   written ``null``), wrapped in ``{}``
array, map         element texts (``null`` for null items) joined per row by
                   ``binary_join`` over the list offsets, wrapped in ``[]`` / ``{}``
string             wrapped in quotes; rows holding ``"``, ``\\`` or control characters
                   are escaped by ``orjson`` one by one (only those rows)
integer, number    Arrow's cast to string (shortest round-trip form; a number keeps a
                   fraction, ``394.0``, ``-0.0``, as orjson writes it); NaN/inf refused
boolean            ``true`` / ``false``
date-time, date    ``strftime`` (UTC, six fraction digits) in quotes
=================  ==============================================================

Validation without a per-row validator covers ``type``, ``properties``, ``items``,
``additionalProperties`` (a map's values), ``required``, ``enum``/``const`` (of strings,
integers or booleans), ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``
(numbers), ``minLength``/``maxLength``, ``pattern`` (RE2; a pattern RE2 cannot compile
sends the schema to the per-row path), ``minItems``/``maxItems`` and local ``$ref``;
unknown keys (``x-...``, ``title``, ``format``, ...) are annotations, ignored as validators
ignore them. A schema using another validation keyword (``oneOf``, ``allOf``, ``not``,
``if``/``then``, ``uniqueItems``, ``multipleOf``, ``patternProperties``, ...) or a
free-form JSON leaf is encoded by the per-record path (``_json``), which validates with
``jsonschema``; :func:`plan` decides once per schema.
"""
from __future__ import annotations

import re

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.json_schema._schema import JNode
from connector.formats.core import RowErrors, valid_mask

__all__ = ["plan", "encode_json_vectorized"]

# Validation keywords (drafts 4 to 2020-12) this module does not check: a schema using one
# goes per row through jsonschema. Any other unknown key (``x-...``, AsyncAPI's
# ``discriminator``, ...) is an annotation, ignored by validators and here alike.
_UNCHECKED = frozenset(["multipleOf", "additionalItems", "prefixItems", "uniqueItems", "contains",
                        "maxContains", "minContains", "maxProperties", "minProperties",
                        "patternProperties", "dependencies", "dependentRequired", "dependentSchemas",
                        "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
                        "$dynamicRef", "$recursiveRef", "unevaluatedItems", "unevaluatedProperties",
                        "contentSchema"])
_CHECKED = frozenset(["type", "properties", "items", "additionalProperties", "required", "enum",
                      "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                      "minLength", "maxLength", "pattern", "minItems", "maxItems", "$ref"])
_JTYPES = {"struct": "object", "map": "object", "list": "array", "string": "string",
           "timestamp": "string", "date": "string", "int": "integer", "float": "number",
           "bool": "boolean", "null": "null"}


class _NoPlan(Exception):
    pass


def _resolve(root, s, depth=0):
    while isinstance(s, dict) and "$ref" in s:
        ref = s["$ref"]
        if depth > 32 or not isinstance(ref, str) or not ref.startswith("#") or len(s) > 1:
            raise _NoPlan(ref)
        node = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError) as e:
                raise _NoPlan(ref) from e
        s, depth = node, depth + 1
    return s


class Check:
    """The vectorized checks of one schema node, matched to its JNode."""

    __slots__ = ("node", "schema", "children", "items", "required", "nullable_items", "enum",
                 "bounds", "lengths", "pattern", "counts", "nullable")

    def __init__(self, node, schema):
        self.node, self.schema = node, schema
        self.children, self.items = [], None
        self.required, self.nullable_items, self.enum = (), True, None
        self.nullable = True  # whether the schema accepts null here
        self.bounds, self.lengths, self.pattern, self.counts = {}, (None, None), None, (None, None)


def _allows_null(root, s, depth: int = 0) -> bool:
    """Whether a (resolved) schema accepts null: its ``type``, ``enum``/``const`` and
    ``oneOf``/``anyOf`` branches say so; any other keyword ignores null."""
    s = _resolve(root, s)
    if s is True or s == {} or not isinstance(s, dict) or depth > 32:
        return True
    t = s.get("type")
    if t is not None and not (t == "null" or (isinstance(t, list) and "null" in t)):
        return False
    if "enum" in s and None not in (s["enum"] or ()):
        return False
    if "const" in s and s["const"] is not None:
        return False
    for key in ("oneOf", "anyOf"):
        if isinstance(s.get(key), list) and not any(_allows_null(root, b, depth + 1) for b in s[key]):
            return False
    return True


def _plan(root, s, n: JNode, depth: int) -> Check:
    if depth > 64:
        raise _NoPlan("depth")
    s = _resolve(root, s)
    if s is True or s == {}:
        if n.kind == "json":
            raise _NoPlan("json leaf")
        return Check(n, s)
    if not isinstance(s, dict):
        raise _NoPlan("schema")
    if n.kind == "json":
        raise _NoPlan("json leaf")
    for k in s:
        if k in _UNCHECKED:
            raise _NoPlan(k)
    t = s.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else [t]
        want = _JTYPES[n.kind]
        if want not in ts and not (want == "integer" and "number" in ts):
            raise _NoPlan("type")  # the mapping picked another type: let jsonschema judge
    c = Check(n, s)
    c.nullable = _allows_null(root, s)
    if n.kind == "struct":
        props = s.get("properties") or {}
        c.children = [(name, _plan(root, props.get(name, {}), t, depth + 1)) for name, t in n.fields]
        req = s.get("required") or []
        if not isinstance(req, list) or any(r not in dict(n.fields) for r in req):
            raise _NoPlan("required")  # a required name we never write: every row fails
        c.required = tuple(req)
        extra = s.get("additionalProperties")
        if extra is not None and extra is not True and not isinstance(extra, dict):
            if set(props) != {name for name, _ in n.fields}:
                raise _NoPlan("additionalProperties")
    elif n.kind in ("list", "map"):
        sub = s.get("items") if n.kind == "list" else s.get("additionalProperties")
        sub = {} if sub is None or sub is True else sub
        c.items = _plan(root, sub, n.items, depth + 1)
        c.nullable_items = _allows_null(root, sub)
        if n.kind == "list":
            c.counts = (s.get("minItems"), s.get("maxItems"))
    elif "required" in s or "properties" in s or "items" in s:
        raise _NoPlan("object keywords on a scalar")
    enum = s.get("enum") if "enum" in s else ([s["const"]] if "const" in s else None)
    if enum is not None:
        py = {"string": str, "int": int, "bool": bool}.get(n.kind)
        if py is None or not all(type(v) is py for v in enum if v is not None):
            raise _NoPlan("enum")
        c.enum = [v for v in enum if v is not None]
    for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if k in s:
            v = s[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or n.kind not in ("int", "float"):
                raise _NoPlan(k)
            c.bounds[k] = v
    if "minLength" in s or "maxLength" in s or "pattern" in s:
        if n.kind != "string":
            raise _NoPlan("string keywords")
        c.lengths = (s.get("minLength"), s.get("maxLength"))
        if "pattern" in s:
            try:
                pc.match_substring_regex(pa.array([""]), s["pattern"])
                re.compile(s["pattern"])
            except (pa.ArrowInvalid, re.error, TypeError) as e:
                raise _NoPlan("pattern") from e
            c.pattern = s["pattern"]
    return c


def plan(schema, node: JNode):
    """The vectorized plan for a parsed schema, or None when the per-row path must run."""
    if schema is None:
        return None
    try:
        return _plan(schema, schema, node, 0)
    except (_NoPlan, KeyError, TypeError):
        return None


# -- text ---------------------------------------------------------------------------------
_S = lambda b: pa.scalar(b, pa.string())  # noqa: E731
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


def _quoted(arr: pa.Array) -> pa.Array:
    arr = arr.cast(pa.string())
    bad = pc.match_substring_regex(arr, _NEEDS_ESCAPE)
    out = pc.binary_join_element_wise(_S('"'), arr, _S('"'), _S(""))
    if pc.any(bad).as_py():
        idx = np.flatnonzero(bad.fill_null(False).to_numpy(zero_copy_only=False))
        esc = [orjson.dumps(arr[int(i)].as_py()).decode() for i in idx]  # only rows that need it
        full = out.to_numpy(zero_copy_only=False).astype(object)
        full[idx] = esc
        out = pa.array(full, pa.string(), mask=~valid_mask(arr))
    return out


class _NonFinite(Exception):
    pass


def _text(n: JNode, arr: pa.Array) -> pa.Array:
    """JSON text per position (null where the value is null)."""
    k = n.kind
    if k == "struct":
        # every present field as ``,"name":text``, concatenated, then the first comma cut
        # (Arrow's join with null_handling="skip" loses rows where every field is null)
        frags = []
        for (name, t), child in zip(n.fields, [arr.field(i) for i in range(arr.type.num_fields)]):
            key = "," + orjson.dumps(name).decode() + ":"
            text = _text(t, child)
            if name in n.required and text.null_count:  # always written; the checks judge null
                text = text.fill_null("null")
            frags.append(pc.binary_join_element_wise(_S(key), text, _S("")))
        if frags:
            body = pc.binary_join_element_wise(*frags, _S(""), null_handling="replace",
                                               null_replacement="")
            body = pc.utf8_slice_codeunits(body, 1)
        else:
            body = pa.array([""] * len(arr), pa.string())
        out = pc.binary_join_element_wise(_S("{"), body, _S("}"), _S(""))
        return _mask(out, arr)
    if k in ("list", "map"):
        offs = arr.offsets
        if k == "map":
            keys = _quoted(arr.keys)
            vals = _text(n.items, arr.items).fill_null("null")
            elems = pc.binary_join_element_wise(keys, vals, _S(":"))
        else:
            elems = _text(n.items, arr.values).fill_null("null")
        base = offs[0].as_py()
        lst = pa.ListArray.from_arrays(pc.subtract(offs, base),
                                       elems.slice(base, offs[-1].as_py() - base))
        joined = pc.binary_join(lst, _S(","))
        o, c = ("{", "}") if k == "map" else ("[", "]")
        return _mask(pc.binary_join_element_wise(_S(o), joined, _S(c), _S("")), arr)
    if k == "string":
        return _quoted(arr)
    if k == "int":
        return arr.cast(pa.string())
    if k == "float":
        f = arr.cast(pa.float64())
        if not pc.all(pc.is_finite(f).fill_null(True)).as_py():
            raise _NonFinite()
        text = f.cast(pa.string())
        # Arrow writes 394.0 as "394" and -0.0 as "-0", which JSON readers take as integers
        # (-0 then loses its sign): keep a fraction, as orjson and json.dumps do
        whole = pc.invert(pc.match_substring_regex(text, "[.eE]")).fill_null(False)
        if pc.any(whole).as_py():
            text = pc.if_else(whole, pc.binary_join_element_wise(text, _S(".0"), _S("")), text)
        return text
    if k == "bool":
        return pc.if_else(arr, _S("true"), _S("false"))
    if k == "timestamp":
        return _iso_text(arr.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()), True)
    if k == "date":
        return _iso_text(arr.cast(pa.int32()), False)
    if k == "null":
        return pa.nulls(len(arr), pa.string())
    raise _NonFinite()  # json leaves: per-row path


def _civil(days: np.ndarray):
    """Proleptic Gregorian (year, month, day) of days since 1970-01-01 (H. Hinnant's algorithm)."""
    z = days + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (m <= 2), m, d


def _digits(mat: np.ndarray, col: int, v: np.ndarray, width: int) -> None:
    for i in range(width):
        mat[:, col + width - 1 - i] = (v // 10 ** i) % 10 + 48


def _iso_text(ints: pa.Array, with_time: bool) -> pa.Array:
    """Quoted RFC 3339 text (``"YYYY-MM-DDTHH:MM:SS.ffffffZ"`` or ``"YYYY-MM-DD"``) built as a
    fixed-width byte matrix in numpy (Arrow's strftime costs microseconds per row)."""
    n = len(ints)
    v = ints.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if with_time:
        days, us = np.divmod(v, 86_400_000_000)
    else:
        days, us = v, np.zeros(n, np.int64)
    y, mo, d = _civil(days)
    if ((y < 1) | (y > 9999)).any():
        raise _NonFinite()  # years JSON cannot write with four digits: per-row path decides
    tmpl = b'"0000-00-00T00:00:00.000000Z"' if with_time else b'"0000-00-00"'
    mat = np.empty((n, len(tmpl)), np.uint8)
    mat[:] = np.frombuffer(tmpl, np.uint8)
    _digits(mat, 1, y, 4)
    _digits(mat, 6, mo, 2)
    _digits(mat, 9, d, 2)
    if with_time:
        secs, frac = np.divmod(us, 1_000_000)
        _digits(mat, 12, secs // 3600, 2)
        _digits(mat, 15, secs // 60 % 60, 2)
        _digits(mat, 18, secs % 60, 2)
        _digits(mat, 21, frac, 6)
    w = len(tmpl)
    offsets = np.arange(0, (n + 1) * w, w, dtype=np.int32)
    out = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(mat.tobytes()))
    return _mask(out, ints)


def _mask(out: pa.Array, arr: pa.Array) -> pa.Array:
    if not arr.null_count:
        return out
    return pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string()))


# -- checks -------------------------------------------------------------------------------
def _check(c: Check, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> None:
    n = c.node
    valid = valid_mask(arr)
    live = live & valid
    if not live.any():
        return
    if n.kind == "struct":
        for i, (name, sub) in enumerate(c.children):
            child = arr.field(i)
            if name in c.required and not sub.nullable:
                ctx.fail(live & ~valid_mask(child), f"{path}/{name}: null is not allowed: '{name}' is a "
                                                    "required property")
            _check(sub, child, live, ctx, f"{path}/{name}")
        return
    if n.kind in ("list", "map"):
        offs = arr.offsets.to_numpy().astype(np.int64)
        lens = np.diff(offs)
        lo, hi = c.counts
        if lo is not None:
            ctx.fail(live & (lens < lo), f"{path}: should have at least {lo} items")
        if hi is not None:
            ctx.fail(live & (lens > hi), f"{path}: should have at most {hi} items")
        base, stop = int(offs[0]), int(offs[-1])
        items = (arr.items if n.kind == "map" else arr.values).slice(base, stop - base)
        inner = np.repeat(live, lens)
        sub = ctx.items(offs - base)
        if not c.nullable_items:
            sub.fail(inner & ~valid_mask(items), f"{path}: None is not of the item type")
        if c.items is not None:  # a list or map always has its item check (built with it)
            _check(c.items, items, inner, sub, f"{path}/*")
        return
    if c.enum is not None:
        ok = pc.is_in(arr, value_set=pa.array(c.enum, arr.type)).to_numpy(zero_copy_only=False)
        ctx.fail(live & ~ok, lambda v: f"{path}: {v!r} is not one of {c.enum}", arr)
    for k, v in c.bounds.items():
        op = {"minimum": pc.less, "maximum": pc.greater, "exclusiveMinimum": pc.less_equal,
              "exclusiveMaximum": pc.greater_equal}[k]
        bad = op(arr.cast(pa.float64()) if isinstance(v, float) else arr, v).fill_null(False)
        ctx.fail(live & bad.to_numpy(zero_copy_only=False),
                 lambda x, k=k, v=v: f"{path}: {x!r} violates {k} {v}", arr)
    lo, hi = c.lengths
    if lo is not None or hi is not None:
        ln = pc.utf8_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        if lo is not None:
            ctx.fail(live & (ln < lo), lambda x: f"{path}: {x[:40]!r} is shorter than {lo}", arr)
        if hi is not None:
            ctx.fail(live & (ln > hi), lambda x: f"{path}: {x[:40]!r} is longer than {hi}", arr)
    if c.pattern is not None:
        ok = pc.match_substring_regex(arr, c.pattern).fill_null(True).to_numpy(zero_copy_only=False)
        ctx.fail(live & ~ok, lambda x: f"{path}: {x[:40]!r} does not match {c.pattern!r}", arr)


def encode_json_vectorized(c: Check, values: pa.Array):
    """(payloads, errors) or None when this batch needs the per-row path (NaN, inf)."""
    n = len(values)
    errors = np.full(n, None, object)
    ctx = RowErrors(errors)
    valid = valid_mask(values)
    _check(c, values, valid, ctx, "value")
    try:
        text = _text(c.node, values)
    except _NonFinite:
        return None
    bad = ctx.bad_rows()
    payloads = text.cast(pa.binary())
    keep = valid if bad is None else valid & ~bad
    if not keep.all():
        payloads = pc.if_else(pa.array(keep), payloads, pa.scalar(None, pa.binary()))
    if bad is None:
        return payloads, None
    for i in np.flatnonzero(bad).tolist():  # only failed rows
        errors[i] = f"json encode failed: {errors[i]}"
    return payloads, errors
