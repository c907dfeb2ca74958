"""Example Protobuf payloads generated from a ``.proto`` message (``asyncapi-kafka sandbox``), or
the document's examples (JSON, read with ``json_format``). Deterministic: record ``i`` is the
same on every run. One member of each oneof is set; Timestamps follow record ``i``; nesting
stops at a fixed depth with an empty message.
"""
from __future__ import annotations

import datetime as dt

from connector.formats.core import SAMPLE_BASE_TIME, SAMPLE_MAX_DEPTH, Samples

__all__ = ["protobuf_samples"]


def protobuf_samples(text: str, message: str | None, n: int, examples: list) -> Samples:
    """``n`` payloads of ``message`` (the first top-level message when None) and the
    message-index path and full name of that message."""
    from google.protobuf import json_format, message_factory

    from connector.formats.protobuf._schema import compile_proto

    compiled = compile_proto(text)
    names = compiled.message_names()
    full = message or names[0]
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
    return Samples(out, [idx], full)


def _proto(msg, i: int, depth: int) -> None:
    from google.protobuf.descriptor import FieldDescriptor as F

    desc = msg.DESCRIPTOR
    if desc.full_name == "google.protobuf.Timestamp":
        msg.FromDatetime(SAMPLE_BASE_TIME + dt.timedelta(seconds=i))
        return
    if depth >= SAMPLE_MAX_DEPTH:
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
