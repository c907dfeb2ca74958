"""The JSON grammar, byte by byte, for the compiled kernel (:mod:`connector.formats.json_schema._kernel`):
whitespace, strings (unescaped, optionally re-escaped as msgspec writes them, hashed as they go),
numbers and the literals ``true``/``false``. Each helper allocates nothing and is compiled without
reference counting, so LLVM inlines it into the kernel (see the kernel's docstring).
"""
import numpy as np

from connector.formats.core import JSON_ESCAPES, JSON_UNESCAPES, njit
from connector.formats.core.kernels import put_escaped
from connector.formats.json_schema._kstate import E_CTRL, E_ESCAPE, E_SURROGATE, E_SYNTAX, E_TRUNC

_helper = njit(nogil=True, _nrt=False)

_FNV = np.uint64(0xCBF29CE484222325)
_FNVP = np.uint64(0x100000001B3)
_ESC, _UNESC = JSON_ESCAPES, JSON_UNESCAPES


@_helper
def skip_ws(buf, pos, end):
    while pos < end:
        c = buf[pos]
        if c != 32 and c != 10 and c != 13 and c != 9:
            break
        pos += 1
    return pos


@_helper
def _hex4(buf, pos, end):
    """Four hex digits at pos → (value, ok)."""
    if pos + 4 > end:
        return 0, False
    v = 0
    for k in range(4):
        c = buf[pos + k]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return 0, False
        v = v * 16 + d
    return v, True


@_helper
def scan_string(buf, pos, end, dst, at, lim, escape, want_hash, copy):
    """Unescape the string whose opening quote is at ``pos - 1`` into ``dst[at:lim]``
    (``copy`` False: only check it); ``escape``: write it JSON-escaped as msgspec does (without
    quotes). Returns (position after the closing quote, new ``at``, error code (-1: ``dst`` is
    full), FNV-1a hash of the unescaped bytes when ``want_hash``)."""
    h = _FNV
    q = pos  # the plain run first: most strings have no escape
    while q < end:
        c = buf[q]
        if c == 34 or c == 92 or c < 32:
            break
        q += 1
    run = q - pos
    if copy:
        if at + run > lim:
            return pos, at, -1, h
        for k in range(run):
            dst[at + k] = buf[pos + k]
        at += run
    if want_hash:
        for k in range(pos, q):
            h = (h ^ np.uint64(buf[k])) * _FNVP
    pos = q
    if pos < end and buf[pos] == 34:
        return pos + 1, at, 0, h
    while True:  # escapes (and, when only checking, the rest goes through ``dst`` too)
        if pos >= end:
            return pos, at, E_TRUNC, h
        c = buf[pos]
        if c == 34:
            return pos + 1, at, 0, h
        if c < 32:
            return pos, at, E_CTRL, h
        if c != 92:
            if at >= lim:
                return pos, at, -1, h
            dst[at] = c
            at += 1
            h = (h ^ np.uint64(c)) * _FNVP
            pos += 1
            continue
        if pos + 1 >= end:
            return pos, at, E_TRUNC, h
        e = buf[pos + 1]
        pos += 2
        if e == 117:
            v, ok = _hex4(buf, pos, end)
            if not ok:
                return pos, at, E_ESCAPE, h
            pos += 4
            if 0xD800 <= v <= 0xDBFF:
                if pos + 6 > end or buf[pos] != 92 or buf[pos + 1] != 117:
                    return pos, at, E_SURROGATE, h
                lo, ok = _hex4(buf, pos + 2, end)
                if not ok or not (0xDC00 <= lo <= 0xDFFF):
                    return pos, at, E_SURROGATE, h
                pos += 6
                v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
            elif 0xDC00 <= v <= 0xDFFF:
                return pos, at, E_SURROGATE, h
            cp = v
        else:
            cp = _UNESC[e]
            if cp < 0:
                return pos, at, E_ESCAPE, h
        if at + 6 > lim:
            return pos, at, -1, h
        if escape and (cp < 32 or cp == 34 or cp == 92):
            at = put_escaped(dst, at, cp, _ESC[cp])
            h = (h ^ np.uint64(cp)) * _FNVP
            continue
        if cp < 0x80:
            dst[at] = cp
            at += 1
            h = (h ^ np.uint64(cp)) * _FNVP
        else:
            k0 = at
            if cp < 0x800:
                dst[at] = 0xC0 | (cp >> 6)
                dst[at + 1] = 0x80 | (cp & 0x3F)
                at += 2
            elif cp < 0x10000:
                dst[at] = 0xE0 | (cp >> 12)
                dst[at + 1] = 0x80 | ((cp >> 6) & 0x3F)
                dst[at + 2] = 0x80 | (cp & 0x3F)
                at += 3
            else:
                dst[at] = 0xF0 | (cp >> 18)
                dst[at + 1] = 0x80 | ((cp >> 12) & 0x3F)
                dst[at + 2] = 0x80 | ((cp >> 6) & 0x3F)
                dst[at + 3] = 0x80 | (cp & 0x3F)
                at += 4
            for q in range(k0, at):
                h = (h ^ np.uint64(dst[q])) * _FNVP


@_helper
def scan_number(buf, pos, end):
    """The JSON number at ``pos`` → (end, error, is an integer)."""
    p = pos
    if p < end and buf[p] == 45:
        p += 1
    if p >= end:
        return p, E_SYNTAX, False
    c = buf[p]
    if c == 48:
        p += 1
    elif 49 <= c <= 57:
        while p < end and 48 <= buf[p] <= 57:
            p += 1
    else:
        return p, E_SYNTAX, False
    is_int = True
    if p < end and buf[p] == 46:
        is_int = False
        p += 1
        if p >= end or not (48 <= buf[p] <= 57):
            return p, E_SYNTAX, False
        while p < end and 48 <= buf[p] <= 57:
            p += 1
    if p < end and (buf[p] == 101 or buf[p] == 69):
        is_int = False
        p += 1
        if p < end and (buf[p] == 43 or buf[p] == 45):
            p += 1
        if p >= end or not (48 <= buf[p] <= 57):
            return p, E_SYNTAX, False
        while p < end and 48 <= buf[p] <= 57:
            p += 1
    return p, 0, is_int


@_helper
def literal_len(buf, pos, end):
    """Length of the literal ``true`` or ``false`` at ``pos`` (whose first byte is ``t`` or
    ``f``), or 0 when the bytes there are not that literal."""
    if buf[pos] == 116:
        if pos + 4 <= end and buf[pos + 1] == 114 and buf[pos + 2] == 117 and buf[pos + 3] == 101:
            return 4
        return 0
    if pos + 5 <= end and buf[pos + 1] == 97 and buf[pos + 2] == 108 and buf[pos + 3] == 115 and \
            buf[pos + 4] == 101:
        return 5
    return 0


@_helper
def is_null(buf, pos, end):
    """Whether the literal ``null`` is at ``pos`` (whose first byte is ``n``)."""
    return pos + 4 <= end and buf[pos + 1] == 117 and buf[pos + 2] == 108 and buf[pos + 3] == 108
