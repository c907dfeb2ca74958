"""A fast yes/no check of a value against one part of a schema, that agrees with the reference.

Used for the values of free-form (JSON-text) leaves, by the reader (their column is checked, see
:mod:`~connector.formats.json_schema._valid`) and the writer (``_encode_vec``): python-jsonschema
(the reference, :mod:`~connector.formats.json_schema._reference`) is slow for a ``oneOf`` of
objects, 20-30 µs per value; ``fastjsonschema`` compiles the same part to Python code about 5x
faster. It is used only where its answer is python-jsonschema's by construction, checked on the
schema part and every definition it reaches (else python-jsonschema's validator of the whole
document, evolved to the part, answers):

* the document's draft (as python-jsonschema reads ``$schema``) is 4, 6 or 7, which fastjsonschema
  implements (its ``$ref`` hides sibling keywords, as those drafts say);
* every keyword is one whose generated code tests what python-jsonschema's tests: ``type``,
  ``properties``, ``required``, ``additionalProperties``, ``items`` (one schema), ``minItems``,
  ``maxItems``, ``minProperties``, ``maxProperties``, ``minLength``, ``maxLength``, ``minimum``,
  ``maximum`` and the exclusive ones, ``pattern``, ``allOf``, ``anyOf``, ``oneOf``, ``not``,
  ``enum``/``const`` of scalars, ``$ref`` into ``definitions``/``$defs``, and annotations;
* left out because fastjsonschema answers otherwise: ``multipleOf`` (it divides decimals exactly,
  python-jsonschema divides floats: 19.01 is a multiple of 0.01 to one, not the other),
  ``patternProperties`` (it reads ``$`` as the end of the text, python-jsonschema's ``re`` also
  before a final newline: a name ending in a newline meets other schemas), ``enum``/``const`` of
  arrays or objects (Python's ``==`` takes ``1`` for ``true`` inside them), ``format`` with a
  checker (never: no format is asserted) and every keyword not listed.

``pattern`` is read the same way (``$`` as the end of the text): the two differ only on a string
that ends with a newline, and under ``oneOf`` or ``not`` a stricter branch can turn a refusal into
an acceptance; so when a pattern holds ``$``, a value whose JSON text holds a string ending with a
newline (``\\n"``, or a ``\\u000a`` anywhere) is left to python-jsonschema.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from connector.formats.json_schema._reference import LEGACY_REF, draft_of, validator_class

__all__ = ["sub_check"]

_SCHEMA_URI = {"draft4": "http://json-schema.org/draft-04/schema#",
               "draft6": "http://json-schema.org/draft-06/schema#",
               "draft7": "http://json-schema.org/draft-07/schema#"}
_ONE = frozenset({"additionalProperties", "items", "not"})  # a schema (or a boolean)
_MANY = frozenset({"allOf", "anyOf", "oneOf"})
_MAP = frozenset({"properties", "definitions", "$defs"})
_PLAIN = frozenset({"type", "required", "minItems", "maxItems", "minProperties", "maxProperties", "minLength",
                    "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly", "format", "contentEncoding", "contentMediaType"})
_SCALARS = (str, int, float, bool, type(None))
_DOLLAR = re.compile(r"(?<!\\)\$")  # fastjsonschema's DOLLAR_FINDER: the $ it rewrites to \Z


def _eligible(s: Any, dollars: list, depth: int = 0) -> bool:
    """Whether fastjsonschema's code for ``s`` is python-jsonschema's (see the module docstring);
    notes in ``dollars`` a pattern with ``$``."""
    if depth > 64:
        return False
    if isinstance(s, bool):
        return True
    if not isinstance(s, dict):
        return False
    for k, v in s.items():
        if k == "pattern":
            if not isinstance(v, str):
                return False
            if _DOLLAR.search(v):
                dollars.append(v)
            continue
        if k in _PLAIN or k in _ANNOTATIONS:
            continue
        if k == "$ref":
            if not (isinstance(v, str) and v.startswith(("#/definitions/", "#/$defs/"))):
                return False
        elif k in ("enum", "const"):
            values = v if k == "enum" else [v]
            if not isinstance(values, list) or not all(isinstance(x, _SCALARS) for x in values):
                return False
        elif k in _ONE:
            if k == "items" and not isinstance(v, (dict, bool)):
                return False
            if not _eligible(v, dollars, depth + 1):
                return False
        elif k in _MANY:
            if not isinstance(v, list) or not all(_eligible(x, dollars, depth + 1) for x in v):
                return False
        elif k in _MAP:
            if not isinstance(v, dict) or not all(_eligible(x, dollars, depth + 1) for x in v.values()):
                return False
        else:
            return False
    return True


Check = Callable[[Any, "str | None"], bool]


def _fast(root: Any, s: Any, slow: Callable[[Any], bool]) -> Check | None:
    draft = draft_of(root)
    if draft not in _SCHEMA_URI or not isinstance(s, dict) or "definitions" in s or "$defs" in s:
        return None
    defs = {k: root[k] for k in ("definitions", "$defs") if isinstance(root, dict) and k in root}
    dollars: list = []
    if not _eligible(s, dollars) or not all(_eligible(d, dollars) for d in ({"definitions": x} for x in defs.values())):
        return None
    import fastjsonschema

    try:
        validate = fastjsonschema.compile({**s, **defs, "$schema": _SCHEMA_URI[draft]}, handlers={},
                                          use_default=False, use_formats=False)
    except (fastjsonschema.JsonSchemaDefinitionException, ValueError, TypeError, RecursionError, re.error):
        return None
    invalid = fastjsonschema.JsonSchemaValueException

    def check(doc: Any, text: str | None = None) -> bool:
        if dollars and (text is None or '\\n"' in text or "\\u000a" in text or "\\u000A" in text):
            return slow(doc)  # a string may end with a newline: where the two read $ apart
        try:
            validate(doc)
        except invalid:
            return False
        return True
    return check


def _resolve(root: Any, s: Any) -> Any:
    """A pure local ``$ref`` followed (one step at a time, at most 32)."""
    for _ in range(32):
        if not (isinstance(s, dict) and set(s) - _ANNOTATIONS == {"$ref"} and isinstance(s["$ref"], str)
                and s["$ref"].startswith("#/")):
            return s
        node = root
        for part in s["$ref"][2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        s = node
    return None


def _tagged(root: Any, s: Any, reference: Any, full: Check) -> Check | None:
    """A ``oneOf``/``anyOf`` of object schemas, checked against the branches an object can meet:

    * told apart by one member fixed to a string in each (``{"object": {"const": "charge"}}``;
      Stripe, CloudEvents, payment kinds): a value holding that member can only meet the branch its
      string names, so only that branch is checked (every other branch refuses it: its
      ``const``/one-value ``enum`` differs). A string no branch names meets none; a value without
      the member (or not a string there) is checked against every branch;
    * else, when branches list ``required`` members: a branch whose required members the object
      lacks refuses it, so only the others are checked (``oneOf``: when one is left; when several
      are, every branch, to count them).

    Either way ``oneOf`` and ``anyOf`` give the answers checking every branch gives."""
    if not isinstance(s, dict) or len(set(s) - _ANNOTATIONS) != 1:
        return None
    key = next(iter(set(s) - _ANNOTATIONS))
    branches = s[key]
    if key not in ("oneOf", "anyOf") or not isinstance(branches, list) or len(branches) < 2:
        return None
    resolved = [_resolve(root, b) for b in branches]
    if not all(isinstance(b, dict) and b.get("type") == "object" and isinstance(b.get("properties"), dict)
               for b in resolved):
        return None
    keywords = validator_class(root).VALIDATORS  # const from draft 6, required from draft 4

    def fixed(b, name):
        p = b["properties"].get(name)
        if not isinstance(p, dict) or ("$ref" in p and draft_of(root) in LEGACY_REF):
            return None
        values = [p["const"]] if "const" in p and "const" in keywords else p.get("enum")
        return values[0] if isinstance(values, list) and len(values) == 1 and isinstance(values[0], str) else None

    checks = [sub_check(root, b, reference) for b in branches]
    for name in resolved[0]["properties"]:
        tags = [fixed(b, name) for b in resolved]
        if None in tags or len(set(tags)) != len(tags):
            continue
        table = dict(zip(tags, checks))

        def check(doc: Any, text: str | None = None, name=name, table=table) -> bool:
            if isinstance(doc, dict):
                tag = doc.get(name)
                if type(tag) is str:
                    branch = table.get(tag)
                    return branch is not None and branch(doc, text)
            return full(doc, text)
        return check
    # no tag: a branch whose required members the value lacks refuses it (no need to ask it)
    required = [frozenset(b["required"]) if isinstance(b.get("required"), list) and
                all(isinstance(x, str) for x in b["required"]) else frozenset() for b in resolved]
    if "required" not in keywords or not any(required):
        return None
    one = key == "oneOf"

    def by_members(doc: Any, text: str | None = None) -> bool:
        if not isinstance(doc, dict):
            return full(doc, text)
        present = doc.keys()
        candidates = [c for c, req in zip(checks, required) if req <= present]
        if one and len(candidates) > 1:
            return full(doc, text)  # several may hold: count them all
        return any(c(doc, text) for c in candidates)
    return by_members


def sub_check(root: Any, s: Any, reference: Any = None) -> Check:
    """``check(value, text=None) -> bool``: whether ``value`` (parsed from JSON ``text``, when the
    caller has it) is valid against ``s``, a part of the schema document ``root`` (its ``$ref``s
    resolve against ``root``). ``reference``: python-jsonschema's validator of ``root``, when
    the caller has one."""
    if reference is None:
        reference = validator_class(root)(root)
    slow = reference.evolve(schema=s).is_valid
    full = _fast(root, s, slow)
    if full is None:
        def full(doc: Any, text: str | None = None) -> bool:
            return slow(doc)
    return _tagged(root, _resolve(root, s), reference, full) or full
