"""The one registry interface, its reference resolution and the SchemaKey dispatch."""
from __future__ import annotations

import abc
from typing import Any
import enum
import uuid
from collections.abc import Callable

from registry.errors import RegistryConfigError, RegistryProtocolError, SchemaNotFound, SchemaParseError
from registry._types import CacheStats, Schema, SchemaReference

__all__ = ["SchemaRegistry", "guid_text", "framing_name", "registration_of", "MAX_REFERENCES",
           "NOT_REGISTERED_CODES"]

MAX_REFERENCES = 1000  # transitive references per schema; more is a registry bug or an attack
#: Confluent API "subject not found" / "schema not found": a registry's own "not registered".
NOT_REGISTERED_CODES = frozenset({40401, 40403})
#: A registry with no look-up of its own (a file snapshot): versions compared, newest first.
VERSIONS_COMPARED = 50


def guid_text(guid) -> str:
    """Normalise a GUID given as 16 raw bytes, a UUID or text to lower-case hyphenated text."""
    try:
        if isinstance(guid, (bytes, bytearray, memoryview)):
            return str(uuid.UUID(bytes=bytes(guid)))
        if isinstance(guid, uuid.UUID):
            return str(guid)
        return str(uuid.UUID(str(guid)))
    except ValueError as e:
        raise RegistryConfigError("a schema GUID must be 16 bytes or UUID text") from e


def registration_of(schema: Any) -> tuple[str, str, tuple[SchemaReference, ...]]:
    """(text, upper-case registry type, references) of a schema given in any accepted shape: a
    :class:`Schema`, anything with ``.text`` and ``.schema_type``/``.format`` (and optionally
    ``.references``: a document's ``SchemaSpec``, an inline schema), or Avro text."""
    if isinstance(schema, str):
        return schema, "AVRO", ()
    text = getattr(schema, "text", None)
    if not isinstance(text, str):
        raise SchemaParseError("a schema to register or look up needs its text")
    raw = getattr(schema, "schema_type", None) or getattr(schema, "format", None) or "AVRO"
    stype = str(getattr(raw, "value", raw)).upper()
    stype = {"JSONSCHEMA": "JSON", "PROTO": "PROTOBUF"}.get(stype, stype)
    refs = tuple(SchemaReference(str(r.name), str(r.subject), int(r.version))
                 for r in (getattr(schema, "references", ()) or ()))
    return text, stype, refs


def framing_name(framing) -> str:
    """The option spelling of a framing, whether given as ``wireformat.Framing`` or str."""
    if isinstance(framing, enum.Enum):
        return str(framing.value)
    return str(framing)




