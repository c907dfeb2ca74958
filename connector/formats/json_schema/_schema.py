"""JSON Schema → Arrow types in the form Spark expects.

========================================  =====================================
JSON Schema                               Arrow
========================================  =====================================
object with ``properties``                struct (schema order; extra keys ignored)
object, only ``additionalProperties: S``  map<string, S>
array with ``items: S``                   list<element: S>
string / enum of strings                  string
string ``format: date-time``              timestamp[us, tz=UTC]
string ``format: date``                   date32
integer / number / boolean                int64 / float64 / bool
``type: [T, "null"]``, oneOf/anyOf of     nullable T (every field is nullable)
one non-null schema
anything else (no schema, several         JSON text (string)
types, free-form object)
========================================  =====================================

A JSON-text node keeps the JSON types its schema allows (``allowed``: e.g.
``{"integer", "string", "null"}`` for ``type: [integer, string, null]``, ``{"object"}`` for a
free-form object, None for anything): values of another type are row errors.

References: a schema whose ``$ref``\\s stay inside it (``#/$defs/...``) is mapped as it is; one
that refers to other documents (registry references given as ``refs``, other ``$id``\\s, anchors)
is first bundled into one document (:mod:`connector.formats.json_schema._bundle`), so it maps to
the same type as the same schema written in one file.
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from connector.errors import SchemaMappingError
from connector.formats.json_schema._bundle import Registered, bundle, needs_bundle

__all__ = ["JNode", "parse_json_schema", "schema_document"]

TS_UTC = pa.timestamp("us", tz="UTC")


class JNode:
    """kind: struct | map | list | string | timestamp | date | int | float | bool | null | json.

    ``allowed`` (json only): frozenset of JSON type names the value may have, or None (any).
    ``required`` (struct only): the names the schema's ``required`` lists; a writer puts them in
    every object, as ``null`` when the value is null (the schema then judges whether it may be).
    ``integral`` (int and json): an integral number written with a fraction or an exponent
    (``2.0``, ``1e2``) is an integer, as JSON Schema says from draft 6 on; false for a document
    python-jsonschema validates as draft 3 or 4 (there ``integer`` means a number written
    without them).
    ``schemas``: the schema parts that apply to the node's value, outermost first: each ``$ref``
    followed, the ``oneOf``/``anyOf`` whose one non-null branch the node maps, and last the part
    the node was mapped from (what validation reads, :mod:`connector.formats.json_schema._valid`).
    """

    __slots__ = ("allowed", "arrow", "fields", "integral", "items", "kind", "required", "schemas")

    def __init__(self, kind: str, fields=(), items=None, allowed=None, required=()):
        self.kind, self.fields, self.items = kind, tuple(fields), items
        self.integral = True
        self.schemas: tuple = ()
        self.required = frozenset(required)
        if allowed is not None:  # null: every field is nullable; a number may be an integer
            allowed = frozenset(allowed) | {"null"} | ({"integer"} if "number" in allowed else set())
        self.allowed = allowed
        self.arrow = _arrow(self)

    def contains(self, *kinds: str) -> bool:
        if self.kind in kinds:
            return True
        if self.items is not None and self.items.contains(*kinds):
            return True
        return any(t.contains(*kinds) for _, t in self.fields)


def _arrow(n: JNode) -> pa.DataType:
    k = n.kind
    if k == "struct":
        return pa.struct([pa.field(name, t.arrow) for name, t in n.fields])
    if k == "map":
        return pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", n.items.arrow))
    if k == "list":
        return pa.list_(pa.field("element", n.items.arrow))
    return {"string": pa.string(), "json": pa.string(), "timestamp": TS_UTC, "date": pa.date32(),
            "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "null": pa.null()}[k]


_JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def _json_text(types) -> JNode:
    """A JSON-text node allowing ``types`` (None or anything unknown: any JSON value)."""
    if types is None or not set(types) <= _JSON_TYPES:
        return JNode("json")
    return JNode("json", allowed=types)


class _Builder:
    def __init__(self, root: Any, max_depth: int):
        self.root, self.max_depth = root, max_depth
        self.stack: dict[str, int] = {}

    def ref(self, ref: str):
        if not ref.startswith("#"):  # bundling left only local references
            raise SchemaMappingError(f"JSON Schema $ref {ref!r} is not local to the document")
        node = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError) as e:
                raise SchemaMappingError(f"JSON Schema $ref {ref!r} does not resolve") from e
        return node

    def types_of(self, subs: list, seen: frozenset = frozenset()) -> set | None:
        """JSON types a union's branches allow (None: a branch allows anything)."""
        out: set = set()
        for x in subs:
            if not isinstance(x, dict):
                return None
            if "$ref" in x:
                if x["$ref"] in seen:
                    return None
                try:
                    target = self.ref(x["$ref"])
                except SchemaMappingError:
                    return None
                got = self.types_of([target], seen | {x["$ref"]})
            elif "oneOf" in x or "anyOf" in x:
                got = self.types_of(list(x.get("oneOf", x.get("anyOf")) or []), seen)
            elif isinstance(x.get("type"), (str, list)):
                t = x["type"]
                got = {t} if isinstance(t, str) else set(t)
                if "number" in got:
                    got.add("integer")
            elif "properties" in x:
                got = {"object"}
            elif "items" in x:
                got = {"array"}
            elif "enum" in x and all(isinstance(v, str) for v in x["enum"]):
                got = {"string"}
            else:
                return None
            if got is None:
                return None
            out |= got
        return out

    def walk(self, s: Any) -> JNode | None:
        node = self._walk(s)
        if node is not None:
            node.schemas = (s,) + node.schemas
        return node

    def _walk(self, s: Any) -> JNode | None:
        if s is True or s is None or s == {}:
            return JNode("json")
        if s is False or not isinstance(s, dict):
            return JNode("json")
        if "$ref" in s:
            ref = s["$ref"]
            depth = self.stack.get(ref, 0)
            if depth:
                if self.max_depth <= 0:
                    raise SchemaMappingError(
                        f"recursive JSON Schema type {ref!r} cannot be mapped to a Spark schema; "
                        "set max_recursion_depth to cut it at a fixed depth")
                if depth > self.max_depth:
                    return None
            self.stack[ref] = depth + 1
            try:
                return self.walk(self.ref(ref))
            finally:
                self.stack[ref] = depth
        for key in ("oneOf", "anyOf"):
            if key in s:
                subs = [x for x in s[key] if not (isinstance(x, dict) and x.get("type") == "null")]
                if len(subs) == 1:
                    return self.walk(subs[0])
                return _json_text(self.types_of(subs))
        t = s.get("type")
        if isinstance(t, list):
            nonnull = [x for x in t if x != "null"]
            if len(nonnull) != 1:
                return _json_text(nonnull) if nonnull else JNode("null")
            t = nonnull[0]
        if t is None:
            if "properties" in s:
                t = "object"
            elif "enum" in s and all(isinstance(v, str) for v in s["enum"]):
                return JNode("string")
            elif "items" in s:
                t = "array"
            else:
                return JNode("json")
        if t == "object":
            props = s.get("properties")
            extra = s.get("additionalProperties")
            if not props and isinstance(extra, dict) and extra:
                values = self.walk(extra)
                return JNode("json") if values is None else JNode("map", items=values)
            if not props:
                return _json_text({"object"})
            fields = []
            for name, sub in props.items():
                ft = self.walk(sub)
                if ft is not None:
                    fields.append((name, ft))
            req = s.get("required")
            req = [r for r in req if isinstance(r, str)] if isinstance(req, list) else ()
            return JNode("struct", fields, required=req) if fields else JNode("json")
        if t == "array":
            items = s.get("items")
            if not isinstance(items, dict):
                return _json_text({"array"})
            it = self.walk(items)
            return None if it is None else JNode("list", items=it)
        if t == "string":
            fmt = s.get("format")  # an annotation: one that is not a name is ignored
            return JNode({"date-time": "timestamp", "date": "date"}.get(fmt, "string")
                         if isinstance(fmt, str) else "string")
        return JNode({"integer": "int", "number": "float", "boolean": "bool",
                      "null": "null"}.get(t, "json"))


