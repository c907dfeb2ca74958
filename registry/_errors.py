"""Typed registry errors. Messages never carry credentials (URLs are redacted)."""
from __future__ import annotations

from wireformat import AsyncApiKafkaError

__all__ = [
    "RegistryError",
    "SchemaNotFound",
    "RegistryAuthError",
    "RegistryUnavailable",
    "SchemaParseError",
    "RegistryConfigError",
    "RegistryTLSError",
]


class RegistryError(AsyncApiKafkaError):
    """A schema registry answered with an error, or could not be reached.

    Attributes
    ----------
    status : int or None
        HTTP status, when there was an HTTP answer.
    error_code : int or None
        The registry's own ``error_code`` (Confluent: 40401, 40403, ...).
    url : str or None
        The URL that was asked, with any credentials removed.
    """

    def __init__(self, message: str, *, status: int | None = None,
                 error_code: int | None = None, url: str | None = None):
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.url = url


class SchemaNotFound(RegistryError):
    """Schema id, subject or version does not exist (Confluent 40401/40402/40403)."""


class RegistryAuthError(RegistryError):
    """401/403: credentials missing or refused. Never retried."""


class RegistryUnavailable(RegistryError):
    """Connection errors, timeouts, 408/429/5xx that persisted through the retries."""


class SchemaParseError(RegistryError):
    """The registry answered, but the schema text it returned cannot be used."""


class RegistryConfigError(RegistryError, ValueError):
    """The registry configuration is invalid (bad URL, unknown vendor, refused address)."""


class RegistryTLSError(RegistryError):
    """TLS handshake or certificate verification failed. Never retried (it is not transient)."""
