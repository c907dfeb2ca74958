"""``$ref`` resolution: JSON pointers, files next to the document, opted-in remote URLs.

Rules
-----
* ``#/a/b~1c`` is a JSON pointer into the same document (``~1`` is ``/``, ``~0`` is ``~``,
  the fragment is percent-decoded first).
* ``other.yaml#/x``, ``schemas/user.avsc`` and ``../common/bindings.yml`` are files
  relative to the file holding the ``$ref`` (the *resolution base*). They may reach any
  file under the *reference root*, which defaults to the root document's directory and
  can be widened to an ancestor of it (``ref_root``; option ``asyncapi.refRoot``, CLI
  ``--ref-root``): documents split across sibling folders (``../../master/kafka-bindings.yml``)
  need it. Nothing above the root, no absolute paths; symlinks are resolved before the
  check. Without a document directory (text or dict sources without ``base_dir`` or
  ``ref_root``) relative file refs are refused.
* ``http(s)://`` refs are refused unless ``allow_remote_refs=True``; then they are fetched
  with :mod:`requests` (TLS verified, timeout, size cap, no redirects to other hosts
  unchecked) and link-local/metadata/unspecified/multicast addresses are refused.
* A chain of refs longer than ``max_ref_depth`` or revisiting a location is refused.

*The file that holds a ``$ref``* is known by the ``$ref`` object itself: every ``$ref`` of
every loaded file is filed under its file when the file is parsed (``owner``), so a ``$ref``
reached through any chain of files (a channel ``$ref``\\ed from another service's document,
a trait merged into a message, a binding shared from a common folder) resolves from its own
file, whichever path led to it.

Resolution is lazy: structural parts of a document are followed while the model is
built, payload schemas only when a plan needs them, so an unreachable remote schema only
fails the channel that uses it. :meth:`RefResolver.inline_avro` expands Avro schemas; JSON
Schema payloads are bundled by the JSON Schema format (``connector.asyncapi._json_refs``
gives it these files). :meth:`RefResolver.tracing` records the files a schema was read from.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import pathlib
import re
import socket
import urllib.parse
from collections.abc import Iterator

from connector.errors import AsyncApiDocumentError

from connector.asyncapi._loader import parse_referenced, read_file_text

DEFAULT_MAX_REF_DEPTH = 32
#: Nodes produced by inlining one schema (refs may form an exponential DAG).
MAX_INLINED_NODES = 500_000
REMOTE_TIMEOUT_S = (5.0, 15.0)
_AVRO_NAMED = ("record", "error", "enum", "fixed")
_METADATA_HOSTS = {"metadata.google.internal", "metadata", "metadata.azure.internal"}


def join_path(path: str, key) -> str:
    """Dotted document path: ``a.b`` for keys, ``a[0]`` for list indices."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def is_ref(node) -> bool:
    return isinstance(node, dict) and isinstance(node.get("$ref"), str)


class Source:
    """One loaded document: the root one, a local file, or a remote URL.

    ``uri`` is its absolute URI (``file://`` for files; for a root document given as text, the
    URI of a file in its base directory, or ``""`` without one), the base JSON Schema
    references inside it resolve against.
    """

    __slots__ = ("key", "root", "base", "remote", "uri")

    def __init__(self, key: str, root, base: str | None, remote: bool = False, uri: str = ""):
        self.key = key
        self.root = root
        self.base = base  # directory (files) or the URL itself (remote)
        self.remote = remote
        self.uri = uri


def file_uri(path: str) -> str:
    """``file://`` URI of an absolute path."""
    return pathlib.Path(path).as_uri()


