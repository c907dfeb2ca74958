"""Confluent's DEK registry API (``/dek-registry/v1``): key-encryption keys and data keys.

=======================================================  ==============================================
request                                                  answer
=======================================================  ==============================================
``GET  /dek-registry/v1/keks/{kek}``                     :class:`Kek` (404: no such KEK)
``POST /dek-registry/v1/keks``                           registers a :class:`Kek` (409: it exists)
``GET  /dek-registry/v1/keks/{kek}/deks/{subject}/``     :class:`Dek` of one version (``-1``: the latest)
``versions/{version}?algorithm=A``
``POST /dek-registry/v1/keks/{kek}/deks/{subject}``      registers a :class:`Dek` (409: it exists)
=======================================================  ==============================================

A DEK's ``encryptedKeyMaterial`` is the data key wrapped by the KEK in its KMS; for a *shared*
KEK the registry unwraps it itself and answers ``keyMaterial`` too. The HTTP transport (auth,
TLS, retries, failover) is the schema registry's: the DEK registry lives on the same server.
Versions of a DEK never change, so they are cached forever per process; the latest version and
"not found" answers are not cached.
"""
from __future__ import annotations

import base64
import dataclasses
import threading
import urllib.parse
from typing import Any

from registry._config import RegistryConfig
from registry.errors import RegistryError, RegistryProtocolError
from registry._http import HttpTransport
from registry._process import PerProcess

__all__ = ["Kek", "Dek", "DekRegistry", "dek_registry_for", "LATEST_DEK"]

#: The version number that asks for the newest version of a DEK.
LATEST_DEK = -1
_PREFIX = "/dek-registry/v1"


def _q(segment: str) -> str:
    return urllib.parse.quote(str(segment), safe="")


@dataclasses.dataclass(frozen=True)
class Kek:
    """A key-encryption key as the registry describes it (the key itself stays in the KMS)."""

    name: str
    kms_type: str
    kms_key_id: str
    kms_props: tuple[tuple[str, str], ...] = ()
    shared: bool = False
    doc: str | None = None

    @classmethod
    def from_json(cls, doc: Any) -> Kek:
        if not isinstance(doc, dict) or not doc.get("name"):
            raise RegistryProtocolError("the DEK registry answered a KEK without a name")
        return cls(name=str(doc["name"]), kms_type=str(doc.get("kmsType") or ""),
                   kms_key_id=str(doc.get("kmsKeyId") or ""),
                   kms_props=tuple(sorted((str(k), str(v)) for k, v in (doc.get("kmsProps") or {}).items())),
                   shared=bool(doc.get("shared") or False), doc=doc.get("doc"))


@dataclasses.dataclass(frozen=True)
class Dek:
    """One version of a data-encryption key of a subject under a KEK."""

    kek_name: str
    subject: str
    version: int
    algorithm: str
    encrypted_key_material: bytes | None
    key_material: bytes | None = dataclasses.field(default=None, repr=False)
    ts: int | None = None

    @classmethod
    def from_json(cls, doc: Any) -> Dek:
        if not isinstance(doc, dict):
            raise RegistryProtocolError("the DEK registry answered something that is not a DEK object")
        try:
            enc = doc.get("encryptedKeyMaterial")
            raw = doc.get("keyMaterial")
            return cls(kek_name=str(doc.get("kekName") or ""), subject=str(doc.get("subject") or ""),
                       version=int(doc.get("version") or 1), algorithm=str(doc.get("algorithm") or "AES256_GCM"),
                       encrypted_key_material=base64.b64decode(enc) if enc else None,
                       key_material=base64.b64decode(raw) if raw else None,
                       ts=int(doc["ts"]) if doc.get("ts") is not None else None)
        except (TypeError, ValueError) as e:
            raise RegistryProtocolError(f"malformed DEK answer ({type(e).__name__}: {e})") from e


