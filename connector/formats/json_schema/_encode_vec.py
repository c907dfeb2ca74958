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
``additionalProperties`` (a map's values; ``false`` on an object: a field outside
``properties`` must be absent), ``required``, ``enum``/``const`` (of strings, integers or
booleans), ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` (numbers),
``minLength``/``maxLength``/``pattern`` (Python's ``re``, as python-jsonschema and the reader
read it: ``_valid.pattern_misses``) on strings and on the text of dates and date-times, ``minItems``/``maxItems``,
``uniqueItems`` (arrays of strings, integers, booleans, dates, date-times), local ``$ref``, and
``oneOf``/``anyOf``/``allOf`` whose branches are checked the same way against the column
(``{"type": "null"}`` branches included: the nullable-type pattern ``oneOf: [null, X]``):
each branch is checked over the whole column into a mask, and the masks are counted.
Unknown keys (``x-...``, ``title``, ``format``, ...) are annotations, ignored as validators
ignore them.

A free-form JSON leaf (``{}``, a union of several types) holds JSON text: each value is
parsed once, checked against its own part of the schema when that part has validation keywords
with the reader's check (``_subvalid.sub_check``: fastjsonschema where it provably agrees with
python-jsonschema, else python-jsonschema, whose reason a refused value gets), and written back
compact, as the per-record path writes it. A schema using another validation keyword
(``not``, ``if``/``then``, ``multipleOf``, ``patternProperties``, ...) is encoded by the
per-record path (``_json``), which validates the whole record with ``jsonschema``;
:func:`plan` decides once per schema.
"""
from __future__ import annotations

import re

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.json_schema._jsontext import loads_json_text
from connector.formats.json_schema._reference import validator_class
from connector.formats.json_schema._schema import JNode
from connector.formats.json_schema._subvalid import sub_check
from connector.formats.json_schema._valid import pattern_misses
from connector.formats.core import RowErrors, valid_mask

__all__ = ["plan", "encode_json_vectorized"]

# Validation keywords (drafts 4 to 2020-12) this module does not check: a schema using one
# goes per row through jsonschema. Any other unknown key (``x-...``, AsyncAPI's
# ``discriminator``, ...) is an annotation, ignored by validators and here alike.
_UNCHECKED = frozenset(["multipleOf", "additionalItems", "prefixItems", "contains",
                        "maxContains", "minContains", "maxProperties", "minProperties",
                        "patternProperties", "dependencies", "dependentRequired", "dependentSchemas",
                        "propertyNames", "if", "then", "else", "not",
                        "$dynamicRef", "$recursiveRef", "unevaluatedItems", "unevaluatedProperties",
                        "contentSchema"])
_CHECKED = frozenset(["type", "properties", "items", "additionalProperties", "required", "enum",
                      "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                      "minLength", "maxLength", "pattern", "minItems", "maxItems", "$ref",
                      "uniqueItems", "oneOf", "anyOf", "allOf"])
# Keys of a free-form leaf's schema that need no validator (annotations of every draft).
_ANNOTATIONS = frozenset(["title", "description", "default", "examples", "format", "$comment",
                          "deprecated", "readOnly", "writeOnly", "contentEncoding",
                          "contentMediaType", "$schema", "$id", "id", "definitions", "$defs"])
# Item kinds whose JSON text is one-to-one with the Arrow value (uniqueItems by value).
_UNIQUE_KINDS = frozenset(["string", "int", "bool", "date", "timestamp"])
# Length of the (unquoted) text of a date-time and of a date.
_TEXT_WIDTH = {"timestamp": 27, "date": 10}
_JTYPES = {"struct": "object", "map": "object", "list": "array", "string": "string",
           "timestamp": "string", "date": "string", "int": "integer", "float": "number",
           "bool": "boolean", "null": "null"}


class _NoPlan(Exception):
    pass


def _resolve(root, s, depth=0):
    while isinstance(s, dict) and "$ref" in s:
        ref = s["$ref"]
        # Keys beside $ref: annotations only (whether others apply depends on the draft).
        if depth > 32 or not isinstance(ref, str) or not ref.startswith("#") or set(s) - _ANNOTATIONS > {"$ref"}:
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
                 "bounds", "lengths", "pattern", "counts", "nullable", "combos", "unique",
                 "forbidden", "leaf", "has_leaf")

    def __init__(self, node, schema):
        self.node, self.schema = node, schema
        self.children, self.items = [], None
        self.required, self.nullable_items, self.enum = (), True, None
        self.nullable = True  # whether the schema accepts null here
        self.bounds, self.lengths, self.pattern, self.counts = {}, (None, None), None, (None, None)
        #: (keyword, branches) of oneOf/anyOf/allOf; a branch is a Check or None ({"type": "null"})
        self.combos: list[tuple[str, list]] = []
        self.unique = False  # uniqueItems
        self.forbidden: tuple[str, ...] = ()  # fields additionalProperties: false leaves out
        self.leaf = None  # free-form JSON leaf: a per-value check (jsonschema) or None
        self.has_leaf = False  # a free-form leaf below (children/items): values are rewritten


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
    for key in ("oneOf", "anyOf", "allOf"):
        branches = s.get(key)
        if isinstance(branches, list):
            took = [_allows_null(root, b, depth + 1) for b in branches]
            if (key == "oneOf" and sum(took) != 1) or (key == "anyOf" and not any(took)) \
                    or (key == "allOf" and not all(took)):
                return False
    return True


class _Env:
    """What planning one schema shares: the root document and, made when a free-form leaf
    needs it, ``jsonschema``'s validator of the whole schema (evolved to each leaf's part)."""

    def __init__(self, root):
        self.root = root
        self._validator = None

    def leaf_check(self, s):
        """A per-value check for a free-form leaf with schema ``s`` (``check(doc, text)`` → error
        text or None), or None when ``s`` has only annotations. The verdict is the reader's
        (``_subvalid.sub_check``: fastjsonschema where it provably agrees with python-jsonschema);
        the reason of a refusal is python-jsonschema's."""
        if s is True or (isinstance(s, dict) and set(s) <= _ANNOTATIONS):
            return None
        if isinstance(s, dict) and set(s) - _ANNOTATIONS == {"type"}:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if all(t in _PY_TYPES for t in types) and ("integer" not in types or "number" in types):
                return _TypeCheck(types)
        if self._validator is None:
            self._validator = validator_class(self.root)(self.root)
        fast = sub_check(self.root, s, self._validator)
        validator = self._validator.evolve(schema=s)

        def check(doc, text=None):
            if fast(doc, text):
                return None
            err = next(iter(validator.iter_errors(doc)), None)
            return None if err is None else err.message[:300]
        return check


# A JSON value's type by Python type (a bool is checked first: True is an int to Python).
_PY_TYPES = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
             "null": (type(None),), "number": (int, float), "integer": (int,)}


class _TypeCheck:
    """A leaf schema that is only ``type`` (not ``integer`` without ``number``: whether 1.0
    is an integer depends on the draft, so jsonschema judges those)."""

    __slots__ = ("types", "names")

    def __init__(self, types: list):
        self.names = types
        self.types = tuple(t for name in types for t in _PY_TYPES[name])

    def __call__(self, doc, text=None):
        ok = ("boolean" in self.names) if isinstance(doc, bool) else isinstance(doc, self.types)
        return None if ok else f"{str(doc)[:40]!r} is not of type {', '.join(map(repr, self.names))}"


def _is_null_branch(root, b) -> bool:
    b = _resolve(root, b)
    return isinstance(b, dict) and b.get("type") == "null" and set(b) - _ANNOTATIONS <= {"type"}


def _plan(env: _Env, s, n: JNode, depth: int, in_branch: bool = False) -> Check:
    if depth > 64:
        raise _NoPlan("depth")
    root = env.root
    s = _resolve(root, s)
    if n.kind == "json":
        # Its text is made once, by the main tree (has_leaf); a branch only validates it.
        c = Check(n, s)
        c.leaf, c.has_leaf = env.leaf_check(s), not in_branch
        c.nullable = _allows_null(root, s)
        return c
    if s is True or s == {}:
        return Check(n, s)
    if not isinstance(s, dict):
        raise _NoPlan("schema")
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
    for key in ("oneOf", "anyOf", "allOf"):
        if key in s:
            if not isinstance(s[key], list) or not s[key]:
                raise _NoPlan(key)
            c.combos.append((key, [None if _is_null_branch(root, b) else _plan(env, b, n, depth + 1, True)
                                   for b in s[key]]))
    if n.kind == "struct":
        props = s.get("properties") or {}
        c.children = [(name, _plan(env, props.get(name, {}), t, depth + 1, in_branch)) for name, t in n.fields]
        c.has_leaf = any(sub.has_leaf for _, sub in c.children)
        req = s.get("required") or []
        if not isinstance(req, list) or any(r not in dict(n.fields) for r in req):
            raise _NoPlan("required")  # a required name we never write: every row fails
        c.required = tuple(req)
        extra = s.get("additionalProperties")
        if extra is not None and extra is not True and not isinstance(extra, dict):
            if extra is not False:
                raise _NoPlan("additionalProperties")
            c.forbidden = tuple(name for name, _ in n.fields if name not in props)
    elif n.kind in ("list", "map"):
        sub = s.get("items") if n.kind == "list" else s.get("additionalProperties")
        sub = {} if sub is None or sub is True else sub
        c.items = _plan(env, sub, n.items, depth + 1, in_branch)
        c.has_leaf = c.items.has_leaf
        c.nullable_items = _allows_null(root, sub)
        if n.kind == "list":
            c.counts = (s.get("minItems"), s.get("maxItems"))
            if s.get("uniqueItems") is True:
                if n.items.kind not in _UNIQUE_KINDS:
                    raise _NoPlan("uniqueItems")
                c.unique = True
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
        if n.kind not in ("string", "timestamp", "date"):
            raise _NoPlan("string keywords")
        c.lengths = (s.get("minLength"), s.get("maxLength"))
        if "pattern" in s:
            try:
                re.compile(s["pattern"])
            except (re.error, TypeError) as e:
                raise _NoPlan("pattern") from e
            c.pattern = s["pattern"]
    return c


def plan(schema, node: JNode):
    """The vectorized plan for a parsed schema, or None when the per-row path must run."""
    if schema is None:
        return None
    try:
        return _plan(_Env(schema), schema, node, 0)
    except (_NoPlan, KeyError, TypeError):
        return None


# -- text ---------------------------------------------------------------------------------
_S = lambda b: pa.scalar(b, pa.string())  # noqa: E731
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


# orjson's escapes (backslash first); other control characters it writes as \u00XX
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"),
            ("\b", "\\b"), ("\f", "\\f"))


def _quoted(arr: pa.Array) -> pa.Array:
    """Each string as JSON text, escaped as orjson escapes it: the rows that need escaping get
    Arrow's replacements, and only rows holding a rarer control character go through orjson."""
    arr = arr.cast(pa.string())
    bad = pc.match_substring_regex(arr, _NEEDS_ESCAPE).fill_null(False)
    if pc.any(bad).as_py():
        sub = arr.filter(bad)
        esc = sub
        for a, b in _ESCAPES:
            esc = pc.replace_substring(esc, a, b)
        rare = pc.match_substring_regex(esc, r"[\x00-\x1f]")
        if pc.any(rare).as_py():
            texts, orig = esc.to_pylist(), sub.to_pylist()
            for j in np.flatnonzero(rare.to_numpy(zero_copy_only=False)).tolist():
                texts[j] = orjson.dumps(orig[j]).decode()[1:-1]
            esc = pa.array(texts, pa.string())
        arr = pc.replace_with_mask(arr, bad, esc)
    return pc.binary_join_element_wise(_S('"'), arr, _S('"'), _S(""))


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
    return arr  # a free-form leaf: JSON text already (made compact by _rewrite)


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
class _Mask(RowErrors):
    """RowErrors that only marks which positions failed (a branch of oneOf/anyOf), no text."""

    def items(self, offsets: np.ndarray) -> "RowErrors":
        return _Mask(self.errors, self, offsets)

    def fail(self, bad: np.ndarray, message, values=None) -> None:
        if bad.any():
            self.root.failed = True
            self.errors[self.top(np.flatnonzero(bad))] = True


def _list_items(arr: pa.Array, kind: str):
    """(offsets rebased to 0, items of the list/map positions of ``arr``, the offsets' base)."""
    offs = arr.offsets.to_numpy().astype(np.int64)
    base, stop = int(offs[0]), int(offs[-1])
    items = (arr.items if kind == "map" else arr.values).slice(base, stop - base)
    return offs - base, items


def _duplicates(items: pa.Array, offs: np.ndarray, n: int) -> np.ndarray:
    """Positions (of ``n`` lists) whose items repeat a value, nulls included."""
    codes = pc.dictionary_encode(items).indices
    ncodes = int(pc.max(codes).as_py() or 0) + 2
    c = codes.fill_null(ncodes - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(offs))
    key = np.sort(rows * ncodes + c)
    out = np.zeros(n, bool)
    out[key[1:][key[1:] == key[:-1]] // ncodes] = True
    return out


def _check(c: Check, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str) -> None:
    n = c.node
    valid = valid_mask(arr)
    live = live & valid
    if not live.any():
        return
    for key, branches in c.combos:
        if key == "allOf":
            for b in branches:
                if b is None:
                    ctx.fail(live, f"{path}: None was expected (allOf)")
                else:
                    _check(b, arr, live, ctx, path)
            continue
        count = np.zeros(len(arr), np.int32)
        for b in branches:
            if b is not None:  # a {"type": "null"} branch takes no value that is not null
                bad = np.zeros(len(arr), bool)
                _check(b, arr, live, _Mask(bad), path)
                count += ~bad
        wrong = live & ((count != 1) if key == "oneOf" else (count == 0))
        ctx.fail(wrong, f"{path}: is not valid under {'exactly one' if key == 'oneOf' else 'any'} "
                        f"of the {key} schemas")
    if n.kind == "json":
        if c.leaf is not None and not c.has_leaf:  # in a branch (the main tree's leaf: _rewrite)
            vals = arr.to_pylist()
            bad = np.zeros(len(arr), bool)
            for i in np.flatnonzero(live).tolist():
                try:
                    bad[i] = c.leaf(loads_json_text(vals[i]), vals[i]) is not None
                except (ValueError, RecursionError):
                    bad[i] = True
            ctx.fail(bad, f"{path}: is not valid JSON for its schema")
        return
    if n.kind == "struct":
        fields = {name: i for i, (name, _) in enumerate(n.fields)}
        for i, (name, sub) in enumerate(c.children):
            child = arr.field(i)
            if name in c.required:
                if name not in n.required:  # a null field is left out: missing
                    ctx.fail(live & ~valid_mask(child), f"{path}: '{name}' is a required property")
                elif not sub.nullable:
                    ctx.fail(live & ~valid_mask(child), f"{path}/{name}: null is not allowed: '{name}' is "
                                                        "a required property")
            _check(sub, child, live, ctx, f"{path}/{name}")
        for name in c.forbidden:
            if name in n.required:
                ctx.fail(live, f"{path}: additional property {name!r} is not allowed")
            else:
                ctx.fail(live & valid_mask(arr.field(fields[name])),
                         f"{path}: additional property {name!r} is not allowed")
        return
    if n.kind in ("list", "map"):
        offs, items = _list_items(arr, n.kind)
        lens = np.diff(offs)
        lo, hi = c.counts
        if lo is not None:
            ctx.fail(live & (lens < lo), f"{path}: should have at least {lo} items")
        if hi is not None:
            ctx.fail(live & (lens > hi), f"{path}: should have at most {hi} items")
        if c.unique:
            ctx.fail(live & _duplicates(items, offs, len(arr)), f"{path}: has non-unique elements")
        inner = np.repeat(live, lens)
        sub = ctx.items(offs)
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
        if n.kind in _TEXT_WIDTH:  # a date(-time)'s text has one width
            ln = np.full(len(arr), _TEXT_WIDTH[n.kind])
        else:
            ln = pc.utf8_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        if lo is not None:
            ctx.fail(live & (ln < lo), lambda x: f"{path}: {str(x)[:40]!r} is shorter than {lo}", arr)
        if hi is not None:
            ctx.fail(live & (ln > hi), lambda x: f"{path}: {str(x)[:40]!r} is longer than {hi}", arr)
    if c.pattern is not None:
        text = pc.utf8_slice_codeunits(_text(n, arr), 1, -1) if n.kind in _TEXT_WIDTH else arr
        bad = pattern_misses(text, re.compile(c.pattern))
        ctx.fail(live & bad, lambda x: f"{path}: {x[:40]!r} does not match {c.pattern!r}", text)


# -- free-form leaves ---------------------------------------------------------------------
def _rewrite(c: Check, arr: pa.Array, live: np.ndarray, ctx: RowErrors, path: str,
             omit_null: bool, top: bool = False) -> pa.Array:
    """``arr`` with every free-form leaf's text parsed, checked and written back compact (the
    per-record path's bytes); a leaf that is not JSON, or not valid for its schema, is a row
    error. JSON ``null`` text is a null (so a field that is not required is left out, as the
    per-record path leaves it), except as the whole value."""
    if not c.has_leaf:
        return arr
    n = c.node
    valid = valid_mask(arr)
    live = live & valid
    if n.kind == "json":
        vals = arr.to_pylist()
        out: list = [None] * len(vals)
        why: list = [None] * len(vals)
        for i in np.flatnonzero(live).tolist():
            try:
                doc = loads_json_text(vals[i])
                if c.leaf is not None and not (doc is None and omit_null):
                    err = c.leaf(doc, vals[i])
                    if err is not None:
                        why[i] = f"{path}: {err}"
                        continue
                out[i] = orjson.dumps(doc).decode() if doc is not None or top else None
            except (ValueError, RecursionError, TypeError, orjson.JSONEncodeError) as e:
                why[i] = f"{path}: not JSON text: {e}"
        ctx.fail(np.array([w is not None for w in why], bool), lambda m: m, pa.array(why, pa.string()))
        return pa.array(out, pa.string())
    mask = None if arr.null_count == 0 else pa.array(~valid)
    if n.kind == "struct":
        children = [_rewrite(sub, arr.field(i), live, ctx, f"{path}/{name}", name not in n.required)
                    for i, (name, sub) in enumerate(c.children)]
        return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=mask)
    # list or map
    assert c.items is not None  # built with its item check
    offs, items = _list_items(arr, n.kind)
    inner = np.repeat(live, np.diff(offs))
    new = _rewrite(c.items, items, inner, ctx.items(offs), f"{path}/*", False)
    offsets = pa.array(offs.astype(np.int32))
    if n.kind == "map":
        keys = arr.keys.slice(int(arr.offsets[0].as_py()), len(new))
        return pa.MapArray.from_arrays(offsets, keys, new, type=arr.type, mask=mask)
    return pa.ListArray.from_arrays(offsets, new, type=arr.type, mask=mask)


def encode_json_vectorized(c: Check, values: pa.Array):
    """(payloads, errors) or None when this batch needs the per-row path (NaN, inf)."""
    n = len(values)
    errors = np.full(n, None, object)
    ctx = RowErrors(errors)
    valid = valid_mask(values)
    try:
        values = _rewrite(c, values, valid, ctx, "value", False, top=True)
        _check(c, values, valid, ctx, "value")
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
