"""Which fields a field rule touches, and where they are in the decoded Arrow value.

A field rule (``ENCRYPT``, ``CEL_FIELD``) runs on every primitive field whose tags meet the
rule's ``tags`` (every field when the rule has none). A field's tags are its inline tags
(Avro and JSON Schema ``"confluent:tags"``, Protobuf ``(confluent.field_meta).tags``) plus the
schema metadata's ``tags``, whose keys are wildcard patterns over the field's full name. Full
names are confluent-kafka's: Avro ``<record full name>.<field>``, JSON Schema ``$.a.b``,
Protobuf the field's descriptor full name.

The walk follows confluent-kafka's field transformers: into records, array items, map values
and union branches; a tag on a record field does not reach the record's own fields. Each leaf
is given as an Arrow path over the decoded value: a field name per struct level, ``[]`` for
list items, ``{}`` for map values, ``memberN`` for the branch of an Avro union of several
types.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from connector.schema.rules._cel import NotVectorizable

__all__ = ["Leaf", "leaves_of", "field_rule_columns", "wildcard_match", "get_leaf", "replace_leaf", "STRING", "BYTES"]

STRING, BYTES = "STRING", "BYTES"
PRIMITIVE = frozenset({"INT", "LONG", "FLOAT", "DOUBLE", "BOOLEAN", "NULL", STRING, BYTES})
_MAX_DEPTH = 64


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One primitive (or enum/fixed) field a field rule may touch."""

    path: tuple[str, ...]
    full_name: str
    name: str
    type: str            # confluent-kafka's FieldType name: STRING, BYTES, INT, LONG, ..., ENUM, FIXED
    tags: frozenset[str]

    @property
    def nested(self) -> bool:
        """Under an array or map (one value per item, not per record)."""
        return "[]" in self.path or "{}" in self.path

    def selected_by(self, rule_tags: tuple[str, ...]) -> bool:
        return not rule_tags or bool(self.tags & set(rule_tags))


@functools.lru_cache(maxsize=1024)
def _wildcard_regex(pattern: str) -> re.Pattern:
    # confluent-kafka's wildcard_matcher: '?' one char, '*' within a dot-separated name, '**' across
    src = pattern.replace("**.*", "**")
    out, i = "", 0
    while i < len(src):
        c = src[i]
        i += 1
        if c == "*":
            if i < len(src) and src[i] == "*":
                out += ".*"
                i += 1
            else:
                out += "[^.]*"
        elif c == "?":
            out += "[^.]"
        elif c in ".+{}()|^$[]":
            out += "\\" + c
        elif c == "\\" and i < len(src):
            out += "\\" + src[i]
            i += 1
        else:
            out += c
    return re.compile(out)


def wildcard_match(text: str, pattern: str) -> bool:
    """confluent-kafka's ``wildcard_match``.

    Examples
    --------
    >>> wildcard_match("alice.bob.eve", "a*.bob.eve"), wildcard_match("alice.bob.eve", "a*")
    (True, False)
    >>> wildcard_match("alice.bob.eve", "a**")
    True
    """
    return _wildcard_regex(pattern).fullmatch(text) is not None


def _metadata_tags(schema: Any, full_name: str) -> set[str]:
    md = getattr(schema, "metadata", None)
    out: set[str] = set()
    for pattern, tags in (md.tags if md is not None else ()):
        if wildcard_match(full_name, pattern):
            out.update(tags)
    return out


def leaves_of(schema: Any, fmt: str, message: str | None = None) -> tuple[Leaf, ...]:
    """Every leaf field of a registry schema (``schema.text``, its references and metadata)."""
    return _leaves_cached(schema, fmt, message)


@functools.lru_cache(maxsize=256)
def _leaves_cached(schema: Any, fmt: str, message: str | None) -> tuple[Leaf, ...]:
    if fmt == "avro":
        walk = _avro_leaves(schema)
    elif fmt == "json":
        walk = _json_leaves(schema)
    else:
        walk = _protobuf_leaves(schema, message)
    return tuple(Leaf(path, full, name, typ, frozenset(tags | _metadata_tags(schema, full)))
                 for path, full, name, typ, tags in walk)


# -- Avro --------------------------------------------------------------------------------------------
_AVRO_TYPES = {"string": STRING, "bytes": BYTES, "int": "INT", "long": "LONG", "float": "FLOAT",
               "double": "DOUBLE", "boolean": "BOOLEAN", "null": "NULL", "enum": "ENUM", "fixed": "FIXED"}


