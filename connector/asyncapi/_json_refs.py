"""JSON Schema payloads: the document's files, as the JSON Schema format reads references.

The JSON Schema format owns what a JSON Schema ``$ref`` means (base URIs moved by ``$id``,
anchors, pointers, recursion: ``connector.formats.json_schema``) and bundles a payload into one
self-contained schema. This module hands it the files, under the rules every ``$ref`` of the
document follows (:mod:`connector.asyncapi._refs`):

* ``fetch`` by location: ``file:`` URIs through the same sandbox as any file ``$ref`` (under the
  reference root, symlinks resolved first, no absolute paths, size cap), ``http(s)`` only when
  remote refs are allowed, any other scheme refused;
* ``find`` by ``$id``: a ``$ref`` naming an absolute URI that is not a location here
  (``https://schemas.example.com/customer.json``, ``urn:...``) designates the schema that declares
  that ``$id``: first among the files already loaded, then among the JSON and YAML files under
  the reference root. The root is scanned once per document, on the first such ``$ref``, and
  within bounds (:data:`SCAN_MAX_DIRS` folders, :data:`SCAN_MAX_FILES` JSON/YAML files, each
  within the size cap, only files whose text mentions ``$id``; hidden folders and
  ``node_modules`` skipped, symlinked folders not followed, files whose real path leaves the
  root ignored); files that do not parse are skipped;
* ``base_of``: the URI of the file a ``$ref`` object was read from.
"""
from __future__ import annotations

import os
import urllib.parse
from typing import Any

from connector.errors import AsyncApiDocumentError, SchemaMappingError

from connector.asyncapi._loader import parse_referenced, read_file_text
from connector.asyncapi._refs import RefResolver, Source, file_uri

__all__ = ["bundle_json_payload", "SCAN_MAX_FILES", "SCAN_MAX_DIRS"]

#: JSON and YAML files the ``$id`` scan of a reference root looks at, at most.
SCAN_MAX_FILES = 5000
#: Folders it walks, at most.
SCAN_MAX_DIRS = 20000
_SCAN_EXTENSIONS = (".json", ".yaml", ".yml")
_SKIP_DIRS = ("node_modules",)


def bundle_json_payload(resolver: RefResolver, node, src: Source, path: str, max_nodes: int,
                        notes: list[str] | None = None) -> Any:
    """The JSON Schema ``node`` (read from ``src``) with every reference bundled in.

    ``#/...`` references resolve as AsyncAPI's official parser resolves them: inside a schema that
    declares ``$id``, JSON Schema's own resolution (against the ``$id`` base) stands where it finds
    the target; otherwise the pointer is resolved in the document that holds the ``$ref`` (a
    payload with ``$id: SongMetaData`` referring to ``#/components/schemas/Album``). ``notes``
    receives a line for each reference resolved that way.

    Raises
    ------
    AsyncApiDocumentError
        A reference that does not resolve or may not be read, with the document path.
    """
    from connector.formats.json_schema import bundle_schema

    files = _DocumentFiles(resolver, path)
    src = resolver.touch(resolver.owner(node, src))
    try:
        return bundle_schema(node, files, base=src.uri, document=src.root, max_nodes=max_nodes,
                             max_ref_chain=resolver.max_ref_depth, fragments_in_document=True, notes=notes)
    except SchemaMappingError as e:
        raise AsyncApiDocumentError(str(e), path=path) from e


class _DocumentFiles:
    """``connector.formats.json_schema.Resources`` over a document's files."""

    def __init__(self, resolver: RefResolver, path: str):
        self.resolver, self.path = resolver, path

    def base_of(self, node: dict) -> str | None:
        src = self.resolver.file_of(node)
        return None if src is None else src.uri

    def fetch(self, uri: str, ref: str) -> tuple[str, Any]:
        r, path = self.resolver, self.path
        if uri == r.main.uri:
            return uri, r.touch(r.main).root
        parts = urllib.parse.urlsplit(uri)
        scheme = parts.scheme.lower()
        written = urllib.parse.unquote(ref.partition("#")[0])
        if scheme in ("http", "https"):
            if not r.allow_remote_refs:
                where = f"the reference root {r.ref_root}" if r.ref_root else "the document"
                raise AsyncApiDocumentError(
                    f"remote $ref {ref!r} is not fetched: no schema in {where} declares $id {uri!r}; "
                    "pass allow_remote_refs=True to allow fetching it over the network", path=path)
            src = r.open_remote(uri, ref, path)
        elif scheme == "file" or not scheme:
            if not scheme or r.ref_root is None:
                raise AsyncApiDocumentError(
                    f"relative file $ref {ref!r} needs the document's directory: load the document "
                    "from a path or pass base_dir=", path=path)
            if os.path.isabs(written) or written.startswith(("/", "\\")) or written[1:2] == ":":
                raise AsyncApiDocumentError(f"$ref {ref!r} is an absolute path; only paths relative to "
                                            "the document are allowed", path=path)
            src = r.open_path(os.path.realpath(urllib.parse.unquote(parts.path)), ref, path)
        elif len(scheme) == 1:  # a Windows drive letter
            raise AsyncApiDocumentError(f"$ref {ref!r} is an absolute path; only paths relative to "
                                        "the document are allowed", path=path)
        else:
            raise AsyncApiDocumentError(f"$ref {ref!r} names no schema under the reference root that "
                                        f"declares $id {uri!r}, and scheme {scheme!r} cannot be fetched",
                                        path=path)
        return src.uri, r.touch(src).root

    def find(self, uri: str) -> tuple[str, Any] | None:
        scheme = urllib.parse.urlsplit(uri).scheme.lower()
        if not scheme or scheme == "file":
            return None  # a location: fetched as such
        r = self.resolver
        if r.id_index is None:
            r.id_index = _scan(r)
        key = r.id_index.get(uri)
        if key is None:
            return None
        src = r.main if key == "" else r.open_path(key, uri, self.path)
        return src.uri, r.touch(src).root


def _scan(r: RefResolver) -> dict[str, str]:
    """``$id`` → source key ("" for the root document, else the file's real path)."""
    from connector.formats.json_schema import schema_ids

    index: dict[str, str] = {}
    for src in r.loaded():
        if not src.remote:
            for uri in schema_ids(src.root, src.uri):
                index.setdefault(uri, src.key)
    root = r.ref_root
    if root is None:
        return index
    seen = dirs = 0
    for dirpath, dirnames, filenames in os.walk(root):  # symlinked folders are listed, not entered
        dirs += 1
        if dirs > SCAN_MAX_DIRS:
            return index
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if not name.lower().endswith(_SCAN_EXTENSIONS):
                continue
            seen += 1
            if seen > SCAN_MAX_FILES:
                return index
            full = os.path.realpath(os.path.join(dirpath, name))
            if os.path.commonpath([full, root]) != root or full == r.main_path:
                continue
            try:
                if os.path.getsize(full) > r.max_bytes:
                    continue
                data = read_file_text(full, max_bytes=r.max_bytes)
                if b"$id" not in data:
                    continue
                parsed = parse_referenced(data, full, what=full, max_bytes=r.max_bytes)
            except (OSError, AsyncApiDocumentError):
                continue  # an unrelated broken file must not break the document
            for uri in schema_ids(parsed, file_uri(full)):
                index.setdefault(uri, full)
    return index
