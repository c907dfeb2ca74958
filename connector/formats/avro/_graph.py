"""Writer schema → a type *graph*: named types are shared nodes and recursion is a cycle.

The reader tree (:func:`connector.formats.avro._schema.parse_avro`) is cut at
``max_recursion_depth`` because Spark needs a finite type. The writer's bytes are not cut: data
below the reader's cut must still be walked to find where the record ends, so the engine
resolves against this uncut graph and *skips* what the reader does not keep.
"""
from __future__ import annotations

from typing import Any

from connector.formats.avro._model import PRIMITIVES, Field, Node, fullname, load_json
from connector.errors import SchemaMappingError

__all__ = ["parse_graph", "short_names"]


def short_names(n: Node) -> set:
    """Unqualified name and aliases of a named type (Avro matches named types by these)."""
    s = {x for x in (n.name, *n.aliases) if x}
    return {x.rpartition(".")[2] for x in s}


class _Graph:
    def __init__(self):
        self.names: dict[str, Node] = {}

    def walk(self, obj: Any, ns: str | None) -> Node:
        if isinstance(obj, str):
            if obj in PRIMITIVES:
                return Node(obj)
            for cand in (fullname(obj, ns), obj):
                if cand in self.names:
                    return self.names[cand]
            raise SchemaMappingError(f"unknown Avro type name {obj!r}")
        if isinstance(obj, list):
            return Node("union", branches=tuple(self.walk(b, ns) for b in obj))
        if not isinstance(obj, dict):
            raise SchemaMappingError(f"invalid Avro schema node {obj!r:.80}")
        t = obj.get("type")
        if isinstance(t, (dict, list)):
            return self.walk(t, ns)
        if t in PRIMITIVES:
            return Node(t, logical=obj.get("logicalType"), precision=obj.get("precision"),
                        scale=obj.get("scale", 0))
        if t in ("record", "error", "enum", "fixed"):
            if not isinstance(obj.get("name"), str):
                raise SchemaMappingError(f"Avro {t} without a name")
            full = fullname(obj["name"], obj.get("namespace", ns))
            own_ns = full.rpartition(".")[0] or None
            aliases = [fullname(a, own_ns) for a in obj.get("aliases", ()) if isinstance(a, str)]
            if t == "enum":
                syms = obj.get("symbols")
                if not isinstance(syms, list) or not all(isinstance(x, str) for x in syms):
                    raise SchemaMappingError(f"Avro enum {full!r} needs a list of symbols")
                node = Node("enum", name=full, aliases=aliases, symbols=syms,
                            enum_default=obj.get("default"))
            elif t == "fixed":
                size = obj.get("size")
                if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                    raise SchemaMappingError(f"Avro fixed {full!r} needs a non-negative size")
                node = Node("fixed", name=full, aliases=aliases, size=size,
                            logical=obj.get("logicalType"), precision=obj.get("precision"),
                            scale=obj.get("scale", 0))
            else:
                node = Node("record", name=full, aliases=aliases, fields=())
            self.names[full] = node  # before the fields: a field may refer to its own record
            if t in ("record", "error"):
                fields = obj.get("fields")
                if not isinstance(fields, list):
                    raise SchemaMappingError(f"Avro record {full!r} needs a list of fields")
                node.fields = tuple(Field(f["name"], f.get("aliases"), self.walk(f["type"], own_ns),
                                          f.get("default"), "default" in f) for f in fields)
            return node
        if t == "array":
            return Node("array", items=self.walk(obj.get("items"), ns))
        if t == "map":
            return Node("map", items=self.walk(obj.get("values"), ns))
        if isinstance(t, str):
            return self.walk(t, ns)
        raise SchemaMappingError(f"invalid Avro type {t!r:.80}")


def parse_graph(text: str | dict | list, refs: tuple = ()) -> Node:
    """Writer schema text (and referenced schemas' texts) → type graph (cycles allowed)."""
    g = _Graph()
    try:
        for ref in refs:
            g.walk(load_json(ref), None)
        return g.walk(load_json(text), None)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        if isinstance(e, SchemaMappingError):
            raise
        raise SchemaMappingError(f"invalid Avro schema: {e!r}") from e
