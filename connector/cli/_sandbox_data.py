"""Example payloads for ``asyncapi-kafka sandbox``: the document's message ``examples`` when it
has them, otherwise values generated from the payload schema (Avro, JSON Schema, Protobuf),
serialized the way a producer would. Deterministic: record ``i`` is the same on every run.

Generation follows the schema's own constraints where it states them (enum, minimum/maximum,
string formats, Avro logical types) and keeps nesting bounded (recursive schemas stop at a
fixed depth with null, an empty array or an empty message).
"""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import uuid

__all__ = ["serialize_examples"]

_MAX_DEPTH = 6
_BASE = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.timezone.utc)


def serialize_examples(spec, n: int, examples: list | None = None) -> tuple[list[bytes], dict | None]:
    """``n`` serialized payloads for a ``connector.asyncapi.SchemaSpec`` and, for Protobuf,
    ``{"message_indexes": [...], "full_name": ...}`` (None otherwise).

    ``examples`` are the document's example payloads (JSON values); they are used in turn
    before generated ones. An example that does not fit the schema raises ``ValueError``.
    """
    examples = list(examples or [])
    if spec.format == "avro":
        import fastavro

        schema = json.loads(spec.text)
        parsed = fastavro.parse_schema(schema)
        out = []
        for i in range(n):
            buf = io.BytesIO()
            value = examples[i % len(examples)] if examples else _avro(schema, i, 0, {})
            fastavro.schemaless_writer(buf, parsed, value)
            out.append(buf.getvalue())
        return out, None
    if spec.format == "json":
        import orjson

        schema = json.loads(spec.text)
        return [orjson.dumps(examples[i % len(examples)] if examples else _json(schema, i, 0, schema))
                for i in range(n)], None
    if spec.format == "protobuf":
        from google.protobuf import json_format, message_factory

        from connector.formats.protobuf import compile_proto

        compiled = compile_proto(spec.text)
        names = compiled.message_names()
        full = spec.message_name or names[0]
        if "." not in full and compiled.main.package:
            full = f"{compiled.main.package}.{full}"
        cls = message_factory.GetMessageClass(compiled.find(full))
        out = []
        for i in range(n):
            msg = cls()
            if examples:
                json_format.ParseDict(examples[i % len(examples)], msg)
            else:
                _proto(msg, i, 0)
            out.append(msg.SerializeToString())
        top = [m.split(".")[-1] for m in names]
        idx = top.index(full.split(".")[-1]) if full.split(".")[-1] in top else 0
        return out, {"message_indexes": [idx], "full_name": full}
    raise ValueError(f"no example generator for schema format {spec.format!r}")


# ---- Avro ------------------------------------------------------------------------------------

def _avro(t, i: int, depth: int, named: dict):
    if isinstance(t, str):
        if t in named:
            return _avro(named[t], i, depth + 1, named)
        return _avro_primitive(t, i)
    if isinstance(t, list):  # union: vary the branch with i, prefer non-null
        branches = [b for b in t if b != "null"] or t
        if depth >= _MAX_DEPTH and "null" in t:
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
        return [] if depth >= _MAX_DEPTH else [_avro(t["items"], i + j, depth + 1, named) for j in range(1 + i % 2)]
    if kind == "map":
        return {} if depth >= _MAX_DEPTH else {f"k{i % 3}": _avro(t["values"], i, depth + 1, named)}
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
        value = _BASE + dt.timedelta(seconds=i)
        return value if logical.startswith("timestamp") else value.replace(tzinfo=None)
    if logical == "date":
        return (_BASE + dt.timedelta(days=i)).date()
    if logical == "uuid":
        return str(uuid.UUID(int=i + 1))
    if logical in ("time-millis", "time-micros"):
        return dt.time(9, i % 60, 0)
    return None


# ---- JSON Schema -----------------------------------------------------------------------------

def _json(s, i: int, depth: int, root: dict):
    if not isinstance(s, dict):
        return None
    if "$ref" in s and isinstance(s["$ref"], str) and s["$ref"].startswith("#/"):
        node = root
        for part in s["$ref"][2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return _json(node, i, depth + 1, root) if depth < _MAX_DEPTH else None
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
        if depth >= _MAX_DEPTH:
            return {}
        return {name: _json(sub, i, depth + 1, root) for name, sub in (s.get("properties") or {}).items()}
    if kind == "array":
        if depth >= _MAX_DEPTH:
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
        return (_BASE + dt.timedelta(seconds=i)).isoformat().replace("+00:00", "Z")
    if fmt == "date":
        return (_BASE + dt.timedelta(days=i)).date().isoformat()
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


# ---- Protobuf --------------------------------------------------------------------------------

def _proto(msg, i: int, depth: int) -> None:
    from google.protobuf.descriptor import FieldDescriptor as F

    desc = msg.DESCRIPTOR
    if desc.full_name == "google.protobuf.Timestamp":
        msg.FromDatetime(_BASE + dt.timedelta(seconds=i))
        return
    if depth >= _MAX_DEPTH:
        return
    seen_oneofs = set()
    for field in desc.fields:
        if field.containing_oneof is not None:
            if field.containing_oneof.name in seen_oneofs:
                continue
            seen_oneofs.add(field.containing_oneof.name)
        is_map = field.message_type is not None and field.message_type.GetOptions().map_entry
        if is_map:
            key_f, val_f = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
            key = _proto_scalar(key_f, i)
            if val_f.type == F.TYPE_MESSAGE:
                _proto(getattr(msg, field.name)[key], i, depth + 1)
            else:
                getattr(msg, field.name)[key] = _proto_scalar(val_f, i)
        elif field.type == F.TYPE_MESSAGE:
            if _is_repeated(field):
                _proto(getattr(msg, field.name).add(), i, depth + 1)
            else:
                _proto(getattr(msg, field.name), i, depth + 1)
                if not getattr(msg, field.name).ByteSize() and field.message_type.full_name != "google.protobuf.Empty":
                    getattr(msg, field.name).SetInParent()
        elif _is_repeated(field):
            getattr(msg, field.name).extend([_proto_scalar(field, i), _proto_scalar(field, i + 1)])
        else:
            setattr(msg, field.name, _proto_scalar(field, i))


def _is_repeated(field) -> bool:
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return field.label == field.LABEL_REPEATED


def _proto_scalar(field, i: int):
    from google.protobuf.descriptor import FieldDescriptor as F

    t = field.type
    if t == F.TYPE_STRING:
        return f"value-{i}"
    if t == F.TYPE_BYTES:
        return f"b{i}".encode()
    if t == F.TYPE_BOOL:
        return i % 2 == 0
    if t in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return i + 0.5
    if t == F.TYPE_ENUM:
        values = field.enum_type.values
        return values[(i % (len(values) - 1)) + 1].number if len(values) > 1 else values[0].number
    if t in (F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_FIXED32, F.TYPE_FIXED64):
        return i
    return i - 2 if t in (F.TYPE_SINT32, F.TYPE_SINT64) else i
