"""Process-wide caching clients.

Schemas by id / GUID / subject version never change, so they are cached forever (optionally
bounded, LRU). Concurrent misses for one key are coalesced into one backend call. "Not found"
answers are cached briefly (a producer may register the schema a moment later); 5xx and other
errors are never cached. ``latest`` lookups and subject listings expire after a TTL.

A "not found" is believed (the records' fault: a row error) only once the peer has proven to
be a registry: by any good answer, by the not-found answer itself when it carries a
Confluent-API error code (40401/40402/40403: only a registry speaks that, so a registry whose
ACLs forbid the subject listing still works), or else by one check of the subject listing per
client (:meth:`CachingRegistry.verify`). A peer that fails the check raises an environment error
(``RegistryProtocolError``, or the check's own unavailability/auth/TLS error), which fails
the job in every mode.
"""
from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

from wireformat import add_note

from registry._base import SchemaRegistry, guid_text, registration_of
from registry._vendor import Vendor
from registry._config import RegistryConfig
from registry._process import PerProcess
from registry.errors import (RECORD_FAULT, RegistryConfigError, RegistryError, RegistryProtocolError,
                              SchemaNotFound)
from registry._types import CacheStats, Schema

# Confluent API "subject / version / schema not found": answers only a schema registry gives.
_REGISTRY_NOT_FOUND_CODES = frozenset({40401, 40402, 40403})

__all__ = ["CachingRegistry", "client_for", "make_backend", "clear_clients"]


class _Flight:
    __slots__ = ("event", "value", "error")

    def __init__(self):
        self.event = threading.Event()
        self.value = None
        self.error: BaseException | None = None


class _NotRegistered(Exception):
    """A look-up's "not registered": raised through the cache core so that it is not stored."""


class _NotFound:
    __slots__ = ("expires", "status", "error_code", "url", "message", "fault")

    def __init__(self, exc: SchemaNotFound, expires: float):
        self.expires, self.status, self.error_code = expires, exc.status, exc.error_code
        self.url, self.message, self.fault = exc.url, str(exc), exc.fault

    def raise_(self):
        raise SchemaNotFound(self.message + " (cached)", status=self.status,
                             error_code=self.error_code, url=self.url, fault=self.fault)


