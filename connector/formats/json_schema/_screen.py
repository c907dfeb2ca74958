"""A vectorized screen of free-form (JSON-text) values against a union of object schemas.

A free-form leaf whose schema is a ``oneOf``/``anyOf`` of objects (Stripe's ``data.object``, a
payment kind) is checked value by value in Python (``_subvalid``: a parse and a compiled check,
3 to 5 µs each): on event envelopes that doubled the decode. The screen decodes the leaf's texts
with the reader's own engine, one compiled pass per branch, each branch's type tree and
validation plan built as the reader's are (``_engine``, ``_valid``). The plan's promise makes it
sound: a row its cheap checks pass (no kernel flag, no error, nothing left to the reference path)
is valid against the branch. So

* ``anyOf``: a value that passes one branch is valid;
* ``oneOf`` told apart by a tag (one member fixed to a different string per branch,
  :func:`~connector.formats.json_schema._subvalid.object_union`): a value that passes branch B and
  holds B's tag at its top level meets B, and every other branch refuses it (their tag differs):
  valid. Rows are sent to the branch their text names (a search of the text for the tag, which
  only chooses the branch to try: the decoded tag decides).

Every other row (a value one branch's screen does not pass, an untagged ``oneOf``) is left to the
per-value check, whose verdict stands: the screen only ever skips checks of valid values.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.core import DecodeOptions
from connector.formats.json_schema._subvalid import object_union

__all__ = ["leaf_screen"]

Screen = Callable[[pa.Array], np.ndarray]
_KEEP = ("$schema", "$id", "id", "definitions", "$defs")


def _refs(s: Any, out: list, depth: int = 0) -> bool:
    """Collects every ``$ref`` of ``s``; False when too deep to walk."""
    if depth > 64:
        return False
    if isinstance(s, dict):
        for k, v in s.items():
            if k == "$ref":
                out.append(v)
            elif not _refs(v, out, depth + 1):
                return False
    elif isinstance(s, list):
        return all(_refs(v, out, depth + 1) for v in s)
    return True


def _branch_document(root: dict, branch: dict) -> dict | None:
    """``branch`` as a schema document of its own: the root's draft, base and definitions kept,
    so each ``$ref`` (into ``definitions``/``$defs`` only) resolves as it does in the root."""
    refs: list = []
    if not _refs(branch, refs) or not _refs({k: root.get(k) for k in ("definitions", "$defs")}, refs):
        return None
    if not all(isinstance(r, str) and r.startswith(("#/definitions/", "#/$defs/")) for r in refs):
        return None
    if set(branch) & set(_KEEP) - {"$schema"}:
        return None  # its own base or definitions: not this simple copy
    return {**{k: root[k] for k in _KEEP if k in root}, **branch}


def leaf_screen(root: Any, part: Any, options: DecodeOptions, engine: Callable[..., Any],
                unions: bool = True) -> Screen | None:
    """``screen(texts) -> mask`` of the JSON texts surely valid against ``part`` (a part of the
    bundled schema ``root``), or None when ``part`` is not a shape the screen can judge.
    ``engine``: the reader's engine class (``_engine.JsonEngine``, which asks this module);
    ``unions``: False in the engines of a union's branches (no screens within screens)."""
    if not isinstance(root, dict):
        return None
    from connector.formats.json_schema._subvalid import _resolve

    fixed = _fixed_texts(root, _resolve(root, part))
    if fixed is not None:
        return lambda texts: pc.is_in(texts, value_set=fixed).fill_null(False).to_numpy(zero_copy_only=False)
    if not unions:
        return None
    union = object_union(root, _resolve(root, part))
    if union is None:
        return None
    key, _, resolved, tag = union
    excluding = _excluding(root, resolved) if key == "oneOf" and tag is None else None
    if key == "oneOf" and tag is None and excluding is None:
        return None  # passing one branch does not show the others refuse it
    from connector.formats.json_schema._reference import Reference
    from connector.formats.json_schema._schema import parse_json_schema

    names = sorted({m for ms in excluding for m in ms}) if excluding is not None else []
    engines, seen = [], []
    for b in resolved:
        props, held, closed = _members_seen(root, b)
        extra = [m for m in names if m not in props]
        if extra and _open(b):  # the members others require, read in the same pass: listed as {}
            b = {**b, "properties": {**b["properties"], **{m: {} for m in extra}}}
            props = props | frozenset(extra)
        seen.append((props, held, closed))
        doc = _branch_document(root, b)
        if doc is None:
            return None
        try:
            node = parse_json_schema(json.dumps(doc), max_depth=options.max_recursion_depth)
            if node.kind != "struct":
                return None
            engines.append(engine(node, options, Reference(doc), screens=False))
        except Exception:  # noqa: BLE001 - a branch the engine cannot take: the per-value check judges
            return None
    if excluding is not None:
        presence = engine(parse_json_schema(json.dumps({"type": "object", "properties": {m: {} for m in names}})),
                              options, None, screens=False)
        return _by_members(engines, presence, excluding, seen)
    if tag is None:
        return _any_of(engines)
    name, tags = tag
    if re.search(r'["\\\x00-\x1f]', name):  # not found as written in compact JSON text
        return _any_of(engines) if key == "anyOf" else None
    if any(re.search(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029]', t) for t in tags):
        return _any_of(engines) if key == "anyOf" else None  # written otherwise in a text
    decoded = []  # the tag as its column holds it: a string, or JSON text (a const without a type)
    for e, t in zip(engines, tags):
        kind = dict(e.node.fields).get(name)
        if kind is None:
            return None
        decoded.append(json.dumps(t, ensure_ascii=False) if kind.kind == "json" else t)
    return _tagged(engines, name, tags, decoded, key == "anyOf")


_PLAIN_TEXT = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but " and \: one way to write it in JSON


def _fixed_texts(root: Any, s: Any) -> pa.Array | None:
    """A schema part that is only ``const``/``enum`` of strings, booleans or null (a tag without a
    ``type``: ``{"const": "card"}``): the JSON texts of its values, as the kernel writes a JSON-text
    leaf (compact, one spelling each). A text among them is valid; any other is checked one by one."""
    from connector.formats.json_schema._reference import validator_class

    if not isinstance(s, dict) or not s:
        return None
    keywords = validator_class(root).VALIDATORS
    from connector.formats.json_schema._subvalid import _ANNOTATIONS

    keys = set(s) - _ANNOTATIONS
    if not keys or not keys <= {"const", "enum"} or not keys <= set(keywords):
        return None
    allowed = None
    for k in keys:
        values = [s[k]] if k == "const" else s[k]
        if not isinstance(values, list):
            return None
        texts = set()
        for v in values:
            if v is None or isinstance(v, bool):
                texts.add(json.dumps(v))
            elif isinstance(v, str) and _PLAIN_TEXT.fullmatch(v):
                texts.add(json.dumps(v))
            # any other value: its texts are not listed (a value equal to it is checked one by one)
        allowed = texts if allowed is None else allowed & texts
    return pa.array(sorted(allowed or ()), pa.string())


def _excluding(root: Any, resolved: list) -> list[list[str]] | None:
    """Per branch of an untagged ``oneOf``, its required members whose absence (or a null there)
    makes it refuse a value: required, and a property whose schema refuses null. None when a branch
    has none (nothing shows it refuses a value)."""
    from connector.formats.json_schema._valid import null_refused

    out = []
    for b in resolved:
        req = b.get("required")
        props = b["properties"]
        ms = [m for m in req if isinstance(m, str) and m in props and null_refused(root, props[m])] \
            if isinstance(req, list) else []
        if not ms:
            return None
        out.append(ms)
    return out


def _open(b: dict) -> bool:
    """Whether listing more members under ``properties`` (as ``{}``) leaves what ``b`` accepts as it
    is: nothing in ``b`` reads which members ``properties`` lists (``additionalProperties``,
    ``unevaluatedProperties``)."""
    return b.get("additionalProperties", True) in (True, {}) and "unevaluatedProperties" not in b


def _members_seen(root: Any, b: dict) -> tuple[frozenset, frozenset, bool]:
    """What a value branch ``b`` accepts shows of its members: ``(properties, members it holds
    non-null, closed)`` — closed: ``additionalProperties: false`` and no ``patternProperties``,
    so it holds no member outside its properties."""
    from connector.formats.json_schema._valid import null_refused

    props = b["properties"]
    req: list = b["required"] if isinstance(b.get("required"), list) else []
    held = frozenset(m for m in req if isinstance(m, str) and m in props and null_refused(root, props[m]))
    closed = b.get("additionalProperties") is False and not b.get("patternProperties")
    return frozenset(props), held, closed


def _by_members(engines: list, presence: Any, excluding: list[list[str]], seen: list[tuple]) -> Screen:
    """An untagged ``oneOf``: a value that passes branch B, while every other branch misses one of
    its excluding members (absent or null: it refuses the value), meets B alone.

    Whether a member is missing is read from B's own decoded value where it can be (a property of
    B: its column is null; a member outside B's properties when B is closed: absent), else from a
    presence pass over every excluding member (made only when needed). A branch whose passing
    values always hold another branch's excluding members is never alone: not screened."""
    plans = []
    for k, (props, held, closed) in enumerate(seen):
        others = [ms for j, ms in enumerate(excluding) if j != k]
        if any(set(ms) <= held for ms in others):
            continue  # its values hold every excluding member of another branch: never alone
        # its own columns can show each other branch a member short (one it may lack, or any member
        # outside its properties when closed); else the presence pass tells
        own = all(any((m in props and m not in held) or (m not in props and closed) for m in ms) for ms in others)
        plans.append((k, others, props, own, closed))

    def screen(texts: pa.Array) -> np.ndarray:
        n = len(texts)
        ok = np.zeros(n, bool)
        live = texts.is_valid().to_numpy(zero_copy_only=False)
        present: Any = None
        for k, others, props, own, closed in plans:
            rows = np.flatnonzero(live & ~ok)
            if not len(rows):
                break
            if not own and present is None:
                seen_rows, present = presence.screen(texts.fill_null("null"))
                live &= seen_rows & present.is_valid().to_numpy(zero_copy_only=False)
                rows = np.flatnonzero(live & ~ok)
                if not len(rows):
                    break
            passed, vals = engines[k].screen(texts.take(pa.array(rows)))
            alone = passed.copy()
            for ms in others:
                miss = np.zeros(len(rows), bool)
                for m in ms:
                    if own:
                        if m in props:
                            col = pc.struct_field(vals, [vals.type.get_field_index(m)])
                            miss |= pc.is_null(col).to_numpy(zero_copy_only=False)
                        elif closed:  # a member outside its properties is absent
                            miss[:] = True
                    else:
                        col = pc.struct_field(present, [present.type.get_field_index(m)]).take(pa.array(rows))
                        miss |= pc.is_null(col).to_numpy(zero_copy_only=False)
                alone &= miss
            ok[rows[alone]] = True
        return ok
    return screen


def _any_of(engines: list) -> Screen:
    def screen(texts: pa.Array) -> np.ndarray:
        ok = np.zeros(len(texts), bool)
        todo = np.flatnonzero(texts.is_valid().to_numpy(zero_copy_only=False))
        for e in engines:
            if not len(todo):
                break
            passed, _ = e.screen(texts.take(pa.array(todo)))
            ok[todo[passed]] = True
            todo = todo[~passed]
        return ok
    return screen


def _tagged(engines: list, name: str, tags: list[str], decoded: list[str], any_of: bool) -> Screen:
    finder = '"' + re.escape(name) + '":"(?P<tag>[^"\\\\]*)"'

    def screen(texts: pa.Array) -> np.ndarray:
        ok = np.zeros(len(texts), bool)
        named = pc.struct_field(pc.extract_regex(texts, finder), [0])
        for e, t, held in zip(engines, tags, decoded):
            rows = np.flatnonzero(pc.equal(named, t).fill_null(False).to_numpy(zero_copy_only=False))
            if not len(rows):
                continue
            passed, vals = e.screen(texts.take(pa.array(rows)))
            # the tag the value holds at its top level, decoded: the text search only chose the branch
            top = pc.equal(pc.struct_field(vals, [vals.type.get_field_index(name)]), held)
            ok[rows[passed & top.fill_null(False).to_numpy(zero_copy_only=False)]] = True
        if any_of:  # anyOf: a value without the tag (or that failed its branch) may pass another
            rest = np.flatnonzero(~ok & texts.is_valid().to_numpy(zero_copy_only=False))
            if len(rest):
                ok[rest[every(texts.take(pa.array(rest)))]] = True
        return ok
    every = _any_of(engines)
    return screen
