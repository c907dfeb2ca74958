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
from registry._cache import client_for, make_backend
from registry._config import REGISTRY_OPTIONS, RegistryConfig, RegistryOption
from registry._dek import LATEST_DEK, Kek, dek_registry_for
from registry import errors
from registry.errors import *  # noqa: F403 - every registry error, as registry.errors lists them
from registry.errors import is_records_fault
from registry._rules import Rule
from registry._redact import redact_servers, redact_text, redact_url, split_userinfo, strip_userinfo
from registry._strategy import subject_name
from registry._vendor import Vendor
from registry._types import Schema, SchemaType, Secret, schema_type_of

__all__ = [
    "SchemaType", "schema_type_of", "Schema", "Secret",
    "RegistryConfig", "RegistryOption", "REGISTRY_OPTIONS", "Vendor",
    "redact_url", "redact_servers", "redact_text", "split_userinfo", "strip_userinfo",
    "client_for", "make_backend", "subject_name", "is_records_fault",
    # data contracts: rules, the DEK registry
    "Rule", "Kek", "dek_registry_for", "LATEST_DEK",
]
__all__ += errors.__all__