class CachingRegistry(SchemaRegistry):
    """Wrap a backend :class:`SchemaRegistry` with caching, coalescing and negative caching.

    Parameters
    ----------
    backend : SchemaRegistry
        The uncached client.
    config : RegistryConfig
        Cache bounds and TTLs.
    clock : callable, optional
        Monotonic clock in seconds (tests inject a fake one to move time deterministically).

    Examples
    --------
    >>> from registry import RegistryConfig
    >>> from registry._confluent import ConfluentRegistry
    >>> from connector.testing import RegistryServer
    >>> with RegistryServer() as srv:
    ...     sid = srv.register("t-value", '"int"')
    ...     c = CachingRegistry(ConfluentRegistry(RegistryConfig(urls=(srv.url,))), RegistryConfig(urls=(srv.url,)))
    ...     _ = c.get_schema_by_id(sid); _ = c.get_schema_by_id(sid)
    ...     c.stats().hits, srv.request_count("/schemas/ids")
    (1, 1)
    """

    def __init__(self, backend: SchemaRegistry, config: RegistryConfig, *,
                 clock: Callable[[], float] = time.monotonic):
        self.backend = backend
        self.config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._bound = config.cache_max_entries
        # key -> Schema (forever) ; key -> (expires, value) for TTL entries ; key -> _NotFound
        # Ordered for the LRU bound (move_to_end/popitem(last=False)); unused order otherwise.
        self._forever: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        self._ttl: dict = {}
        self._missing: dict = {}
        self._flights: dict[Any, _Flight] = {}
        self._by_key: dict = {}  # SchemaKey -> Schema, the hot path of lookup()
        self._hits = self._misses = self._requests = self._errors = self._coalesced = 0
        self._verified = False  # the peer has answered like a registry at least once
        self._verify_lock = threading.Lock()

    # -- the cache core ------------------------------------------------------------------
    def _get(self, key, fetch: Callable[[], Any], ttl: float | None = None, backend: bool = False,
             store: bool = True):
        # Two layers use this: public lookups (backend=False) count hits/misses/coalesced;
        # backend hooks (backend=True) count the calls that reach the registry and their errors.
        now = None
        with self._lock:
            if ttl is None:
                value = self._forever.get(key)
                if value is not None:
                    if self._bound:
                        self._forever.move_to_end(key)
                    if not backend:
                        self._hits += 1
                    return value
            else:
                entry = self._ttl.get(key)
                now = self._clock()
                if entry is not None and entry[0] > now:
                    if not backend:
                        self._hits += 1
                    return entry[1]
            miss = self._missing.get(key)
            if miss is not None:
                if miss.expires > (now if now is not None else self._clock()):
                    if not backend:
                        self._hits += 1
                    miss.raise_()
                del self._missing[key]
            flight = self._flights.get(key)
            leader = flight is None
            if not backend:
                self._misses += 1
            if flight is None:
                flight = self._flights[key] = _Flight()
                if backend:
                    self._requests += 1
            else:
                self._coalesced += 1
        if not leader:
            flight.event.wait()
            if flight.error is not None:
                raise flight.error
            return flight.value
        try:
            value = fetch()
        except BaseException as e:
            if backend and isinstance(e, SchemaNotFound) and not e.is_records_fault:
                try:
                    self._believe(e)
                except BaseException as env:
                    with self._lock:
                        self._errors += 1
                        del self._flights[key]
                    flight.error = env
                    flight.event.set()
                    raise env from e
            with self._lock:
                if backend:
                    self._errors += 1
                if isinstance(e, SchemaNotFound) and self.config.cache_notfound_ttl_s > 0:
                    self._missing[key] = _NotFound(e, self._clock() + self.config.cache_notfound_ttl_s)
                del self._flights[key]
            flight.error = e
            flight.event.set()
            raise
        if backend:
            self._verified = True  # a parsed schema or listing: the peer speaks the protocol
        with self._lock:
            if not store:
                pass
            elif ttl is None:
                self._forever[key] = value
                if self._bound and len(self._forever) > self._bound:
                    self._forever.popitem(last=False)
            elif ttl > 0:
                self._ttl[key] = (self._clock() + ttl, value)
            del self._flights[key]
        flight.value = value
        flight.event.set()
        return value

    # -- is the peer a registry? ----------------------------------------------------------
    def verify(self) -> None:
        """Check once per client that the peer is a schema registry (see the module doc).

        Raises
        ------
        RegistryProtocolError
            The subject listing is missing (404) or not a registry's answer.
        RegistryError
            The check could not be made (unavailable, auth, TLS): the environment's fault.
        """
        if self._verified:
            return
        with self._verify_lock:
            if self._verified:
                return
            try:
                self.backend.verify_registry()
            except SchemaNotFound as e:
                raise RegistryProtocolError(
                    f"the subject listing is not found either ({e}): this is not a schema registry, "
                    "check schema.registry.url", status=e.status, url=e.url) from None
            self._verified = True

    def _believe(self, e: SchemaNotFound) -> None:
        """Mark ``e`` as the records' fault once the peer is proven to be a registry."""
        if e.error_code in _REGISTRY_NOT_FOUND_CODES:
            # A bare 404 could be any web server; a typed Confluent-API answer is a registry's.
            self._verified = True
            e.fault = RECORD_FAULT
            return
        try:
            self.verify()
        except RegistryError as env:
            add_note(env, f"checked because the registry answered: {e}")
            raise
        e.fault = RECORD_FAULT

    # -- backend hooks: coalesced and negatively cached; only subject versions are stored
    # here (reference resolution reads them), id lookups are stored resolved, below.
    def _fetch_by_id(self, schema_id: int) -> Schema:
        return self._get(("id", schema_id), lambda: self.backend._fetch_by_id(schema_id), backend=True, store=False)

    def _fetch_by_guid(self, guid: str) -> Schema:
        return self._get(("guid", guid), lambda: self.backend._fetch_by_guid(guid), backend=True, store=False)

    def _fetch_by_global_id(self, global_id: int) -> Schema:
        return self._get(("global", global_id), lambda: self.backend._fetch_by_global_id(global_id),
                         backend=True, store=False)

    def _fetch_by_content_id(self, content_id: int) -> Schema:
        return self._get(("content", content_id), lambda: self.backend._fetch_by_content_id(content_id),
                         backend=True, store=False)

    def _fetch_version(self, subject: str, version) -> Schema:
        if version == "latest":
            return self._get(("latest", subject), lambda: self.backend._fetch_version(subject, "latest"),
                             ttl=self.config.cache_latest_ttl_s, backend=True)
        return self._get(("version", subject, version), lambda: self.backend._fetch_version(subject, version),
                         backend=True)

    # -- public lookups: cache the resolved schema so hits skip reference walking ----------
    def get_schema_by_id(self, schema_id: int) -> Schema:
        sid = int(schema_id)
        return self._get(("rid", sid), lambda: self.resolve_references(self._fetch_by_id(sid)))

    def get_schema_by_guid(self, guid) -> Schema:
        g = guid_text(guid)
        return self._get(("rguid", g), lambda: self.resolve_references(self._fetch_by_guid(g)))

    def get_schema_by_global_id(self, global_id: int) -> Schema:
        gid = int(global_id)
        return self._get(("rglobal", gid), lambda: self.resolve_references(self._fetch_by_global_id(gid)))

    def get_schema_by_content_id(self, content_id: int) -> Schema:
        cid = int(content_id)
        return self._get(("rcontent", cid), lambda: self.resolve_references(self._fetch_by_content_id(cid)))

    def get_latest(self, subject: str) -> Schema:
        return self._get(("rlatest", subject), lambda: self.resolve_references(self._fetch_version(subject, "latest")),
                         ttl=self.config.cache_latest_ttl_s)

    def get_version(self, subject: str, version) -> Schema:
        if version == "latest":
            return self.get_latest(subject)
        v = int(version)
        return self._get(("rversion", subject, v), lambda: self.resolve_references(self._fetch_version(subject, v)))

    def get_latest_with_metadata(self, subject: str, metadata) -> Schema:
        pairs = tuple(sorted(dict(metadata).items()))
        return self._get(("rmeta", subject, pairs),
                         lambda: self.resolve_references(self.backend._fetch_latest_with_metadata(subject, pairs)),
                         ttl=self.config.cache_latest_ttl_s)

    def lookup_schema(self, subject: str, schema, *, normalize: bool = False, deleted: bool = False,
                      same=None) -> Schema | None:
        """The registry's look-up (see :meth:`registry.SchemaRegistry.lookup_schema`); a found
        version is remembered for the process, "not registered" never is: the question is asked
        once per job on the driver, and a schema registered a moment later must be found by the
        next job."""
        text, stype, refs = registration_of(schema)
        key = ("registered", subject, text, stype, refs, bool(normalize), bool(deleted),
               getattr(schema, "metadata", None), getattr(schema, "rule_set", None))

        def ask() -> Schema:
            found = self.backend.lookup_schema(subject, schema, normalize=normalize, deleted=deleted, same=same)
            if found is None:
                raise _NotRegistered()
            self._verified = True  # a registry's answer
            return found

        try:
            return self._get(key, ask)
        except _NotRegistered:
            return None

    def lookup(self, key) -> Schema:
        schema = self._by_key.get(key)
        if schema is not None:
            # Counted without the lock: a lost increment under contention only skews stats.
            self._hits += 1
            return schema
        try:
            hash(key)
        except TypeError:
            key = (key[0], bytes(key[1]))
        schema = super().lookup(key)
        # The fast map is only used unbounded: a bounded cache must be able to forget.
        if not self._bound and len(self._by_key) < 1 << 20:
            self._by_key[key] = schema
        return schema

    def list_subjects(self) -> list[str]:
        return list(self._get(("subjects",), lambda: tuple(self.backend.list_subjects()),
                              ttl=self.config.cache_latest_ttl_s, backend=True))

    def list_versions(self, subject: str) -> list[int]:
        return list(self._get(("versions", subject), lambda: tuple(self.backend.list_versions(subject)),
                              ttl=self.config.cache_latest_ttl_s, backend=True))

    def register_schema(self, subject: str, schema, normalize: bool = False) -> int:
        """Register-if-absent through the backend, remembered per process (errors are not).

        See :meth:`registry.ConfluentRegistry.register_schema`.
        """
        register = self.backend.register_schema
        text, stype, refs = registration_of(schema)
        key = ("register", subject, text, stype, refs,
               bool(normalize), getattr(schema, "metadata", None), getattr(schema, "rule_set", None))
        return self._get(key, lambda: register(subject, schema, normalize=normalize))

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, self._requests, self._errors, self._coalesced)

    def clear(self) -> None:
        """Forget every cached answer (counters are kept)."""
        with self._lock:
            self._forever.clear()
            self._ttl.clear()
            self._missing.clear()
            self._by_key.clear()

    def close(self) -> None:
        self.backend.close()

    def __getattr__(self, name):
        # Backend-specific extras (e.g. ConfluentRegistry.register) stay reachable.
        if name == "backend":
            raise AttributeError(name)
        return getattr(self.backend, name)