class RefResolver:
    """Follows ``$ref`` values across the root document, local files and remote URLs."""

    def __init__(self, root, *, base_dir: str | None, allow_remote_refs: bool = False,
                 max_bytes: int, max_ref_depth: int = DEFAULT_MAX_REF_DEPTH,
                 ref_root: str | None = None, path: str | None = None):
        self.base_dir = os.path.realpath(base_dir) if base_dir else None
        # The sandbox for file refs: the document's directory unless widened to an ancestor.
        self.ref_root = os.path.realpath(ref_root) if ref_root else self.base_dir
        if self.base_dir is None:
            self.base_dir = self.ref_root
        elif self.ref_root is not None and os.path.commonpath([self.base_dir, self.ref_root]) != self.ref_root:
            raise AsyncApiDocumentError(
                f"the reference root {self.ref_root} must contain the document's directory "
                f"{self.base_dir}: it can only widen where $refs may reach")
        self.allow_remote_refs = allow_remote_refs
        self.max_bytes = max_bytes
        self.max_ref_depth = max_ref_depth
        # the root document's own file, when it has one in its base directory
        self.main_path = os.path.realpath(path) if path and self.base_dir and \
            os.path.dirname(os.path.realpath(path)) == self.base_dir else None
        uri = file_uri(self.main_path) if self.main_path else \
            (file_uri(self.base_dir).rstrip("/") + "/" if self.base_dir else "")
        self.main = Source("", root, self.base_dir, uri=uri)
        self._cache: dict[str, Source] = {}
        self._owners: dict[int, Source] = {}
        self._traces: list[list[Source]] = []
        self.id_index: dict[str, str] | None = None  # $id -> file, filled by _json_refs on demand
        self._own(self.main)

    # -- whose $ref is it ---------------------------------------------------------------------
    def _own(self, source: Source) -> None:
        """File every ``$ref`` object of ``source`` under it (objects are unique per file:
        the loader copies shared YAML nodes)."""
        stack = [source.root]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("$ref"), str):
                    self._owners[id(node)] = source
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)

    def owner(self, node, fallback: Source) -> Source:
        """The source a ``$ref`` object was read from (``fallback`` for objects built in memory)."""
        return self._owners.get(id(node), fallback)

    def file_of(self, node) -> Source | None:
        """The source a ``$ref`` object was read from, None for objects built in memory."""
        return self._owners.get(id(node))

    @contextlib.contextmanager
    def tracing(self) -> Iterator[list[Source]]:
        """Collect, in order, the sources refs are resolved in and loaded from meanwhile."""
        trace: list[Source] = []
        self._traces.append(trace)
        try:
            yield trace
        finally:
            self._traces.remove(trace)

    def touch(self, source: Source) -> Source:
        for trace in self._traces:
            if source not in trace:
                trace.append(source)
        return source

    def display(self, source: Source) -> str:
        """A short name for a source: its path relative to the reference root, or its URL."""
        if source.remote:
            return source.key
        full = self.main_path if source is self.main else source.key
        if not full:
            return "(document)"
        root = self.ref_root or os.path.dirname(full)
        return os.path.relpath(full, root).replace(os.sep, "/")

    # -- single refs ------------------------------------------------------------------
    def target(self, ref: str, src: Source, path: str) -> tuple[Source, tuple[str, ...]]:
        """Source and pointer tokens a ``$ref`` string found in ``src`` designates."""
        doc, _, fragment = ref.partition("#")
        self.touch(src)
        if doc:
            src = self.touch(self._open(doc, src, ref, path))
        return src, _pointer_tokens(fragment, ref, path)

    def follow(self, node, src: Source, path: str):
        """Follow ``node`` while it is a ``$ref``; return ``(node, source, locations)``.

        Each ``$ref`` resolves from the file it was read from (``src`` only stands in for
        objects built in memory). ``locations`` lists every ``(source key, pointer)`` visited,
        used to recognise the same object reached through different refs.
        """
        seen: list[tuple[str, tuple[str, ...]]] = []
        while is_ref(node):
            ref = node["$ref"]
            if len(seen) >= self.max_ref_depth:
                raise AsyncApiDocumentError(
                    f"$ref chain deeper than {self.max_ref_depth} at {ref!r}", path=path)
            src, tokens = self.target(ref, self.owner(node, src), path)
            loc = (src.key, tokens)
            if loc in seen:
                raise AsyncApiDocumentError(f"$ref cycle through {ref!r}", path=path)
            seen.append(loc)
            node = _walk(src.root, tokens, ref, path)
        return node, src, seen

    def resolve(self, node, src: Source, path: str):
        """Follow refs and return only the node."""
        return self.follow(node, src, path)[0]

    # -- whole schemas ------------------------------------------------------------------
    def inline_avro(self, node, src: Source, path: str):
        """A copy of the Avro schema ``node`` with every ``$ref`` expanded.

        A named type already written is referred to by its name afterwards, as Avro requires
        (so recursion stays finite); a recursive ``$ref`` to anything else is refused. Output
        size is capped (refs can form exponential DAGs).
        """
        count = 0
        named: dict[tuple, str] = {}

        def expand(n, s, p, stack, depth):
            nonlocal count
            count += 1
            if count > MAX_INLINED_NODES:
                raise AsyncApiDocumentError(
                    f"schema expands to more than {MAX_INLINED_NODES} nodes through $refs", path=path)
            if depth > 200:
                raise AsyncApiDocumentError("schema nested too deeply", path=p)
            if is_ref(n):
                ref = n["$ref"]
                s = self.owner(n, s)
                s2, tokens = self.target(ref, s, p)
                loc = (s2.key, tokens)
                if len(stack) >= self.max_ref_depth * 8:
                    raise AsyncApiDocumentError(f"$ref nesting deeper than allowed at {ref!r}", path=p)
                if loc in named:
                    return named[loc]
                if loc in stack:
                    raise AsyncApiDocumentError(
                        f"recursive $ref {ref!r} does not designate a named Avro type", path=p)
                target = _walk(s2.root, tokens, ref, p)
                if is_ref(target):
                    self.follow(n, s, p)  # a pure chain of refs: refuse cycles and over-long chains
                if isinstance(target, dict) and target.get("type") in _AVRO_NAMED \
                        and isinstance(target.get("name"), str):
                    # registered before expanding, so recursion inside refers to it by name
                    name, ns = target["name"], target.get("namespace")
                    named[loc] = f"{ns}.{name}" if isinstance(ns, str) and ns and "." not in name else name
                out = expand(target, s2, p, stack + (loc,), depth + 1)
                siblings = {k: v for k, v in n.items() if k != "$ref"}
                if siblings and isinstance(out, dict):
                    out = dict(out)
                    out.update({k: expand(v, s, join_path(p, k), stack, depth + 1)
                                for k, v in siblings.items()})
                return out
            if isinstance(n, dict):
                return {k: expand(v, s, join_path(p, k), stack, depth + 1) for k, v in n.items()}
            if isinstance(n, list):
                return [expand(v, s, join_path(p, i), stack, depth + 1) for i, v in enumerate(n)]
            return n

        try:
            return expand(node, src, path, (), 0)
        except RecursionError as e:
            raise AsyncApiDocumentError("schema nested too deeply", path=path) from e

    # -- loading other documents --------------------------------------------------------------
    def _open(self, doc: str, src: Source, ref: str, path: str) -> Source:
        if src.remote and src.base is not None:  # refs inside a fetched document are relative to its URL
            doc = urllib.parse.urljoin(src.base, doc)
        scheme = urllib.parse.urlsplit(doc).scheme.lower()
        if scheme in ("http", "https"):
            return self.open_remote(doc, ref, path)
        if scheme and len(scheme) > 1:  # one letter would be a Windows drive: refused below
            raise AsyncApiDocumentError(f"$ref {ref!r} uses unsupported scheme {scheme!r}", path=path)
        return self._open_file(doc, src, ref, path)

    def _open_file(self, doc: str, src: Source, ref: str, path: str) -> Source:
        # (ref_root is None exactly when base_dir is)
        if self.base_dir is None or self.ref_root is None or src.base is None:
            raise AsyncApiDocumentError(
                f"relative file $ref {ref!r} needs the document's directory: load the document "
                "from a path or pass base_dir=", path=path)
        rel = urllib.parse.unquote(doc)
        if os.path.isabs(rel) or rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
            raise AsyncApiDocumentError(f"$ref {ref!r} is an absolute path; only paths relative to "
                                        "the document are allowed", path=path)
        return self.open_path(os.path.realpath(os.path.join(src.base, rel)), ref, path)

    def open_path(self, full: str, ref: str, path: str) -> Source:
        """The file at the real path ``full``, if it lies under the reference root."""
        if self.ref_root is None:
            raise AsyncApiDocumentError(
                f"relative file $ref {ref!r} needs the document's directory: load the document "
                "from a path or pass base_dir=", path=path)
        if os.path.commonpath([full, self.ref_root]) != self.ref_root:
            if self.ref_root == self.base_dir:
                where = (f"the document's directory {self.ref_root}; widen where refs may reach with "
                         "the option asyncapi.refRoot (CLI: --ref-root) set to a directory containing both")
            else:
                where = f"the reference root {self.ref_root}"
            raise AsyncApiDocumentError(f"$ref {ref!r} points outside {where}", path=path)
        if full == self.main_path:
            return self.main
        if full in self._cache:
            return self._cache[full]
        data = read_file_text(full, max_bytes=self.max_bytes, what=f"$ref {ref!r} ({full})")
        root = parse_referenced(data, full, what=f"$ref {ref!r}", max_bytes=self.max_bytes)
        return self.remember(Source(full, root, os.path.dirname(full), uri=file_uri(full)))

    def source(self, key: str) -> Source:
        """The loaded source with this key (``""``: the root document)."""
        return self.main if key == "" else self._cache[key]

    def loaded(self) -> list[Source]:
        """The root document and every document loaded so far."""
        return [self.main, *self._cache.values()]

    def remember(self, source: Source) -> Source:
        """Cache a loaded source and file its ``$ref``\\s under it."""
        self._cache[source.key] = source
        self._own(source)
        return source

    def open_remote(self, url: str, ref: str, path: str) -> Source:
        if not self.allow_remote_refs:
            raise AsyncApiDocumentError(
                f"remote $ref {ref!r} is not fetched: pass allow_remote_refs=True to allow "
                "fetching it over the network", path=path)
        if url in self._cache:
            return self._cache[url]
        data = fetch_remote(url, max_bytes=self.max_bytes, path=path)
        root = parse_referenced(data, urllib.parse.urlsplit(url).path, what=f"$ref {url!r}",
                                max_bytes=self.max_bytes)
        return self.remember(Source(url, root, url, remote=True, uri=url))


