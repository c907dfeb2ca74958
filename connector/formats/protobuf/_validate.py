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

import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.formats.protobuf._limits import DENSE, MAX_DEPTH
from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS

__all__ = ["DENSE", "MAX_DEPTH", "WireValidator", "available", "merged_by_protobuf"]


K_OTHER, K_VARINT, K_F64, K_F32, K_MSG = 0, 1, 2, 3, 4
_REASONS = {1: "truncated or over-long varint", 2: "varint overflows 64 bits",
            3: "field number 0 or tag over 32 bits", 4: "invalid wire type",
            5: "truncated field", 6: "length past the end of the message",
            7: "bad packed repeated field", 8: "unterminated group",
            9: "end-group tag without a matching start", 10: f"nested deeper than {MAX_DEPTH} levels"}

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
                    kinds.append(K_MSG)
                    childs.append(index[f.message_type.full_name])
                else:
                    kinds.append(K_VARINT if f.type in _VARINT else K_F64 if f.type in _F64
                                 else K_F32 if f.type in _F32 else K_OTHER)
                    childs.append(-1)
                packed.append(f.is_repeated and f.type not in (FD.TYPE_MESSAGE, FD.TYPE_STRING,
                                                              FD.TYPE_BYTES, FD.TYPE_GROUP))
                wts.append(0 if kinds[-1] == K_VARINT else 1 if kinds[-1] == K_F64
                           else 5 if kinds[-1] == K_F32 else 3 if f.type == FD.TYPE_GROUP else 2)
            ends.append(len(nums))
        self._tables = (np.asarray(starts, np.int64), np.asarray(ends, np.int64),
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
        codes = np.zeros(n, np.int8)
        redo = np.zeros(n, np.bool_)
        _kernel()(data, offs, 0, *self._tables, codes, redo)
        bad = np.flatnonzero(codes)
        return {int(i): f"malformed protobuf wire data: {_REASONS[int(codes[i])]}"
                for i in bad}, redo
