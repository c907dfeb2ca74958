"""JSON Schema references across documents → one self-contained schema.

A schema may ``$ref`` other documents: files next to it (AsyncAPI payloads), schemas registered
with it as references (Confluent's ``references``: ``name``/``subject``/``version``), or any
schema that declares the ``$id`` the reference names. :func:`bundle` copies every part a
reference reaches into one schema, so the type mapping, the decoder, the encoder's checks and
``jsonschema`` all see one document whose only references are local:

* A ``$ref`` resolves against the base URI in scope: the nearest enclosing ``$id`` (itself
  resolved against its own base), else the URI of the document that holds the ``$ref``.
* Its document is, first that matches: a schema whose ``$id`` is that URI, a document known by
  that URI (its location, or a registry reference's name), a reference named as the ``$ref`` is
  written, the same reference resolved against the holding document's location when an ``$id``
  moved the base elsewhere, then what :meth:`Resources.find` knows by ``$id`` or name, and last
  what :meth:`Resources.fetch` loads by location (document payloads: a file under the reference
  root, or an opted-in remote URL).
* Its fragment is a JSON pointer from the resource (the document, or the subschema that carries
  the ``$id``) or a plain-name anchor (``$anchor``; draft 7's ``$id: "#name"``).
* The part reached is copied in place of the ``$ref`` (sibling keywords are laid over it). A
  ``$ref`` back into a part being copied (recursion) becomes ``{"$ref": "#/$defs/<name>"}``, the
  part stored once under the bundle's ``$defs``: recursion stays finite and the type mapping cuts
  it at ``recursionDepth`` as in a single file.
* ``$defs``/``definitions``, ``$id``, ``$anchor`` and nested ``$schema`` are left out of the copy:
  every reference into the definitions was copied, and an ``$id`` left in would move the base of
  the generated references. Unused definitions are never resolved, so a broken one does not fail
  the schema. The root document's ``$schema`` is kept (it picks the validator's draft).

Only keywords that hold subschemas are walked (``properties``, ``items``, ``allOf``, ...); values
of ``enum``, ``const``, ``default``, ``examples`` and unknown keywords are copied as they are.
Caps: nodes copied (references can form an exponential DAG), nesting, the length of a chain of
pure references (a cycle of them is an error), and nested references.

Examples
--------
>>> from connector.formats.json_schema._bundle import bundle, Registered
>>> root = {"type": "object", "properties": {"c": {"$ref": "customer.json"}}}
>>> customer = '{"type": "object", "properties": {"name": {"type": "string"}}}'
>>> bundle(root, Registered((("customer.json", customer),)))["properties"]["c"]
{'type': 'object', 'properties': {'name': {'type': 'string'}}}
"""
from __future__ import annotations

import json
import posixpath
import re
import urllib.parse
from typing import Any, Protocol

from connector.errors import SchemaMappingError

__all__ = ["Resources", "Registered", "bundle", "needs_bundle", "schema_ids", "MAX_NODES", "MAX_REF_CHAIN"]

#: Nodes a bundle may copy (references may form an exponential DAG).
MAX_NODES = 500_000
#: Longest chain of pure references (``{"$ref": ...}`` whose target is another ``$ref``).
MAX_REF_CHAIN = 32
_MAX_NESTING = 200

Loc = tuple[str, tuple[str, ...]]  # (canonical document URI, JSON pointer tokens)

# Keywords whose values are subschemas (drafts 4 to 2020-12).
_ONE = frozenset({"additionalProperties", "additionalItems", "contains", "propertyNames", "if", "then",
                  "else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items"})
_MANY = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_MAP = frozenset({"properties", "patternProperties", "dependentSchemas", "dependencies"})
_LEFT_OUT = frozenset({"$defs", "definitions", "$id", "$anchor", "$schema"})


class Resources(Protocol):
    """Where the documents a schema references come from."""

    def find(self, uri: str) -> tuple[str, Any] | None:
        """``(document URI, parsed document)`` of a known schema whose ``$id`` (or reference
        name) is ``uri``, without loading anything by location; None when unknown."""
        ...

    def fetch(self, uri: str, ref: str) -> tuple[str, Any]:
        """``(canonical URI, parsed document)`` of the document at ``uri`` (``ref``: the ``$ref``
        as written, for messages). Raises when it cannot or may not be read."""
        ...

    def base_of(self, node: dict) -> str | None:
        """The URI of the document a ``$ref`` node was read from, when the caller knows it."""
        ...


