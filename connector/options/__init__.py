"""connector.options: every option of the source and the sink, declared once (no pyspark).

:data:`OPTIONS` is the table (name, parser, batch/stream/write scope, secret, default, doc);
:func:`parse_options` types a job's options with it at ``load()``, offset specs included;
:func:`registry_config_for` builds the registry configuration from the options and the
document; the docs' option tables are generated from the table (:func:`expand_option_tables`).

Examples
--------
>>> opts = parse_options({"asyncapi": "doc.yaml", "channel": "orders",
...                       "startingOffsets": '{"orders":{"0":5}}'})
>>> opts.starting.values
(('orders', 0, 5),)
"""
from connector.options._markdown import expand_option_tables, markdown_tables
from connector.options._parse import (
    Secrets,
    SourceOptions,
    is_secret_option,
    is_secret_rule_option,
    parse_any,
    parse_options,
)
from connector.options._registry import registry_config_for
from connector.options._table import AT_LEAST_ONCE, EXACTLY_ONCE, OPTIONS, WRITE, Option, ValueShape, lookup

#: name -> (default shown in docs, meaning), lowercase names (the table, as a dict).
OPTION_DOCS: dict[str, tuple[str, str]] = {
    o.key: (o.documented_default, ("Write only: " + o.doc) if o.scope == frozenset({WRITE}) else o.doc)
    for o in OPTIONS if not o.hidden}
#: Options refused on writes, and options refused on reads.
READ_ONLY_OPTIONS = frozenset(o.key for o in OPTIONS if WRITE not in o.scope)
WRITE_ONLY_OPTIONS = frozenset(o.key for o in OPTIONS if o.scope == frozenset({WRITE}) and not o.hidden)

__all__ = ["is_secret_rule_option", "Option", "OPTIONS", "OPTION_DOCS", "READ_ONLY_OPTIONS", "WRITE_ONLY_OPTIONS", "ValueShape",
           "SourceOptions", "Secrets", "parse_options", "parse_any", "is_secret_option",
           "registry_config_for", "markdown_tables", "expand_option_tables", "lookup", "AT_LEAST_ONCE", "EXACTLY_ONCE"]