class SchemaRegistry(abc.ABC):
    """Schema lookups against one registry.

    Backends implement the ``_fetch_*`` methods, which return schemas with ``references`` but
    without ``resolved_references``; the public methods resolve references through
    :meth:`_fetch_version` (which a caching client overrides, so references are cached too).
    """

    # -- backend hooks -------------------------------------------------------------------
    @abc.abstractmethod
    def _fetch_by_id(self, schema_id: int) -> Schema: ...

    def _fetch_by_guid(self, guid: str) -> Schema:
        raise RegistryConfigError(f"{type(self).__name__} cannot look schemas up by GUID")

    def _fetch_by_global_id(self, global_id: int) -> Schema:
        raise RegistryConfigError(f"{type(self).__name__} cannot look up Apicurio global ids; "
                                  "set schema.registry.vendor=apicurio")

    def _fetch_by_content_id(self, content_id: int) -> Schema:
        # Apicurio's Confluent-compatible API uses content ids as its schema ids.
        return self._fetch_by_id(content_id)

    @abc.abstractmethod
    def _fetch_version(self, subject: str, version: int | str) -> Schema: ...

    @abc.abstractmethod
    def list_subjects(self) -> list[str]:
        """All subjects of the registry."""

    @abc.abstractmethod
    def list_versions(self, subject: str) -> list[int]:
        """Versions registered under ``subject``, ascending."""

    def verify_registry(self) -> None:
        """Prove the peer is a schema registry with a known-good call (the subject listing).

        :class:`~registry.CachingRegistry` calls this once before believing a "not found":
        a wrong URL (any web server) answers 404 for every id, and taking that as the
        records' fault would drop every record.

        Raises
        ------
        RegistryError
            The peer did not answer like a registry (404, non-JSON, wrong shape), or could
            not be asked (unreachable, auth, TLS).
        """
        if not isinstance(self.list_subjects(), list):
            raise RegistryProtocolError("the subject listing is not a list: is this a schema registry?")

    def _fetch_latest_with_metadata(self, subject: str, metadata: tuple[tuple[str, str], ...]) -> Schema:
        raise RegistryConfigError(f"{type(self).__name__} cannot choose a schema by its metadata "
                                  "('use.latest.with.metadata' needs a Confluent-compatible registry)")

    def _lookup_schema(self, subject: str, schema: Any, *, normalize: bool, deleted: bool,
                       same: Callable[[str, str], bool] | None) -> Schema | None:
        # This registry's API has no look-up of a schema under a subject (a file snapshot): the
        # one place where texts are compared on the client, with the format's own comparison
        # (``same``: canonical forms) or else exactly, newest versions first. Registries that
        # have a look-up (Confluent's POST /subjects/{subject}, Glue's GetSchemaByDefinition)
        # override this: they reprint what they store (Karapace reorders Protobuf), so a text
        # comparison here would miss schemas they hold.
        text, stype, refs = registration_of(schema)
        equal = same or (lambda a, b: a == b)
        for version in sorted(self.list_versions(subject), reverse=True)[:VERSIONS_COMPARED]:
            stored = self._fetch_version(subject, version)
            if stored.schema_type.value == stype and tuple(stored.references) == refs and equal(stored.text, text):
                return stored
        return None

    def register_schema(self, subject: str, schema: Any, normalize: bool = False) -> Any:
        """Register ``schema`` under ``subject`` if absent; return its id (Glue: the version UUID).

        Raises
        ------
        RegistryConfigError
            This registry cannot register schemas (a file snapshot; Apicurio's native API).
        """
        raise RegistryConfigError(f"{type(self).__name__} cannot register schemas: register the schema first "
                                  "and write with 'use.latest.version' or 'use.schema.id' (or use a "
                                  "Confluent-compatible registry)")

    def close(self) -> None:  # noqa: B027 - optional hook: most backends hold nothing
        """Release connections (idempotent)."""

    def stats(self) -> CacheStats:
        """Cache counters; all zero for a non-caching client."""
        return CacheStats()

    # -- public lookups ------------------------------------------------------------------
    def get_schema_by_id(self, schema_id: int) -> Schema:
        """The schema with this (Confluent) id, references resolved."""
        return self.resolve_references(self._fetch_by_id(int(schema_id)))

    def get_schema_by_guid(self, guid) -> Schema:
        """The schema with this GUID (Confluent GUID, Glue schema version id)."""
        return self.resolve_references(self._fetch_by_guid(guid_text(guid)))

    def get_schema_by_global_id(self, global_id: int) -> Schema:
        """Apicurio: the artifact version with this global id."""
        return self.resolve_references(self._fetch_by_global_id(int(global_id)))

    def get_schema_by_content_id(self, content_id: int) -> Schema:
        """Apicurio: the content with this content id."""
        return self.resolve_references(self._fetch_by_content_id(int(content_id)))

    def get_latest(self, subject: str) -> Schema:
        """The latest version registered under ``subject``."""
        return self.resolve_references(self._fetch_version(subject, "latest"))

    def get_version(self, subject: str, version: int | str) -> Schema:
        """Version ``version`` (an int, or ``"latest"``) of ``subject``."""
        v = version if version == "latest" else int(version)
        return self.resolve_references(self._fetch_version(subject, v))

    def get_latest_with_metadata(self, subject: str, metadata) -> Schema:
        """The latest version of ``subject`` whose metadata properties hold every ``key: value`` of
        ``metadata`` (a dict or pairs): confluent-kafka's ``use.latest.with.metadata``."""
        pairs = tuple(sorted(dict(metadata).items()))
        return self.resolve_references(self._fetch_latest_with_metadata(subject, pairs))

    def lookup_schema(self, subject: str, schema: Any, *, normalize: bool = False, deleted: bool = False,
                      same: Callable[[str, str], bool] | None = None) -> Schema | None:
        """The version of ``subject`` that registered ``schema``, as the registry answers it (its
        id, version and text as stored); None when the schema is not registered there.

        The registry decides (confluent-kafka's ``lookup_schema``): Confluent-compatible registries
        answer ``POST /subjects/{subject}`` with the schema, its references and ``normalize``,
        AWS Glue ``GetSchemaByDefinition``; only a registry with no look-up (a file snapshot)
        compares texts on the client.

        Parameters
        ----------
        subject : str
        schema : Schema, SchemaSpec-like or str
            Anything with ``.text`` and ``.schema_type``/``.format`` (and optionally
            ``.references``, ``.metadata``, ``.rule_set``); a plain string is Avro text.
        normalize : bool
            Ask the registry to normalize the schema before comparing.
        deleted : bool
            Soft-deleted versions count too.
        same : callable, optional
            ``(stored text, given text) -> bool`` for registries with no look-up of their own.

        Raises
        ------
        RegistryError
            The registry could not be asked, or is not a registry (a bare 404 is checked
            against the subject listing); 422: it cannot parse the schema (a Protobuf schema
            without the references its imports need).
        """
        try:
            return self._lookup_schema(subject, schema, normalize=bool(normalize), deleted=bool(deleted), same=same)
        except SchemaNotFound as e:
            if e.error_code not in NOT_REGISTERED_CODES:
                # A bare 404 could be any web server: believe it only from a registry.
                try:
                    self.verify_registry()
                except SchemaNotFound as env:
                    raise RegistryProtocolError(f"the subject listing is not found either ({env}): this is "
                                                "not a schema registry, check schema.registry.url",
                                                status=env.status, url=env.url) from e
            return None

    def version_of(self, subject: str, schema: Schema) -> int:
        """The version under ``subject`` that registered ``schema`` (deleted versions included), for
        migration rules between versions.

        Raises
        ------
        SchemaNotFound
            ``schema`` is not registered under ``subject``.
        """
        if schema.subject == subject and schema.version is not None:
            return int(schema.version)
        found = self.lookup_schema(subject, schema, deleted=True)
        if found is None or found.version is None:
            raise SchemaNotFound(f"schema {schema.id} is not registered under subject {subject!r}",
                                 error_code=40403)
        return int(found.version)

    def lookup(self, key) -> Schema:
        """Resolve a ``wireformat.SchemaKey`` ``(framing, id)``.

        Confluent ids go by id, GUID framings and Glue by GUID, Apicurio legacy / global-id
        headers by global id, Apicurio new / content-id headers by content id.

        Raises
        ------
        RegistryConfigError
            For framings that carry no schema id (``none``, ``auto``).
        """
        from wireformat import Framing

        framing, ident = key
        name = framing_name(framing)
        try:
            kind = Framing(name).id_kind
        except ValueError:
            kind = None
        if kind == "id":
            return self.get_schema_by_id(ident)
        if kind == "guid":
            return self.get_schema_by_guid(ident)
        if kind == "global":
            return self.get_schema_by_global_id(ident)
        if kind == "content":
            return self.get_schema_by_content_id(ident)
        raise RegistryConfigError(f"framing {name!r} carries no schema id to look up")

    # -- references ----------------------------------------------------------------------
    def resolve_references(self, schema: Schema) -> Schema:
        """Return ``schema`` with ``resolved_references`` filled (transitive, deduplicated)."""
        if not schema.references or schema.resolved_references:
            return schema
        ordered = _resolve(schema, self._fetch_version)
        return _replace(schema, resolved_references=tuple(ordered))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _replace(schema: Schema, **changes) -> Schema:
    import dataclasses
    return dataclasses.replace(schema, **changes)


def _resolve(root: Schema, fetch: Callable[[str, int], Schema]) -> list[tuple[str, Schema]]:
    # Depth-first post-order gives dependency order; `active` catches cycles, `done` dedupes.
    done: dict[str, Schema] = {}
    seen_versions: dict[tuple[str, int], Schema] = {}
    active: set[tuple[str, int]] = set()

    def visit(schema: Schema, depth: int) -> None:
        if depth > 64:
            raise SchemaParseError("schema references nest deeper than 64 levels")
        for ref in schema.references:
            key = (ref.subject, ref.version)
            if key in active:
                raise SchemaParseError(f"schema reference cycle through {ref.subject!r} version {ref.version}")
            if ref.name in done:
                continue
            if key in seen_versions:
                done[ref.name] = seen_versions[key]
                continue
            if len(done) >= MAX_REFERENCES:
                raise SchemaParseError(f"more than {MAX_REFERENCES} schema references")
            active.add(key)
            target = fetch(ref.subject, ref.version)
            visit(target, depth + 1)
            active.discard(key)
            flat = _replace(target, resolved_references=())
            seen_versions[key] = flat
            done[ref.name] = flat

    visit(root, 0)
    return list(done.items())
