"""Protobuf payloads of one message type → one Arrow array.

Fast path (``_proto_arrow``): ptars parses every payload of a group in Rust and its Arrow
output is reshaped to our types; rows it cannot reproduce exactly go to the reference
path below. A compiled wire check (``_proto_validate``, numba) refuses what protobuf
refuses at the wire level plus varints that overflow 64 bits, which protobuf's parsers
accept silently; without numba, protobuf's own parse of the group and a numpy overflow
scan (``_proto_wire``) do that job, as on the reference path.

Reference path — one C-level parse per group: the payloads are wrapped, with numpy, as the repeated field 1
of a synthetic ``Batch`` message (tag 0x0A, varint length, payload, for every row), parsed
with a single ``ParseFromString``; columns are then pulled field by field. If the group does
not parse, rows are parsed one by one to find the bad ones.
"""
from __future__ import annotations

from itertools import chain
from operator import attrgetter, methodcaller

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.message import DecodeError as PbDecodeError

from connector.formats.core import DecodeOptions, to_arrow_checked
from connector.formats.protobuf._arrow import DUR_MAX, TS_MAX, TS_MIN, PtarsEngine, engine_supports
from connector.formats.protobuf._validate import WireValidator
from connector.formats.protobuf._validate import available as validator_available
from connector.formats.protobuf._wktjson import json_text
from connector.formats.protobuf._wire import overflow_rows
from connector.formats.protobuf._schema import (
    WKT_JSON, WKT_SCALARS, CompiledProto, arrow_type_of_message, is_map,
)

__all__ = ["ProtoCodec", "frame_as_repeated"]

_NONE = np.array(None, object)  # compares like None; numpy's stubs refuse a bare None operand


def frame_as_repeated(payloads: pa.BinaryArray) -> bytes:
    """``0x0A varint(len) payload`` for every row, back to back (the bytes of a repeated field 1)."""
    n = len(payloads)
    if n == 0:
        return b""
    lens = pc.binary_length(payloads).to_numpy(zero_copy_only=False).astype(np.int64)
    nb = np.ones(n, np.int64)
    for k in range(1, 5):
        nb += lens >= (1 << (7 * k))
    mat = np.zeros((n, 6), np.uint8)
    mat[:, 0] = 0x0A
    v = lens.copy()
    for k in range(5):
        b = (v & 0x7F).astype(np.uint8)
        b[nb > k + 1] |= 0x80
        mat[:, 1 + k] = b
        v >>= 7
    head_len = 1 + nb
    keep = np.arange(6)[None, :] < head_len[:, None]
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(head_len, out=offsets[1:])
    heads = pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                          pa.py_buffer(mat[keep].tobytes())])
    joined = pc.binary_join_element_wise(heads, payloads, pa.scalar(b"", pa.binary()))
    offs = np.frombuffer(joined.buffers()[1], np.int32, n + 1, joined.offset * 4)
    start, stop = int(offs[0]), int(offs[-1])
    data = joined.buffers()[2]
    return b"" if data is None else data.slice(start, stop - start).to_pybytes()


def _has_required(desc) -> bool:
    """True when a proto2 ``required`` field is reachable from ``desc``."""
    seen, todo = set(), [desc]
    while todo:
        d = todo.pop()
        if d.full_name in seen:
            continue
        seen.add(d.full_name)
        for f in d.fields:
            if f.is_required:
                return True
            if f.type == FD.TYPE_MESSAGE:
                todo.append(f.message_type)
    return False