def schema_document(text: str | dict | bool | None, refs: tuple = ()) -> Any:
    """The schema as one parsed document: ``text`` parsed, and bundled with its references
    (``(name, text)`` pairs, as a registry resolved them) when it refers outside itself.

    Raises
    ------
    SchemaMappingError
        Unparseable text, or a reference that does not resolve.
    """
    if isinstance(text, (str, bytes)):
        try:
            text = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise SchemaMappingError(f"JSON Schema is not valid JSON: {e}") from e
    if text is None or not (refs or needs_bundle(text)):
        return text
    return bundle(text, Registered(refs))


def parse_json_schema(text: str | dict | None, *, max_depth: int = 0, refs: tuple = ()) -> JNode:
    """Map JSON Schema text (or None: no schema) to a type tree.

    Parameters
    ----------
    refs : tuple of (str, str)
        The schemas it references, by name (a registry's resolved references).

    Raises
    ------
    SchemaMappingError
        Unparseable text, a dangling ``$ref``, or recursion when ``max_depth`` is 0.
    """
    if text is None:
        return JNode("json")
    text = schema_document(text, refs)
    try:
        node = _Builder(text, max_depth).walk(text)
    except (TypeError, AttributeError, RecursionError) as e:  # a keyword's value of the wrong
        # JSON type, or nesting deeper than Python's stack
        raise SchemaMappingError(f"JSON Schema is malformed: {type(e).__name__}: {e}") from e
    if node is None:  # the root cut: JSON text, still judged against the schema
        node = JNode("json")
        node.schemas = (text,)
    if not integral_integers(text):
        _lexical_integers(node)
    return node


def integral_integers(document: Any) -> bool:
    """Whether the document's ``integer`` takes integral numbers written with a fraction or an
    exponent (``2.0``): every draft from 6 on; not drafts 3 and 4 — the draft python-jsonschema
    validates the document with (``$schema``; the newest for none or one it does not know)."""
    from connector.formats.json_schema._reference import draft_of

    return draft_of(document) not in ("draft3", "draft4")


def _lexical_integers(root: JNode) -> None:
    seen: set[int] = set()
    todo = [root]
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        n.integral = False
        todo.extend(t for _, t in n.fields)
        if n.items is not None:
            todo.append(n.items)