def make_backend(config: RegistryConfig) -> SchemaRegistry:
    """Build the uncached client for ``config.vendor``."""
    if config.vendor is Vendor.CONFLUENT:
        from registry._confluent import ConfluentRegistry
        return ConfluentRegistry(config)
    if config.vendor is Vendor.APICURIO:
        from registry._apicurio import ApicurioRegistry
        return ApicurioRegistry(config)
    if config.vendor is Vendor.AWS_GLUE:
        from registry._glue import GlueRegistry
        return GlueRegistry(config)
    if config.vendor is Vendor.FILE:
        from registry._file import FileRegistry
        return FileRegistry(config.file_path)
    raise RegistryConfigError(f"unknown vendor {config.vendor!r}")


_clients: PerProcess[RegistryConfig, CachingRegistry] = PerProcess(
    lambda config: CachingRegistry(make_backend(config), config))


def clear_clients() -> None:
    """Drop every process-wide client (closing them)."""
    _clients.clear(CachingRegistry.close)


def client_for(config: RegistryConfig) -> SchemaRegistry:
    """The process-wide caching client for ``config`` (created on first use, re-created after fork).

    Examples
    --------
    >>> from registry import RegistryConfig
    >>> from connector.testing import RegistryServer
    >>> with RegistryServer() as srv:
    ...     sid = srv.register("t-value", '"string"')
    ...     cfg = RegistryConfig(urls=(srv.url,))
    ...     client_for(cfg) is client_for(cfg), client_for(cfg).lookup(("confluent", sid)).text
    (True, '"string"')
    """
    return _clients.get(config)
