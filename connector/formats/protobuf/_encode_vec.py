"""Vectorized Protobuf: Arrow columns → wire format column by column (no message objects).

Each field of a message becomes one ``pa.BinaryArray`` holding ``tag + value`` per row (empty
where the field is not written); a message is its fields joined row-wise in field-number
order, as upb writes them. Reuses the Avro encoder's machinery (``_avro_vec``):

==========================  ==========================================================
field                       bytes
==========================  ==========================================================
int32/int64/enum/uint/bool  varint (negative int32/int64/enum: 10-byte two's complement)
sint32/sint64               zigzag varint
fixed*/sfixed*/float/double 4 or 8 little-endian bytes
string/bytes/message        ``varint(len)`` + bytes (a nested message is encoded the
                            same way, recursively, then length-prefixed)
repeated numeric (packed)   one tag, ``varint(total)``, the items back to back
repeated other / map        ``tag + item`` per item (map items: entry messages with key
                            and value always written), a row's items one slice
Timestamp / Duration        ``{1: seconds, 2: nanos}`` from microseconds
wrappers                    ``{1: value}``
==========================  ==========================================================

Presence: a null is never written; a field without presence (proto3 implicit) is also
not written when it holds its default (0, "", false, first enum value). Errors per row:
a null in a proto2 ``required`` field, an unknown enum name, uint32/uint64 out of range, a null item in a repeated field or a
null scalar map value, several members of one oneof set. Schemas using Any, Struct, Value,
ListValue or groups are encoded by the per-record path (``_protobuf``): :func:`plannable`.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS, is_map
from connector.formats.core import (
    EMPTY_BYTES,
    RowErrors,
    byte_rows,
    dense,
    join_rows,
    valid_mask,
    varints,
    with_validity,
    zigzag,
)

__all__ = ["plannable", "encode_proto_vectorized"]

_U64 = np.uint64
_VARINT = {FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_BOOL, FD.TYPE_ENUM,
           FD.TYPE_SINT32, FD.TYPE_SINT64}
_FIXED32 = {FD.TYPE_FIXED32, FD.TYPE_SFIXED32, FD.TYPE_FLOAT}
_FIXED64 = {FD.TYPE_FIXED64, FD.TYPE_SFIXED64, FD.TYPE_DOUBLE}
_LEN = {FD.TYPE_STRING, FD.TYPE_BYTES, FD.TYPE_MESSAGE}


def plannable(desc, arrow_type: pa.DataType, depth: int = 0) -> bool:
    """Whether every field reachable from ``desc`` (as mapped to ``arrow_type``) is vectorized."""
    if depth > 64:
        return False
    name = desc.full_name
    if name in WKT_JSON:
        return False
    if name in WKT_SCALARS:
        return True
    for field in arrow_type:
        f = desc.fields_by_name[field.name]
        if f.type == FD.TYPE_GROUP:
            return False
        t = field.type
        if is_map(f):
            vf = f.message_type.fields_by_name["value"]
            if vf.type == FD.TYPE_MESSAGE and not plannable(vf.message_type, t.item_type, depth + 1):
                return False
        elif f.type == FD.TYPE_MESSAGE:
            inner = t.value_type if f.is_repeated else t
            if not plannable(f.message_type, inner, depth + 1):
                return False
    return True


def _tag(f, wire: int) -> pa.Scalar:
    return pa.scalar(varints(np.array([(f.number << 3) | wire], _U64)).to_pylist()[0], pa.binary())


def _u64_from_decimal(arr: pa.Array, live, ctx, path) -> np.ndarray:
    m = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * 16:(arr.offset + m) * 16].reshape(m, 16)
    lo = raw[:, :8].copy().view(_U64).ravel()
    hi = raw[:, 8:].copy().view(np.int64).ravel()
    scale = arr.type.scale
    if scale:
        raise ValueError(f"{path}: uint64 needs a decimal with scale 0, got {arr.type}")
    ctx.fail(live & (hi != 0), f"{path}: value out of range for uint64")
    return lo


def int_values(arr: pa.Array) -> np.ndarray:
    if arr.null_count:
        arr = arr.fill_null(0)
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


class _Rep:
    """Bare values of one scalar field, before tags: emitted with a tag in one numpy pass."""

    __slots__ = ("kind", "data", "lens")

    def __init__(self, kind: str, data, lens=None):
        self.kind, self.data, self.lens = kind, data, lens  # varint: uint64; fixed: (n, w) matrix

    def emit(self, write: np.ndarray | None = None, prefix: bytes = b"") -> pa.Array:
        """``prefix + value`` per row; rows not in ``write`` are empty (or null for bytes)."""
        if self.kind == "varint":
            return varints(self.data, write, prefix)
        if self.kind == "fixed":
            mat = self.data
            if prefix:
                head = np.broadcast_to(np.frombuffer(prefix, np.uint8), (len(mat), len(prefix)))
                mat = np.concatenate([head, mat], axis=1)
            return byte_rows(mat, np.full(len(mat), mat.shape[1], np.int64), write)
        # rows not written hold null or an empty value (the default): the join adds nothing
        return join_rows(varints(self.lens.view(_U64), write, prefix), self.data)


def _fixed(v: np.ndarray, dtype: str) -> _Rep:
    a = np.ascontiguousarray(v.astype(dtype))
    return _Rep("fixed", a.view(np.uint8).reshape(len(a), a.dtype.itemsize))


def _values(f, arr: pa.Array, live, ctx, path):
    """(bare values as a :class:`_Rep`, is-default mask) for scalar field ``f``."""
    t = f.type
    if t == FD.TYPE_ENUM:
        if pa.types.is_integer(arr.type):
            nums = int_values(arr)
        else:
            names = [v.name for v in f.enum_type.values]
            numbers = np.array([v.number for v in f.enum_type.values], np.int64)
            idx = pc.index_in(arr, value_set=pa.array(names, pa.string()))
            iv = valid_mask(idx)
            nums = np.where(iv, numbers[np.where(iv, int_values(idx), 0)], 0)
            unknown = live & ~iv & valid_mask(arr)  # null items are reported by the caller
            if unknown.any():  # the decoder writes unknown numbers as their digits
                for p in np.flatnonzero(unknown).tolist():
                    s = arr[p].as_py()
                    if s.lstrip("-").isdigit() and -(1 << 31) <= int(s) < (1 << 31):
                        nums[p] = int(s)
                        unknown[p] = False
                ctx.fail(unknown, lambda v: f"{path}: {str(v)[:40]!r} is not a value of enum "
                                            f"{f.enum_type.full_name}", arr)
        default = f.enum_type.values[0].number if f.enum_type.values else 0
        return _Rep("varint", nums.view(_U64)), nums == default
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        u = _u64_from_decimal(arr, live, ctx, path) if pa.types.is_decimal(arr.type) else int_values(arr).view(_U64)
        return (_Rep("varint", u) if t == FD.TYPE_UINT64 else _fixed(u, "<u8")), u == 0
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        v = int_values(arr)
        ctx.fail(live & ((v < 0) | (v >= (1 << 32))), f"{path}: value out of range for uint32")
        return (_Rep("varint", v.view(_U64)) if t == FD.TYPE_UINT32 else _fixed(v, "<u4")), v == 0
    if t in (FD.TYPE_INT32, FD.TYPE_INT64):
        v = int_values(arr)
        return _Rep("varint", v.view(_U64)), v == 0
    if t in (FD.TYPE_SINT32, FD.TYPE_SINT64):
        v = int_values(arr)
        return _Rep("varint", zigzag(v)), v == 0
    if t == FD.TYPE_SFIXED32:
        v = int_values(arr)
        return _fixed(v, "<i4"), v == 0
    if t == FD.TYPE_SFIXED64:
        v = int_values(arr)
        return _fixed(v, "<i8"), v == 0
    if t == FD.TYPE_BOOL:
        v = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return _fixed(v, "u1"), v == 0
    if t == FD.TYPE_FLOAT:
        v = arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f4")
        return _fixed(v, "<f4"), (v == 0) & ~np.signbit(v)
    if t == FD.TYPE_DOUBLE:
        v = arr.fill_null(0).to_numpy(zero_copy_only=False).astype("<f8")
        return _fixed(v, "<f8"), (v == 0) & ~np.signbit(v)
    if t in (FD.TYPE_STRING, FD.TYPE_BYTES):
        b = arr if pa.types.is_binary(arr.type) else arr.cast(pa.binary())
        lens = pc.binary_length(b).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return _Rep("bytes", b, lens), lens == 0
    raise ValueError(f"{path}: no vectorized encoding for field type {t}")


def _wire(f) -> int:
    t = f.type
    if t in _VARINT:
        return 0
    if t in _FIXED64:
        return 1
    if t in _FIXED32:
        return 5
    return 2


def _message_body(desc, arr: pa.Array, live, ctx, path) -> pa.Array:
    """Encoded bodies (no tag, no length) of messages ``desc`` held in struct ``arr``."""
    name = desc.full_name
    m = len(arr)
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        us = int_values(arr.cast(pa.int64()))
        if name.endswith("Timestamp"):
            secs, rem = np.divmod(us, 1_000_000)
        else:
            # toward zero, nanos of the same sign as seconds, as Duration requires
            # (floor division then a correction: negating int64 min would overflow)
            secs, rem = np.divmod(us, 1_000_000)
            fix = (us < 0) & (rem != 0)
            secs, rem = np.where(fix, secs + 1, secs), np.where(fix, rem - 1_000_000, rem)
        nanos = rem * 1000
        return join_rows(varints(secs.view(_U64), secs != 0, b"\x08"),
                     varints(nanos.view(_U64), nanos != 0, b"\x10"))
    if name in WKT_SCALARS:
        vf = desc.fields_by_name["value"]
        rep, default = _values(vf, arr, live, ctx, path)
        return rep.emit(~default, _tag(vf, _wire(vf)).as_py())
    parts = []
    oneofs: dict = {}
    fields = {fld.name: i for i, fld in enumerate(arr.type)}
    for f in sorted(desc.fields, key=lambda x: x.number):
        if f.name not in fields:
            continue  # cut by the recursion depth: never written
        child = arr.field(fields[f.name])
        p = f"{path}.{f.name}"
        if f.containing_oneof is not None:
            oneofs.setdefault(f.containing_oneof.name, []).append(valid_mask(child))
        parts.append(_field(f, child, live, ctx, p))
    for oname, vs in oneofs.items():
        if len(vs) > 1:
            ctx.fail(live & (np.sum(vs, axis=0) > 1), f"{path}: oneof {oname} has several fields set")
    if not parts:
        return pa.repeat(EMPTY_BYTES, m) if m else pa.array([], pa.binary())
    return join_rows(*parts)


def _tagged(tag: bytes, enc: pa.Array, write: np.ndarray) -> pa.Array:
    """``tag + enc`` where ``write``, else null (joined as empty by the parent message)."""
    if not write.any():
        return pa.repeat(EMPTY_BYTES, len(enc)) if len(enc) else pa.array([], pa.binary())
    if write.all():
        return join_rows(pa.scalar(tag, pa.binary()), enc)
    return pc.binary_join_element_wise(pa.scalar(tag, pa.binary()), with_validity(enc, write), EMPTY_BYTES)


def _length_prefixed(body: pa.Array) -> pa.Array:
    if body.null_count:  # a null part means "nothing written": an empty body
        body = dense(body)
    lens = pc.binary_length(body).to_numpy(zero_copy_only=False).astype(np.int64)
    return join_rows(varints(lens.view(_U64)), body)


def _field(f, arr: pa.Array, live, ctx, path) -> pa.Array:
    valid = valid_mask(arr)
    if f.is_required:  # proto2: a message without it does not parse
        ctx.fail(live & ~valid, f"{path}: null for a required field")
    if is_map(f) or f.is_repeated:
        return _repeated(f, arr, live & valid, ctx, path)
    tag = _tag(f, _wire(f)).as_py()
    if f.type == FD.TYPE_MESSAGE:
        body = _message_body(f.message_type, arr, live & valid, ctx, path)
        return _tagged(tag, _length_prefixed(body), valid)
    rep, default = _values(f, arr, live & valid, ctx, path)
    write = valid if f.has_presence else valid & ~default
    return rep.emit(None if write.all() else write, tag)


def _repeated(f, arr: pa.Array, live, ctx, path) -> pa.Array:
    m = len(arr)
    offs = arr.offsets.to_numpy().astype(np.int64)
    lens = np.where(valid_mask(arr), np.diff(offs), 0)
    base, stop = int(offs[0]), int(offs[-1])
    inner_live = np.repeat(live, np.diff(offs))
    sub = ctx.items(offs - base)
    if is_map(f):
        kf = f.message_type.fields_by_name["key"]
        vf = f.message_type.fields_by_name["value"]
        keys = arr.keys.slice(base, stop - base)
        items = arr.items.slice(base, stop - base)
        krep, _ = _values(kf, keys, inner_live, sub, f"{path}[key]")
        kenc = krep.emit(None, _tag(kf, _wire(kf)).as_py())
        iv = valid_mask(items)
        vtag = _tag(vf, _wire(vf))
        if vf.type == FD.TYPE_MESSAGE:
            sub.fail(inner_live & ~iv, f"{path}: null map value")
            venc = join_rows(vtag, _length_prefixed(_message_body(vf.message_type, items, inner_live & iv, sub,
                                                              f"{path}[value]")))
        else:
            sub.fail(inner_live & ~iv, f"{path}: null map value")
            vrep, _ = _values(vf, items, inner_live & iv, sub, f"{path}[value]")
            venc = vrep.emit(None, vtag.as_py())
        entry = join_rows(kenc, venc)
        item = join_rows(_tag(f, 2), _length_prefixed(entry))
        packed = False
    else:
        vals = arr.values.slice(base, stop - base)
        sub.fail(inner_live & ~valid_mask(vals), f"{path}: null item in a repeated field")
        if f.type == FD.TYPE_MESSAGE:
            enc = _length_prefixed(_message_body(f.message_type, vals, inner_live, sub, f"{path}[]"))
            packed = False
            item = join_rows(_tag(f, 2), enc)
        else:
            rep, _ = _values(f, vals, inner_live, sub, f"{path}[]")
            packed = f.is_packed
            item = rep.emit(None, b"" if packed else _tag(f, _wire(f)).as_py())
    if item.null_count or item.offset:
        item = dense(item)
    eoffs = np.frombuffer(item.buffers()[1], np.int32, len(item) + 1, item.offset * 4)
    body_offs = eoffs[offs - base]
    data = item.buffers()[2] or pa.py_buffer(b"")
    body = pa.BinaryArray.from_buffers(pa.binary(), m, [None, pa.py_buffer(body_offs.astype(np.int32)), data])
    if not packed:
        return with_validity(body, lens > 0)
    return _tagged(_tag(f, 2).as_py(), _length_prefixed(body), lens > 0)


def encode_proto_vectorized(desc, values: pa.Array):
    """(payloads, errors) for ``values`` (struct of the message's fields); null rows → null."""
    n = len(values)
    errors = np.full(n, None, object)
    ctx = RowErrors(errors)
    valid = valid_mask(values)
    body = _message_body(desc, values, valid, ctx, "value")
    bad = ctx.bad_rows()
    if bad is None:
        return with_validity(body, valid), None
    for i in np.flatnonzero(bad).tolist():  # only failed rows
        errors[i] = f"protobuf encode failed: {errors[i]}"
    return with_validity(body, valid & ~bad), errors

