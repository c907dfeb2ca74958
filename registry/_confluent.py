"""Confluent-compatible REST client (Confluent SR, Karapace, Redpanda, Apicurio ccompat)."""
from __future__ import annotations

import urllib.parse
from typing import Any

from registry._base import SchemaRegistry, registration_of
from registry._config import RegistryConfig
from registry.errors import IncompatibleSchemaError, InvalidSchemaError, RegistryError, RegistryProtocolError
from registry._http import HttpTransport
from registry._rules import metadata_of, rule_set_of
from registry._types import Schema, SchemaReference, schema_type_of

__all__ = ["ConfluentRegistry", "schema_from_document"]


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
    ...     client = ConfluentRegistry(RegistryConfig(urls=(srv.url,)))
    ...     sid = client.register("t-value", '"string"')
    ...     latest = client.get_latest("t-value")
    ...     client.list_versions("t-value"), (latest.id, latest.version) == (sid, 1)
    ([1], True)
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
        """Register ``text`` under ``subject`` and return its id (tests and tools; see :meth:`register_schema`)."""
        return self.register_schema(subject, Schema(schema_type=schema_type_of(schema_type), text=text,
                                                    references=tuple(references)))

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
        text, stype, refs = registration_of(schema)
        body: dict[str, Any] = _schema_body(text, stype)
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

    def _lookup_schema(self, subject: str, schema: Any, *, normalize: bool, deleted: bool, same=None) -> Schema:
        # The registry compares what it stores (Karapace reprints Protobuf, Confluent canonicalizes
        # Avro): ``same`` is for registries with no look-up and is not used here.
        text, stype, refs = registration_of(schema)
        body = _schema_body(text, stype)
        if refs:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in refs]
        body.update(_contract_body(schema))
        params = {k: "true" for k, on in (("normalize", normalize), ("deleted", deleted)) if on}
        try:
            doc = self._http.request("POST", f"{self._prefix}/subjects/{_q(subject)}", params=params or None,
                                     body=body).json()
        except RegistryError as e:
            if e.status == 422:
                raise InvalidSchemaError(f"registry could not look the schema up under subject {subject!r} (is "
                                         f"it valid, with the references its imports need?): {e}",
                                         status=e.status, error_code=e.error_code, url=e.url) from e
            raise
        if isinstance(doc, dict):
            doc.setdefault("subject", subject)
            if refs and not doc.get("references"):  # Karapace's answer leaves them out: they matched
                doc["references"] = body["references"]
        return schema_from_document(doc, where=f"look-up under subject {subject!r}")

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
        # verbose: Confluent and Karapace give their reasons only when asked
        doc = self._http.request("POST", f"{self._prefix}/compatibility/subjects/{_q(subject)}/versions/{v}",
                                 params={"verbose": "true"}, body=_schema_body(text, schema_type)).json()
        if not isinstance(doc, dict):
            raise RegistryProtocolError("POST /compatibility/... did not answer an object")
        return doc.get("is_compatible") is True, [str(m) for m in doc.get("messages") or ()]


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