class Registered:
    """The references a registry resolved: ``(name, schema text)`` pairs (a schema's
    ``resolved_references``), found by name or by the ``$id`` each declares."""

    def __init__(self, refs: tuple = ()):
        self.docs: dict[str, Any] = {}
        self.ids: dict[str, str] = {}
        for name, text in refs:
            try:
                root = json.loads(text) if isinstance(text, (str, bytes)) else text
            except (ValueError, RecursionError) as e:
                raise SchemaMappingError(f"JSON Schema reference {name!r} is not valid JSON: {e}") from e
            self.docs[name] = root
            for uri in schema_ids(root, name):
                self.ids.setdefault(uri, name)

    def find(self, uri: str) -> tuple[str, Any] | None:
        name = uri if uri in self.docs else self.ids.get(uri)
        return None if name is None else (name, self.docs[name])

    def fetch(self, uri: str, ref: str) -> tuple[str, Any]:
        names = ", ".join(sorted(self.docs)) or "none"
        raise SchemaMappingError(f"JSON Schema $ref {ref!r}: no schema reference is named {uri!r} or declares "
                                 f"that $id (references: {names})")

    def base_of(self, node: dict) -> str | None:
        return None


def needs_bundle(root: Any) -> bool:
    """Whether ``root`` refers outside itself (a ``$ref`` that is not ``#`` or ``#/...``) or
    embeds a resource (an ``$id`` below the root), so that only :func:`bundle` can map it."""
    stack = [(root, True)]
    while stack:
        node, top = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not (ref == "#" or ref.startswith("#/")):
                return True
            if not top and isinstance(node.get("$id"), str):
                return True
            stack.extend((v, False) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, False) for v in node)
    return False


_WHOLE = object()


def bundle(root: Any, resources: Resources, *, base: str = "", document: Any = _WHOLE,
           max_nodes: int = MAX_NODES, max_ref_chain: int = MAX_REF_CHAIN, fragments_in_document: bool = False,
           notes: list[str] | None = None) -> Any:
    """One self-contained schema for ``root`` (see the module docstring).

    Parameters
    ----------
    root : dict or bool
        The schema, parsed.
    resources : Resources
        Where referenced documents come from: :class:`Registered` for registry references.
    base : str
        The URI of the document holding ``root`` (``""``: none, as for a registry schema).
    document : optional
        The whole document holding ``root`` when ``root`` is a node inside it (an AsyncAPI
        payload: ``#/components/...`` points into the document); default: ``root`` itself.
    fragments_in_document : bool
        AsyncAPI's rule (its official parser's): a ``#/...`` pointer that finds nothing in the
        resource an ``$id`` opened resolves in the document holding the ``$ref``; where the
        ``$id`` resource has the target, JSON Schema's resolution stands.
    notes : list of str, optional
        Receives one line per ``$ref`` resolved by that rule (``inspect`` shows them).

    Raises
    ------
    SchemaMappingError
        A reference that does not resolve, a cycle of pure references, or a cap exceeded.
        What ``resources`` raises (a file outside the reference root, ...) passes through.
    """
    b = _Bundler(resources, max_nodes, max_ref_chain)
    b.fragments_in_document, b.notes = fragments_in_document, notes
    b.add(base, root if document is _WHOLE else document)
    return b.run(root, base, document is _WHOLE)


