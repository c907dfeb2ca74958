"""Compatibility re-export: the option table and parser live in :mod:`connector.options`
(no pyspark, so the CLI and the column functions share them)."""
from connector.options import (
    MODES,
    OPTION_DOCS,
    READ_ONLY_OPTIONS,
    WRITE_ONLY_OPTIONS,
    Secrets,
    SourceOptions,
    parse_any,
    parse_options,
)

__all__ = ["SourceOptions", "Secrets", "parse_options", "parse_any", "OPTION_DOCS", "MODES", "READ_ONLY_OPTIONS",
           "WRITE_ONLY_OPTIONS"]
