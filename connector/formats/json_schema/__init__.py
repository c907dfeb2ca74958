"""JSON Schema: the schema model (keywords → Arrow types; references across documents bundled
into one schema), the strict vectorized decoder (msgspec checks, one ``pyarrow.json`` pass) with
its per-record reference, and the encoder that validates what it writes.

Examples
--------
>>> from connector.formats.json_schema import JSON_SCHEMA, parse_json_schema
>>> parse_json_schema('{"type": "object", "properties": {"n": {"type": "integer"}}}').arrow
StructType(struct<n: int64>)
"""
from connector.formats.json_schema._bundle import Registered, Resources, schema_ids
from connector.formats.json_schema._bundle import bundle as bundle_schema
from connector.formats.json_schema._format import JSON_SCHEMA, JsonSchemaFormat, json_title
from connector.formats.json_schema._schema import JNode, parse_json_schema, schema_document

__all__ = ["JSON_SCHEMA", "JsonSchemaFormat", "JNode", "parse_json_schema", "json_title", "bundle_schema",
           "schema_document", "schema_ids", "Resources", "Registered"]
