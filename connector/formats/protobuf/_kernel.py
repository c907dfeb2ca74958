"""The numba kernel of :mod:`connector.formats.protobuf._validate` (imported lazily: numba is
slow to import, and only Protobuf reads need it). Compiled once, cached on disk.

:func:`check` takes named structures: the schema's tables (``_validate.WireTables``), the
payloads (``_validate.Payloads``) and its scratch (``_validate.Frames``). It walks each payload
with an explicit stack of frames (one per message or group entered), dispatching each field
on its wire type; the handlers below (``@inline``: pasted into the kernel at import, see
``core._inline``) return the new position and an error code (``_layout.WireErr``).
"""
import numpy as np

from connector.formats.core.kernels import helper, inline, kernel, varint
from connector.formats.protobuf._layout import FieldKind, WireErr
from connector.formats.protobuf._limits import DENSE, MAX_DEPTH

_U32 = np.uint64(1) << np.uint64(32)


# a varint's fault (core.kernels.varint) → the wire error
_VARINT_ERR = np.array([0, WireErr.VARINT, WireErr.OVERFLOW, WireErr.VARINT], np.int64)


@helper
def _varint(data, pos, end):
    """(value low bits, new pos, error code)."""
    v, pos, fault = varint(data, pos, end)
    return v, pos, _VARINT_ERR[fault]


@inline
def _lookup(S, t, num):
    """The field of number ``num`` in message type ``t`` (-1: unknown, or ``t`` < 0: a group's
    fields, which the check does not know)."""
    if t < 0:
        return -1
    if num < DENSE:  # small field numbers: one table read
        return S.dense[t * DENSE + num]
    lo, hi = S.t_start[t], S.t_end[t]
    while lo < hi:
        mid = (lo + hi) // 2
        if S.f_num[mid] < num:
            lo = mid + 1
        else:
            hi = mid
    if lo < S.t_end[t] and S.f_num[lo] == num:
        return lo
    return -1


@inline
def _push(F, depth, end, typ, group, stamp):
    """A frame for a message (``group`` -1) or group entered: the new depth, or -1 when too deep."""
    if depth + 1 >= MAX_DEPTH:
        return -1
    depth += 1
    F.end[depth] = end
    F.type[depth] = typ
    F.group[depth] = group
    F.stamp[depth] = stamp
    return depth


@inline
def _packed(S, data, fi, pos, stop):
    """The error of a packed run ``data[pos:stop]`` of field ``fi`` (0: none, or not packed)."""
    if fi < 0 or not S.f_packed[fi]:
        return 0
    kind = S.f_kind[fi]
    if kind == FieldKind.VARINT:
        p = pos
        c = 0
        while p < stop and c == 0:
            _, p, c = _varint(data, p, stop)
        return WireErr.PACKED if c == WireErr.VARINT else c
    if (kind == FieldKind.F64 and (stop - pos) % 8 != 0) or \
            (kind == FieldKind.F32 and (stop - pos) % 4 != 0):
        return WireErr.PACKED
    return 0


@inline
def _redo(S, Y, F, r, depth, fi, wt):
    """Flag row ``r`` for protobuf's own path where protobuf reads the field its own way: in a
    map entry, an unknown field or an unexpected wire type (protobuf drops the entry); a
    second occurrence, in one message, of a field protobuf merges."""
    t = F.type[depth]
    if t >= 0 and S.t_entry[t] and (fi < 0 or S.f_wt[fi] != wt):
        Y.redo[r] = True
    if fi >= 0 and S.f_once[fi]:
        if F.once[fi] == F.stamp[depth]:
            Y.redo[r] = True
        F.once[fi] = F.stamp[depth]


@kernel()
def check(S, P, Y, F):
    """Each payload ``P.data[P.offs[r]:P.offs[r + 1]]`` against message type ``S.root``: its
    fault in ``Y.code[r]`` (``_layout.WireErr``, 0: none), ``Y.redo[r]`` set when protobuf's
    own path must decide. ``F``: scratch (frames of messages and groups, last instances)."""
    n = len(P.offs) - 1
    stamp = 0  # one id per message instance as protobuf sees it (see Frames)
    for r in range(n):
        pos = P.offs[r]
        depth = 0
        F.end[0] = P.offs[r + 1]
        F.type[0] = S.root
        F.group[0] = -1
        stamp += 1
        F.stamp[0] = stamp
        code = 0
        while True:
            end = F.end[depth]
            if pos >= end:
                if pos > end:
                    code = WireErr.LENGTH
                elif F.group[depth] >= 0:
                    code = WireErr.UNTERMINATED
                elif depth > 0:
                    depth -= 1
                    continue
                break
            tag, pos, code = _varint(P.data, pos, end)
            if code:
                break
            if tag >= _U32 or (tag >> np.uint64(3)) == 0:
                code = WireErr.TAG
                break
            wt = int(tag & np.uint64(7))
            num = int(tag >> np.uint64(3))
            if wt == 4:  # end of a group: its own number closes it
                if F.group[depth] != num:
                    code = WireErr.END_GROUP
                    break
                depth -= 1
                continue
            fi = _lookup(S, F.type[depth], num)
            _redo(S, Y, F, r, depth, fi, wt)
            if wt == 0:
                _, pos, code = _varint(P.data, pos, end)
            elif wt == 1 or wt == 5:
                pos += 8 if wt == 1 else 4
                if pos > end:
                    code = WireErr.TRUNCATED
            elif wt == 2:
                ln, pos, code = _varint(P.data, pos, end)
                if code == 0 and ln > np.uint64(end - pos):
                    code = WireErr.LENGTH
                if code == 0:
                    stop = pos + int(ln)
                    if fi >= 0 and S.f_kind[fi] == FieldKind.MSG:
                        if S.f_single[fi]:  # merged by protobuf: the instance derives from its parent's
                            h = F.stamp[depth] * np.int64(-7046029254386353131) + fi + 1
                            inst = h ^ (h >> np.int64(29))
                        else:
                            stamp += 1
                            inst = stamp
                        depth = _push(F, depth, stop, S.f_child[fi], -1, inst)
                        if depth < 0:
                            code = WireErr.DEEP
                    else:
                        code = _packed(S, P.data, fi, pos, stop)
                        pos = stop
            elif wt == 3:
                stamp += 1
                depth = _push(F, depth, end, -1, num, stamp)
                if depth < 0:
                    code = WireErr.DEEP
            else:
                code = WireErr.WIRE_TYPE
            if code:
                break
        Y.code[r] = code
