"""The numba kernel of :mod:`connector.formats.protobuf._validate` (imported lazily: numba is
slow to import, and only Protobuf reads need it). Compiled once, cached on disk."""
import numpy as np

from connector.formats.core import njit
from connector.formats.protobuf._limits import DENSE, MAX_DEPTH


@njit(nogil=True)
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


@njit(nogil=True)
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


@njit(nogil=True)
def check(data, offs, root, t_start, t_end, t_entry, f_num, f_kind, f_child, f_packed,
          f_wt, f_once, f_single, dense, out_code, out_redo):
    n = len(offs) - 1
    ends = np.empty(MAX_DEPTH + 2, np.int64)
    types = np.empty(MAX_DEPTH + 2, np.int64)
    groups = np.empty(MAX_DEPTH + 2, np.int64)
    # one id per message instance as protobuf sees it: a singular message field sent twice is
    # one instance (merged), so its id derives from its parent's and the field
    stamps = np.empty(MAX_DEPTH + 2, np.int64)
    once = np.full(len(f_num), -1, np.int64)  # the instance that last had the field
    stamp = 0
    for r in range(n):
        pos = offs[r]
        depth = 0
        ends[0] = offs[r + 1]
        types[0] = root
        groups[0] = -1
        stamp += 1
        stamps[0] = stamp
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
            if t < 0:
                fi = -1
            elif num < DENSE:  # small field numbers: one table read
                fi = dense[t * DENSE + num]
            else:
                fi = lookup(t, num, t_start, t_end, f_num)
            kind = f_kind[fi] if fi >= 0 else 0
            if t >= 0 and t_entry[t] and (fi < 0 or f_wt[fi] != wt):
                out_redo[r] = True  # protobuf drops such a map entry: its own path decides
            if fi >= 0 and f_once[fi]:  # protobuf merges a second one: its own path decides
                if once[fi] == stamps[depth]:
                    out_redo[r] = True
                once[fi] = stamps[depth]
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
                    if f_single[fi]:
                        h = stamps[depth - 1] * np.int64(-7046029254386353131) + fi + 1
                        stamps[depth] = h ^ (h >> np.int64(29))
                    else:
                        stamp += 1
                        stamps[depth] = stamp
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
                    elif (kind == 2 and (stop - pos) % 8 != 0) or \
                            (kind == 3 and (stop - pos) % 4 != 0):
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
                stamp += 1
                stamps[depth] = stamp
            else:
                code = 4
                break
        out_code[r] = code
