"""Cached schema-registry clients (Confluent-compatible REST, Apicurio, AWS Glue, file snapshots)."""
from registry._errors import (
    RegistryAuthError,
    RegistryConfigError,
    RegistryError,
    RegistryUnavailable,
    SchemaNotFound,
    SchemaParseError,
)

__all__ = [
    "RegistryError",
    "SchemaNotFound",
    "RegistryAuthError",
    "RegistryUnavailable",
    "SchemaParseError",
    "RegistryConfigError",
]
