"""Which fields a field rule touches, and where they are in the decoded Arrow value.

A field rule (``ENCRYPT``, ``CEL_FIELD``) runs on every primitive field whose tags meet the
rule's ``tags`` (every field when the rule has none): :func:`encrypt_rule_columns` and
:func:`field_rule_columns` are the one walk each rule type's read and write steps use. A field's tags are its inline tags
plus the schema metadata's ``tags``, whose keys are wildcard patterns over the field's full
name. The leaves, their full names and inline tags come from the schema's format
(``PayloadFormat.tagged_leaves``: each format walks its own schema, as in confluent-kafka's
serdes); here they get the metadata's tags, and their Arrow paths (``Leaf.path``) are read
and replaced in the decoded values.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats import payload_format, refs_of
from connector.formats.core import BYTES, PRIMITIVE, STRING, Leaf
from connector.schema.rules._cel import NotVectorizable

__all__ = ["Leaf", "leaves_of", "field_rule_columns", "encrypt_rule_columns", "EncryptField", "message_types",
           "wildcard_match", "get_leaf", "replace_leaf", "STRING", "BYTES"]


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
    walk = payload_format(fmt).tagged_leaves(schema.text, refs_of(schema), message)
    return tuple(dataclasses.replace(leaf, tags=frozenset(leaf.tags | _metadata_tags(schema, leaf.full_name)))
                 for leaf in walk)


def message_types(schema: Any, fmt: str, message: str | None) -> dict[tuple[str, ...], str]:
    """The type of each field of a record outside arrays and maps, keyed by its CEL path
    (``("message", *leaf.path)``): what a CEL expression over ``message`` is compiled against."""
    return {("message",) + leaf.path: leaf.type for leaf in leaves_of(schema, fmt, message) if not leaf.nested}


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


@dataclasses.dataclass(frozen=True, eq=False)
class EncryptField:
    """A field an ``ENCRYPT`` rule selects, as it is in the decoded values.

    Attributes
    ----------
    leaf : Leaf
    col : pyarrow.Array
        Its values (one per item when it is inside arrays or maps).
    owner : numpy.ndarray
        The row of the values each item of ``col`` belongs to.
    present : numpy.ndarray of bool
        The items that hold a value in a row the rule runs on (the ``live`` rows).
    """

    leaf: Leaf
    col: pa.Array
    owner: np.ndarray
    present: np.ndarray

    @property
    def encryptable(self) -> bool:
        """A string or bytes field with string or binary values: what confluent-kafka's field
        encryption handles (it fails a write of any other value, and leaves it alone on read)."""
        return self.leaf.type in (STRING, BYTES) and (pa.types.is_string(self.col.type)
                                                        or pa.types.is_binary(self.col.type))

    @property
    def text(self) -> bool:
        """Its values are strings (encrypted as their UTF-8 bytes, decrypted back to strings)."""
        return pa.types.is_string(self.col.type)


def encrypt_rule_columns(values: pa.Array, schema: Any, fmt: str, message: str | None, tags,
                         live: np.ndarray) -> Iterator[EncryptField]:
    """The fields an ``ENCRYPT`` rule with ``tags`` selects that are in ``values`` (fields absent
    from the values skipped), each with the items that hold a value in a ``live`` row. Fields
    that are not :attr:`EncryptField.encryptable` are yielded too: the write fails their rows,
    the read leaves them alone."""
    for leaf in leaves_of(schema, fmt, message):
        if not leaf.selected_by(tags):
            continue
        got = get_leaf(values, leaf.path)
        if got is None:
            continue
        col, owner = got
        present = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), bool) & live[owner]
        yield EncryptField(leaf, col, owner, present)
