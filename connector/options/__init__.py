"""connector.options: every option of the source, the sink and the column functions, declared once (no pyspark).

The table (``_table.OPTIONS``: name, parser, scope: batch/stream/write and the column functions,
secret, default, doc, keyword argument) is the one owner of every option; :func:`parse_any`
types a job's options with it at ``load()``, offset specs included; :func:`parse_arguments` types
a column function's arguments; :func:`registry_config_for` builds the registry configuration from
the options and the document; the docs' option tables are generated from the table
(``_markdown.expand_option_tables``, ``python -m connector.options --markdown``).

Examples
--------
>>> from connector.options import parse_any
>>> opts = parse_any({"asyncapi": "doc.yaml", "channel": "orders",
...                   "startingOffsets": '{"orders":{"0":5}}'}, direction="read")
>>> opts.starting.values
(('orders', 0, 5),)
"""
from connector.options._parse import (
    SourceOptions,
    framing_of,
    glue_compression,
    is_secret_rule_option,
    parse_any,
    parse_arguments,
)
from connector.options._registry import registry_config_for
from connector.options._table import EXACTLY_ONCE, FROM_REGISTRY, STRIP_HEADER, TO_REGISTRY, ValueShape

__all__ = ["SourceOptions", "parse_any", "parse_arguments", "registry_config_for", "is_secret_rule_option",
           "ValueShape", "EXACTLY_ONCE", "glue_compression", "framing_of", "FROM_REGISTRY", "TO_REGISTRY",
           "STRIP_HEADER"]
