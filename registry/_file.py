"""Offline registry: a directory snapshot of schemas, and the exporter that writes one.

Layout (every file is one UTF-8 JSON schema document)::

    <dir>/snapshot.json                    {"format": 1, "source": <redacted url>, "schemas": n}
    <dir>/ids/<id>.json                    by Confluent schema id
    <dir>/guids/<uuid>.json                by Confluent GUID or Glue schema version id
    <dir>/global-ids/<id>.json             by Apicurio global id (optional)
    <dir>/content-ids/<id>.json            by Apicurio content id (optional; falls back to ids/)
    <dir>/subjects/<subject>/<version>.json  by subject and version; subject percent-encoded
                                           (``/`` and ``.`` too, so no name escapes the directory)

A schema document::

    {"schemaType": "AVRO" | "PROTOBUF" | "JSON", "schema": "<text>",
     "references": [{"name": ..., "subject": ..., "version": 1}],
     "id": 1, "guid": "…", "subject": "…", "version": 1}

Only ``schema`` is required; ``schemaType`` defaults to AVRO.
"""
from __future__ import annotations

import json
import os
import pathlib
import tempfile
import urllib.parse

from registry._base import SchemaRegistry, guid_text
from registry._confluent import schema_from_document
from registry.errors import RegistryConfigError, SchemaNotFound, SchemaParseError
from registry._types import Schema

__all__ = ["FileRegistry", "export_snapshot", "schema_document"]

_MAX_FILE_BYTES = 64 * 1024 * 1024


def _subject_dir(subject: str) -> str:
    return urllib.parse.quote(subject, safe="").replace(".", "%2E")


def schema_document(schema: Schema) -> dict:
    """The JSON document a snapshot stores for ``schema``."""
    doc = {"schemaType": schema.schema_type.value, "schema": schema.text,
           "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                          for r in schema.references]}
    for key in ("id", "guid", "subject", "version"):
        if getattr(schema, key) is not None:
            doc[key] = getattr(schema, key)
    return doc


class FileRegistry(SchemaRegistry):
    """Schemas served from a snapshot directory (see the module docstring for the layout).

    Parameters
    ----------
    path : str or os.PathLike
        The snapshot directory, e.g. written by :func:`export_snapshot`.

    Examples
    --------
    >>> import tempfile, json, os
    >>> d = tempfile.mkdtemp(); os.makedirs(f"{d}/ids")
    >>> _ = open(f"{d}/ids/7.json", "w").write(json.dumps({"schema": '"long"'}))
    >>> FileRegistry(d).get_schema_by_id(7).text
    '"long"'
    """

    def __init__(self, path):
        self.root = pathlib.Path(path)
        if not self.root.is_dir():
            raise RegistryConfigError(f"schema snapshot directory {str(self.root)!r} does not exist")

    def verify_registry(self) -> None:
        # A snapshot is a local directory checked at construction: its answers are believed.
        return None

    def _read(self, rel: str, what: str, *, id_hint=None, guid_hint=None) -> Schema:
        p = self.root / rel
        try:
            with open(p, "rb") as f:
                raw = f.read(_MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            raise SchemaNotFound(f"{what} not in snapshot {str(self.root)!r}") from None
        except OSError as e:
            raise RegistryConfigError(f"cannot read {str(p)!r}: {type(e).__name__}") from e
        if len(raw) > _MAX_FILE_BYTES:
            raise SchemaParseError(f"{str(p)!r} is larger than {_MAX_FILE_BYTES} bytes")
        try:
            doc = json.loads(raw)
        except ValueError as e:
            raise SchemaParseError(f"{str(p)!r} is not JSON") from e
        return schema_from_document(doc, schema_id=id_hint, guid=guid_hint, where=str(p))

    def _fetch_by_id(self, schema_id: int) -> Schema:
        return self._read(f"ids/{int(schema_id)}.json", f"schema id {schema_id}", id_hint=schema_id)

    def _fetch_by_guid(self, guid: str) -> Schema:
        g = guid_text(guid)
        return self._read(f"guids/{g}.json", f"schema guid {g}", guid_hint=g)

    def _fetch_by_global_id(self, global_id: int) -> Schema:
        return self._read(f"global-ids/{int(global_id)}.json", f"global id {global_id}", id_hint=global_id)

    def _fetch_by_content_id(self, content_id: int) -> Schema:
        try:
            return self._read(f"content-ids/{int(content_id)}.json", "content id", id_hint=content_id)
        except SchemaNotFound:
            return self._fetch_by_id(content_id)

    def _fetch_version(self, subject: str, version) -> Schema:
        if version == "latest":
            versions = self.list_versions(subject)
            if not versions:
                raise SchemaNotFound(f"subject {subject!r} not in snapshot", error_code=40401)
            version = versions[-1]
        return self._read(f"subjects/{_subject_dir(subject)}/{int(version)}.json",
                          f"subject {subject!r} version {version}")

    def list_subjects(self) -> list[str]:
        d = self.root / "subjects"
        if not d.is_dir():
            return []
        return sorted(urllib.parse.unquote(p.name) for p in d.iterdir() if p.is_dir())

    def list_versions(self, subject: str) -> list[int]:
        d = self.root / "subjects" / _subject_dir(subject)
        if not d.is_dir():
            raise SchemaNotFound(f"subject {subject!r} not in snapshot", error_code=40401)
        return sorted(int(p.stem) for p in d.glob("*.json") if p.stem.isdigit())


def _write(path: pathlib.Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def export_snapshot(client: SchemaRegistry, directory, subjects=None, *, source: str | None = None) -> int:
    """Write every version of ``subjects`` (default: all) of ``client`` into a snapshot directory.

    Referenced schemas are exported too, even from subjects not listed. Returns the number of
    subject versions written. The result is readable by :class:`FileRegistry`.

    Examples
    --------
    >>> from registry import RegistryConfig, client_for
    >>> from connector.testing import RegistryServer
    >>> import tempfile
    >>> with RegistryServer() as srv:
    ...     _ = srv.register("t-value", '"string"')
    ...     n = export_snapshot(client_for(RegistryConfig(urls=(srv.url,))), tempfile.mkdtemp())
    >>> n
    1
    """
    root = pathlib.Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    names = list(client.list_subjects()) if subjects is None else list(subjects)
    written: set[tuple[str, int]] = set()

    def put(schema: Schema) -> None:
        if schema.subject is None or schema.version is None:
            return
        key = (schema.subject, schema.version)
        if key in written:
            return
        written.add(key)
        doc = schema_document(schema)
        _write(root / "subjects" / _subject_dir(schema.subject) / f"{schema.version}.json", doc)
        if schema.id is not None:
            _write(root / "ids" / f"{schema.id}.json", doc)
        if schema.guid is not None:
            _write(root / "guids" / f"{guid_text(schema.guid)}.json", doc)

    for subject in names:
        for version in client.list_versions(subject):
            schema = client.get_version(subject, version)
            put(schema)
            for _, ref in schema.resolved_references:
                put(ref)
    _write(root / "snapshot.json", {"format": 1, "source": source, "subject_versions": len(written)})
    return len(written)
