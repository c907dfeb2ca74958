"""Avro's type model: the nodes and fields both the reader tree (:mod:`._schema`) and the writer
graph (:mod:`._graph`) are made of."""
from __future__ import annotations

import json
from typing import Any, cast

from connector.errors import SchemaMappingError

__all__ = ["PRIMITIVES", "Field", "Node", "fullname", "load_json"]

PRIMITIVES = frozenset(["null", "boolean", "int", "long", "float", "double", "bytes", "string"])

class Field:
    __slots__ = ("name", "aliases", "type", "default", "has_default")

    def __init__(self, name, aliases, type_, default, has_default):
        self.name, self.aliases, self.type = name, tuple(aliases or ()), type_
        self.default, self.has_default = default, has_default


class Node:
    """One Avro type, with named references expanded (recursion cut or refused)."""

    __slots__ = ("kind", "logical", "name", "aliases", "fields", "items", "branches", "symbols",
                 "size", "precision", "scale", "arrow", "enum_default", "memo", "empty")

    def __init__(self, kind, **kw):
        self.kind = kind
        self.logical = kw.get("logical")
        self.name = cast(str, kw.get("name"))  # set on named types (record, enum, fixed)
        self.aliases = tuple(kw.get("aliases") or ())
        self.fields = kw.get("fields", ())
        self.items = cast("Node", kw.get("items"))  # set on array and map nodes
        self.branches = kw.get("branches", ())
        self.symbols = tuple(kw.get("symbols") or ())
        self.size = cast(int, kw.get("size"))  # set on fixed nodes
        self.precision = kw.get("precision")
        self.scale = kw.get("scale", 0)
        self.enum_default = kw.get("enum_default")
        self.empty = kw.get("empty")  # cut nodes: the Avro bytes written in their place
        self.arrow = None
        self.memo = {}  # per-node caches of the Avro engine (encoded widths)

    @property
    def nonnull(self) -> tuple:
        return tuple(b for b in self.branches if b.kind not in ("null", "cut"))

    def __repr__(self):
        return f"Node({self.kind}, {self.name or self.logical or ''})"


def fullname(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def load_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError as e:
        raise SchemaMappingError(f"Avro schema is not valid JSON: {e}") from e
