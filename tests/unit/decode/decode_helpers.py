"""Helpers shared by the decode tests: producers of payloads and frames."""
from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
from registry import Schema, SchemaType
from wireformat import encode_frame, parse_frames

from connector.formats import DecodeOptions


class Spec:
    """A SchemaSpec-like reader (format, text, message_name)."""

    def __init__(self, fmt, text, message_name=None):
        self.format = fmt
        self.text = text if isinstance(text, str) else json.dumps(text)
        self.message_name = message_name


def avro_bytes(schema, record) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()


def binary(payloads) -> pa.BinaryArray:
    return pa.array(payloads, pa.binary())


class Registry:
    """An id → registry.Schema table whose ``lookup`` the decoder calls."""

    def __init__(self):
        self.by_id: dict[int, Schema] = {}
        self.calls = 0

    def add(self, schema_id: int, text, schema_type="AVRO", references=()) -> int:
        text = text if isinstance(text, str) else json.dumps(text)
        self.by_id[schema_id] = Schema(schema_type=SchemaType(schema_type), text=text, id=schema_id,
                                       resolved_references=tuple(references))
        return schema_id

    def lookup(self, key):
        self.calls += 1
        return self.by_id[key[1]]


def framed(rows, *, protobuf_indexes=False):
    """rows: (schema_id, payload) or raw bytes → ParsedFrames (Confluent framing)."""
    vals = [encode_frame("confluent", r[0], r[1]) if isinstance(r, tuple) else r for r in rows]
    return parse_frames(pa.array(vals, pa.binary()), "confluent", protobuf_indexes=protobuf_indexes)


FAST = DecodeOptions()
REFERENCE = DecodeOptions(fast_path=False)