def _avro_leaves(schema: Any) -> Iterator[tuple]:
    named: dict[str, Any] = {}

    def full(name: str, ns: str | None) -> str:
        return name if "." in name or not ns else f"{ns}.{name}"

    def collect(node: Any, ns: str | None) -> None:
        if isinstance(node, list):
            for b in node:
                collect(b, ns)
        elif isinstance(node, dict):
            t = node.get("type")
            if t in ("record", "error", "enum", "fixed") and isinstance(node.get("name"), str):
                fn = full(node["name"], node.get("namespace", ns))
                named[fn] = node
                inner_ns = fn.rpartition(".")[0] or None
                for f in node.get("fields") or ():
                    collect(f.get("type"), inner_ns)
            elif t == "array":
                collect(node.get("items"), ns)
            elif t == "map":
                collect(node.get("values"), ns)
            elif isinstance(t, (dict, list)):
                collect(t, ns)

    for _, ref in getattr(schema, "resolved_references", ()) or ():
        collect(json.loads(ref.text), None)
    root = json.loads(schema.text)
    collect(root, None)

    def resolve(node: Any, ns: str | None) -> tuple[Any, str | None]:
        for _ in range(_MAX_DEPTH):
            if isinstance(node, str) and node not in _AVRO_TYPES:
                target = named.get(full(node, ns)) or named.get(node)
                if target is None:
                    return node, ns
                fn = full(target["name"], target.get("namespace", ns))
                return target, fn.rpartition(".")[0] or None
            inner = node.get("type") if isinstance(node, dict) else None
            if isinstance(inner, (dict, list)) or (isinstance(inner, str) and inner not in _AVRO_TYPES and inner not in
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

    def walk(node: Any, ns: str | None, path: tuple, field: tuple | None, seen: tuple) -> Iterator[tuple]:
        node, ns = resolve(node, ns)
        if len(path) > _MAX_DEPTH:
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
            fn = full(node["name"], node.get("namespace", ns))
            if fn in seen:
                return
            inner_ns = fn.rpartition(".")[0] or None
            for f in node.get("fields") or ():
                name = f["name"]
                yield from walk(f["type"], inner_ns, path + (name,),
                                (f"{fn}.{name}", name, set(f.get("confluent:tags") or ())), seen + (fn,))
            return
        if k == "array":
            yield from walk(node.get("items"), ns, path + ("[]",), field, seen)
            return
        if k == "map":
            yield from walk(node.get("values"), ns, path + ("{}",), field, seen)
            return
        if field is not None and k in _AVRO_TYPES:
            yield path, field[0], field[1], _AVRO_TYPES[k], field[2]

    yield from walk(root, None, (), None, ())


# -- JSON Schema -------------------------------------------------------------------------------------
def _json_type(node: dict) -> str | None:
    t = node.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        t = rest[0] if len(rest) == 1 else None
    if "enum" in node or "const" in node:
        return "ENUM"
    return {"string": STRING, "integer": "INT", "number": "DOUBLE", "boolean": "BOOLEAN", "object": "RECORD",
            "array": "ARRAY", "null": "NULL"}.get(t) if isinstance(t, str) else \
        ("RECORD" if "properties" in node else None)


def _json_leaves(schema: Any) -> Iterator[tuple]:
    root = json.loads(schema.text)

    def deref(node: Any, depth: int = 0) -> Any:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#") \
                and depth < _MAX_DEPTH:
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

    def walk(node: Any, path: tuple, full: str, field: tuple | None, depth: int) -> Iterator[tuple]:
        node = deref(node)
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return
        typ = _json_type(node)
        props = node.get("properties")
        if isinstance(props, dict) and typ in ("RECORD", None):
            for name, sub in props.items():
                sub_d = deref(sub)
                tags = set(sub_d.get("confluent:tags") or ()) if isinstance(sub_d, dict) else set()
                yield from walk(sub, path + (name,), f"{full}.{name}", (f"{full}.{name}", name, tags), depth + 1)
            return
        if typ == "ARRAY" and isinstance(node.get("items"), dict):
            yield from walk(node["items"], path + ("[]",), full, field, depth + 1)
            return
        if typ == "RECORD" and isinstance(node.get("additionalProperties"), dict):
            yield from walk(node["additionalProperties"], path + ("{}",), full, field, depth + 1)
            return
        if field is not None and typ in ("ENUM", STRING, "INT", "DOUBLE", "BOOLEAN"):
            yield path, field[0], field[1], typ, field[2]

    yield from walk(root, (), "$", None, 0)


# -- Protobuf ----------------------------------------------------------------------------------------
_FIELD_META = 1088  # (confluent.field_meta) on google.protobuf.FieldOptions
_META_TAGS = 3


def _proto_tags(options: bytes) -> set[str]:
    from connector.schema.rules._crypto import _varint

    tags: set[str] = set()

    def fields(buf: bytes) -> Iterator[tuple[int, bytes | None]]:
        pos = 0
        while pos < len(buf):
            tag, pos = _varint(buf, pos)
            number, wire = tag >> 3, tag & 7
            if wire == 0:
                _, pos = _varint(buf, pos)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                size, pos = _varint(buf, pos)
                yield number, buf[pos:pos + size]
                pos += size
            else:
                return

    try:
        for number, meta in fields(options):
            if number == _FIELD_META and meta is not None:
                for n2, value in fields(meta):
                    if n2 == _META_TAGS and value is not None:
                        tags.add(value.decode("utf-8"))
    except (IndexError, ValueError, UnicodeDecodeError):
        return tags
    return tags


def _protobuf_leaves(schema: Any, message: str | None) -> Iterator[tuple]:
    from google.protobuf.descriptor import FieldDescriptor as FD

    from connector.formats import refs_of
    from connector.formats.protobuf import compile_proto

    compiled = compile_proto(schema.text, refs_of(schema))
    desc = compiled.find(message)
    names = {FD.TYPE_STRING: STRING, FD.TYPE_BYTES: BYTES, FD.TYPE_BOOL: "BOOLEAN", FD.TYPE_DOUBLE: "DOUBLE",
             FD.TYPE_FLOAT: "FLOAT", FD.TYPE_ENUM: "ENUM"}
    for t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32, FD.TYPE_UINT32, FD.TYPE_FIXED32):
        names[t] = "INT"
    for t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_UINT64, FD.TYPE_FIXED64):
        names[t] = "LONG"

    def walk(d: Any, path: tuple, seen: tuple) -> Iterator[tuple]:
        if d.full_name in seen or len(path) > _MAX_DEPTH:
            return
        for f in d.fields:
            tags = _proto_tags(f.GetOptions().SerializeToString())
            p = path + (f.name,)
            is_map = f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry
            if is_map:
                vf = f.message_type.fields_by_name["value"]
                p = p + ("{}",)
                if vf.type == FD.TYPE_MESSAGE:
                    yield from walk(vf.message_type, p, seen + (d.full_name,))
                else:
                    yield p, f.full_name, f.name, names.get(vf.type, "NULL"), tags
                continue
            if f.is_repeated:
                p = p + ("[]",)
            if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
                yield from walk(f.message_type, p, seen + (d.full_name,))
            else:
                yield p, f.full_name, f.name, names.get(f.type, "NULL"), tags

    yield from walk(desc, (), ())


