"""The schema layer: which schema a job reads or writes with, for every path.

The source, the sink, ``from_registry``/``to_registry``, ``peek`` and the CLI resolve schemas here
and nowhere else: a :class:`SchemaRequest` (built from a job's options or a function's
arguments) goes in; decoders (:func:`value_decoder`, :func:`key_reading`), writer schemas with
their wire ids (:func:`value_writer`, :func:`key_writer`) and subjects (:func:`subject_for`)
come out. Registry vendors are :class:`registry.Vendor`; formats are :mod:`connector.formats`.

Examples
--------
>>> from wireformat import Framing
>>> from connector.schema import SchemaRequest, value_decoder
>>> from connector.schema._request import InlineSchema
>>> request = SchemaRequest(inline=InlineSchema.of('{"type": "object", "properties": {"n": {"type": "integer"}}}'))
>>> value_decoder(request, plan=None, registry=None, framing=Framing.CONFLUENT).arrow_type
StructType(struct<n: int64>)
"""
from connector.schema._readers import (
    KeyReading,
    decoder_for,
    is_string_schema,
    key_reading,
    value_decoder,
    value_reading,
)
from connector.schema._request import SchemaRequest
from connector.schema._subjects import subject_for
from connector.schema._writers import WriterSchema, key_writer, message_writers, value_writer

# The data contracts (the rules applied on read and write) are the subpackage connector.schema.rules.
__all__ = [
    "SchemaRequest",
    # reads
    "value_decoder", "value_reading", "key_reading", "KeyReading", "decoder_for", "is_string_schema",
    # writes
    "value_writer", "key_writer", "WriterSchema", "message_writers",
    # subjects
    "subject_for",
]
