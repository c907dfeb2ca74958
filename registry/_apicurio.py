"""Apicurio Registry: native lookups by global id / content id (v3, falling back to v2).

Subject/version lookups and Confluent ids go through Apicurio's Confluent-compatible API at
``/apis/ccompat/v7`` (where a Confluent "id" is a content id, Apicurio's default).
"""
from __future__ import annotations

import json
import re

from registry._config import RegistryConfig
from registry._confluent import ConfluentRegistry
from registry.errors import RegistryProtocolError, SchemaNotFound, SchemaParseError
from registry._types import Schema, SchemaReference, SchemaType, schema_type_of

__all__ = ["ApicurioRegistry", "sniff_schema_type"]

_API_SUFFIX = re.compile(r"/apis/(registry/v[23]|ccompat/v[67])/?$")
_PROTO = re.compile(r"^\s*(syntax\s*=|package\s|import\s|message\s|enum\s|option\s)", re.MULTILINE)


def sniff_schema_type(text: str) -> SchemaType:
    """Guess the schema language of ``text`` when the registry does not say.

    JSON with ``"type": "record"`` (or enum/fixed, or an Avro union/primitive) is Avro; JSON with
    ``$schema``/``properties``/``$ref``/``items`` is JSON Schema; ``syntax =``/``message ...`` is Protobuf.
    """
    try:
        doc = json.loads(text)
    except ValueError:
        if _PROTO.search(text):
            return SchemaType.PROTOBUF
        raise SchemaParseError("cannot tell the schema type of the registry's answer") from None
    if isinstance(doc, dict):
        if any(k in doc for k in ("$schema", "properties", "$ref", "$id", "items", "$defs", "definitions")):
            return SchemaType.JSON
        if doc.get("type") in ("record", "enum", "fixed", "array", "map") or "fields" in doc:
            return SchemaType.AVRO
        return SchemaType.JSON if doc.get("type") == "object" else SchemaType.AVRO
    return SchemaType.AVRO  # a union list or a primitive name


class ApicurioRegistry(ConfluentRegistry):
    """Apicurio Registry 2.x / 3.x client.

    Parameters
    ----------
    config : RegistryConfig
        ``urls`` are the server roots (``http://host:8080``; a trailing ``/apis/registry/v2``,
        ``/apis/registry/v3`` or ``/apis/ccompat/v7`` is stripped). ``apicurio_api_version``:
        ``"auto"`` tries v3 first and falls back to v2 when v3 answers 404, then sticks to
        whichever version answered.
    """

    _prefix = "/apis/ccompat/v7"

    def __init__(self, config: RegistryConfig):
        roots = tuple(_API_SUFFIX.sub("", u.rstrip("/")) for u in config.urls)
        super().__init__(config, base_urls=roots)
        self._api = None if config.apicurio_api_version == "auto" else config.apicurio_api_version

    def _fetch_by_global_id(self, global_id: int) -> Schema:
        return self._native("globalIds", int(global_id))

    def _fetch_by_content_id(self, content_id: int) -> Schema:
        return self._native("contentIds", int(content_id))

    def _native(self, kind: str, ident: int) -> Schema:
        versions = (self._api,) if self._api else ("3", "2")
        for i, v in enumerate(versions):
            try:
                resp = self._http.request("GET", f"/apis/registry/v{v}/ids/{kind}/{ident}")
            except SchemaNotFound:
                if i + 1 < len(versions):
                    continue
                raise
            if self._api is None:
                self._api = v
            break
        text = resp.text()
        header = resp.headers.get("X-Registry-ArtifactType")
        try:
            stype = schema_type_of(header) if header else sniff_schema_type(text)
        except ValueError as e:
            raise SchemaParseError(f"unsupported Apicurio artifact type {header!r}") from e
        refs = self._references(v, kind, ident)
        return Schema(schema_type=stype, text=text, id=ident, references=refs)

    def _references(self, api: str, kind: str, ident: int) -> tuple[SchemaReference, ...]:
        try:
            doc = self._http.get_json(f"/apis/registry/v{api}/ids/{kind}/{ident}/references")
        except SchemaNotFound:
            return ()
        try:
            # Apicurio references are (groupId, artifactId, version); through ccompat an
            # artifact of the default group is the subject of the same name.
            return tuple(SchemaReference(str(r["name"]), str(r["artifactId"]), int(r["version"]))
                         for r in (doc or ()))
        except (KeyError, TypeError, ValueError) as e:
            raise RegistryProtocolError("malformed Apicurio references answer") from e
