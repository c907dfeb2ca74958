"""Data keys, looked up once per key version per process, as confluent-kafka's executor finds them.

An ``ENCRYPT``/``ENCRYPT_PAYLOAD`` rule names a KEK (``encrypt.kek.name``) and the DEK algorithm
(``encrypt.dek.algorithm``, default AES256_GCM); the DEK belongs to the record's subject. Reading:
the KEK and the DEK version the value names come from the DEK registry, the DEK is unwrapped by
the KEK's KMS (or comes unwrapped from a shared KEK) — once, then every value of that version in
every batch of the process uses the same key. Writing: version 1, or with
``encrypt.dek.expiry.days`` the newest version until it expires; a missing KEK is registered from
``encrypt.kms.type``/``encrypt.kms.key.id`` and a missing DEK is made, wrapped and registered.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any

from registry import LATEST_DEK, RegistryConfig, RegistryError, Rule, dek_registry_for

from connector.errors import ConfigError
from connector.schema.rules._crypto import ALGORITHMS, Aead, aead_for, new_key_material
from connector.schema.rules._kms import KmsSettings, kek_wrapper

__all__ = ["EncryptParams", "KeyRing", "key_ring"]

log = logging.getLogger("asyncapi_kafka")

_DAY_MS = 24 * 60 * 60 * 1000


def context_of(subject: str | None) -> str | None:
    """The registry context of a qualified subject (``:.ctx:subject``), as confluent-kafka reads it."""
    if subject is not None and subject.startswith(":."):
        rest = subject[2:]
        ix = rest.find(":")
        context = subject[1:ix + 2] if ix >= 0 else subject[1:]
        return None if context == "." else context
    return None


@dataclasses.dataclass(frozen=True)
class EncryptParams:
    """The parameters of one encryption rule (the rule's ``params``, then the schema's metadata
    properties, as ``RuleContext.get_parameter``)."""

    kek_name: str
    kms_type: str | None
    kms_key_id: str | None
    algorithm: str
    expiry_days: int

    @property
    def rotated(self) -> bool:
        return self.expiry_days > 0

    @classmethod
    def of(cls, rule: Rule, schema: Any) -> EncryptParams:
        def get(name: str) -> str | None:
            v = rule.param(name)
            if v is None and getattr(schema, "metadata", None) is not None:
                v = schema.metadata.property(name)
            return v

        kek = get("encrypt.kek.name")
        if not kek:
            raise ConfigError(f"encryption rule {rule.name!r} names no KEK (encrypt.kek.name)")
        algorithm = get("encrypt.dek.algorithm") or "AES256_GCM"
        if algorithm not in ALGORITHMS:
            raise ConfigError(f"encryption rule {rule.name!r}: unknown encrypt.dek.algorithm {algorithm!r}")
        try:
            days = int(get("encrypt.dek.expiry.days") or 0)
        except ValueError:
            raise ConfigError(f"encryption rule {rule.name!r}: encrypt.dek.expiry.days is not a number") from None
        if days < 0:
            raise ConfigError(f"encryption rule {rule.name!r}: negative encrypt.dek.expiry.days")
        return cls(kek, get("encrypt.kms.type"), get("encrypt.kms.key.id"), algorithm, days)


def _not_found(e: BaseException) -> bool:
    return isinstance(e, RegistryError) and e.status == 404


class KeyRing:
    """DEKs of one registry and one set of KMS settings, cached for the process."""

    def __init__(self, registry: RegistryConfig, kms: KmsSettings):
        self._registry = registry
        self._kms = kms
        self._lock = threading.Lock()
        self._read: dict[tuple, Aead] = {}
        self._write: dict[tuple, tuple[int, Aead, float]] = {}
        self._wrappers: dict[str, Any] = {}

    @property
    def _deks(self):
        return dek_registry_for(self._registry)

    def _kek(self, params: EncryptParams, subject: str, *, writing: bool):
        context = context_of(subject)
        try:
            kek = self._deks.get_kek(params.kek_name, context)
        except RegistryError as e:
            if not _not_found(e):
                raise
            if not writing:
                raise ConfigError(f"no KEK {params.kek_name!r} in the DEK registry: records of subject "
                                  f"{subject!r} cannot be decrypted") from e
            if not params.kms_type or not params.kms_key_id:
                raise ConfigError(f"no KEK {params.kek_name!r} in the DEK registry, and the rule gives no "
                                  "encrypt.kms.type / encrypt.kms.key.id to register it with") from e
            try:
                kek = self._deks.register_kek(params.kek_name, params.kms_type, params.kms_key_id, context=context)
            except RegistryError as e2:
                if e2.status != 409:
                    raise
                kek = self._deks.get_kek(params.kek_name, context)
        if params.kms_type and kek.kms_type != params.kms_type:
            raise ConfigError(f"KEK {kek.name} has KMS type {kek.kms_type}, the rule says {params.kms_type}")
        if params.kms_key_id and kek.kms_key_id != params.kms_key_id:
            raise ConfigError(f"KEK {kek.name} has KMS key id {kek.kms_key_id}, the rule says {params.kms_key_id}")
        return kek

    def _wrapper(self, kek) -> Any:
        w = self._wrappers.get(kek.name)
        if w is None:
            w = self._wrappers[kek.name] = kek_wrapper(kek, self._kms)
        return w

    def _open(self, kek, dek) -> Aead:
        material = dek.key_material
        if material is None:
            if dek.encrypted_key_material is None:
                raise ConfigError(f"DEK {dek.kek_name}/{dek.subject} version {dek.version} has no key material")
            try:
                material = self._wrapper(kek).decrypt(dek.encrypted_key_material)
            except ValueError as e:  # RuleCryptoError: the KMS key is not the one that wrapped it
                raise ConfigError(f"KEK {kek.name} ({kek.kms_type}) cannot unwrap DEK version {dek.version} of "
                                  f"subject {dek.subject!r}: not the KMS key (or local-KMS secret) that wrapped "
                                  "it") from e
        return aead_for(material, dek.algorithm)

    def reader(self, params: EncryptParams, subject: str, version: int) -> Aead:
        """The AEAD of DEK ``version`` of ``subject`` (looked up and unwrapped once)."""
        key = (params.kek_name, subject, int(version), params.algorithm)
        aead = self._read.get(key)
        if aead is not None:
            return aead
        kek = self._kek(params, subject, writing=False)
        try:
            dek = self._deks.get_dek(kek.name, subject, max(1, int(version)), params.algorithm)
        except RegistryError as e:
            if not _not_found(e):
                raise
            raise ConfigError(f"no DEK version {version} of subject {subject!r} under KEK {kek.name!r}") from e
        aead = self._open(kek, dek)
        with self._lock:
            self._read[key] = aead
        return aead

    def writer(self, params: EncryptParams, subject: str) -> tuple[int, Aead]:
        """(version, AEAD) to encrypt new values of ``subject`` with: made and registered if needed."""
        key = (params.kek_name, subject, params.algorithm)
        now = time.time()
        cached = self._write.get(key)
        if cached is not None and (not params.rotated or now - cached[2] < 60):
            return cached[0], cached[1]
        kek = self._kek(params, subject, writing=True)
        want = LATEST_DEK if params.rotated else 1
        try:
            dek = self._deks.get_dek(kek.name, subject, want, params.algorithm)
            if not dek.encrypted_key_material and not dek.key_material:
                dek = None
        except RegistryError as e:
            if not _not_found(e):
                raise
            dek = None
        expired = dek is not None and params.rotated and \
            (now * 1000 - (dek.ts or 0)) / _DAY_MS > params.expiry_days
        if dek is None or expired:
            version = dek.version + 1 if dek is not None and expired else 1
            dek = self._create(kek, params, subject, version) or dek
        assert dek is not None
        aead = self._open(kek, dek)
        with self._lock:
            self._write[key] = (dek.version, aead, now)
            self._read[(params.kek_name, subject, dek.version, params.algorithm)] = aead
        return dek.version, aead

    def _create(self, kek, params: EncryptParams, subject: str, version: int):
        wrapped = None if kek.shared else self._wrapper(kek).encrypt(new_key_material(params.algorithm))
        try:
            return self._deks.register_dek(kek.name, subject, wrapped, params.algorithm, version)
        except RegistryError as e:
            if e.status != 409:
                raise
            log.info("DEK %s/%s version %d was registered meanwhile; using it", kek.name, subject, version)
            return self._deks.get_dek(kek.name, subject, version, params.algorithm)


_rings: dict[tuple[RegistryConfig, KmsSettings], KeyRing] = {}
_rings_lock = threading.Lock()


def key_ring(registry: RegistryConfig, kms: KmsSettings) -> KeyRing:
    """The process's :class:`KeyRing` for a registry and KMS settings."""
    with _rings_lock:
        ring = _rings.get((registry, kms))
        if ring is None:
            ring = _rings[(registry, kms)] = KeyRing(registry, kms)
        return ring
