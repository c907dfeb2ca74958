"""Confluent-compatible REST client (Confluent SR, Karapace, Redpanda, Apicurio ccompat)."""
from __future__ import annotations

import urllib.parse
from typing import Any

from registry._base import SchemaRegistry
from registry._config import RegistryConfig
from registry._errors import RegistryError, RegistryProtocolError, SchemaNotFound, SchemaParseError
from registry._http import HttpTransport
from registry._rules import metadata_of, rule_set_of
from registry._types import Schema, SchemaReference, schema_type_of

__all__ = ["ConfluentRegistry", "schema_from_document", "IncompatibleSchemaError",
           "InvalidSchemaError"]


class IncompatibleSchemaError(RegistryError):
    """409: the registry refused the schema as incompatible with the subject's earlier
    versions under its compatibility level (Confluent error code 409)."""


class InvalidSchemaError(RegistryError, ValueError):
    """422: the registry refused the schema or the request as invalid (42201 invalid
    schema, 42202 invalid version, ...)."""


def _q(segment: str) -> str:
    return urllib.parse.quote(str(segment), safe="")


def schema_from_document(doc: Any, *, schema_id: int | None = None, guid: str | None = None,
                         where: str = "registry") -> Schema:
    """Build a :class:`Schema` from a Confluent REST schema document.

    Raises
    ------
    RegistryProtocolError
        When required fields are missing or of the wrong type (the peer does not speak the
        registry's protocol: the environment's fault, not the record's).
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("schema"), str):
        raise RegistryProtocolError(f"{where} answer has no schema text: is schema.registry.url a "
                                    "schema registry?")
    try:
        stype = schema_type_of(doc.get("schemaType"))
        refs = tuple(SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"]))
                     for r in (doc.get("references") or ()))
        sid = doc.get("id", schema_id)
        version = doc.get("version")
        g = doc.get("guid", guid)
        return Schema(schema_type=stype, text=doc["schema"],
                      id=int(sid) if sid is not None else None,
                      guid=str(g).lower() if g else None,
                      subject=str(doc["subject"]) if doc.get("subject") is not None else None,
                      version=int(version) if version is not None else None,
                      references=refs, metadata=metadata_of(doc), rule_set=rule_set_of(doc))
    except (KeyError, TypeError, ValueError) as e:
        raise RegistryProtocolError(f"{where} answer is malformed ({type(e).__name__}: {e})") from e


class ConfluentRegistry(SchemaRegistry):
    """Uncached client for the Confluent Schema Registry REST API.

    Parameters
    ----------
    config : RegistryConfig
        URLs (failover in order), auth, TLS, timeouts and retries.
    base_urls : tuple of str, optional
        Override the base URLs.

    Examples
    --------
    >>> from registry import RegistryConfig
    >>> from connector.testing import RegistryServer
    >>> with RegistryServer() as srv:
    ...     sid = srv.register("t-value", '"string"')
    ...     ConfluentRegistry(RegistryConfig(urls=(srv.url,))).get_schema_by_id(sid).text
    '"string"'
    """

    _prefix = ""  # path prefix of the Confluent API under the base URL

    def __init__(self, config: RegistryConfig, *, base_urls: tuple[str, ...] | None = None):
        self.config = config
        self._http = HttpTransport(config, base_urls=base_urls)

    def close(self) -> None:
        self._http.close()

    def _fetch_by_id(self, schema_id: int) -> Schema:
        doc = self._http.get_json(f"{self._prefix}/schemas/ids/{int(schema_id)}")
        return schema_from_document(doc, schema_id=schema_id, where=f"schema id {schema_id}")

    def _fetch_by_guid(self, guid: str) -> Schema:
        doc = self._http.get_json(f"{self._prefix}/schemas/guids/{_q(guid)}")
        return schema_from_document(doc, guid=guid, where=f"schema guid {guid}")

    def _fetch_version(self, subject: str, version: int | str) -> Schema:
        v = "latest" if version == "latest" else str(int(version))
        doc = self._http.get_json(f"{self._prefix}/subjects/{_q(subject)}/versions/{v}")
        if isinstance(doc, dict):
            doc.setdefault("subject", subject)
        return schema_from_document(doc, where=f"subject {subject!r} version {v}")

    def list_subjects(self) -> list[str]:
        doc = self._http.get_json(f"{self._prefix}/subjects")
        if not isinstance(doc, list):
            raise RegistryProtocolError("GET /subjects did not answer a list: is schema.registry.url a "
                                        "schema registry?")
        return [str(s) for s in doc]

    def list_versions(self, subject: str) -> list[int]:
        doc = self._http.get_json(f"{self._prefix}/subjects/{_q(subject)}/versions")
        try:
            return sorted(int(v) for v in doc)
        except (TypeError, ValueError) as e:
            raise RegistryProtocolError("GET /subjects/{s}/versions did not answer a list of ints") from e

    def register(self, subject: str, text: str, schema_type: str = "AVRO",
                 references: tuple[SchemaReference, ...] = ()) -> int:
        """Register ``text`` under ``subject`` and return its id (used by tests and tools)."""
        body: dict[str, Any] = {"schema": text}
        if str(schema_type).upper() != "AVRO":
            body["schemaType"] = str(schema_type).upper()
        if references:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                                  for r in references]
        doc = self._http.request("POST", f"{self._prefix}/subjects/{_q(subject)}/versions", body=body).json()
        try:
            return int(doc["id"])
        except (KeyError, TypeError, ValueError) as e:
            raise RegistryProtocolError("register answer has no id") from e

    def register_schema(self, subject: str, schema: Any, normalize: bool = False) -> int:
        """Register ``schema`` under ``subject`` if absent; return its id.

        Registration is idempotent on the registry side: the same text (type and references)
        under the same subject answers the existing id without creating a version.

        Parameters
        ----------
        subject : str
        schema : registry.Schema, SchemaSpec-like or str
            Anything with ``.text`` and ``.schema_type``/``.format`` (and optionally
            ``.references``); a plain string is Avro schema text.
        normalize : bool
            Ask the registry to normalize the schema before comparing (``?normalize=true``).

        Raises
        ------
        IncompatibleSchemaError
            409: incompatible with the subject's compatibility level.
        InvalidSchemaError
            422: the registry finds the schema invalid.

        Examples
        --------
        >>> from registry import RegistryConfig
        >>> from connector.testing import RegistryServer
        >>> with RegistryServer() as srv:
        ...     c = ConfluentRegistry(RegistryConfig(urls=(srv.url,)))
        ...     a = c.register_schema("t-value", '"string"'); b = c.register_schema("t-value", '"string"')
        ...     a == b
        True
        """
        text, stype, refs = _registration(schema)
        body: dict[str, Any] = {"schema": text}
        if stype != "AVRO":
            body["schemaType"] = stype
        if refs:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": int(r.version)}
                                  for r in refs]
        body.update(_contract_body(schema))
        params = {"normalize": "true"} if normalize else None
        try:
            doc = self._http.request("POST", f"{self._prefix}/subjects/{_q(subject)}/versions",
                                     params=params, body=body).json()
        except RegistryError as e:
            if e.status == 409:
                raise IncompatibleSchemaError(
                    f"registry refused the schema for subject {subject!r} as incompatible with "
                    f"its earlier versions: {e}", status=e.status, error_code=e.error_code, url=e.url) from e
            if e.status == 422:
                raise InvalidSchemaError(f"registry refused the schema for subject {subject!r} "
                                         f"as invalid: {e}", status=e.status, error_code=e.error_code,
                                         url=e.url) from e
            raise
        try:
            return int(doc["id"])
        except (KeyError, TypeError, ValueError) as e:
            raise RegistryProtocolError("register answer has no id") from e

    # -- subject checks (``asyncapi-kafka check``): the same transport, so auth, TLS, retries
    # and URL redaction are those of every other call.
    def _fetch_latest_with_metadata(self, subject: str, metadata: tuple[tuple[str, str], ...]) -> Schema:
        params = {"key": [k for k, _ in metadata], "value": [v for _, v in metadata], "deleted": "true"}
        doc = self._http.get_json(f"{self._prefix}/subjects/{_q(subject)}/metadata", params=params)
        if isinstance(doc, dict):
            doc.setdefault("subject", subject)
        return schema_from_document(doc, where=f"subject {subject!r} with metadata {dict(metadata)}")

    def _fetch_version_of(self, subject: str, schema: Schema) -> int:
        body: dict[str, Any] = _schema_body(schema.text, schema.schema_type.value)
        if schema.references:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": int(r.version)}
                                  for r in schema.references]
        body.update(_contract_body(schema))
        doc = self._http.request("POST", f"{self._prefix}/subjects/{_q(subject)}", params={"deleted": "true"},
                                 body=body).json()
        try:
            return int(doc["version"])
        except (KeyError, TypeError, ValueError) as e:
            raise RegistryProtocolError("POST /subjects/{s} answered no version") from e

    def lookup_schema_under_subject(self, subject: str, text: str,
                                    schema_type: str = "AVRO") -> dict[str, Any] | None:
        """The registered version of ``text`` under ``subject`` (``POST /subjects/{subject}``).

        Returns
        -------
        dict or None
            The registry's answer (``subject``, ``id``, ``version``, ``schema``...), or None when
            the schema (or the subject) is not registered.

        Raises
        ------
        RegistryError
            The registry could not be asked, or answered something that is not an object.

        Examples
        --------
        >>> from registry import RegistryConfig
        >>> from connector.testing import RegistryServer
        >>> with RegistryServer() as srv:
        ...     _ = srv.register("t-value", '"string"')
        ...     ConfluentRegistry(RegistryConfig(urls=(srv.url,))).lookup_schema_under_subject(
        ...         "t-value", '"string"')["version"]
        1
        """
        try:
            doc = self._http.request("POST", f"{self._prefix}/subjects/{_q(subject)}",
                                     body=_schema_body(text, schema_type)).json()
        except SchemaNotFound:
            return None
        if not isinstance(doc, dict):
            raise RegistryProtocolError("POST /subjects/{s} did not answer an object")
        return doc

    def test_compatibility(self, subject: str, text: str, schema_type: str = "AVRO",
                           version: int | str = "latest") -> tuple[bool, list[str]]:
        """Whether ``text`` is compatible with ``version`` of ``subject`` under the subject's
        compatibility level (``POST /compatibility/subjects/{subject}/versions/{version}``).

        Returns
        -------
        (bool, list of str)
            Compatible or not, and the registry's reasons when it gives them.

        Raises
        ------
        SchemaNotFound
            The subject or version does not exist.
        RegistryError
            The registry could not be asked, or answered something that is not an object.
        """
        v = "latest" if version == "latest" else str(int(version))
        doc = self._http.request("POST", f"{self._prefix}/compatibility/subjects/{_q(subject)}/versions/{v}",
                                 body=_schema_body(text, schema_type)).json()
        if not isinstance(doc, dict):
            raise RegistryProtocolError("POST /compatibility/... did not answer an object")
        return doc.get("is_compatible") is True, [str(m) for m in doc.get("messages") or ()]


def _registration(schema: Any) -> tuple[str, str, tuple]:
    """(text, upper-case schema type, references) of a schema given in any accepted shape."""
    if isinstance(schema, str):
        return schema, "AVRO", ()
    text = getattr(schema, "text", None)
    if not isinstance(text, str):
        raise SchemaParseError("register_schema needs schema text")
    raw = getattr(schema, "schema_type", None) or getattr(schema, "format", None) or "AVRO"
    stype = str(getattr(raw, "value", raw)).upper()
    stype = {"JSONSCHEMA": "JSON", "PROTO": "PROTOBUF"}.get(stype, stype)
    return text, stype, tuple(getattr(schema, "references", ()) or ())


def _contract_body(schema: Any) -> dict[str, Any]:
    """The ``metadata``/``ruleSet`` members of a registration body, when the schema has them."""
    out: dict[str, Any] = {}
    metadata, rule_set = getattr(schema, "metadata", None), getattr(schema, "rule_set", None)
    if metadata is not None and hasattr(metadata, "to_json"):
        out["metadata"] = metadata.to_json()
    if rule_set is not None and hasattr(rule_set, "to_json"):
        out["ruleSet"] = rule_set.to_json()
    return out


def _schema_body(text: str, schema_type: str) -> dict[str, Any]:
    # AVRO is the REST API's default type: older registries reject an explicit schemaType.
    body: dict[str, Any] = {"schema": text}
    if str(schema_type).upper() != "AVRO":
        body["schemaType"] = str(schema_type).upper()
    return body
