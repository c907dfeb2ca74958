"""What data-contract rules need of Avro: the walk to tagged leaves and records as objects.

Tags are a field's ``"confluent:tags"``; a leaf's full name is ``<record full name>.<field>``
(confluent-kafka's ``avro.get_inline_tags``). A union of one type besides null, or of int/long
or float/double only (one Arrow column), is walked as that type; any other union's branches are
``memberN`` of a struct (the decoder's shape). Records as objects are fastavro's dicts, what
confluent-kafka's Avro serdes take and give.
"""
from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

from connector.formats.core import plain_json, transform_plain, BYTES, MAX_WALK_DEPTH, STRING, Leaf

__all__ = ["avro_leaves", "AvroRecords"]

_TYPES = {"string": STRING, "bytes": BYTES, "int": "INT", "long": "LONG", "float": "FLOAT",
          "double": "DOUBLE", "boolean": "BOOLEAN", "null": "NULL", "enum": "ENUM", "fixed": "FIXED"}


def _full(name: str, ns: str | None) -> str:
    return name if "." in name or not ns else f"{ns}.{name}"


def _named_types(docs: list[Any]) -> dict[str, Any]:
    """Every named type the schema documents define, by full name."""
    named: dict[str, Any] = {}

    def collect(node: Any, ns: str | None, depth: int) -> None:
        if depth > MAX_WALK_DEPTH:
            return
        if isinstance(node, list):
            for b in node:
                collect(b, ns, depth + 1)
        elif isinstance(node, dict):
            t = node.get("type")
            if t in ("record", "error", "enum", "fixed") and isinstance(node.get("name"), str):
                fn = _full(node["name"], node.get("namespace", ns))
                named[fn] = node
                inner_ns = fn.rpartition(".")[0] or None
                for f in node.get("fields") or ():
                    collect(f.get("type"), inner_ns, depth + 1)
            elif t == "array":
                collect(node.get("items"), ns, depth + 1)
            elif t == "map":
                collect(node.get("values"), ns, depth + 1)
            elif isinstance(t, (dict, list)):
                collect(t, ns, depth + 1)

    for doc in docs:
        collect(doc, None, 0)
    return named


def avro_leaves(text: str, ref_texts: tuple[str, ...] = ()) -> Iterator[Leaf]:
    """The leaf fields of an Avro schema (its references' texts give named types)."""
    root = json.loads(text)
    named = _named_types([json.loads(t) for t in ref_texts] + [root])

    def resolve(node: Any, ns: str | None) -> tuple[Any, str | None]:
        for _ in range(MAX_WALK_DEPTH):
            if isinstance(node, str) and node not in _TYPES:
                target = named.get(_full(node, ns)) or named.get(node)
                if target is None:
                    return node, ns
                fn = _full(target["name"], target.get("namespace", ns))
                return target, fn.rpartition(".")[0] or None
            inner = node.get("type") if isinstance(node, dict) else None
            if isinstance(inner, (dict, list)) or (isinstance(inner, str) and inner not in _TYPES and inner not in
                                                   ("record", "error", "array", "map")):
                node = inner
                continue
            return node, ns
        return node, ns

    def kind(node: Any) -> str:
        if isinstance(node, str):
            return node
        if isinstance(node, dict):
            t = node.get("type")
            return t if isinstance(t, str) else "complex"
        return "union"

    def walk(node: Any, ns: str | None, path: tuple, field: tuple | None, seen: tuple) -> Iterator[Leaf]:
        node, ns = resolve(node, ns)
        if len(path) > MAX_WALK_DEPTH:
            return
        if isinstance(node, list):
            nonnull = [b for b in node if resolve(b, ns)[0] != "null"]
            kinds = {kind(resolve(b, ns)[0]) for b in nonnull}
            logical = any(isinstance(resolve(b, ns)[0], dict) and resolve(b, ns)[0].get("logicalType")
                          for b in nonnull)
            if len(nonnull) <= 1 or (not logical and kinds in ({"int", "long"}, {"float", "double"})):
                for b in nonnull[:1]:
                    yield from walk(b, ns, path, field, seen)
                return
            for i, b in enumerate(nonnull):
                yield from walk(b, ns, path + (f"member{i}",), field, seen)
            return
        k = kind(node)
        if k in ("record", "error"):
            fn = _full(node["name"], node.get("namespace", ns))
            if fn in seen:
                return
            inner_ns = fn.rpartition(".")[0] or None
            for f in node.get("fields") or ():
                name = f["name"]
                yield from walk(f["type"], inner_ns, path + (name,),
                                (f"{fn}.{name}", name, frozenset(f.get("confluent:tags") or ())), seen + (fn,))
            return
        if k == "array":
            yield from walk(node.get("items"), ns, path + ("[]",), field, seen)
            return
        if k == "map":
            yield from walk(node.get("values"), ns, path + ("{}",), field, seen)
            return
        if field is not None and k in _TYPES:
            yield Leaf(path, field[0], field[1], _TYPES[k], field[2])

    yield from walk(root, None, (), None, ())


class AvroRecords:
    """Avro records as fastavro dicts (a :class:`connector.formats.core.RecordForm`)."""

    message_class = None

    def __init__(self, text: str, ref_texts: tuple[str, ...] = ()):
        import fastavro

        named: dict = {}
        for ref in ref_texts:
            fastavro.parse_schema(json.loads(ref), named_schemas=named)
        self.schema = fastavro.parse_schema(json.loads(text.strip()), named_schemas=named)

    def to_bytes(self, obj: Any) -> bytes:
        import fastavro

        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, self.schema, obj)
        return buf.getvalue()

    def from_bytes(self, payload: bytes) -> Any:
        import fastavro

        return fastavro.schemaless_reader(io.BytesIO(payload), self.schema, None)

    def transform(self, obj: Any, leaf: Leaf, fn: Callable[[Any], Any]) -> Any:
        return transform_plain(obj, leaf.path, fn)

    def to_json(self, obj: Any) -> bytes:
        return plain_json(obj)

    def deserializer(self, **kw: Any) -> Any:
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        return AvroDeserializer(**kw)

    def serializer(self, schema: Any, **kw: Any) -> Any:
        from confluent_kafka.schema_registry.avro import AvroSerializer

        return AvroSerializer(schema_str=schema, **kw)
