"""Cached schema-registry clients (Confluent-compatible REST, Apicurio, AWS Glue, file snapshots).

Examples
--------
>>> from registry import RegistryServer, RegistryConfig, client_for
>>> with RegistryServer() as srv:
...     sid = srv.register("orders-value", '"string"')
...     cfg = RegistryConfig.from_options({"schema.registry.url": srv.url})
...     client_for(cfg).lookup(("confluent", sid)).text
'"string"'
"""
from registry._apicurio import ApicurioRegistry
from registry._base import SchemaRegistry
from registry._cache import CachingRegistry, clear_clients, client_for, make_backend
from registry._config import REGISTRY_OPTION_NAMES, SECRET_OPTION_NAMES, RegistryConfig, redact_url
from registry._confluent import ConfluentRegistry, IncompatibleSchemaError, InvalidSchemaError
from registry._errors import (
    RegistryAuthError,
    RegistryConfigError,
    RegistryError,
    RegistryTLSError,
    RegistryUnavailable,
    SchemaNotFound,
    SchemaParseError,
)
from registry._file import FileRegistry, export_snapshot
from registry._glue import GlueRegistry
from registry._server import RegistryServer
from registry._strategy import SubjectNameStrategy, subject_name
from registry._types import CacheStats, Schema, SchemaReference, SchemaType, Secret

__all__ = [
    "SchemaType", "Schema", "SchemaReference", "Secret", "CacheStats",
    "RegistryConfig", "REGISTRY_OPTION_NAMES", "SECRET_OPTION_NAMES", "redact_url",
    "SchemaRegistry", "ConfluentRegistry", "ApicurioRegistry", "GlueRegistry", "FileRegistry",
    "CachingRegistry", "client_for", "make_backend", "clear_clients",
    "export_snapshot", "RegistryServer", "SubjectNameStrategy", "subject_name",
    "RegistryError", "SchemaNotFound", "RegistryAuthError", "RegistryUnavailable",
    "SchemaParseError", "RegistryConfigError", "RegistryTLSError",
    "IncompatibleSchemaError", "InvalidSchemaError",
]
