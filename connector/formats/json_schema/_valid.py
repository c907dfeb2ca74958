"""Which rows the reference validator must judge: a plan per node of the type tree.

The reference (:mod:`~connector.formats.json_schema._reference`, python-jsonschema) decides what
is valid. Running it on every record would cost more than the whole decode, so the decoder
sends it only the rows that may be invalid, found cheaply on the way:

======================================  ==================================================
in the kernel (what the columns lose)   a required member absent; a member outside
                                        ``properties`` where ``additionalProperties`` is false
                                        or a schema; members (``min/maxProperties``), items
                                        (``min/maxItems``) and a string's code points
                                        (``min/maxLength``) counted; a null where the schema
                                        may refuse one; any value at a node whose schema has
                                        a keyword checked nowhere else
over the columns (vectorized)           ``enum``/``const``, ``minimum``/``maximum`` and the
                                        exclusive ones (draft 4's boolean form too),
                                        ``multipleOf``, ``pattern`` (Python's ``re``, as
                                        jsonschema), ``uniqueItems`` of scalars, and the
                                        values of JSON-text leaves against their part of the
                                        schema (``_subvalid``)
by the reference, on the rows above     everything else: ``oneOf``/``anyOf``/``allOf``/``not``,
                                        ``if``, ``patternProperties``, ``propertyNames``,
                                        ``dependent*``, ``contains``, ``unevaluated*``, ...
======================================  ==================================================

The cheap checks only ever send a row to the reference, never fail it: a row they pass is valid
(every way to be invalid is covered: a keyword this module does not know makes its node
*checked*), a row they flag is judged, and its error message is the reference's.

Each node of the type tree carries the schema parts that apply to its value (``JNode.schemas``:
the ``$ref`` wrappers, the ``oneOf``/``anyOf`` wrapper whose one non-null branch it maps, and
the part it was mapped from, last). Keywords are read per draft (the reference's validator
class lists them), so a keyword the draft ignores is ignored here too.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.json_schema._reference import LEGACY_REF, validator_class
from connector.formats.json_schema._schema import JNode
from connector.formats.json_schema._subvalid import sub_check

__all__ = ["LeafCheck", "NodeRule", "plan_validation", "pattern_misses"]

_BIG = 2 ** 53  # past it a float64 may not hold the integer a JSON reader (Python) holds
_I64 = (-(2 ** 63), 2 ** 63 - 1)

# keywords that say nothing about a null value (each applies to one other JSON type)
_TYPED = frozenset({"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                    "minProperties", "maxProperties", "dependencies", "dependentRequired", "dependentSchemas",
                    "unevaluatedProperties", "items", "prefixItems", "additionalItems", "contains", "minItems",
                    "maxItems", "uniqueItems", "unevaluatedItems", "minLength", "maxLength", "pattern", "minimum",
                    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "divisibleBy", "format"})
# the JSON types of the values a node of each kind holds (null aside)
_VALUE_TYPES = {"struct": {"object"}, "map": {"object"}, "list": {"array"}, "string": {"string"},
                "timestamp": {"string"}, "date": {"string"}, "int": {"integer"}, "float": {"number"},
                "bool": {"boolean"}, "null": set()}
_OBJECT_KINDS = ("struct", "map")
# keyword values that constrain nothing
_TRIVIAL: dict[str, tuple] = {k: ({}, True) for k in ("additionalProperties", "items", "propertyNames", "additionalItems",
                                    "unevaluatedProperties", "unevaluatedItems", "patternProperties", "properties",
                                    "dependencies", "dependentSchemas", "dependentRequired")}
_TRIVIAL["required"] = ([],)
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly", "format", "contentEncoding", "contentMediaType", "contentSchema", "$id",
                          "id", "$schema", "$anchor", "$defs", "definitions"})


def pattern_misses(arr: pa.Array, rx: re.Pattern) -> np.ndarray:
    """Strings of ``arr`` that ``pattern`` (compiled) does not match, as python-jsonschema reads
    it: ``re.search`` (Arrow's RE2 reads ``$``, ``\\d``, ``\\s``, ``[[:alpha:]]`` otherwise).
    Nulls are not misses. Reads and writes both ask this."""
    search = rx.search
    return np.fromiter((v is not None and search(v) is None for v in arr.to_pylist()), bool, len(arr))


@dataclass
class LeafCheck:
    """Checks of one column's values (each positions' value; nulls are the kernel's business).
    :meth:`failing` marks the positions the reference must judge."""

    kind: str  # string | int | float | bool | list (uniqueItems of its scalar items) | json
    value_check: Any = None  # json: check(value, text) -> bool, against the node's schema (_subvalid)
    enums: list = field(default_factory=list)  # each: the values allowed (all lists must hold)
    lower: list = field(default_factory=list)  # (bound, exclusive)
    upper: list = field(default_factory=list)
    multiples: list = field(default_factory=list)
    patterns: list = field(default_factory=list)  # compiled with Python's re
    unique_kind: str | None = None  # list: the item kind

    def failing(self, arr: pa.Array, items: pa.Array | None = None) -> np.ndarray:
        """Boolean mask over ``arr``'s positions (``items``: a list column's items, rebased)."""
        n = len(arr)
        bad = np.zeros(n, bool)
        if n == 0 or arr.null_count == n:
            return bad
        if self.kind == "list":
            return self._duplicates(arr, items) if self.unique_kind else bad
        if self.kind == "json":
            return self._values(arr)
        if self.kind == "string":
            for allowed in self.enums:
                bad |= ~pc.is_in(arr, value_set=pa.array(sorted(allowed), pa.string())).fill_null(True).to_numpy(
                    zero_copy_only=False)
            for rx in self.patterns:
                bad |= pattern_misses(arr, rx)
            return bad & arr.is_valid().to_numpy(zero_copy_only=False)
        if self.kind == "bool":
            v = arr.fill_null(False).to_numpy(zero_copy_only=False)
            for allowed in self.enums:
                bad |= ~np.isin(v, np.array(sorted(allowed), bool))
            return bad & arr.is_valid().to_numpy(zero_copy_only=False)
        if self.kind == "int":
            v = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            bad |= self._int_checks(v)
        else:
            v = arr.fill_null(0.0).to_numpy(zero_copy_only=False).astype(np.float64)
            bad |= np.abs(v) >= _BIG  # an integer there may be one float64 cannot hold
            bad |= self._float_checks(v)
        return bad & arr.is_valid().to_numpy(zero_copy_only=False)

    def _int_checks(self, v: np.ndarray) -> np.ndarray:
        bad = np.zeros(len(v), bool)
        for allowed in self.enums:
            ints = [x for x in allowed if _I64[0] <= x <= _I64[1]]
            bad |= ~np.isin(v, np.array(ints, np.int64))
        for b, excl in self.lower:  # v >= b, or v > b: as integer thresholds (exact)
            t = math.floor(b) + 1 if excl else math.ceil(b)
            if t > _I64[1]:
                bad[:] = True
            elif t > _I64[0]:
                bad |= v < t
        for b, excl in self.upper:
            t = math.ceil(b) - 1 if excl else math.floor(b)
            if t < _I64[0]:
                bad[:] = True
            elif t < _I64[1]:
                bad |= v > t
        for m in self.multiples:
            if isinstance(m, float):  # jsonschema: int(instance / m) != instance / m
                with np.errstate(all="ignore"):
                    q = v.astype(np.float64) / m
                bad |= ~np.isfinite(q) | (np.floor(q) != q)
            elif m <= _I64[1]:
                bad |= (v % np.int64(m)) != 0
            else:
                bad |= v != 0
        return bad

    def _float_checks(self, v: np.ndarray) -> np.ndarray:
        bad = np.zeros(len(v), bool)
        for allowed in self.enums:
            bad |= ~np.isin(v, np.array(sorted(allowed), np.float64))
        for b, excl in self.lower:  # bounds are floats or integers below 2**53: exact as float64
            bad |= (v <= b) if excl else (v < b)
        for b, excl in self.upper:
            bad |= (v >= b) if excl else (v > b)
        with np.errstate(all="ignore"):
            for m in self.multiples:
                if isinstance(m, float):
                    q = v / m
                    bad |= ~np.isfinite(q) | (np.floor(q) != q)
                else:  # instance % m, exact for the values below 2**53 (the others are flagged)
                    bad |= np.fmod(v, float(m)) != 0
        return bad

    def _values(self, arr: pa.Array) -> np.ndarray:
        """JSON texts whose value the schema part may refuse (one that does not parse back as
        orjson reads it, a 64-bit overflow, is left to the reference too)."""
        bad = np.zeros(len(arr), bool)
        check, loads = self.value_check, orjson.loads
        for i, text in enumerate(arr.to_pylist()):
            if text is None:
                continue
            try:
                ok = check(loads(text), text)
            except (orjson.JSONDecodeError, RecursionError):
                ok = False
            bad[i] = not ok
        return bad

    def _duplicates(self, arr: pa.Array, items: pa.Array | None) -> np.ndarray:
        """Lists holding two equal items (nulls are equal; -0.0 equals 0.0; a float item past
        2**53 is left to the reference)."""
        assert items is not None
        offs = arr.offsets.to_numpy().astype(np.int64)
        items = items.slice(int(offs[0]), int(offs[-1] - offs[0]))
        lens = np.diff(offs)
        n = len(arr)
        out = np.zeros(n, bool)
        if len(items) == 0:
            return out
        if self.unique_kind == "float":
            f = items.cast(pa.float64())
            big = np.abs(f.fill_null(0.0).to_numpy(zero_copy_only=False)) >= _BIG
            if big.any():
                out[np.unique(np.repeat(np.arange(n), lens)[big])] = True
            items = pc.add(f, 0.0)  # -0.0 + 0.0 is 0.0: one dictionary entry
        from connector.formats.json_schema._kernel import duplicates

        codes = pc.dictionary_encode(items).indices
        null = int(pc.max(codes).as_py() or 0) + 1  # one more code: null (nulls are equal)
        c = codes.fill_null(null).to_numpy(zero_copy_only=False).astype(np.int64)
        out |= duplicates(c, lens)
        return out


@dataclass
class NodeRule:
    """What one node of the type tree asks of the kernel, and of its column."""

    null: bool = False  # a null here goes to the reference
    check: bool = False  # any other value here goes to the reference
    unknown: bool = False  # struct: a member outside its fields goes to the reference
    lo: int = 0  # members or items at least ...
    hi: int = _I64[1]  # ... and at most (counted when ``counted``)
    counted: bool = False
    required: set = field(default_factory=set)  # struct: field names a record must hold
    leaf: LeafCheck | None = None


def plan_validation(document: Any, root: JNode) -> dict[int, NodeRule]:
    """The rule of every node of ``root`` (by ``id``), for the schema ``document`` (bundled)."""
    return _Planner(document).plan(root)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


class _Planner:
    def __init__(self, document: Any):
        cls = validator_class(document)
        self.root = document
        self.keywords = frozenset(cls.VALIDATORS) - {"format"}  # format: no format checker
        name = cls.__name__
        self.draft = {"Draft3Validator": "draft3", "Draft4Validator": "draft4", "Draft6Validator": "draft6",
                      "Draft7Validator": "draft7"}.get(name, "new")
        self.legacy_ref = self.draft in LEGACY_REF
        self.rules: dict[int, NodeRule] = {}
        self._reference: Any = None  # python-jsonschema's validator, made when a part needs it

    # -- the tree ---------------------------------------------------------------------------
    def plan(self, root: JNode) -> dict[int, NodeRule]:
        todo = [root]
        while todo:
            n = todo.pop()
            if id(n) in self.rules:
                self.rules[id(n)] = NodeRule(null=True, check=True)  # shared: judge it all
                continue
            self.rules[id(n)] = self.node(n)
            todo.extend(t for _, t in n.fields)
            if n.items is not None:
                todo.append(n.items)
        return self.rules

    def node(self, n: JNode) -> NodeRule:
        rule = NodeRule()
        if self.draft == "draft3" or not n.schemas:  # draft 3 (properties hold "required"), or no
            # schema known for the node (a cut): the reference judges every value
            rule.null = rule.check = bool(n.schemas)
            return rule
        rule.null = self.null_ok(n.schemas[0]) is not True
        last = len(n.schemas) - 1
        for i, part in enumerate(n.schemas):
            self.part(rule, n, part, i == last)
        if rule.leaf is not None and rule.leaf.kind == "list" and not rule.leaf.unique_kind:
            rule.leaf = None
        if n.kind == "json" and rule.check:  # a JSON-text leaf: its values are checked as a column
            if self._reference is None:
                self._reference = validator_class(self.root)(self.root)
            rule.check = False
            rule.leaf = LeafCheck("json", value_check=sub_check(self.root, n.schemas[0], self._reference))
        return rule

    def part(self, rule: NodeRule, n: JNode, s: Any, last: bool) -> None:
        if s is True or s is None or (isinstance(s, dict) and not s):
            return
        if not isinstance(s, dict):  # false (or a non-schema): nothing is valid
            rule.null = rule.check = True
            return
        if "$ref" in s and self.legacy_ref:
            return  # followed by the next part; its siblings are ignored in drafts 4 to 7
        consumed = None if last else "$ref" if "$ref" in s else "oneOf" if "oneOf" in s else \
            "anyOf" if "anyOf" in s else None
        for k in s:
            if k not in self.keywords or k == consumed:
                continue
            self.keyword(rule, n, k, s[k], s, last)

    # -- one keyword ------------------------------------------------------------------------
    def keyword(self, rule: NodeRule, n: JNode, k: str, v: Any, s: dict, last: bool) -> None:
        kind = n.kind
        obj, arr, num = kind in _OBJECT_KINDS, kind == "list", kind in ("int", "float")
        text = kind in ("string", "timestamp", "date")
        if kind == "json":
            if v in _TRIVIAL.get(k, ()):
                return
            if k == "type":
                self.json_type(rule, n, v)
            elif k in ("oneOf", "anyOf") and self.plain_union(n, k, v):
                pass  # the kernel's type check is the union's
            else:
                rule.check = True
            return
        if k == "type":
            types = [v] if isinstance(v, str) else v
            if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
                rule.check = True
                return
            have = set(types) | ({"integer"} if "number" in types else set())
            if not _VALUE_TYPES[kind] <= have:
                rule.check = True
        elif k in ("enum", "const"):
            self.enum(rule, n, [v] if k == "const" else v)
        elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if num:
                self.bound(rule, kind, k, v, s)
        elif k in ("multipleOf", "divisibleBy"):
            if num:
                if not _number(v) or v <= 0 or (type(v) is int and kind == "float" and v > _BIG):
                    rule.check = True
                else:
                    self.leaf(rule, kind).multiples.append(v)
        elif k in ("minLength", "maxLength", "pattern"):
            if kind == "string":
                self.string(rule, k, v)
            elif text:
                self.date_length(rule, k, v)
        elif k == "required":
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                rule.check = obj
            elif kind == "struct" and set(v) <= {name for name, _ in n.fields}:
                rule.required.update(v)
            elif obj and v:
                rule.check = True
        elif k == "properties":
            if kind == "struct" and last and isinstance(v, dict):
                if set(v) - {name for name, _ in n.fields}:
                    rule.unknown = True  # a property cut (recursion): its members are judged
            elif obj and v:
                rule.check = True
        elif k == "additionalProperties":
            if v is True or v == {}:
                return
            if kind == "struct" and last:
                rule.unknown = True
            elif not (kind == "map" and last) and obj:
                rule.check = True
        elif k in ("patternProperties", "propertyNames", "dependencies", "dependentRequired",
                   "dependentSchemas", "unevaluatedProperties"):
            if obj and v not in ({}, True):
                rule.check = True
        elif k in ("minProperties", "maxProperties", "minItems", "maxItems"):
            if obj if "Properties" in k else arr:
                self.count(rule, k, v)
        elif k == "items":
            if arr and not (last and isinstance(v, dict)) and v not in ({}, True):
                rule.check = True
        elif k == "additionalItems":
            if arr and not isinstance(s.get("items", {}), dict) and v not in ({}, True):
                rule.check = True
        elif k in ("prefixItems", "contains", "unevaluatedItems"):
            if arr:
                rule.check = True
        elif k == "uniqueItems":
            if arr and v:
                item = n.items.kind if n.items is not None else None
                if item in ("string", "int", "bool", "float"):
                    self.leaf(rule, "list").unique_kind = item
                else:
                    rule.check = True
        else:  # allOf, anyOf, oneOf, not, if, $ref beside other keywords, ...: the reference
            rule.check = True

    def leaf(self, rule: NodeRule, kind: str) -> LeafCheck:
        if rule.leaf is None:
            rule.leaf = LeafCheck(kind)
        return rule.leaf

    def json_type(self, rule: NodeRule, n: JNode, v: Any) -> None:
        types = [v] if isinstance(v, str) else v
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types) or n.allowed is None:
            rule.check = True
            return
        have = set(types) | ({"integer"} if "number" in types else set())
        if not (set(n.allowed) - {"null"}) <= have:
            rule.check = True

    def plain_union(self, n: JNode, key: str, branches: Any) -> bool:
        """Whether a ``oneOf``/``anyOf`` of a JSON-text node is only a type check the kernel makes:
        every branch is only ``type`` (and annotations), their types are the node's allowed ones,
        and for ``oneOf`` no value can match two branches."""
        if not isinstance(branches, list) or not branches or n.allowed is None:
            return False
        sets = []
        for b in branches:
            b = self.resolve(b)
            if not isinstance(b, dict) or set(b) - _ANNOTATIONS != {"type"}:
                return False
            t = b["type"]
            t = [t] if isinstance(t, str) else t
            if not isinstance(t, list) or not all(isinstance(x, str) for x in t):
                return False
            sets.append(set(t) | ({"integer"} if "number" in t else set()))
        union = set().union(*sets) - {"null"}
        if union != set(n.allowed) - {"null"}:
            return False
        if key == "oneOf":
            for i, a in enumerate(sets):
                for b in sets[i + 1:]:
                    if a & b:
                        return False
        return True

    def enum(self, rule: NodeRule, n: JNode, values: Any) -> None:
        if not isinstance(values, list):
            rule.check = True
            return
        kind = n.kind
        if kind == "string":
            self.leaf(rule, kind).enums.append({x for x in values if isinstance(x, str)})
        elif kind == "bool":
            self.leaf(rule, kind).enums.append({x for x in values if isinstance(x, bool)})
        elif kind == "int":
            self.leaf(rule, kind).enums.append({int(x) for x in values
                                                if type(x) is int or (type(x) is float and x.is_integer())})
        elif kind == "float":
            nums = [x for x in values if _number(x)]
            if any(abs(x) >= _BIG for x in nums):
                rule.check = True
            else:
                self.leaf(rule, kind).enums.append({float(x) for x in nums})
        elif kind != "null":
            rule.check = True

    def bound(self, rule: NodeRule, kind: str, k: str, v: Any, s: dict) -> None:
        if self.draft in ("draft3", "draft4"):
            if k.startswith("exclusive"):
                return  # a flag of minimum / maximum there
            excl = bool(s.get("exclusiveMinimum" if k == "minimum" else "exclusiveMaximum", False))
        else:
            excl = k.startswith("exclusive")
        if not _number(v) or (kind == "float" and type(v) is int and abs(v) > _BIG):
            rule.check = True
            return
        side = self.leaf(rule, kind).lower if k in ("minimum", "exclusiveMinimum") else self.leaf(rule, kind).upper
        side.append((v, excl))

    def string(self, rule: NodeRule, k: str, v: Any) -> None:
        if k == "pattern":
            try:
                self.leaf(rule, "string").patterns.append(re.compile(v))
            except (re.error, TypeError):
                rule.check = True
            return
        self.count(rule, "minItems" if k == "minLength" else "maxItems", v)  # counted in the kernel

    def date_length(self, rule: NodeRule, k: str, v: Any) -> None:
        """Dates and date-times keep no text: the kernel bounds a text's code points by its bytes
        as written (never fewer), which decides ``maxLength`` and ``minLength`` up to 1; the
        reference judges the rest."""
        if k == "pattern" or not _number(v) or v < 0 or not float(v).is_integer() or (k == "minLength" and v > 1):
            rule.check = True
            return
        self.count(rule, "minItems" if k == "minLength" else "maxItems", v)

    def count(self, rule: NodeRule, k: str, v: Any) -> None:
        if not _number(v) or v < 0 or not float(v).is_integer():
            rule.check = True
            return
        rule.counted = True
        if k.startswith("min"):
            rule.lo = max(rule.lo, int(v))
        else:
            rule.hi = min(rule.hi, int(v))

    # -- null -------------------------------------------------------------------------------
    def resolve(self, s: Any, depth: int = 0) -> Any:
        """A local ``$ref`` (a JSON pointer into the document) followed; None when it is not one."""
        while isinstance(s, dict) and "$ref" in s and (self.legacy_ref or set(s) - _ANNOTATIONS == {"$ref"}):
            ref = s["$ref"]
            if depth > 32 or not isinstance(ref, str) or not ref.startswith("#"):
                return None
            node = self.root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                try:
                    node = node[int(part)] if isinstance(node, list) else node[part]
                except (KeyError, IndexError, ValueError, TypeError):
                    return None
            s, depth = node, depth + 1
        return s

    def null_ok(self, s: Any, depth: int = 0) -> bool | None:
        """Whether schema ``s`` accepts null: True, False, or None (only the reference can say)."""
        if depth > 32:
            return None
        if s is True or (isinstance(s, dict) and not s):
            return True
        if not isinstance(s, dict):
            return False if s is False else None
        if "$ref" in s and self.legacy_ref:
            target = self.resolve(s)
            return None if target is None else self.null_ok(target, depth + 1)
        verdict: bool | None = True
        for k, v in s.items():
            if k not in self.keywords or k in _TYPED:
                continue
            ok = self.null_keyword(k, v, s, depth)
            if ok is False:
                return False
            if ok is None:
                verdict = None
        return verdict

    def null_keyword(self, k: str, v: Any, s: dict, depth: int) -> bool | None:
        if k == "type":
            types = [v] if isinstance(v, str) else v
            return "null" in types if isinstance(types, list) else None
        if k == "enum":
            return any(x is None for x in v) if isinstance(v, list) else None
        if k == "const":
            return v is None
        if k == "$ref":
            target = self.resolve({"$ref": v})
            return None if target is None else self.null_ok(target, depth + 1)
        if k in ("allOf", "anyOf", "oneOf"):
            if not isinstance(v, list):
                return None
            got = [self.null_ok(b, depth + 1) for b in v]
            if None in got:
                return None
            return all(got) if k == "allOf" else any(got) if k == "anyOf" else sum(bool(g) for g in got) == 1
        if k == "not":
            r = self.null_ok(v, depth + 1)
            return None if r is None else not r
        if k == "if":
            r = self.null_ok(v, depth + 1)
            if r is None:
                return None
            return self.null_ok(s.get("then" if r else "else", True), depth + 1)
        return None
