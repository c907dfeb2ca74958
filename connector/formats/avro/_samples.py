"""Example Avro payloads generated from a schema (``asyncapi-kafka sandbox``), or the document's
examples, written with fastavro as a producer would. Deterministic: record ``i`` is the same on
every run. Values follow the schema's own constraints (enum symbols, fixed sizes, logical
types); union branches vary with ``i``; nesting stops at a fixed depth with null or an empty
collection.
"""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import uuid

from connector.formats.core import SAMPLE_BASE_TIME, SAMPLE_MAX_DEPTH, Samples

__all__ = ["avro_samples"]


def avro_samples(text: str, n: int, examples: list) -> Samples:
    """``n`` Avro payloads of the schema ``text``: the ``examples`` in turn, else generated ones."""
    import fastavro

    schema = json.loads(text)
    parsed = fastavro.parse_schema(schema)
    out = []
    for i in range(n):
        buf = io.BytesIO()
        value = examples[i % len(examples)] if examples else _avro(schema, i, 0, {})
        fastavro.schemaless_writer(buf, parsed, value)
        out.append(buf.getvalue())
    return Samples(out)


def _avro(t, i: int, depth: int, named: dict):
    if isinstance(t, str):
        if t in named:
            return _avro(named[t], i, depth + 1, named)
        return _avro_primitive(t, i)
    if isinstance(t, list):  # union: vary the branch with i, prefer non-null
        branches = [b for b in t if b != "null"] or t
        if depth >= SAMPLE_MAX_DEPTH and "null" in t:
            return None
        if "null" in t and i % 4 == 3:
            return None
        return _avro(branches[i % len(branches)], i, depth + 1, named)
    kind = t.get("type")
    logical = t.get("logicalType")
    if logical:
        value = _avro_logical(t, logical, i)
        if value is not None:
            return value
    if kind == "record" or kind == "error":
        named[t["name"]] = t
        if t.get("namespace"):
            named[f"{t['namespace']}.{t['name']}"] = t
        return {f["name"]: _avro(f["type"], i, depth + 1, named) for f in t.get("fields", [])}
    if kind == "enum":
        named[t["name"]] = t
        return t["symbols"][i % len(t["symbols"])]
    if kind == "array":
        return [] if depth >= SAMPLE_MAX_DEPTH else [_avro(t["items"], i + j, depth + 1, named) for j in range(1 + i % 2)]
    if kind == "map":
        return {} if depth >= SAMPLE_MAX_DEPTH else {f"k{i % 3}": _avro(t["values"], i, depth + 1, named)}
    if kind == "fixed":
        named[t["name"]] = t
        return bytes((i + j) % 256 for j in range(t["size"]))
    return _avro(kind, i, depth, named)


def _avro_primitive(t: str, i: int):
    return {"null": None, "boolean": i % 2 == 0, "int": i, "long": 1000 + i, "float": i + 0.5,
            "double": i * 1.25, "bytes": f"b{i}".encode(), "string": f"value-{i}"}.get(t, None)


def _avro_logical(t: dict, logical: str, i: int):
    if logical == "decimal":
        scale, precision = int(t.get("scale", 0)), int(t.get("precision", 9))
        return decimal.Decimal(i % (10 ** min(precision, 6))).scaleb(-scale)
    if logical.startswith("timestamp") or logical.startswith("local-timestamp"):
        value = SAMPLE_BASE_TIME + dt.timedelta(seconds=i)
        return value if logical.startswith("timestamp") else value.replace(tzinfo=None)
    if logical == "date":
        return (SAMPLE_BASE_TIME + dt.timedelta(days=i)).date()
    if logical == "uuid":
        return str(uuid.UUID(int=i + 1))
    if logical in ("time-millis", "time-micros"):
        return dt.time(9, i % 60, 0)
    return None
