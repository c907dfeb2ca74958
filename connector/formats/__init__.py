"""Avro, Protobuf and JSON Schema payloads ⇄ typed Arrow columns, vectorized.

One package per format (:mod:`connector.formats.avro`, :mod:`~connector.formats.protobuf`,
:mod:`~connector.formats.json_schema`), each owning its schema model, decoder, encoder and
limits; a small shared core (:mod:`connector.formats.core`); and here the generic
:class:`Decoder` / :class:`Encoder` that group rows by writer schema and drive a format, with
the read and write cores :func:`decode_column` / :func:`encode_column` every path calls.

Imports no pyspark: the output is Arrow in the exact form Spark expects (``string``,
``binary``, ``timestamp[us, tz=UTC]``, ``list<element>``, ``map<key, value>``, every field
nullable); the Spark layer maps it with ``from_arrow_schema``.

Decisions (details in each module's table):

- Avro time-millis/-micros → int32 ms / int64 µs since midnight (as spark-avro; Spark's
  TIME type is not used); duration (fixed 12) → its 12 raw bytes as binary; uuid → string;
  local-timestamp-* → ``timestamp[us]`` (TIMESTAMP_NTZ); enums → string.
- Protobuf Duration → int64 microseconds; Any/Struct/Value/ListValue → JSON text; uint32 →
  int64, uint64 → decimal(20, 0); enums → names (``DecodeOptions(enum_as=EnumRepr.INT)`` for numbers).
- Schema evolution: each record is decoded with its own writer schema and resolved to the
  reader's with Avro's rules (names and aliases, defaults, promotions, enum defaults);
  fields a newer writer adds that the reader lacks are dropped. Protobuf payloads are read
  with the reader's message (field numbers decide); the message-index path must name the
  reader's message. JSON payloads are read with the reader schema; a framed schema id must
  still be one the registry knows, of a JSON Schema. JSON is validated strictly (UTF-8, no
  NaN/Infinity, no trailing bytes, no type coercion, int64 range, depth and size caps).
- Bad payloads and bad *writer* schemas never raise: those rows get error text naming the
  schema id ("avro decode failed for schema id 7: ..."), so PERMISSIVE reads go on. A bad
  *reader* schema raises :class:`connector.errors.SchemaMappingError` at planning time.
- Avro is decoded by one vectorized engine (:mod:`connector.formats.avro`) for the whole spec: union members
  come from the encoded branch index; each record must end exactly at its payload's end;
  overlong/overflowing varints, ints beyond 32 bits, booleans ≠ 0/1, invalid UTF-8,
  out-of-range union/enum indexes and decimals beyond their precision are row errors; a bad
  payload never shifts its neighbours.

Examples
--------
>>> import pyarrow as pa
>>> from wireformat import encode_frame, parse_frames
>>> from connector.formats import build_decoder, DecodeOptions
>>> class Spec:  # e.g. connector.asyncapi.SchemaSpec
...     format, text = "json", '{"type": "object", "properties": {"n": {"type": "integer"}}}'
>>> dec = build_decoder(Spec(), options=DecodeOptions())
>>> frames = parse_frames(pa.array([encode_frame("confluent", 1, b'{"n": 5}')]), "confluent")
>>> dec.decode(frames, lookup=lambda key: None).values.to_pylist()
[{'n': 5}]
"""
from connector.formats._column import (
    ColumnResult,
    as_binary,
    decode_column,
    encode_column,
    first_error_row,
)
from connector.formats._decoder import Decoder, build_decoder
from connector.formats._encoder import Encoder, build_encoder
from connector.formats._multi import KeptMessageDecoder, MultiDecoder, build_multi_decoder
from connector.formats._registry import FORMATS, format_of_media_type, payload_format, schema_format
from connector.formats._route import TYPE_HEADERS, Claim, RouteHeader, Routing
from connector.formats.core import (
    RESCUED_COLUMN,
    DecodeOptions,
    DecodeResult,
    EncodeError,
    EncodeOptions,
    EncodeResult,
    EnumRepr,
    EvolutionMode,
    Mode,
    refs_of,
)

__all__ = [
    # the read and write cores every path shares
    "decode_column", "ColumnResult", "encode_column", "as_binary", "first_error_row",
    # building decoders and encoders from a schema
    "build_decoder", "build_multi_decoder", "Decoder", "MultiDecoder", "build_encoder", "Encoder",
    # several message types on one channel: the header -> message table
    "Routing", "RouteHeader", "Claim", "TYPE_HEADERS", "KeptMessageDecoder",
    "DecodeOptions", "DecodeResult", "EncodeOptions", "EncodeResult", "EncodeError",
    "Mode", "EnumRepr", "EvolutionMode", "RESCUED_COLUMN",
    # the formats
    "FORMATS", "payload_format", "schema_format", "format_of_media_type", "refs_of",
]
