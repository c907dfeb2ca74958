"""Protobuf encoder: Arrow values → serialized messages of one run-time compiled type.

Values follow the decoder's mapping (``connector.formats.protobuf._schema``): enums by name
(or number), uint64 as decimal(20, 0), Timestamp as ``timestamp[us, tz=UTC]``, Duration as
int64 microseconds, wrappers as nullable scalars, Any/Struct/Value/ListValue as JSON text.
A null field is left unset (a null proto2 ``required`` field is a row error). This module is the per-record reference (and the path for
schemas holding Any/Struct/Value/ListValue): message objects are filled per record and
serialized in one call as the repeated field of a synthetic ``Batch`` message, then cut
back into one payload per row. The common path is ``_encode_program`` (a compiled program
writes the wire bytes from the Arrow buffers, no message objects).
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.formats.core import prepend
from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS, CompiledProto, arrow_type_of_message, is_map

__all__ = ["ProtoEncoder", "message_indexes_of"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_US = dt.timedelta(microseconds=1)


class _Bad(ValueError):
    pass


def message_indexes_of(desc) -> list[int]:
    """Confluent message-index path of a message descriptor ([0] for the first top-level one)."""
    path = []
    d = desc
    while d.containing_type is not None:
        parent = d.containing_type
        path.append(list(parent.nested_types).index(d))
        d = parent
    path.append(list(d.file.message_types_by_name.values()).index(d))
    return path[::-1]


def _micros(v) -> int:
    if isinstance(v, int):
        return v
    if v.tzinfo is None:
        v = v.replace(tzinfo=dt.timezone.utc)
    return (v - _EPOCH) // _US


def _scalar(f, v, path):
    if v is None:
        raise _Bad(f"{path}: null item")
    if f.type == FD.TYPE_ENUM:
        if isinstance(v, str):
            ev = f.enum_type.values_by_name.get(v)
            if ev is not None:
                return ev.number
            if v.lstrip("-").isdigit():
                return int(v)
            raise _Bad(f"{path}: {v[:40]!r} is not a value of enum {f.enum_type.full_name}")
        return int(v)
    if isinstance(v, Decimal):
        if v != v.to_integral_value():
            raise _Bad(f"{path}: {v} is not an integer")
        return int(v)
    return v


def _set_message(m, desc, v, path, pool) -> None:
    name = desc.full_name
    if name == "google.protobuf.Timestamp":
        us = _micros(v)
        m.seconds, m.nanos = us // 1_000_000, (us % 1_000_000) * 1000
    elif name == "google.protobuf.Duration":
        us = int(v)
        secs = abs(us) // 1_000_000 * (1 if us >= 0 else -1)
        m.seconds, m.nanos = secs, (us - secs * 1_000_000) * 1000
    elif name in WKT_SCALARS:
        m.value = _scalar(desc.fields_by_name["value"], v, path)
    elif name in WKT_JSON:
        try:
            json_format.Parse(v, m, descriptor_pool=pool)
        except json_format.ParseError as e:
            raise _Bad(f"{path}: {e}") from e
    else:
        m.SetInParent()
        _fill(m, desc, v, path, pool)


def _fill(msg, desc, v: dict, path: str, pool) -> None:
    for f in desc.fields:
        if f.is_required and v.get(f.name) is None:  # proto2: a message without it does not parse
            raise _Bad(f"{path}.{f.name}: null for a required field")
    for fname, x in v.items():
        if x is None:
            continue
        f = desc.fields_by_name[fname]
        p = f"{path}.{fname}"
        if is_map(f):
            target = getattr(msg, fname)
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            for k, val in (x.items() if isinstance(x, dict) else x):
                key = _scalar(kf, k, p)
                if vf.type == FD.TYPE_MESSAGE:
                    if val is None:
                        raise _Bad(f"{p}[{k!r}]: null map value")
                    _set_message(target[key], vf.message_type, val, f"{p}[{k!r}]", pool)
                else:
                    target[key] = _scalar(vf, val, f"{p}[{k!r}]")
        elif f.is_repeated:
            target = getattr(msg, fname)
            if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
                for i, item in enumerate(x):
                    if item is None:
                        raise _Bad(f"{p}[{i}]: null item")
                    _set_message(target.add(), f.message_type, item, f"{p}[{i}]", pool)
            else:
                target.extend([_scalar(f, item, f"{p}[{i}]") for i, item in enumerate(x)])
        elif f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
            _set_message(getattr(msg, fname), f.message_type, x, p, pool)
        else:
            setattr(msg, fname, _scalar(f, x, p))


def _split_repeated(blob: bytes, n: int) -> list:
    """Cut ``0x0A varint(len) payload`` × n back into n payloads (one header read per item)."""
    data = np.frombuffer(blob, np.uint8)
    out = []
    pos = 0
    # Each item's header is read with Python ints; the payload copy is a slice of the blob.
    for _ in range(n):
        pos += 1  # the 0x0A tag
        ln = 0
        shift = 0
        while True:
            b = int(data[pos])
            pos += 1
            ln |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append(blob[pos:pos + ln])
        pos += ln
    return out


class ProtoEncoder:
    """Serializes values of ``arrow_type`` as messages ``desc`` of a compiled schema."""

    def __init__(self, compiled: CompiledProto, message: str | None, max_depth: int = 0):
        self.compiled = compiled
        self.desc = compiled.find(message)
        self.arrow_type = arrow_type_of_message(self.desc, "string", max_depth=max_depth)
        self.cls = compiled.message_class(self.desc)
        self.indexes = message_indexes_of(self.desc)
        from connector.formats.protobuf._encode_program import build
        self.program = build(self.desc, self.arrow_type)
        self.vectorized = self.program is not None

    def encode(self, values: pa.Array, fast: bool = True, prefix: bytes = b"") -> tuple:
        """(payloads each starting with ``prefix``, errors): the compiled program when the
        schema has one (``_encode_program``), else message objects filled per record."""
        if fast and self.program is not None:
            from connector.formats.core import EncodeError, note_fallback
            try:
                return self.program.encode(values, prefix)
            except EncodeError:
                raise
            except Exception as e:  # noqa: BLE001 - any surprise: the checked per-record path
                note_fallback("protobuf", e)  # a shape the compiled encoder did not foresee
        out, errors = self.encode_reference(values, fast)
        return prepend(out, prefix), errors

    def encode_reference(self, values: pa.Array, fast: bool = True) -> tuple[list, list]:
        """Per record: fill a message object, serialize (one call for the batch when ``fast``)."""
        rows = values.to_pylist()
        n = len(rows)
        out: list = [None] * n
        errors: list = [None] * n
        desc, pool, cls = self.desc, self.compiled.pool, self.cls
        msgs = []
        where = []
        for i, v in enumerate(rows):
            if v is None:
                continue
            m = cls()
            try:
                _fill(m, desc, v, "value", pool)
            except (_Bad, ValueError, TypeError, OverflowError, KeyError, AttributeError) as e:
                errors[i] = f"protobuf encode failed: {type(e).__name__}: {e}"
                continue
            msgs.append(m)
            where.append(i)
        if not msgs:
            return out, errors
        if fast:
            batch = self.compiled.batch_class(desc)()
            batch.items.extend(msgs)
            blobs = _split_repeated(batch.SerializeToString(), len(msgs))
        else:
            blobs = [m.SerializeToString() for m in msgs]
        for i, b in zip(where, blobs):
            out[i] = b
        return out, errors
