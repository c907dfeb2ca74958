"""What data-contract rules need of JSON Schema: the walk to tagged leaves and records as objects.

Tags are a property's ``"confluent:tags"``; a leaf's full name is its JSON path from ``$``
(``$.a.b``, confluent-kafka's ``json_schema.get_inline_tags``). Local ``$ref``\\s are followed
and ``allOf`` parts merged; array ``items`` are ``[]`` and ``additionalProperties`` schemas
``{}`` (a map). Records as objects are JSON values, what confluent-kafka's JSON serdes take and give.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from connector.formats.core import plain_json, transform_plain, MAX_WALK_DEPTH, STRING, Leaf

__all__ = ["json_leaves", "JsonRecords"]

_TYPES = {"string": STRING, "integer": "INT", "number": "DOUBLE", "boolean": "BOOLEAN", "object": "RECORD",
          "array": "ARRAY", "null": "NULL"}


def _json_type(node: dict) -> str | None:
    t = node.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        t = rest[0] if len(rest) == 1 else None
    if "enum" in node or "const" in node:
        return "ENUM"
    return _TYPES.get(t) if isinstance(t, str) else ("RECORD" if "properties" in node else None)


def json_leaves(text: str) -> Iterator[Leaf]:
    """The leaf fields of a JSON Schema."""
    root = json.loads(text)

    def deref(node: Any, depth: int = 0) -> Any:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#") \
                and depth < MAX_WALK_DEPTH:
            target: Any = root
            for part in node["$ref"][1:].strip("/").split("/"):
                if not part:
                    continue
                target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
            node, depth = target, depth + 1
        if isinstance(node, dict) and isinstance(node.get("allOf"), list):
            merged = {k: v for k, v in node.items() if k != "allOf"}
            props: dict = dict(merged.get("properties") or {})
            for sub in node["allOf"]:
                sub = deref(sub, depth + 1)
                if isinstance(sub, dict):
                    props.update(sub.get("properties") or {})
                    for k, v in sub.items():
                        merged.setdefault(k, v)
            if props:
                merged["properties"] = props
            node = merged
        return node

    def walk(node: Any, path: tuple, full: str, field: tuple | None, depth: int) -> Iterator[Leaf]:
        node = deref(node)
        if not isinstance(node, dict) or depth > MAX_WALK_DEPTH:
            return
        typ = _json_type(node)
        props = node.get("properties")
        if isinstance(props, dict) and typ in ("RECORD", None):
            for name, sub in props.items():
                sub_d = deref(sub)
                tags = frozenset(sub_d.get("confluent:tags") or ()) if isinstance(sub_d, dict) else frozenset()
                yield from walk(sub, path + (name,), f"{full}.{name}", (f"{full}.{name}", name, tags), depth + 1)
            return
        if typ == "ARRAY" and isinstance(node.get("items"), dict):
            yield from walk(node["items"], path + ("[]",), full, field, depth + 1)
            return
        if typ == "RECORD" and isinstance(node.get("additionalProperties"), dict):
            yield from walk(node["additionalProperties"], path + ("{}",), full, field, depth + 1)
            return
        if field is not None and typ in ("ENUM", STRING, "INT", "DOUBLE", "BOOLEAN"):
            yield Leaf(path, field[0], field[1], typ, field[2])

    yield from walk(root, (), "$", None, 0)


class JsonRecords:
    """JSON records as JSON values (a :class:`connector.formats.core.RecordForm`)."""

    message_class = None

    def to_bytes(self, obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def from_bytes(self, payload: bytes) -> Any:
        return json.loads(payload)

    def transform(self, obj: Any, leaf: Leaf, fn: Callable[[Any], Any]) -> Any:
        return transform_plain(obj, leaf.path, fn)

    def to_json(self, obj: Any) -> bytes:
        return plain_json(obj)

    def deserializer(self, **kw: Any) -> Any:
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        return JSONDeserializer(None, **kw)

    def serializer(self, schema: Any, **kw: Any) -> Any:
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        return JSONSerializer(schema, **kw)
