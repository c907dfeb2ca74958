"""Typed Arrow columns → Avro, Protobuf and JSON Schema payloads (the write path's encoding).

The dual of :mod:`connector.decode`: an encoder expects exactly the Arrow type the decoder
produces for the same schema (``Encoder.arrow_type``), so what one writes the other reads
back row for row. Framing is :func:`wireformat.frame_payloads`.

- Null input rows give null payloads (tombstones), not errors.
- Values the schema cannot hold (an out-of-range int, a decimal past its precision, an
  unknown enum symbol, a null in a non-nullable field, a JSON value the schema forbids) are
  per-row errors; a structural mismatch (missing or extra fields, incompatible column types)
  raises :class:`EncodeError`.

Examples
--------
>>> import pyarrow as pa
>>> from wireformat import frame_payloads
>>> from connector.encode import build_encoder
>>> class Spec:
...     format, text = "json", '{"type": "object", "properties": {"n": {"type": "integer"}}}'
>>> enc = build_encoder(Spec())
>>> res = enc.encode(pa.array([{"n": 5}], enc.arrow_type))
>>> frame_payloads(res.payloads, "confluent", 1).values.to_pylist()
[b'\\x00\\x00\\x00\\x00\\x01{"n":5}']
"""
from connector.encode._encoder import Encoder, build_encoder
from connector.encode._options import EncodeError, EncodeOptions, EncodeResult

__all__ = ["build_encoder", "Encoder", "EncodeResult", "EncodeOptions", "EncodeError"]
