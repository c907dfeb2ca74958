"""How a KEK is reached: the KMS that wraps and unwraps data keys (DEKs).

==============  ===================================  =============================================
``kmsType``     implementation                       credentials (``rules.<name>`` options)
==============  ===================================  =============================================
``local-kms``   here (:class:`~._crypto.LocalKms`)   ``rules.secret``, else ``$LOCAL_SECRET``
``aws-kms``     confluent-kafka's driver (Tink)      ``rules.access.key.id`` +
                                                     ``rules.secret.access.key``, or
                                                     ``rules.profile``, ``rules.role.arn`` ...;
                                                     else the AWS default chain
``azure-kms``   confluent-kafka's driver             ``rules.tenant.id``, ``rules.client.id``,
                                                     ``rules.client.secret``; else Azure's default
                                                     credential chain
``gcp-kms``     confluent-kafka's driver             ``rules.account.type``, ``rules.client.id``,
                                                     ``rules.client.email``, ``rules.private.key.id``,
                                                     ``rules.private.key``; else Google's default
                                                     credentials
``hcvault``     confluent-kafka's driver             ``rules.token``, ``rules.namespace``,
                                                     ``rules.approle.role.id``,
                                                     ``rules.approle.secret.id``; else
                                                     ``$VAULT_TOKEN``
==============  ===================================  =============================================

The names are confluent-kafka's ``rule.conf`` keys; a KEK's ``kmsProps`` add to them, and
``rules.encrypt.alternate.kms.key.ids`` (or the KEK's property) lists other key ids to try.
A KMS is asked only to wrap a new DEK or unwrap one, once per DEK version per process.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
from typing import Any

from registry import Kek, Secret

from connector.errors import ConfigError
from connector.options import is_secret_rule_option
from connector.schema.rules._crypto import LocalKms

__all__ = ["KmsSettings", "kek_wrapper"]

log = logging.getLogger("asyncapi_kafka")

_DRIVERS = {"aws-kms": ("awskms.aws_driver", "AwsKmsDriver"), "azure-kms": ("azurekms.azure_driver", "AzureKmsDriver"),
            "gcp-kms": ("gcpkms.gcp_driver", "GcpKmsDriver"), "hcvault": ("hcvault.hcvault_driver", "HcVaultKmsDriver")}
_registered: set[str] = set()
_register_lock = threading.Lock()




@dataclasses.dataclass(frozen=True)
class KmsSettings:
    """The ``rules.<name>`` KMS settings of a job; secret values wrapped in :class:`registry.Secret`."""

    items: tuple[tuple[str, str | Secret], ...] = ()

    @classmethod
    def of(cls, settings: dict[str, str]) -> KmsSettings:
        return cls(tuple(sorted((k, Secret(v) if is_secret_rule_option(k) else v) for k, v in settings.items())))

    def as_dict(self) -> dict[str, str]:
        """The settings in clear: only for building a KMS client, never for printing."""
        return {k: v.get() if isinstance(v, Secret) else v for k, v in self.items}

    def get(self, name: str) -> str | None:
        return self.as_dict().get(name)

    def __repr__(self) -> str:
        return f"KmsSettings({', '.join(k for k, _ in self.items) or 'none'})"


class _TinkAead:
    """A Tink AEAD of a cloud KMS, tried key id by key id (the KEK's and its alternates)."""

    def __init__(self, aeads: list[tuple[str, Any]], kek: str):
        self._aeads, self._kek = aeads, kek

    def encrypt(self, plaintext: bytes) -> bytes:
        return self._try("encrypt", plaintext)

    def decrypt(self, ciphertext: bytes) -> bytes:
        return self._try("decrypt", ciphertext)

    def _try(self, op: str, data: bytes) -> bytes:
        last: Exception | None = None
        for key_id, aead in self._aeads:
            try:
                return getattr(aead, op)(data, b"")
            except Exception as e:  # noqa: BLE001 - the next key id may work; the last error is raised
                log.warning("KEK %s: %s with KMS key %s failed: %s", self._kek, op, key_id, type(e).__name__)
                last = e
        raise ConfigError(f"KEK {self._kek}: the KMS could not {op} the data key with any of its key ids "
                          f"({type(last).__name__}: {last})") from last


def _driver(kms_type: str) -> Any:
    spec = _DRIVERS.get(kms_type)
    if spec is None:
        raise ConfigError(f"KEK KMS type {kms_type!r} is not supported; known: local-kms, "
                          + ", ".join(sorted(_DRIVERS)))
    module, name = spec
    try:
        import importlib

        from confluent_kafka.schema_registry.rules.encryption.kms_driver_registry import get_kms_driver
        mod = importlib.import_module(f"confluent_kafka.schema_registry.rules.encryption.{module}")
    except ImportError as e:
        raise ConfigError(f"KEKs in {kms_type} are reached through confluent-kafka's KMS drivers: pip install "
                          f"'asyncapi-kafka[rules]' (confluent-kafka[rules]); {e}") from e
    with _register_lock:
        if kms_type not in _registered:
            getattr(mod, name).register()
            _registered.add(kms_type)
    return get_kms_driver


def kek_wrapper(kek: Kek, settings: KmsSettings) -> Any:
    """An object with ``encrypt(bytes)`` / ``decrypt(bytes)`` that wraps and unwraps DEKs with ``kek``."""
    conf = settings.as_dict()
    conf.update(dict(kek.kms_props))
    if kek.kms_type == "local-kms":
        secret = conf.get("secret") or os.environ.get("LOCAL_SECRET")
        if not secret:
            raise ConfigError(f"KEK {kek.name} is a local KMS key: set the option 'rules.secret' (or the "
                              "environment variable LOCAL_SECRET) to its secret")
        return LocalKms(secret)
    get_kms_driver = _driver(kek.kms_type)
    ids = [kek.kms_key_id] + [k.strip() for k in (conf.get("encrypt.alternate.kms.key.ids") or "").split(",")
                              if k.strip()]
    aeads = []
    for key_id in ids:
        url = f"{kek.kms_type}://{key_id}"
        try:
            client = get_kms_driver(url).new_kms_client(conf, url)
            aeads.append((key_id, client.get_aead(url)))
        except Exception as e:
            raise ConfigError(f"KEK {kek.name}: cannot reach {kek.kms_type} key {key_id} "
                              f"({type(e).__name__})") from e
    return _TinkAead(aeads, kek.name)