class DekRegistry:
    """Client of the DEK registry on a Confluent-compatible registry.

    Examples
    --------
    >>> from registry import RegistryConfig
    >>> from connector.testing import RegistryServer
    >>> with RegistryServer() as srv:
    ...     c = DekRegistry(RegistryConfig(urls=(srv.url,)))
    ...     kek = c.register_kek("k1", "local-kms", "key-1")
    ...     dek = c.register_dek("k1", "t-value", b"wrapped", "AES256_GCM")
    ...     c.get_kek("k1").kms_type, c.get_dek("k1", "t-value").encrypted_key_material
    ('local-kms', b'wrapped')
    """

    def __init__(self, config: RegistryConfig):
        self.config = config
        self._http = HttpTransport(config)
        self._lock = threading.Lock()
        self._keks: dict[tuple[str, str | None], Kek] = {}
        self._deks: dict[tuple[str, str, int, str], Dek] = {}

    def close(self) -> None:
        self._http.close()

    def get_kek(self, name: str, context: str | None = None) -> Kek:
        """The KEK ``name``. Raises :class:`registry.SchemaNotFound` (status 404) when absent."""
        key = (name, context)
        kek = self._keks.get(key)
        if kek is None:
            params: dict[str, str] = {"deleted": "true"}
            if context is not None:
                params["context"] = context
            kek = Kek.from_json(self._http.get_json(f"{_PREFIX}/keks/{_q(name)}", params=params))
            with self._lock:
                self._keks[key] = kek
        return kek

    def register_kek(self, name: str, kms_type: str, kms_key_id: str, *, shared: bool = False,
                     kms_props: dict[str, str] | None = None, doc: str | None = None,
                     context: str | None = None) -> Kek:
        """Register a KEK. Raises :class:`registry.RegistryError` with status 409 when it exists."""
        body: dict[str, Any] = {"name": name, "kmsType": kms_type, "kmsKeyId": kms_key_id, "shared": shared}
        if kms_props:
            body["kmsProps"] = dict(kms_props)
        if doc is not None:
            body["doc"] = doc
        params = {"context": context} if context is not None else None
        kek = Kek.from_json(self._http.request("POST", f"{_PREFIX}/keks", params=params, body=body).json())
        with self._lock:
            self._keks[(name, context)] = kek
        return kek

    def get_dek(self, kek_name: str, subject: str, version: int = 1, algorithm: str = "AES256_GCM") -> Dek:
        """Version ``version`` (:data:`LATEST_DEK`: the newest) of ``subject``'s DEK under ``kek_name``.

        Raises :class:`registry.SchemaNotFound` (status 404) when absent."""
        key = (kek_name, subject, int(version), algorithm)
        dek = self._deks.get(key)
        if dek is not None:
            return dek
        dek = Dek.from_json(self._http.get_json(
            f"{_PREFIX}/keks/{_q(kek_name)}/deks/{_q(subject)}/versions/{int(version)}",
            params={"algorithm": algorithm, "deleted": "true"}))
        if version != LATEST_DEK:
            with self._lock:
                self._deks[key] = dek
        return dek

    def register_dek(self, kek_name: str, subject: str, encrypted_key_material: bytes | None,
                     algorithm: str = "AES256_GCM", version: int = 1) -> Dek:
        """Register version ``version`` of a DEK (``encrypted_key_material`` None: a shared KEK,
        the registry makes the key). Raises :class:`registry.RegistryError` (409) when it exists."""
        body: dict[str, Any] = {"subject": subject, "version": int(version), "algorithm": algorithm}
        if encrypted_key_material is not None:
            body["encryptedKeyMaterial"] = base64.b64encode(encrypted_key_material).decode("ascii")
        path = f"{_PREFIX}/keks/{_q(kek_name)}/deks/{_q(subject)}"
        try:
            doc = self._http.request("POST", path, body=body).json()
        except RegistryError as e:
            if e.status != 405:
                raise
            # registries before the subject moved into the path
            doc = self._http.request("POST", f"{_PREFIX}/keks/{_q(kek_name)}/deks", body=body).json()
        dek = Dek.from_json(doc)
        with self._lock:
            self._deks[(kek_name, subject, dek.version, algorithm)] = dek
        return dek


_clients: PerProcess[RegistryConfig, DekRegistry] = PerProcess(DekRegistry)


def dek_registry_for(config: RegistryConfig) -> DekRegistry:
    """The process-wide DEK registry client for ``config`` (re-created after fork)."""
    return _clients.get(config)
