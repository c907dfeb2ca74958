"""Example JSON payloads generated from a JSON Schema (``asyncapi-kafka sandbox``), or the
document's examples. Deterministic: record ``i`` is the same on every run. Values follow the
schema's own constraints where it states them (``const``, ``enum``, ``examples``,
minimum/maximum, string ``format``s and lengths); ``oneOf``/``anyOf`` branches vary with ``i``;
nesting stops at a fixed depth with an empty object or array.
"""
from __future__ import annotations

import datetime as dt
import json
import uuid

from connector.formats.core import SAMPLE_BASE_TIME, SAMPLE_MAX_DEPTH, Samples

__all__ = ["json_samples"]


def json_samples(text: str, n: int, examples: list) -> Samples:
    """``n`` JSON payloads of the schema ``text``: the ``examples`` in turn, else generated ones."""
    import orjson

    schema = json.loads(text)
    return Samples([orjson.dumps(examples[i % len(examples)] if examples else _json(schema, i, 0, schema))
                    for i in range(n)])


def _json(s, i: int, depth: int, root: dict):
    if not isinstance(s, dict):
        return None
    if "$ref" in s and isinstance(s["$ref"], str) and s["$ref"].startswith("#/"):
        node = root
        for part in s["$ref"][2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return _json(node, i, depth + 1, root) if depth < SAMPLE_MAX_DEPTH else None
    if "const" in s:
        return s["const"]
    if s.get("enum"):
        return s["enum"][i % len(s["enum"])]
    if "examples" in s and isinstance(s["examples"], list) and s["examples"]:
        return s["examples"][i % len(s["examples"])]
    for key in ("oneOf", "anyOf"):
        if isinstance(s.get(key), list) and s[key]:
            options = [o for o in s[key] if not (isinstance(o, dict) and o.get("type") == "null")] or s[key]
            return _json(options[i % len(options)], i, depth + 1, root)
    if isinstance(s.get("allOf"), list):
        merged: dict = {}
        for part in s["allOf"]:
            value = _json(part, i, depth + 1, root)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    kind = s.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in s else "string"
    if kind == "object":
        if depth >= SAMPLE_MAX_DEPTH:
            return {}
        return {name: _json(sub, i, depth + 1, root) for name, sub in (s.get("properties") or {}).items()}
    if kind == "array":
        if depth >= SAMPLE_MAX_DEPTH:
            return []
        count = max(int(s.get("minItems", 1)), 1)
        return [_json(s.get("items") or {}, i + j, depth + 1, root) for j in range(count)]
    if kind in ("integer", "number"):
        lo = s.get("minimum", s.get("exclusiveMinimum", 0))
        lo = lo if isinstance(lo, (int, float)) and not isinstance(lo, bool) else 0
        hi = s.get("maximum", s.get("exclusiveMaximum", lo + 1000))
        hi = hi if isinstance(hi, (int, float)) and not isinstance(hi, bool) else lo + 1000
        span = max(int(hi - lo) - 1, 1)
        value = int(lo) + 1 + i % span if hi - lo > 1 else lo
        return int(value) if kind == "integer" else float(value) + (0.5 if hi - lo > 2 else 0.0)
    if kind == "boolean":
        return i % 2 == 0
    if kind == "null":
        return None
    fmt = s.get("format")
    if fmt == "date-time":
        return (SAMPLE_BASE_TIME + dt.timedelta(seconds=i)).isoformat().replace("+00:00", "Z")
    if fmt == "date":
        return (SAMPLE_BASE_TIME + dt.timedelta(days=i)).date().isoformat()
    if fmt == "uuid":
        return str(uuid.UUID(int=i + 1))
    if fmt == "email":
        return f"user{i}@example.com"
    text = f"value-{i}"
    if isinstance(s.get("maxLength"), int):
        text = text[: max(s["maxLength"], 0)]
    if isinstance(s.get("minLength"), int) and len(text) < s["minLength"]:
        text = text.ljust(s["minLength"], "x")
    return text