# -- URIs -------------------------------------------------------------------------------------
def _has_scheme(ref: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:", ref))


def _join(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` (RFC 3986; relative bases, as registry names are, too)."""
    if not ref:
        return base
    if ref.startswith("#"):
        return base.partition("#")[0] + ref
    if _has_scheme(ref) or not base:
        return ref
    scheme = urllib.parse.urlsplit(base).scheme
    if scheme and scheme not in urllib.parse.uses_relative:  # urn:... cannot anchor a relative ref
        return ref
    if not scheme and not base.startswith("/"):
        # a relative name ("common/a.json"): join its paths, keep it relative
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(base), ref.partition("#")[0]))
        return joined + (("#" + ref.partition("#")[2]) if "#" in ref else "")
    return urllib.parse.urljoin(base, ref)


def _nofrag(uri: str) -> str:
    return uri.partition("#")[0]


def _pointer(fragment: str, ref: str) -> tuple[str, ...]:
    fragment = urllib.parse.unquote(fragment)
    if fragment in ("", "/"):
        return () if fragment == "" else ("",)
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in fragment[1:].split("/"))


def schema_ids(root: Any, uri: str) -> list[str]:
    """Every ``$id`` URI ``root`` declares, resolved against the document URI ``uri``."""
    out: list[str] = []
    stack = [(root, uri)]
    while stack:
        node, b = stack.pop()
        if isinstance(node, dict):
            i = node.get("$id")
            if isinstance(i, str) and not i.startswith("#"):
                b = _nofrag(_join(b, i))
                out.append(b)
            stack.extend((v, b) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, b) for v in node)
    return out


def _is_ref(node: Any) -> bool:
    return isinstance(node, dict) and isinstance(node.get("$ref"), str)


# -- the bundler ------------------------------------------------------------------------------
class _Bundler:
    def __init__(self, resources: Resources, max_nodes: int, max_ref_chain: int):
        self.resources = resources
        self.max_nodes, self.max_ref_chain = max_nodes, max_ref_chain
        self.docs: dict[str, Any] = {}
        self.unindexed: list[str] = []  # $ids and anchors are indexed only when a look-up needs them
        self.alias: dict[str, str] = {}
        self.ids: dict[str, Loc] = {}
        self.anchors: dict[tuple[str, str], Loc] = {}
        self.count = 0
        self.defs: dict[Loc, str] = {}
        self.def_locs: dict[str, Loc] = {}
        self.recursive: set[Loc] = set()
        self.fragments_in_document = False
        self.notes: list[str] | None = None

    def run(self, root: Any, base: str, whole: bool) -> Any:
        # A part found to recur is referred to through $defs everywhere (only the bundle's root
        # stays inline), as the same schema written in one file would be: the type mapping then
        # cuts recursion at the same depth. Finding the recursive parts takes one pass; the
        # next pass (rarely a third) writes them.
        stack: tuple = ((base, ()),) if whole else ()
        try:
            schema_uri = self.draft_of(root, base)
            while True:
                known = set(self.recursive)
                self.count, self.defs, self.def_locs = 0, {}, {}
                out = self.expand(root, base, base, stack, 0, at_root=True)
                built: dict[str, Any] = {}
                while len(built) < len(self.def_locs):
                    for name, loc in list(self.def_locs.items()):
                        if name not in built:
                            node = self.node_at(loc, "#/$defs/" + name)
                            built[name] = self.expand(node, loc[0], self.base_at(loc), (loc,), 0)
                if self.recursive == known:
                    break
        except RecursionError as e:
            raise SchemaMappingError("JSON Schema nested too deeply through its references") from e
        if built:
            if not isinstance(out, dict):
                raise SchemaMappingError("a recursive JSON Schema whose root is not an object")
            out = dict(out)
            out["$defs"] = built
        if isinstance(schema_uri, str) and isinstance(out, dict):
            out = {"$schema": schema_uri, **out}
        return out

    def draft_of(self, root: Any, base: str) -> Any:
        """The ``$schema`` of the root, or of what a root that is a bare ``$ref`` designates."""
        if _is_ref(root) and "$schema" not in root:
            loc = self.resolve(root["$ref"], base, self.resources.base_of(root) or base)
            target = self.node_at(loc, root["$ref"])
            return target.get("$schema") if isinstance(target, dict) else None
        return root.get("$schema") if isinstance(root, dict) else None

    # -- documents and locations ----------------------------------------------------------
    def add(self, uri: str, root: Any) -> None:
        if uri not in self.docs:
            self.docs[uri] = root
            self.unindexed.append(uri)

    def index(self) -> None:
        while self.unindexed:
            uri = self.unindexed.pop()
            self.index_one(uri, self.docs[uri])

    def index_one(self, uri: str, root: Any) -> None:
        stack: list[tuple[Any, tuple[str, ...], str]] = [(root, (), uri)]
        while stack:
            node, tokens, b = stack.pop()
            if isinstance(node, dict):
                i = node.get("$id")
                if isinstance(i, str):
                    if i.startswith("#") and len(i) > 1 and not i.startswith("#/"):
                        self.anchors.setdefault((b, i[1:]), (uri, tokens))
                    elif not i.startswith("#"):
                        b = _nofrag(_join(b, i))
                        self.ids.setdefault(b, (uri, tokens))
                a = node.get("$anchor")
                if isinstance(a, str):
                    self.anchors.setdefault((b, a), (uri, tokens))
                stack.extend((v, tokens + (k,), b) for k, v in node.items())
            elif isinstance(node, list):
                stack.extend((v, tokens + (str(i),), b) for i, v in enumerate(node))

    def locate(self, uri: str) -> tuple[Loc, str] | None:
        """The resource a document URI names, and the URI its anchors are filed under."""
        doc = self.alias.get(uri, uri)
        if doc in self.docs:
            return (doc, ()), doc
        self.index()
        if uri in self.ids:
            return self.ids[uri], uri
        return None

    def load(self, found: tuple[str, Any], uri: str) -> tuple[Loc, str]:
        doc, root = found
        self.add(doc, root)
        self.index()
        if uri in self.ids:  # the $id of a resource, maybe one embedded in the document
            return self.ids[uri], uri
        if uri != doc:  # another name of the document (a location, a reference name)
            self.alias.setdefault(uri, doc)
        return (doc, ()), doc

    def resolve(self, ref: str, scope: str, file_base: str) -> Loc:
        doc_part, _, fragment = ref.partition("#")
        candidates = [_nofrag(_join(scope, doc_part))]
        if doc_part:
            candidates.append(doc_part)  # as written: a registry reference's name
            if scope != file_base and not _has_scheme(doc_part):
                candidates.append(_nofrag(_join(file_base, doc_part)))  # where the file lies
        hit = next((h for h in map(self.locate, candidates) if h is not None), None)
        if hit is None:
            for c in candidates:
                found = self.resources.find(c)
                if found is not None:
                    hit = self.load(found, c)
                    break
        if hit is None:
            where = candidates[-1] if len(candidates) == 3 else candidates[0]
            hit = self.load(self.resources.fetch(where, ref), where)
        (doc, tokens), anchor_base = hit
        if fragment and not fragment.startswith("/"):
            self.index()
            name = urllib.parse.unquote(fragment)
            loc = self.anchors.get((anchor_base, name)) or self.anchors.get((self.base_at((doc, tokens)), name))
            if loc is None:
                raise SchemaMappingError(f"JSON Schema $ref {ref!r} does not resolve: no anchor "
                                         f"{fragment!r} in {anchor_base or 'the schema'}")
            return loc
        loc = (doc, tokens + _pointer(fragment, ref))
        try:
            self.node_at(loc, ref)
        except SchemaMappingError as e:
            outer = self.in_document(ref, scope, file_base)
            if outer is not None:
                return outer
            if self.fragments_in_document and ref.startswith("#/") and scope != file_base:
                raise SchemaMappingError(f"{e} in the resource of $id {scope!r}, nor in the document") from e
            raise
        return loc

    def in_document(self, ref: str, scope: str, file_base: str) -> Loc | None:
        """A ``#/...`` pointer the ``$id`` resource lacks, resolved in the document holding the
        ``$ref`` (see ``fragments_in_document``); None when that does not find it either."""
        if not self.fragments_in_document or not ref.startswith("#/") or scope == file_base:
            return None
        hit = self.locate(file_base)
        if hit is None:
            return None
        loc = (hit[0][0], _pointer(ref[1:], ref))
        try:
            self.node_at(loc, ref)
        except SchemaMappingError:
            return None
        if self.notes is not None:
            note = (f"$ref {ref!r} resolved in the AsyncAPI document: the resource of $id {scope!r} has "
                    "nothing there")
            if note not in self.notes:
                self.notes.append(note)
        return loc

    def node_at(self, loc: Loc, ref: str) -> Any:
        node = self.docs[loc[0]]
        for i, tok in enumerate(loc[1]):
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node) and \
                    (tok == "0" or tok[0] != "0"):
                node = node[int(tok)]
            else:
                where = "/" + "/".join(loc[1][: i + 1])
                raise SchemaMappingError(f"$ref {ref!r} does not resolve: nothing at {where}")
        return node

    def base_at(self, loc: Loc) -> str:
        """The base URI in scope at ``loc``: its document's, moved by each ``$id`` on the way."""
        node, b = self.docs[loc[0]], loc[0]
        for tok in (None, *loc[1]):
            if tok is not None:
                node = node[int(tok)] if isinstance(node, list) else node[tok]
            if isinstance(node, dict) and isinstance(node.get("$id"), str) and not node["$id"].startswith("#"):
                b = _nofrag(_join(b, node["$id"]))
        return b

    # -- copying ----------------------------------------------------------------------------
    def check_chain(self, node: dict, loc: Loc) -> None:
        """Refuse a cycle of pure references and over-long chains before copying one."""
        seen = [loc]
        target = self.node_at(loc, node["$ref"])
        while _is_ref(target):
            if len(seen) >= self.max_ref_chain:
                raise SchemaMappingError(f"$ref chain deeper than {self.max_ref_chain} at {node['$ref']!r}")
            doc = seen[-1][0]
            base = self.base_at(seen[-1])
            nxt = self.resolve(target["$ref"], base, self.resources.base_of(target) or doc)
            if nxt in seen:
                raise SchemaMappingError(f"$ref cycle through {node['$ref']!r}")
            seen.append(nxt)
            target = self.node_at(nxt, target["$ref"])

    def expand(self, n: Any, doc: str, scope: str, stack: tuple, depth: int, at_root: bool = False) -> Any:
        self.count += 1
        if self.count > self.max_nodes:
            raise SchemaMappingError(f"schema expands to more than {self.max_nodes} nodes through $refs")
        if depth > _MAX_NESTING:
            raise SchemaMappingError("JSON Schema nested too deeply")
        if not isinstance(n, dict):
            return n
        i = n.get("$id")
        if isinstance(i, str) and not i.startswith("#"):
            scope = _nofrag(_join(scope, i))
        if not _is_ref(n):
            return self.keywords(n, doc, scope, stack, depth)
        ref = n["$ref"]
        file_base = self.resources.base_of(n) or doc
        loc = self.resolve(ref, scope if scope != doc else file_base, file_base)
        if len(stack) >= self.max_ref_chain * 8:
            raise SchemaMappingError(f"$ref nesting deeper than allowed at {ref!r}")
        if loc in stack or (loc in self.recursive and not at_root):
            self.recursive.add(loc)
            out: Any = {"$ref": "#/$defs/" + self.def_name(loc)}
        else:
            target = self.node_at(loc, ref)
            if _is_ref(target):
                self.check_chain(n, loc)
            out = self.expand(target, loc[0], self.base_at(loc), stack + (loc,), depth + 1, at_root)
        siblings = {k: v for k, v in n.items() if k != "$ref"}
        if siblings:
            extra = self.keywords(siblings, doc, scope, stack, depth)
            if out is True:
                out = extra
            elif isinstance(out, dict):
                out = {**out, **extra}
        return out

    def keywords(self, n: dict, doc: str, scope: str, stack: tuple, depth: int) -> dict:
        out: dict[str, Any] = {}
        for k, v in n.items():
            if k in _LEFT_OUT:
                continue
            if k in _MANY and isinstance(v, list):
                out[k] = [self.expand(x, doc, scope, stack, depth + 1) for x in v]
            elif k in _ONE and isinstance(v, (dict, bool)):
                out[k] = self.expand(v, doc, scope, stack, depth + 1)
            elif k in _MAP and isinstance(v, dict):
                out[k] = {name: self.expand(x, doc, scope, stack, depth + 1) if isinstance(x, (dict, bool)) else x
                          for name, x in v.items()}
            else:
                out[k] = v
        return out

    def def_name(self, loc: Loc) -> str:
        if loc in self.defs:
            return self.defs[loc]
        if loc[1]:
            raw = loc[1][-1]
        else:  # a whole document: its file name without the extension
            raw = posixpath.basename(urllib.parse.unquote(urllib.parse.urlsplit(loc[0]).path)).split(".")[0]
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", raw) or "root"
        name, i = base, 2
        while name in self.def_locs:
            name, i = f"{base}_{i}", i + 1
        self.defs[loc] = name
        self.def_locs[name] = loc
        return name