class ProtoCodec:
    """Decoder of payloads of one message type (the reader's) to Arrow."""

    def __init__(self, compiled: CompiledProto, message: str | None, options: DecodeOptions):
        self.compiled = compiled
        self.desc = compiled.find(message)
        self.options = options
        self.arrow_type = arrow_type_of_message(self.desc, options.enum_as,
                                                max_depth=options.max_recursion_depth)
        self.cls = compiled.message_class(self.desc)
        self._engine: PtarsEngine | None = None  # built at the first fast decode
        self._validator: WireValidator | None = None
        self._engine_ok = engine_supports(self.desc)
        self._required = _has_required(self.desc)

    @property
    def full_name(self) -> str:
        return self.desc.full_name

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        """(values of ``arrow_type``, error text or None per row)."""
        n = len(payloads)
        prefix = f"protobuf decode failed for schema id {label}"
        if payloads.null_count:
            payloads = pc.if_else(payloads.is_valid(), payloads, pa.scalar(b"", payloads.type))
        checked = False  # True when the compiled wire check (overflows included) ran
        if n and self.options.fast_path and self._engine_ok:
            vals, errors, checked = self._decode_engine(payloads, label, prefix)
        else:
            vals, errors = self._decode_reference(payloads, label)
        if not checked:
            for i, why in self._wire_errors(payloads).items():
                errors[i] = errors[i] or f"{prefix}: {why}"
        if self._required:
            for i, why in self._missing_required(payloads, errors).items():
                errors[i] = f"{prefix}: {why}"
        if errors.count(None) != n:  # an error row never carries a (possibly wrong) value
            bad = pa.array(np.not_equal(np.array(errors, object), _NONE).astype(bool))
            vals = pc.if_else(bad, pa.nulls(n, vals.type), vals)
        return vals, errors

    def _decode_engine(self, payloads: pa.BinaryArray, label: str, prefix: str):
        if self._engine is None:
            try:
                self._engine = PtarsEngine(self.desc, self.arrow_type, self.options.enum_as,
                                           self.options.limits.max_collection_items)
            except NotImplementedError:
                self._engine_ok = False
                return (*self._decode_reference(payloads, label), False)
            self._validator = WireValidator(self.desc, self._engine.merged_fields) \
                if validator_available() else None
        n = len(payloads)
        vals, bad, redo = self._engine.decode(payloads)
        errors: list = [None] * n
        if self._validator is not None:
            refused, odd = self._validator.check(payloads)
            redo |= odd
        else:
            refused = self._refused_by_protobuf(payloads)
        for i, why in chain(bad.items(), refused.items()):
            errors[i] = f"{prefix}: {why}"
            redo[i] = False
        if vals is None:
            vals = pa.nulls(n, self.arrow_type)
        if redo.any():
            idx = np.flatnonzero(redo)
            sub_vals, sub_errs = self._decode_reference(payloads.take(pa.array(idx)), label)
            perm = np.arange(n, dtype=np.int64)
            perm[idx] = n + np.arange(len(idx))
            vals = pa.concat_arrays([vals, sub_vals]).take(pa.array(perm))
            for j, i in enumerate(idx.tolist()):
                errors[i] = errors[i] or sub_errs[j]
        return vals, errors, self._validator is not None

    def _wire_errors(self, payloads: pa.BinaryArray) -> dict[int, str]:
        """Varints protobuf's parser accepts but that overflow 64 bits (it drops the bits): the
        compiled wire check when numba is there (exact), else ``overflow_rows`` (a heuristic
        that also flags bytes a later copy of the same field replaced: protobuf merged them)."""
        if not validator_available():
            return overflow_rows(payloads, self.cls)
        if self._validator is None:
            self._validator = WireValidator(self.desc)
        return self._validator.check(payloads)[0]

    def _missing_required(self, payloads: pa.BinaryArray, errors: list) -> dict[int, str]:
        """{row: reason} for rows without an error that lack a proto2 ``required`` field (at
        any depth). protobuf's parser accepts them (``ParseFromString`` does not check) and
        ptars reads the default: a value that was never sent. One C-level parse of the group
        and one ``IsInitialized``; rows one by one only when some row lacks one."""
        keep = np.flatnonzero(np.equal(np.array(errors, object), _NONE))
        if not len(keep):
            return {}
        part = payloads.take(pa.array(keep))
        try:
            batch = self.compiled.batch_class(self.desc).FromString(frame_as_repeated(part))
            if len(batch.items) == len(keep) and batch.IsInitialized():
                return {}
            msgs = list(batch.items) if len(batch.items) == len(keep) else None
        except (PbDecodeError, ValueError, RuntimeError):
            msgs = None
        out = {}
        for j, i in enumerate(keep.tolist()):
            try:
                m = msgs[j] if msgs is not None else self.cls.FromString(part[j].as_py())
            except (PbDecodeError, ValueError, RuntimeError, TypeError):
                continue  # not this check's business: the parse decides elsewhere
            if not m.IsInitialized():
                out[i] = "missing required fields: " + ", ".join(m.FindInitializationErrors())
        return out

    def _refused_by_protobuf(self, payloads: pa.BinaryArray) -> dict[int, str]:
        """{row: reason} for rows protobuf's own parser refuses: one C-level parse of the
        whole group (no Python object per row), row by row only when it fails. ptars
        accepts a few malformed inputs (stray group tags), so its verdict is not enough."""
        try:
            batch = self.compiled.batch_class(self.desc).FromString(frame_as_repeated(payloads))
            if len(batch.items) == len(payloads):
                return {}
        except (PbDecodeError, ValueError, RuntimeError):
            pass
        bad = {}
        for i, p in enumerate(payloads.to_pylist()):
            try:
                self.cls.FromString(p)
            except (PbDecodeError, ValueError, RuntimeError, TypeError) as e:
                bad[i] = f"{type(e).__name__}: {e}"
        return bad

    def _decode_reference(self, payloads: pa.BinaryArray, label: str):
        n = len(payloads)
        prefix = f"protobuf decode failed for schema id {label}"
        errors: list = [None] * n
        framed = frame_as_repeated(payloads) if n and self.options.fast_path else None
        shadow = self.compiled.shadow(self.desc) if framed is not None else None
        msgs: list | None
        if shadow is not None:
            try:
                msgs = list(self.compiled.batch_class(shadow[0]).FromString(framed).items)
                if len(msgs) == n:
                    return self._values(msgs, None, shadow[0], self.arrow_type), errors
            except (PbDecodeError, pa.ArrowException, ValueError, TypeError, OverflowError,
                    RuntimeError):
                pass  # redo the group on the plain path, which locates bad rows
        msgs = None
        if framed is not None:
            try:
                msgs = list(self.compiled.batch_class(self.desc).FromString(framed).items)
                if len(msgs) != n:
                    msgs = None
            except (PbDecodeError, ValueError, RuntimeError):
                msgs = None
        mask = None
        if msgs is None:
            msgs = []
            mask = np.zeros(n, bool)
            for i, p in enumerate(payloads.to_pylist()):
                try:
                    msgs.append(self.cls.FromString(p))
                except (PbDecodeError, ValueError, RuntimeError, TypeError) as e:
                    msgs.append(self.cls())
                    mask[i] = True
                    errors[i] = f"{prefix}: {type(e).__name__}: {e}"
        try:
            return self._values(msgs, mask, self.desc, self.arrow_type), errors
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            pass
        rows = []
        for i, m in enumerate(msgs):  # locate rows whose values do not fit (rare)
            try:
                if errors[i] is not None:
                    raise ValueError(errors[i])
                rows.append(self._values([m], None, self.desc, self.arrow_type).to_pylist()[0])
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
                rows.append(None)
                errors[i] = errors[i] or f"{prefix}: {e}"
        return to_arrow_checked(rows, errors, self.arrow_type, prefix)

    # -- extraction: C-level map() over message lists; nulls travel as numpy masks -----------
    def _values(self, msgs: list, mask, desc, t: pa.DataType) -> pa.Array:
        """Array of ``t`` from messages of ``desc``; ``mask`` (True = null) or None."""
        name = desc.full_name
        n = len(msgs)
        if mask is not None and not mask.any():
            mask = None
        if name in WKT_SCALARS:
            if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
                secs = np.fromiter(map(_SECONDS, msgs), np.int64, n)
                nanos = np.fromiter(map(_NANOS, msgs), np.int64, n)
                return pa.array(_micros(secs, nanos, name, mask), t, mask=mask)
            return pa.array(list(map(_VALUE, msgs)), t, mask=mask)
        if name in WKT_JSON:
            pool = self.compiled.pool
            return pa.array([None if mask is not None and mask[i] else json_text(m, pool)
                             for i, m in enumerate(msgs)], t)
        children = [self._field(msgs, desc.fields_by_name[field.name], field.type) for field in t]
        # Fields below the recursion cut are dropped (recursionDepth, as in Spark's from_protobuf).
        amask = pa.array(mask) if mask is not None else None
        if not children:  # from_arrays cannot tell the length of a struct without children
            valid = None if mask is None else pa.array(~np.asarray(mask, bool))
            return pa.Array.from_buffers(t, n, [None if valid is None else valid.buffers()[1]],
                                         null_count=-1 if valid is not None else 0)
        return pa.StructArray.from_arrays(children, fields=list(t), mask=amask)

    def _scalars(self, vals: list, f, t: pa.DataType, mask=None) -> pa.Array:
        if f.type == FD.TYPE_ENUM and not pa.types.is_integer(t):
            return _enum_names(vals, f, mask)
        return pa.array(vals, t, mask=mask)

    def _items(self, flat: list, f, t: pa.DataType) -> pa.Array:
        if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
            return self._values(flat, None, f.message_type, t)
        return self._scalars(flat, f, t)

    def _field(self, msgs: list, f, t: pa.DataType) -> pa.Array:
        name = f.name
        get = attrgetter(name)
        n = len(msgs)
        if is_map(f) or f.is_repeated:
            seqs = list(map(get, msgs))
            lens = np.fromiter(map(len, seqs), np.int64, n)
            if n and lens.max() > self.options.limits.max_collection_items:
                raise ValueError(f"field {f.full_name} holds more than "
                                 f"{self.options.limits.max_collection_items} items (max_collection_items)")
            offsets = np.zeros(n + 1, np.int32)
            np.cumsum(lens, out=offsets[1:])
            if is_map(f):
                kf = f.message_type.fields_by_name["key"]
                vf = f.message_type.fields_by_name["value"]
                keys = list(chain.from_iterable(map(_KEYS, seqs)))
                items = list(chain.from_iterable(map(_ITEMS, seqs)))
                return pa.MapArray.from_arrays(pa.array(offsets), self._items(keys, kf, t.key_type),
                                               self._items(items, vf, t.item_type), type=t)
            values = self._items(list(chain.from_iterable(seqs)), f, t.value_type)
            return pa.ListArray.from_arrays(pa.array(offsets), values, type=t)
        vals = list(map(get, msgs))
        mask = None
        if f.has_presence:
            mask = ~np.fromiter(map(methodcaller("HasField", name), msgs), bool, n)
        if f.type == FD.TYPE_BYTES and pa.types.is_timestamp(t) or \
                f.type == FD.TYPE_BYTES and pa.types.is_int64(t):  # shadowed Timestamp/Duration
            return _time_from_bytes(vals, mask, t)
        if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
            return self._values(vals, mask, f.message_type, t)
        return self._scalars(vals, f, t, mask if mask is not None and mask.any() else None)


