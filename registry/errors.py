"""Typed registry errors. Messages never carry credentials (URLs are redacted).

This module's ``__all__`` is the one list of the error types: ``registry`` and
``connector.errors`` re-export it as it is.

Each error says whose fault it is (as h11 splits its errors), so callers never have to guess:

==================  ======================================================  ===============
``fault``           meaning                                                  what a reader does
==================  ======================================================  ===============
``"record"``        the record names a schema this (verified) registry does  a row error
                    not have, or whose text cannot be used                   (mode applies)
``"environment"``   configuration, network, TLS, auth, or a peer that is     fails the job in
                    not a schema registry (non-JSON, wrong shape, 404 for    every mode
                    every path)
==================  ======================================================  ===============

A ``SchemaNotFound`` is only the record's fault once the registry has proven to be one
(:class:`registry.CachingRegistry`: a good answer, a typed 4040x answer, or else one check per
client before believing a bare 404).
"""
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
    "RegistryProtocolError",
    "IncompatibleSchemaError",
    "InvalidSchemaError",
]

#: ``RegistryError.fault`` values.
RECORD_FAULT = "record"
ENVIRONMENT_FAULT = "environment"


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
    fault : str
        ``"record"`` (a row error) or ``"environment"`` (fails the job); see the module doc.
    """

    fault = ENVIRONMENT_FAULT

    def __init__(self, message: str, *, status: int | None = None,
                 error_code: int | None = None, url: str | None = None, fault: str | None = None):
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.url = url
        if fault is not None:
            self.fault = fault

    @property
    def is_records_fault(self) -> bool:
        """True when only the records that named this schema are to blame (a row error)."""
        return self.fault == RECORD_FAULT


class SchemaNotFound(RegistryError):
    """Schema id, subject or version does not exist (Confluent 40401/40402/40403).

    The environment's fault until the registry is verified: a wrong URL pointing at any web
    server answers 404 for every id, and believing it would drop every record.
    """


class RegistryAuthError(RegistryError):
    """401/403: credentials missing or refused. Never retried."""


class RegistryUnavailable(RegistryError):
    """Connection errors, timeouts, 408/429/5xx that persisted through the retries."""


class SchemaParseError(RegistryError):
    """The registry answered, but the schema it returned cannot be used (reference cycle,
    unknown type...): the fault of the records that name it."""

    fault = RECORD_FAULT


class RegistryProtocolError(SchemaParseError):
    """The peer does not speak the registry protocol: non-JSON or a wrongly shaped answer on
    a known endpoint, or 404 for the subject listing too. The URL is wrong: fails the job."""

    fault = ENVIRONMENT_FAULT


class RegistryConfigError(RegistryError, ValueError):
    """The registry configuration is invalid (bad URL, unknown vendor, refused address)."""


class RegistryTLSError(RegistryError):
    """TLS handshake or certificate verification failed. Never retried (it is not transient)."""


class IncompatibleSchemaError(RegistryError):
    """409: the registry refused the schema as incompatible with the subject's earlier
    versions under its compatibility level (Confluent error code 409)."""


class InvalidSchemaError(RegistryError, ValueError):
    """422: the registry refused the schema or the request as invalid (42201 invalid
    schema, 42202 invalid version, ...)."""


def is_records_fault(exc: BaseException) -> bool:
    """Whether ``exc`` blames only the records involved (a row error) rather than the job.

    Errors that say nothing about their fault (anything but :class:`RegistryError` and other
    typed project errors with a ``fault``) are not the records' fault.

    Examples
    --------
    >>> is_records_fault(SchemaParseError("reference cycle"))
    True
    >>> is_records_fault(RegistryUnavailable("connection refused"))
    False
    """
    return getattr(exc, "fault", None) == RECORD_FAULT
