"""Compiled helpers of the Avro assembly (:mod:`connector.formats.avro._assemble`): one call per
column where numpy needs several (a batch builds every column of the record, so each Python
call per column counts).

Imported lazily (numba is slow to import); compiled once, cached on disk.
"""
import numpy as np

from connector.formats.core import njit

_I32_MAX = 2**31 - 1


@njit(nogil=True)
def string_offsets(lens):
    """int32 Arrow offsets of values of byte lengths ``lens``; None beyond 2 GiB."""
    m = len(lens)
    out = np.empty(m + 1, np.int32)
    total = 0
    out[0] = 0
    for i in range(m):
        total += lens[i]
        if total > _I32_MAX:
            return None
        out[i + 1] = total
    return out


@njit(nogil=True)
def enum_strings(idx, valid, sym_offs, sym_data):
    """(int32 offsets, bytes) of the strings of enum indices ``idx`` (null where not
    ``valid``) over the symbols ``sym_data[sym_offs[k]:sym_offs[k + 1]]``; None for an index
    out of range (the kernel writes none)."""
    m = len(idx)
    offs = np.empty(m + 1, np.int32)
    total = 0
    offs[0] = 0
    for i in range(m):
        if valid[i]:
            k = idx[i]
            if k < 0 or k + 1 >= len(sym_offs):
                return None
            total += sym_offs[k + 1] - sym_offs[k]
            if total > _I32_MAX:
                return None
        offs[i + 1] = total
    data = np.empty(total, np.uint8)
    at = 0
    for i in range(m):
        if valid[i]:
            k = idx[i]
            for b in range(sym_offs[k], sym_offs[k + 1]):
                data[at] = sym_data[b]
                at += 1
    return offs, data
