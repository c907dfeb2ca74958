"""connector.options: every option of the source, the sink and the column functions, declared once (no pyspark).

:data:`OPTIONS` is the table (name, parser, scope: batch/stream/write and the column functions,
secret, default, doc, keyword argument); :func:`parse_options` types a job's options with it at
``load()``, offset specs included; :func:`parse_arguments` types a column function's arguments;
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
    framing_of,
    glue_compression,
    is_secret_option,
    is_secret_rule_option,
    parse_any,
    parse_arguments,
    parse_options,
    spelled,
)
from connector.options._registry import registry_config_for
from connector.options._table import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    FROM_REGISTRY,
    FUNCTIONS,
    JOBS,
    OPTIONS,
    READ,
    STRIP_HEADER,
    TO_REGISTRY,
    WRITE,
    Option,
    ValueShape,
    lookup,
)

#: name -> (default shown in docs, meaning), lowercase names: the jobs' options (the table, as a dict).
OPTION_DOCS: dict[str, tuple[str, str]] = {
    o.key: (o.documented_default, ("Write only: " + o.doc) if o.scope & JOBS == frozenset({WRITE}) else o.doc)
    for o in OPTIONS if not o.hidden and o.scope & JOBS}
#: Options refused on writes, and options refused on reads.
READ_ONLY_OPTIONS = frozenset(o.key for o in OPTIONS if o.scope & JOBS and WRITE not in o.scope)
WRITE_ONLY_OPTIONS = frozenset(o.key for o in OPTIONS if o.scope & JOBS == frozenset({WRITE}) and not o.hidden)

__all__ = ["is_secret_rule_option", "Option", "OPTIONS", "OPTION_DOCS", "READ_ONLY_OPTIONS", "WRITE_ONLY_OPTIONS", "ValueShape",
           "SourceOptions", "Secrets", "parse_options", "parse_any", "parse_arguments", "is_secret_option",
           "registry_config_for", "markdown_tables", "expand_option_tables", "lookup", "AT_LEAST_ONCE", "EXACTLY_ONCE",
           "spelled", "glue_compression", "framing_of", "FROM_REGISTRY", "TO_REGISTRY", "STRIP_HEADER", "FUNCTIONS", "JOBS", "READ",
           "WRITE"]
