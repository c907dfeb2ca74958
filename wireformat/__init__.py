"""Byte layouts of schema-registry framings, parsed vectorized over Arrow arrays.

Imports only the standard library, numpy and pyarrow.

Examples
--------
>>> import pyarrow as pa
>>> from wireformat import encode_frame, parse_frames
>>> pf = parse_frames(pa.array([encode_frame("confluent", 3, b"payload")]), "auto")
>>> pf.int_id.to_pylist(), pf.payload.to_pylist()
([3], [b'payload'])
"""
from wireformat._encode import encode_frame, encode_protobuf_indexes, frame_payloads, frame_prefix, header_for_id
from wireformat._errors import AsyncApiKafkaError, LimitExceededError, WireFormatError, add_note
from wireformat._framing import DEFAULT_LIMITS, ErrorCode, Framing, Limits
from wireformat._parse import ParsedFrames, error_messages, parse_frames, uuid_strings
from wireformat._protobuf_index import read_varints

__all__ = [
    "AsyncApiKafkaError", "WireFormatError", "LimitExceededError", "add_note",
    "Framing", "ErrorCode", "Limits", "DEFAULT_LIMITS",
    "ParsedFrames", "parse_frames", "error_messages", "uuid_strings",
    "encode_frame", "frame_payloads", "frame_prefix", "header_for_id", "encode_protobuf_indexes",
    "read_varints",
]
