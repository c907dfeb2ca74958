"""A compiled (numba) check of Protobuf wire data against a schema, for every row at once.

ptars accepts a few malformed inputs that protobuf refuses (an end-group tag that does not
match its start), and every parser accepts a 10-byte varint whose last byte carries bits
above the 64th. This walker refuses both, plus everything protobuf's parser refuses on the
wire level: bad wire types, field number 0, tags over 32 bits, truncated varints/fixed
fields, lengths past the end, bad packed runs, unterminated or stray groups, nesting deeper
than :data:`MAX_DEPTH`. String contents (UTF-8) are left to ptars, which checks them.

It is an explicit-stack loop over the bytes — bounded work per byte, no recursion driven
by the data — compiled once per process. Message fields recurse into their type's table;
unknown fields (and fields with an unexpected wire type, which protobuf also treats as
unknown) are skipped after their own checks. Rows protobuf reads its own way are flagged for
its path: a map entry with an unknown field, and a second occurrence, in one message, of a
field protobuf merges where the engine would keep only the last (:func:`merged_by_protobuf`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.formats.protobuf._layout import WIRE_REASONS, FieldKind
from connector.formats.protobuf._limits import DENSE, MAX_DEPTH
from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS

__all__ = ["DENSE", "MAX_DEPTH", "WireValidator", "available", "merged_by_protobuf"]

_REASONS = {int(e): why.format(depth=MAX_DEPTH) for e, why in WIRE_REASONS.items()}


class WireTables(NamedTuple):
    """A message type's schema closure as the kernel takes it: message types ``t`` (fields
    ``t_start[t]:t_end[t]`` sorted by number) and fields ``f``."""

    root: int             # the message type checked
    t_start: np.ndarray   # int64 per type
    t_end: np.ndarray
    t_entry: np.ndarray   # bool per type: a map entry
    f_num: np.ndarray     # int64 per field: its number
    f_kind: np.ndarray    # int64 per field: FieldKind
    f_child: np.ndarray   # int64 per field: a message field's type (-1: none)
    f_packed: np.ndarray  # bool per field: may come packed
    f_wt: np.ndarray      # int64 per field: its wire type
    f_once: np.ndarray    # bool per field: a second occurrence goes to protobuf's path
    f_single: np.ndarray  # bool per field: a singular message (protobuf merges repeats)
    dense: np.ndarray     # int64 (types × DENSE): the field of each small number (-1: none)


class Payloads(NamedTuple):
    """Payload ``r`` is ``data[offs[r]:offs[r + 1]]``."""

    data: np.ndarray  # uint8
    offs: np.ndarray  # int64


class CheckOut(NamedTuple):
    code: np.ndarray  # int8 per row: WireErr (0: fine)
    redo: np.ndarray  # bool per row: protobuf's own path decides


class Frames(NamedTuple):
    """The kernel's scratch: a frame per message or group entered (its end, type (-1: a group),
    group number (-1: a message) and instance id: a singular message field sent twice is one
    instance as protobuf merges it, so its id derives from its parent's and the field), and per
    field the instance that last had it."""

    end: np.ndarray
    type: np.ndarray
    group: np.ndarray
    stamp: np.ndarray
    once: np.ndarray

    @staticmethod
    def new(nfields: int) -> "Frames":
        def frames() -> np.ndarray:
            return np.empty(MAX_DEPTH + 2, np.int64)

        return Frames(frames(), frames(), frames(), frames(), np.full(nfields, -1, np.int64))

_VARINT = {FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_SINT32,
           FD.TYPE_SINT64, FD.TYPE_BOOL, FD.TYPE_ENUM}
_F64 = {FD.TYPE_DOUBLE, FD.TYPE_FIXED64, FD.TYPE_SFIXED64}
_F32 = {FD.TYPE_FLOAT, FD.TYPE_FIXED32, FD.TYPE_SFIXED32}

_KERNEL = None


def merged_by_protobuf(f) -> bool:
    """A singular message field whose second occurrence in one message protobuf merges into
    the first while the engine would keep only the second: JSON-text types (read as bytes)
    anywhere, and Timestamp/Duration/wrappers in a oneof or a map entry (elsewhere the engine
    sees both, made repeated). Such rows go to the reference path."""
    if f.type != FD.TYPE_MESSAGE or f.is_repeated:
        return False
    name = f.message_type.full_name
    if name in WKT_JSON:
        return True
    return name in WKT_SCALARS and (f.containing_oneof is not None
                                    or f.containing_type.GetOptions().map_entry)


def available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        from connector.formats.protobuf._kernel import check

        _KERNEL = check
    return _KERNEL


class WireValidator:
    """Tables of one message type's schema closure, and :meth:`check` over payloads."""

    def __init__(self, desc, merged: set | frozenset = frozenset()):
        index: dict[str, int] = {}
        order: list = []
        todo = [desc]
        while todo:
            d = todo.pop()
            if d.full_name in index:
                continue
            index[d.full_name] = len(order)
            order.append(d)
            todo += [f.message_type for f in d.fields if f.type == FD.TYPE_MESSAGE]
        starts: list[int] = []
        ends: list[int] = []
        entry: list[bool] = []
        nums: list[int] = []
        kinds: list[int] = []
        childs: list[int] = []
        packed: list[bool] = []
        wts: list[int] = []
        once: list[bool] = []
        single: list[bool] = []
        for d in order:
            starts.append(len(nums))
            entry.append(d.GetOptions().map_entry)
            for f in sorted(d.fields, key=lambda f: f.number):
                nums.append(f.number)
                once.append(merged_by_protobuf(f) or (d.full_name, f.name) in merged)
                single.append(f.type == FD.TYPE_MESSAGE and not f.is_repeated)
                if f.type == FD.TYPE_MESSAGE:
                    kinds.append(FieldKind.MSG)
                    childs.append(index[f.message_type.full_name])
                else:
                    kinds.append(FieldKind.VARINT if f.type in _VARINT else FieldKind.F64 if f.type in _F64
                                 else FieldKind.F32 if f.type in _F32 else FieldKind.OTHER)
                    childs.append(-1)
                packed.append(f.is_repeated and f.type not in (FD.TYPE_MESSAGE, FD.TYPE_STRING,
                                                              FD.TYPE_BYTES, FD.TYPE_GROUP))
                wts.append(0 if kinds[-1] == FieldKind.VARINT else 1 if kinds[-1] == FieldKind.F64
                           else 5 if kinds[-1] == FieldKind.F32 else 3 if f.type == FD.TYPE_GROUP else 2)
            ends.append(len(nums))
        self._tables = WireTables(0, np.asarray(starts, np.int64), np.asarray(ends, np.int64),
                                  np.asarray(entry, np.bool_),
                                  np.asarray(nums, np.int64), np.asarray(kinds, np.int64),
                                  np.asarray(childs, np.int64), np.asarray(packed, np.bool_),
                                  np.asarray(wts, np.int64), np.asarray(once, np.bool_),
                                  np.asarray(single, np.bool_), self._dense(order, starts, nums))

    @staticmethod
    def _dense(order, starts, nums) -> np.ndarray:
        dense = np.full(len(order) * DENSE, -1, np.int64)
        for t in range(len(order)):
            end = starts[t + 1] if t + 1 < len(starts) else len(nums)
            for i in range(starts[t], end):
                if nums[i] < DENSE:
                    dense[t * DENSE + nums[i]] = i
        return dense

    def check(self, payloads: pa.BinaryArray) -> tuple[dict[int, str], np.ndarray]:
        """({row: reason} for rows whose wire data is malformed, rows protobuf reads its own
        way: a map entry with an unknown field or an unexpected wire type, which protobuf
        drops whole)."""
        n = len(payloads)
        if n == 0:
            return {}, np.zeros(0, bool)
        offs = np.frombuffer(payloads.buffers()[1], np.int32, n + 1,
                             payloads.offset * 4).astype(np.int64)
        buf = payloads.buffers()[2]
        data = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
        out = CheckOut(np.zeros(n, np.int8), np.zeros(n, np.bool_))
        _kernel()(self._tables, Payloads(data, offs), out, Frames.new(len(self._tables.f_num)))
        codes, redo = out
        bad = np.flatnonzero(codes)
        return {int(i): f"malformed protobuf wire data: {_REASONS[int(codes[i])]}"
                for i in bad}, redo