# -- Arrow paths -------------------------------------------------------------------------------------
def _list_parts(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(offsets from 0, the values they index) of a list or map array (slice-aware; a map's values
    are its ``struct<key, value>`` entries)."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    base = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    return offsets - base, arr.values.slice(base, end - base)


def _step(arr: pa.Array, step: str) -> tuple[pa.Array, np.ndarray | None]:
    """The child array of one path step and, for lists/maps, the parent index of each item."""
    if step in ("[]", "{}"):
        offsets, inner = _list_parts(arr)
        parents = np.repeat(np.arange(len(arr), dtype=np.int64), np.diff(offsets))
        return (inner.field(1) if step == "{}" else inner), parents
    child = arr.field(step)
    if arr.null_count:
        child = pa.compute.if_else(arr.is_null(), pa.nulls(len(arr), child.type), child)
    return child, None


def get_leaf(arr: pa.Array, path: tuple[str, ...]) -> tuple[pa.Array, np.ndarray] | None:
    """(leaf values, top-level row of each value) at ``path``; None when the path is not in the type."""
    rows = np.arange(len(arr), dtype=np.int64)
    for step in path:
        if not _has(arr.type, step):
            return None
        arr, parents = _step(arr, step)
        if parents is not None:
            rows = rows[parents]
    return arr, rows


def _has(t: pa.DataType, step: str) -> bool:
    if step == "[]":
        return pa.types.is_list(t)
    if step == "{}":
        return pa.types.is_map(t)
    return pa.types.is_struct(t) and t.get_field_index(step) >= 0


def replace_leaf(arr: pa.Array, path: tuple[str, ...], new: pa.Array) -> pa.Array:
    """``arr`` with the values at ``path`` replaced by ``new`` (as :func:`get_leaf` gave them)."""
    if not path:
        return new if new.type.equals(arr.type) else new.cast(arr.type)
    step, rest = path[0], path[1:]
    mask = arr.is_null() if arr.null_count else None
    if step in ("[]", "{}"):
        offsets, inner = _list_parts(arr)
        offs = pa.array(offsets.astype(np.int32), pa.int32())
        if step == "[]":
            values = replace_leaf(inner, rest, new)
            return pa.ListArray.from_arrays(offs, values, type=arr.type, mask=mask)
        items = replace_leaf(inner.field(1), rest, new)
        return pa.MapArray.from_arrays(offs, inner.field(0), items, type=arr.type, mask=mask)
    t = arr.type
    children = [arr.field(i) for i in range(t.num_fields)]
    i = t.get_field_index(step)
    children[i] = replace_leaf(children[i], rest, new)
    return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)


def field_rule_columns(values: pa.Array, schema: Any, fmt: str, message: str | None,
                       tags) -> Iterator[tuple[Leaf, pa.Array]]:
    """The primitive fields a ``CEL_FIELD`` rule with ``tags`` applies to, with their columns in
    ``values`` (fields absent from the values skipped). A tagged field inside an array or map
    raises :class:`NotVectorizable`: the rule then runs record by record."""
    for leaf in leaves_of(schema, fmt, message):
        if not leaf.selected_by(tags) or leaf.type not in PRIMITIVE:
            continue
        if leaf.nested:
            raise NotVectorizable("a field rule on items of an array or map")
        got = get_leaf(values, leaf.path)
        if got is not None:
            yield leaf, got[0]
