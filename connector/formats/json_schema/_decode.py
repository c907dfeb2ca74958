"""JSON payloads → one Arrow array of the reader's type.

The vectorized path (``_engine``: a compiled kernel) parses every payload strictly into the
columns of the reader's type. The reference path (``fast_path=False``, used by equivalence
tests): ``orjson.loads`` per record and a strict converter. Both judge records with the
schema's reference validator (python-jsonschema, ``_reference``; ``options.validate_json``): a
record it finds invalid is a row error naming the JSON path and the keyword.
"""
from __future__ import annotations


import orjson
import pyarrow as pa

from connector.formats.json_schema._engine import JsonEngine
from connector.formats.json_schema._jassemble import BadValue, value_converter
from connector.formats.json_schema._reference import Reference
from connector.formats.json_schema._schema import JNode
from connector.formats.core import DecodeOptions, to_arrow_checked

__all__ = ["JsonCodec"]


class JsonCodec:
    """Decoder of JSON payloads to the type of one JSON Schema tree."""

    def __init__(self, node: JNode, options: DecodeOptions):
        self.node = node
        self.options = options
        self.arrow_type = node.arrow
        self._convert = value_converter(node, dates_as_text=False)
        self.fast = options.fast_path
        self.reference = Reference(node.schemas[0]) if options.validate_json and node.schemas else None
        self._engine = JsonEngine(node, options, self.reference) if self.fast else None

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        n = len(payloads)
        if n == 0:
            return pa.array([], self.arrow_type), []
        if self._engine is not None:  # built when options.fast_path
            return self._engine.decode(payloads, f"json decode failed for schema id {label}")
        return self._reference(payloads, label)

    def _reference(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        rows: list = []
        errors: list = []
        prefix = f"json decode failed for schema id {label}"
        for p in payloads.to_pylist():
            if p is None:
                rows.append(None)
                errors.append(f"{prefix}: null payload")
                continue
            try:
                v = orjson.loads(p)
                why = self.reference.why(v) if self.reference is not None else None
                if why is not None:
                    rows.append(None)
                    errors.append(f"{prefix}: not valid against its schema: {why}")
                    continue
                rows.append(p.decode() if self.node.kind == "json" else self._convert(v))
                errors.append(None)
            except (orjson.JSONDecodeError, BadValue, ValueError, TypeError, OverflowError) as e:
                rows.append(None)
                errors.append(f"{prefix}: {type(e).__name__}: {e}")
        return to_arrow_checked(rows, errors, self.arrow_type, prefix)
