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
unknown) are skipped after their own checks.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor as FD

__all__ = ["WireValidator", "MAX_DEPTH", "available"]

MAX_DEPTH = 100  # protobuf's default recursion limit

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


def available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _kernel():
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    import numba

    @numba.njit(cache=False, nogil=True)
    def varint(data, pos, end):
        """(value low bits, new pos, error code)."""
        v = np.uint64(0)
        for k in range(10):
            if pos >= end:
                return v, pos, 1
            b = data[pos]
            pos += 1
            if k == 9 and b > 1:
                return v, pos, 2
            v |= np.uint64(b & 0x7F) << np.uint64(7 * k)
            if b < 0x80:
                return v, pos, 0
        return v, pos, 1

    @numba.njit(cache=False, nogil=True)
    def lookup(t, num, t_start, t_end, f_num):
        lo, hi = t_start[t], t_end[t]
        while lo < hi:
            mid = (lo + hi) // 2
            if f_num[mid] < num:
                lo = mid + 1
            else:
                hi = mid
        if lo < t_end[t] and f_num[lo] == num:
            return lo
        return -1

    @numba.njit(cache=False, nogil=True)
    def check(data, offs, root, t_start, t_end, t_entry, f_num, f_kind, f_child, f_packed,
              f_wt, out_code, out_redo):
        n = len(offs) - 1
        ends = np.empty(MAX_DEPTH + 2, np.int64)
        types = np.empty(MAX_DEPTH + 2, np.int64)
        groups = np.empty(MAX_DEPTH + 2, np.int64)
        for r in range(n):
            pos = offs[r]
            depth = 0
            ends[0] = offs[r + 1]
            types[0] = root
            groups[0] = -1
            code = 0
            while True:
                end = ends[depth]
                if pos >= end:
                    if pos > end:
                        code = 6
                        break
                    if groups[depth] >= 0:
                        code = 8
                        break
                    if depth == 0:
                        break
                    depth -= 1
                    continue
                tag, pos, c = varint(data, pos, end)
                if c != 0:
                    code = c
                    break
                if tag >= np.uint64(1) << np.uint64(32) or (tag >> np.uint64(3)) == 0:
                    code = 3
                    break
                wt = int(tag & np.uint64(7))
                num = int(tag >> np.uint64(3))
                if wt == 4:
                    if groups[depth] == num:
                        depth -= 1
                        continue
                    code = 9
                    break
                t = types[depth]
                fi = lookup(t, num, t_start, t_end, f_num) if t >= 0 else -1
                kind = f_kind[fi] if fi >= 0 else 0
                if t >= 0 and t_entry[t] and (fi < 0 or f_wt[fi] != wt):
                    out_redo[r] = True  # protobuf drops such a map entry: its own path decides
                if wt == 0:
                    _, pos, c = varint(data, pos, end)
                    if c != 0:
                        code = c
                        break
                elif wt == 1:
                    pos += 8
                    if pos > end:
                        code = 5
                        break
                elif wt == 5:
                    pos += 4
                    if pos > end:
                        code = 5
                        break
                elif wt == 2:
                    ln, pos, c = varint(data, pos, end)
                    if c != 0:
                        code = c
                        break
                    if ln > np.uint64(end - pos):
                        code = 6
                        break
                    stop = pos + int(ln)
                    if kind == 4:
                        if depth + 1 >= MAX_DEPTH:
                            code = 10
                            break
                        depth += 1
                        ends[depth] = stop
                        types[depth] = f_child[fi]
                        groups[depth] = -1
                        continue
                    if fi >= 0 and f_packed[fi]:
                        if kind == 1:
                            p = pos
                            while p < stop:
                                _, p, c = varint(data, p, stop)
                                if c != 0:
                                    break
                            if c != 0:
                                code = 7 if c == 1 else c
                                break
                        elif kind == 2 and (stop - pos) % 8 != 0:
                            code = 7
                            break
                        elif kind == 3 and (stop - pos) % 4 != 0:
                            code = 7
                            break
                    pos = stop
                elif wt == 3:
                    if depth + 1 >= MAX_DEPTH:
                        code = 10
                        break
                    depth += 1
                    ends[depth] = end
                    types[depth] = -1
                    groups[depth] = num
                else:
                    code = 4
                    break
            out_code[r] = code

    _KERNEL = check
    return check


class WireValidator:
    """Tables of one message type's schema closure, and :meth:`check` over payloads."""

    def __init__(self, desc):
        index: dict[str, int] = {}
        order = []
        todo = [desc]
        while todo:
            d = todo.pop()
            if d.full_name in index:
                continue
            index[d.full_name] = len(order)
            order.append(d)
            todo += [f.message_type for f in d.fields if f.type == FD.TYPE_MESSAGE]
        starts, ends, entry, nums, kinds, childs, packed, wts = [], [], [], [], [], [], [], []
        for d in order:
            starts.append(len(nums))
            entry.append(d.GetOptions().map_entry)
            for f in sorted(d.fields, key=lambda f: f.number):
                nums.append(f.number)
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
                        np.asarray(wts, np.int64))

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
