"""Bounded YAML/JSON parsing of AsyncAPI documents and of files they reference.

Hostile input is expected: the text size is capped before parsing, YAML aliases are
counted on the composed node graph (before anything is expanded) so a "billion laughs"
document is refused in time linear in its size, recursive aliases are refused, and the
result is copied into plain JSON-like values (``dict``/``list``/``str``/``int``/``float``/
``bool``/``None``) with a node-count and nesting cap.

The YAML dialect is ``yaml.SafeLoader`` with two YAML 1.2 corrections, matching the
JavaScript tooling AsyncAPI documents are written for: only ``true``/``false`` are
booleans (``on``/``off``/``yes``/``no`` stay strings), and timestamps stay strings.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re

import yaml

from connector.errors import AsyncApiDocumentError

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
#: Extra nodes that YAML aliases may add on top of the composed graph's own nodes.
DEFAULT_MAX_ALIAS_EXPANSION = 1_000_000
#: Nodes in one loaded document after alias expansion.
DEFAULT_MAX_NODES = 5_000_000
MAX_NESTING = 200

_BOOL_TAG = "tag:yaml.org,2002:bool"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans and without implicit timestamps."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL_TAG, _TIMESTAMP_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


def _children(node):
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def _check_alias_expansion(root, max_alias_expansion: int, what: str) -> None:
    """Refuse alias bombs and alias cycles by sizing the expanded tree on the node graph.

    Expanded sizes are memoised per node object, so the cost is linear in the number of
    distinct nodes however large the expansion would be.
    """
    sizes: dict[int, int] = {}
    visiting: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            total = 1 + sum(sizes[id(c)] for c in _children(node))
            sizes[nid] = total
            visiting.discard(nid)
            continue
        if nid in sizes:
            continue
        visiting.add(nid)
        stack.append((node, True))
        for child in _children(node):
            cid = id(child)
            if cid in visiting:
                raise AsyncApiDocumentError(f"{what}: recursive YAML alias")
            if cid not in sizes:
                stack.append((child, False))
    expanded = sizes[id(root)]
    if expanded - len(sizes) > max_alias_expansion:
        raise AsyncApiDocumentError(
            f"{what}: YAML aliases would expand {len(sizes)} nodes to {expanded} "
            f"(more than {max_alias_expansion} extra nodes); refusing a possible alias bomb")


def parse_text(text: str | bytes, *, what: str = "document", max_bytes: int = DEFAULT_MAX_BYTES,
               max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION):
    """Parse YAML or JSON text into plain values, within the size and alias caps.

    Parameters
    ----------
    text : str or bytes
        The document text (JSON is parsed as YAML, of which it is a subset, or by
        :func:`json.loads` when it looks like JSON and parses as such).
    what : str
        Name used in error messages (a path or URL).
    max_bytes : int
        Largest accepted UTF-8 size.
    max_alias_expansion : int
        Largest number of nodes YAML aliases may add.

    Raises
    ------
    AsyncApiDocumentError
        On any syntax error, cap violation or unsupported YAML value.
    """
    if isinstance(text, bytes):
        if len(text) > max_bytes:
            raise AsyncApiDocumentError(f"{what} is {len(text)} bytes, above the {max_bytes}-byte cap")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise AsyncApiDocumentError(f"{what} is not UTF-8: {e}") from e
    elif len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise AsyncApiDocumentError(f"{what} is larger than the {max_bytes}-byte cap")
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return to_plain(json.loads(text), what=what)
        except (ValueError, RecursionError):
            pass  # not strict JSON: YAML flow style gets its chance below
    loader = None
    try:
        loader = _Loader(text)  # the reader checks characters already
        node = loader.get_single_node()
        if node is None:
            return None
        _check_alias_expansion(node, max_alias_expansion, what)
        data = loader.construct_document(node)
    except yaml.YAMLError as e:
        raise AsyncApiDocumentError(f"{what} is not valid YAML/JSON: {e}") from e
    except RecursionError as e:
        raise AsyncApiDocumentError(f"{what} is nested too deeply") from e
    finally:
        if loader is not None:
            loader.dispose()
    return to_plain(data, what=what)


def to_plain(value, *, what: str = "document", max_nodes: int = DEFAULT_MAX_NODES):
    """Copy ``value`` into JSON-like plain values, checking nesting, size and key types.

    Dates become ISO strings; non-string mapping keys become strings (YAML allows
    ``200:``); sets, bytes and other objects are refused. Shared sub-objects are copied,
    cycles are refused.
    """
    count = 0
    active: set[int] = set()

    def copy(v, depth):
        nonlocal count
        count += 1
        if count > max_nodes:
            raise AsyncApiDocumentError(f"{what} has more than {max_nodes} nodes")
        if depth > MAX_NESTING:
            raise AsyncApiDocumentError(f"{what} is nested deeper than {MAX_NESTING} levels")
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return v
        if isinstance(v, (_dt.date, _dt.datetime, _dt.time)):
            return v.isoformat()
        if isinstance(v, dict):
            if id(v) in active:
                raise AsyncApiDocumentError(f"{what} contains a reference cycle")
            active.add(id(v))
            try:
                return {(k if isinstance(k, str) else _key_text(k, what)): copy(x, depth + 1)
                        for k, x in v.items()}
            finally:
                active.discard(id(v))
        if isinstance(v, (list, tuple)):
            if id(v) in active:
                raise AsyncApiDocumentError(f"{what} contains a reference cycle")
            active.add(id(v))
            try:
                return [copy(x, depth + 1) for x in v]
            finally:
                active.discard(id(v))
        raise AsyncApiDocumentError(f"{what} contains an unsupported value of type {type(v).__name__}")

    return copy(value, 0)


def _key_text(key, what: str) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float)):
        return str(key)
    raise AsyncApiDocumentError(f"{what} has a mapping key of unsupported type {type(key).__name__}")


def read_file_text(path: str, *, max_bytes: int, what: str | None = None) -> bytes:
    """Read at most ``max_bytes`` of a file, refusing larger files."""
    what = what or path
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise AsyncApiDocumentError(f"cannot read {what}: {e.strerror or e}") from e
    if len(data) > max_bytes:
        raise AsyncApiDocumentError(f"{what} is larger than the {max_bytes}-byte cap")
    return data


def parse_referenced(data: bytes, name: str, *, what: str, max_bytes: int):
    """Parse a referenced file: ``.proto`` files are kept as text, others parsed as YAML/JSON."""
    ext = os.path.splitext(name.split("?", 1)[0])[1].lower()
    if ext == ".proto":
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise AsyncApiDocumentError(f"{what} is not UTF-8: {e}") from e
    return parse_text(data, what=what, max_bytes=max_bytes)
