"""Records that break a JSON Schema: Hypothesis mutations of valid documents, guided by the schema.

:func:`mutated` draws a valid document (``json_values.documents``) and applies a few edits at
random places: a member dropped (a required one among them), a member added (a property of
another object, or an unknown name where ``additionalProperties`` is false), a value made null,
of another JSON type, or one of the schema's interesting values — every ``enum``/``const`` value
of the schema, each numeric bound and its neighbours (±1, ±0.5, exclusive edges), strings one
code point shorter or longer than a ``minLength``/``maxLength`` and one that breaks a ``pattern``,
arrays one item past ``minItems``/``maxItems`` and with an item repeated (``uniqueItems``), a
valid value of another ``oneOf``/``anyOf`` branch or two branches merged. Whether the result is
valid is not decided here: the test asks python-jsonschema (the reference). Every value put
into a document is a copy (an edit changes documents in place; a shared value would change the
next draws, which Hypothesis reports as a flaky strategy).
"""
from __future__ import annotations

import copy
import json

from hypothesis import strategies as st

from tests.roundtrip.json_values import FREE, documents


def _interesting(schema) -> dict:
    """Values worth trying, by kind, gathered from every keyword of the schema."""
    out: dict = {"enum": [], "numbers": [], "strings": [], "names": set(), "lengths": set(), "items": set()}
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, list):
            stack.extend(s)
            continue
        if not isinstance(s, dict):
            continue
        for k, v in s.items():
            if k in ("enum", "const") and k != "properties":
                vals = v if k == "enum" and isinstance(v, list) else [v]
                out["enum"] += [x for x in vals if not isinstance(x, (dict, list))]
            elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf") and \
                    isinstance(v, (int, float)) and not isinstance(v, bool):
                out["numbers"] += [v, v - 1, v + 1, v - 0.5, v + 0.5, v * 3 + 0.1]
            elif k in ("minLength", "maxLength") and isinstance(v, int):
                out["lengths"] |= {max(v - 1, 0), v, v + 1}
            elif k in ("minItems", "maxItems", "minProperties", "maxProperties") and isinstance(v, int):
                out["items"] |= {max(v - 1, 0), v, v + 1}
            elif k == "pattern":
                out["strings"] += ["!!not-matching!!", "", "x\n"]
            if k == "properties" and isinstance(v, dict):
                out["names"] |= set(v)
                stack.extend(v.values())
            elif k not in ("enum", "const", "examples", "default"):
                stack.append(v)
    out["names"] = sorted(out["names"]) + ["zz_extra", ""]
    out["lengths"] = sorted(out["lengths"])
    out["items"] = sorted(out["items"])
    return out


def _sites(doc, path=()):
    """Every (path, value) in the document, the root included."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _sites(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _sites(v, path + (i,))


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def _set(doc, path, value):
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


_OTHER_TYPES = [None, True, 0, -1, 2.5, "", "s", [], {}, [1, "a"], {"k": 1}, 2 ** 63, 1e300]


@st.composite
def _edit(draw, doc, schema, hints, branches):
    sites = list(_sites(doc))
    path, value = draw(st.sampled_from(sites))
    kind = draw(st.sampled_from(["drop", "add", "null", "type", "enum", "number", "length", "items", "dup",
                                 "branch", "free"]))
    if kind == "drop":
        if isinstance(value, dict) and value:
            del value[draw(st.sampled_from(sorted(value)))]
        elif isinstance(value, list) and value:
            value.pop(draw(st.integers(0, len(value) - 1)))
        return doc
    if kind == "add":
        if isinstance(value, dict):
            value[draw(st.sampled_from(hints["names"]))] = copy.deepcopy(draw(st.sampled_from(_OTHER_TYPES + ["x"])))
        elif isinstance(value, list):
            value.append(copy.deepcopy(draw(st.sampled_from(_OTHER_TYPES))))
        return doc
    if kind == "null":
        return _set(doc, path, None)
    if kind == "type":
        return _set(doc, path, copy.deepcopy(draw(st.sampled_from(_OTHER_TYPES))))
    if kind == "enum" and hints["enum"]:
        return _set(doc, path, copy.deepcopy(draw(st.sampled_from(hints["enum"]))))
    if kind == "number" and hints["numbers"]:
        return _set(doc, path, draw(st.sampled_from(hints["numbers"])))
    if kind == "length":
        if isinstance(value, str):
            n = draw(st.sampled_from(hints["lengths"] or [0, 1, 40]))
            return _set(doc, path, draw(st.sampled_from(["a", "é", "😀"])) * n)
        if hints["strings"]:
            return _set(doc, path, draw(st.sampled_from(hints["strings"])))
        return doc
    if kind == "items":
        n = draw(st.sampled_from(hints["items"] or [0, 1, 5]))
        if isinstance(value, list):
            fill = value[0] if value else draw(st.sampled_from(_OTHER_TYPES))
            items = (value * (n // max(len(value), 1) + 1))[:n] if value else [fill] * n
            return _set(doc, path, copy.deepcopy(items))
        if isinstance(value, dict):
            return _set(doc, path, dict(list(value.items())[:n]))
        return doc
    if kind == "dup" and isinstance(value, list) and value:
        value.append(copy.deepcopy(draw(st.sampled_from(value))))
        return doc
    if kind == "branch" and branches:
        other = draw(st.sampled_from(branches))
        if isinstance(value, dict) and isinstance(other, dict) and draw(st.booleans()):
            return _set(doc, path, copy.deepcopy({**value, **other}))  # two branches' members at once
        return _set(doc, path, copy.deepcopy(other))
    if kind == "free":
        return _set(doc, path, copy.deepcopy(draw(FREE)))
    return doc


def _draw_some(part) -> list:
    """A few valid documents of ``part`` (none when the generator cannot satisfy it)."""
    from hypothesis import HealthCheck, given, settings

    found: list = []

    @settings(max_examples=3, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(documents(part))
    def draw(d):
        found.append(d)
    try:
        draw()
    except Exception:  # a branch the generator cannot satisfy (Unsatisfiable, ...) gives no values
        return []
    return found


def _branch_values(schema, limit: int = 12) -> list:
    """A few valid values of each ``oneOf``/``anyOf`` branch of the schema (drawn once)."""
    out: list = []
    stack = [schema]
    branches = []
    while stack:
        s = stack.pop()
        if isinstance(s, list):
            stack.extend(s)
        elif isinstance(s, dict):
            for k, v in s.items():
                if k in ("oneOf", "anyOf") and isinstance(v, list):
                    branches += v
                if k not in ("enum", "const", "examples", "default"):
                    stack.append(v)
    root_defs = {k: schema[k] for k in ("definitions", "$defs") if isinstance(schema, dict) and k in schema}
    for b in branches[:8]:
        part = {**b, **root_defs} if isinstance(b, dict) else b
        if isinstance(schema, dict) and "$schema" in schema and isinstance(part, dict):
            part = {**part, "$schema": schema["$schema"]}
        out += _draw_some(part)
    return out[:limit]


def mutated(schema) -> st.SearchStrategy:
    """(document, edits made): a valid document with 0 to 3 edits (0: the valid record itself)."""
    hints = _interesting(schema)
    branches = _branch_values(schema)

    @st.composite
    def one(draw):
        doc = copy.deepcopy(draw(documents(schema)))
        n = draw(st.sampled_from([0, 1, 1, 1, 2, 3]))
        for _ in range(n):
            doc = draw(_edit(doc, schema, hints, branches))
        return doc
    return one()


def dumps(doc) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()
