"""JSON Schema: the schema model (keywords → Arrow types; references across documents bundled
into one schema), the strict vectorized decoder (msgspec checks, one ``pyarrow.json`` pass) with
its per-record reference, and the encoder that validates what it writes.

Examples
--------
>>> from connector.formats.core import DecodeOptions
>>> from connector.formats.json_schema import JSON_SCHEMA
>>> schema = '{"type": "object", "properties": {"n": {"type": "integer"}}}'
>>> JSON_SCHEMA.reader(schema, refs=(), message=None, options=DecodeOptions()).arrow_type
StructType(struct<n: int64>)
"""
from connector.formats.json_schema._bundle import bundle as bundle_schema
from connector.formats.json_schema._bundle import schema_ids
from connector.formats.json_schema._format import JSON_SCHEMA

__all__ = ["JSON_SCHEMA", "bundle_schema", "schema_ids"]