def _pointer_tokens(fragment: str, ref: str, path: str) -> tuple[str, ...]:
    fragment = urllib.parse.unquote(fragment)
    if fragment in ("", "/"):
        return () if fragment == "" else ("",)
    if not fragment.startswith("/"):
        raise AsyncApiDocumentError(f"$ref {ref!r}: fragment must be a JSON pointer starting with '/'",
                                    path=path)
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in fragment[1:].split("/"))


def _walk(root, tokens: tuple[str, ...], ref: str, path: str):
    node = root
    for i, tok in enumerate(tokens):
        if isinstance(node, dict) and tok in node:
            node = node[tok]
        elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node) and (tok == "0" or tok[0] != "0"):
            node = node[int(tok)]
        else:
            where = "/" + "/".join(tokens[:i + 1])
            raise AsyncApiDocumentError(f"$ref {ref!r} does not resolve: nothing at {where}", path=path)
    return node


def _refuse_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_link_local or ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        return True
    # Cloud metadata endpoints outside link-local space.
    return str(ip) in ("100.100.100.200", "fd00:ec2::254")


def check_remote_url(url: str, path: str | None = None) -> None:
    """Refuse URLs whose host is (or resolves to) a link-local, metadata or unspecified address."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise AsyncApiDocumentError(f"remote $ref {url!r} must be an http(s) URL with a host", path=path)
    host = parts.hostname
    if host.lower() in _METADATA_HOSTS:
        raise AsyncApiDocumentError(f"remote $ref {url!r} targets a metadata host", path=path)
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                   proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as e:
        raise AsyncApiDocumentError(f"remote $ref {url!r}: cannot resolve host {host!r}: {e}",
                                    path=path) from e
    for info in infos:
        try:
            ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        except ValueError:
            continue
        if _refuse_address(ip):
            raise AsyncApiDocumentError(
                f"remote $ref {url!r} resolves to {ip}, a link-local/metadata/reserved address", path=path)


def fetch_remote(url: str, *, max_bytes: int, path: str | None = None, max_redirects: int = 3) -> bytes:
    """GET ``url`` with TLS verification, a timeout and a size cap; every redirect re-checked."""
    import requests  # only needed when a user opts in to remote refs

    current = url
    for _ in range(max_redirects + 1):
        check_remote_url(current, path)
        try:
            with requests.get(current, timeout=REMOTE_TIMEOUT_S, stream=True, allow_redirects=False,
                              verify=True, headers={"Accept": "application/json, application/yaml, */*"}) as r:
                if r.is_redirect and r.headers.get("location"):
                    current = urllib.parse.urljoin(current, r.headers["location"])
                    continue
                if r.status_code != 200:
                    raise AsyncApiDocumentError(f"remote $ref {url!r}: HTTP {r.status_code}", path=path)
                chunks, size = [], 0
                for chunk in r.iter_content(65536):
                    size += len(chunk)
                    if size > max_bytes:
                        raise AsyncApiDocumentError(
                            f"remote $ref {url!r} is larger than the {max_bytes}-byte cap", path=path)
                    chunks.append(chunk)
                return b"".join(chunks)
        except requests.RequestException as e:
            raise AsyncApiDocumentError(f"remote $ref {url!r} could not be fetched: "
                                        f"{type(e).__name__}", path=path) from e
    raise AsyncApiDocumentError(f"remote $ref {url!r}: too many redirects", path=path)
