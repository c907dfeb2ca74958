"""AWS Glue Schema Registry through boto3 (imported lazily: it is an optional dependency).

A Glue schema version id (the UUID in the Glue framing) is this client's GUID; a Glue schema
name plays the role of a subject and its version numbers the role of versions.
"""
from __future__ import annotations

import threading

from registry._base import SchemaRegistry
from registry._config import RegistryConfig, check_address
from registry.errors import (RegistryAuthError, RegistryConfigError, RegistryError, RegistryProtocolError,
                              RegistryUnavailable, SchemaNotFound)
from registry._types import Schema, schema_type_of

__all__ = ["GlueRegistry"]

_NOT_FOUND = {"EntityNotFoundException"}
_AUTH = {"AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException",
         "ExpiredTokenException", "InvalidClientTokenId", "SignatureDoesNotMatch"}
_TRANSIENT = {"ThrottlingException", "InternalServiceException", "ServiceUnavailableException",
              "ResourceNumberLimitExceededException"}


class GlueRegistry(SchemaRegistry):
    """AWS Glue Schema Registry client.

    Parameters
    ----------
    config : RegistryConfig
        ``glue_region``, ``glue_registry_name`` (needed for subject lookups), ``glue_endpoint_url``,
        and optionally explicit credentials; otherwise the standard AWS credential chain.
    """

    def __init__(self, config: RegistryConfig):
        self.config = config
        if config.glue_endpoint_url:
            check_address(config.glue_endpoint_url, config.allow_private_addresses)
        self._client = None
        self._lock = threading.Lock()

    def _glue(self):
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _make_client(self):
        try:
            import boto3
            from botocore.config import Config
        except ImportError as e:
            raise RegistryConfigError("vendor aws-glue needs boto3: pip install 'asyncapi-kafka[glue]'") from e
        c = self.config
        kw = {}
        if c.glue_access_key_id is not None:
            kw["aws_access_key_id"] = c.glue_access_key_id.get()
        if c.glue_secret_access_key is not None:
            kw["aws_secret_access_key"] = c.glue_secret_access_key.get()
        if c.glue_session_token is not None:
            kw["aws_session_token"] = c.glue_session_token.get()
        session = boto3.session.Session(region_name=c.glue_region, **kw)
        bc = Config(connect_timeout=c.connect_timeout_s, read_timeout=c.request_timeout_s,
                    retries={"max_attempts": c.max_retries + 1, "mode": "standard"})
        return session.client("glue", endpoint_url=c.glue_endpoint_url or None, config=bc,
                              verify=(c.ca_location or None) if c.verify else False)

    def _call(self, op: str, **kw):
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError
        try:
            return getattr(self._glue(), op)(**kw)
        except ClientError as e:
            err = e.response.get("Error", {})
            code = str(err.get("Code", ""))
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            msg = f"Glue {op} failed: {code}: {str(err.get('Message', ''))[:300]}"
            if code in _NOT_FOUND:
                raise SchemaNotFound(msg, status=status) from None
            if code in _AUTH or status in (401, 403):
                raise RegistryAuthError(msg, status=status) from None
            if code in _TRANSIENT or (status or 0) >= 500:
                raise RegistryUnavailable(msg, status=status) from None
            raise RegistryError(msg, status=status) from None
        except (NoCredentialsError, NoRegionError) as e:
            raise RegistryConfigError(f"Glue client misconfigured: {type(e).__name__}") from None
        except BotoCoreError as e:
            raise RegistryUnavailable(f"Glue {op} failed: {type(e).__name__}") from None

    def _to_schema(self, doc: dict, guid: str | None = None) -> Schema:
        try:
            arn = str(doc.get("SchemaArn", ""))
            name = arn.rsplit("/", 1)[-1] if arn else None
            return Schema(schema_type=schema_type_of(doc.get("DataFormat")),
                          text=str(doc["SchemaDefinition"]),
                          guid=str(doc.get("SchemaVersionId") or guid).lower(),
                          subject=name, version=int(doc["VersionNumber"]) if "VersionNumber" in doc else None)
        except (KeyError, TypeError, ValueError) as e:
            raise RegistryProtocolError(f"malformed Glue get_schema_version answer ({type(e).__name__})") from e

    def verify_registry(self) -> None:
        # Glue's "not found" is a typed AWS error code (EntityNotFoundException) that only
        # the Glue API sends; a wrong endpoint gives other codes, already the job's fault.
        return None

    def _fetch_by_id(self, schema_id: int) -> Schema:
        raise RegistryConfigError("AWS Glue has no integer schema ids; use the glue framing (UUIDs)")

    def _fetch_by_guid(self, guid: str) -> Schema:
        return self._to_schema(self._call("get_schema_version", SchemaVersionId=guid), guid)

    def _schema_id(self, subject: str) -> dict:
        if not self.config.glue_registry_name:
            raise RegistryConfigError("schema.registry.glue.registry.name is needed for subject lookups")
        return {"RegistryName": self.config.glue_registry_name, "SchemaName": subject}

    def _fetch_version(self, subject: str, version) -> Schema:
        number = {"LatestVersion": True} if version == "latest" else {"VersionNumber": int(version)}
        return self._to_schema(self._call("get_schema_version", SchemaId=self._schema_id(subject),
                                          SchemaVersionNumber=number))

    def list_subjects(self) -> list[str]:
        out, token = [], None
        reg = self._schema_id("")["RegistryName"]
        while True:
            kw = {"RegistryId": {"RegistryName": reg}}
            if token:
                kw["NextToken"] = token
            page = self._call("list_schemas", **kw)
            out += [s["SchemaName"] for s in page.get("Schemas", [])]
            token = page.get("NextToken")
            if not token:
                return out

    def list_versions(self, subject: str) -> list[int]:
        out, token = [], None
        while True:
            kw = {"SchemaId": self._schema_id(subject)}
            if token:
                kw["NextToken"] = token
            page = self._call("list_schema_versions", **kw)
            out += [int(v["VersionNumber"]) for v in page.get("Schemas", [])]
            token = page.get("NextToken")
            if not token:
                return sorted(out)

    def _lookup_schema(self, subject: str, schema, *, normalize: bool, deleted: bool, same=None) -> Schema | None:
        # Glue's own look-up: it canonicalizes and hashes the definition within the schema named
        # ``subject``. ``normalize`` has no Glue equivalent; deleted versions are gone (DELETING).
        from registry._base import registration_of

        text, _, _ = registration_of(schema)
        doc = self._call("get_schema_by_definition", SchemaId=self._schema_id(subject), SchemaDefinition=text)
        if str(doc.get("Status", "AVAILABLE")).upper() != "AVAILABLE" or not doc.get("SchemaVersionId"):
            return None  # PENDING or FAILURE: not a version records may name
        return self._fetch_by_guid(str(doc["SchemaVersionId"]).lower())

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def register_schema(self, subject: str, schema, normalize: bool = False) -> str:
        """Register ``schema`` as a version of the Glue schema named ``subject`` (created when absent);
        return its schema version id (the UUID the Glue framing carries).

        Glue answers an identical definition with the existing version's id, so this is
        register-if-absent like the Confluent call. ``normalize`` has no Glue equivalent.

        Raises
        ------
        IncompatibleSchemaError
            Glue refused the version under the schema's compatibility mode (status FAILURE).
        """
        from registry._base import registration_of
        from registry.errors import IncompatibleSchemaError

        text, stype, _ = registration_of(schema)
        data_format = {"JSON": "JSON", "PROTOBUF": "PROTOBUF"}.get(stype, "AVRO")
        try:
            doc = self._call("register_schema_version", SchemaId=self._schema_id(subject), SchemaDefinition=text)
        except SchemaNotFound:
            doc = self._call("create_schema", RegistryId={"RegistryName": self._schema_id(subject)["RegistryName"]},
                             SchemaName=subject, DataFormat=data_format, Compatibility="BACKWARD",
                             SchemaDefinition=text)
            doc = {"SchemaVersionId": doc.get("SchemaVersionId"), "Status": doc.get("SchemaVersionStatus")}
        if str(doc.get("Status", "AVAILABLE")).upper() == "FAILURE":
            raise IncompatibleSchemaError(f"Glue refused the schema as a new version of {subject!r} "
                                          "(incompatible under its compatibility mode)")
        try:
            return str(doc["SchemaVersionId"]).lower()
        except (KeyError, TypeError) as e:
            raise RegistryProtocolError("Glue register answer has no SchemaVersionId") from e