_SECONDS, _NANOS, _VALUE = attrgetter("seconds"), attrgetter("nanos"), attrgetter("value")
_KEYS, _ITEMS = methodcaller("keys"), methodcaller("values")


def _enum_names(vals: list, f, mask) -> pa.Array:
    """Enum numbers → names (unknown numbers, possible in proto3, as their digits)."""
    numbers = sorted({v.number for v in f.enum_type.values})
    by_number = {v.number: v.name for v in f.enum_type.values}
    nums = np.asarray(vals, np.int64) if vals else np.zeros(0, np.int64)
    idx = np.searchsorted(numbers, nums)
    idx_c = np.minimum(idx, max(len(numbers) - 1, 0))
    known = (idx < len(numbers)) & (np.asarray(numbers, np.int64)[idx_c] == nums) if numbers \
        else np.zeros(len(nums), bool)
    if known.all():
        dictionary = pa.array([by_number[k] for k in numbers], pa.string())
        out = pa.DictionaryArray.from_arrays(pa.array(idx_c.astype(np.int32), mask=mask), dictionary)
        return out.cast(pa.string())
    return pa.array([by_number.get(v, str(v)) for v in vals], pa.string(), mask=mask)


def _micros(secs: np.ndarray, nanos: np.ndarray, name: str, mask) -> np.ndarray:
    """seconds + nanos → microseconds (nanos truncated toward zero, as Spark and ptars do);
    ValueError when a present value is outside the type's range (years 1..9999 for a
    Timestamp, ±10,000 years for a Duration) rather than a wrapped number."""
    safe = np.clip(secs, -10**12, 10**12)
    us = safe * 1_000_000 + np.where(nanos < 0, -((-nanos) // 1000), nanos // 1000)
    if name == "google.protobuf.Timestamp":
        bad = (secs != safe) | (us < TS_MIN) | (us >= TS_MAX)
    else:
        bad = (secs != safe) | (np.abs(us) > DUR_MAX)
    if mask is not None:
        bad &= ~np.asarray(mask, bool)
    if bad.any():
        raise ValueError(f"{name} value out of range")
    return us


def _struct_children(arr: pa.StructArray) -> list:
    if arr.offset == 0 and arr.null_count == 0:
        return [arr.field(i) for i in range(arr.type.num_fields)]
    return arr.flatten()


def _read_varints(data: np.ndarray, pos: np.ndarray, active: np.ndarray, ends: np.ndarray):
    """One varint at ``pos`` (before the row's end) for every active row: (value as uint64,
    new pos, ok); inactive rows keep their position and read as ok."""
    from wireformat import read_varints

    val = np.zeros(len(pos), np.uint64)
    out = pos.copy()
    ok = np.ones(len(pos), bool)
    idx = np.flatnonzero(active)
    if len(idx):
        val[idx], out[idx], ok[idx] = read_varints(data, pos[idx], ends[idx], 10)
    return val, out, ok


def _time_from_bytes(vals: list, mask, t: pa.DataType) -> pa.Array:
    """Serialized Timestamp/Duration messages → microseconds, vectorized.

    Both hold ``int64 seconds = 1; int32 nanos = 2;`` (varints); anything else in the bytes
    sends that row through the real message class.
    """
    n = len(vals)
    lens = np.fromiter(map(len, vals), np.int64, n)
    ends = np.cumsum(lens)
    pos = ends - lens
    data = np.frombuffer(b"".join(vals), np.uint8)
    secs = np.zeros(n, np.int64)
    nanos = np.zeros(n, np.int64)
    bad = np.zeros(n, bool)
    active = pos < ends
    while active.any():
        tag, pos, ok = _read_varints(data, pos, active, ends)
        value, pos, ok2 = _read_varints(data, pos, active & ok & ((tag & np.uint64(7)) == 0), ends)
        wire0 = (tag & np.uint64(7)) == 0
        bad |= active & ~(ok & ok2 & wire0)
        good = active & ~bad
        v = value.view(np.int64)
        secs = np.where(good & (tag == 0x08), v, secs)
        nanos = np.where(good & (tag == 0x10), v.astype(np.int32).astype(np.int64), nanos)
        active = good & (pos < ends)
        bad |= good & (pos > ends)
    micros = _micros(secs, nanos, "google.protobuf.Timestamp" if pa.types.is_timestamp(t)
                     else "google.protobuf.Duration", bad if mask is None else (bad | mask))
    if bad.any():
        from google.protobuf import timestamp_pb2
        for i in np.flatnonzero(bad).tolist():
            try:
                m = timestamp_pb2.Timestamp.FromString(vals[i])  # same wire layout as Duration
            except PbDecodeError as e:
                raise ValueError(f"corrupt Timestamp/Duration: {e}") from e
            micros[i] = _micros(np.array([m.seconds], np.int64), np.array([m.nanos], np.int64),
                                "google.protobuf.Timestamp" if pa.types.is_timestamp(t)
                                else "google.protobuf.Duration", None)[0]
    return pa.array(micros, t, mask=mask if mask is not None and mask.any() else None)
