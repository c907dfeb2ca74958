"""Cached schema-registry clients (Confluent-compatible REST, Apicurio, AWS Glue, file snapshots).

Examples
--------
>>> from registry import RegistryConfig, client_for
>>> from connector.testing import RegistryServer  # a local stand-in registry
>>> with RegistryServer() as srv:
...     sid = srv.register("orders-value", '"string"')
...     cfg = RegistryConfig.from_options({"schema.registry.url": srv.url})
...     client_for(cfg).lookup(("confluent", sid)).text
'"string"'
"""
from registry._apicurio import ApicurioRegistry
from registry._base import SchemaRegistry
from registry._cache import CachingRegistry, clear_clients, client_for, make_backend
from registry._config import (
    REGISTRY_OPTION_NAMES,
    REGISTRY_OPTIONS,
    SECRET_OPTION_NAMES,
    RegistryConfig,
    RegistryOption,
)
from registry._confluent import ConfluentRegistry, IncompatibleSchemaError, InvalidSchemaError
from registry._dek import LATEST_DEK, Dek, DekRegistry, Kek, dek_registry_for
from registry._errors import (
    ENVIRONMENT_FAULT,
    RECORD_FAULT,
    RegistryAuthError,
    RegistryConfigError,
    RegistryError,
    RegistryProtocolError,
    RegistryTLSError,
    RegistryUnavailable,
    SchemaNotFound,
    SchemaParseError,
    is_records_fault,
)
from registry._file import FileRegistry, export_snapshot
from registry._glue import GlueRegistry
from registry._rules import Metadata, Rule, RuleSet
from registry._redact import redact_servers, redact_text, redact_url, split_userinfo, strip_userinfo
from registry._strategy import SubjectNameStrategy, subject_name
from registry._vendor import Vendor
from registry._types import CacheStats, Schema, SchemaReference, SchemaType, Secret, schema_type_of

__all__ = [
    "SchemaType", "schema_type_of", "Schema", "SchemaReference", "Secret", "CacheStats",
    "RegistryConfig", "RegistryOption", "REGISTRY_OPTIONS", "REGISTRY_OPTION_NAMES", "SECRET_OPTION_NAMES", "Vendor",
    "redact_url", "redact_servers", "redact_text", "split_userinfo", "strip_userinfo",
    "SchemaRegistry", "ConfluentRegistry", "ApicurioRegistry", "GlueRegistry", "FileRegistry",
    "CachingRegistry", "client_for", "make_backend", "clear_clients",
    "export_snapshot", "SubjectNameStrategy", "subject_name",
    "RegistryError", "SchemaNotFound", "RegistryAuthError", "RegistryUnavailable",
    "SchemaParseError", "RegistryConfigError", "RegistryTLSError", "RegistryProtocolError",
    "RECORD_FAULT", "ENVIRONMENT_FAULT", "is_records_fault",
    "IncompatibleSchemaError", "InvalidSchemaError",
    # data contracts: metadata, rule sets, the DEK registry
    "Rule", "RuleSet", "Metadata", "Kek", "Dek", "DekRegistry", "dek_registry_for", "LATEST_DEK",
]
