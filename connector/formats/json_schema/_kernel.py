"""The compiled JSON kernel: one strict pass per payload, values straight into per-column buffers.

Imported lazily (numba is slow to import); compiled once and cached on disk. A JSON Schema
tree becomes node tables (:mod:`connector.formats.json_schema._program`) that this loop walks
while it parses the bytes, with an explicit stack (no recursion driven by the data):

* the whole text is validated as JSON (RFC 8259: literals, number grammar, escapes, no control
  characters in strings, no trailing bytes; UTF-8 is checked before, over the whole payload);
* an object read as a struct dispatches each key through the struct's hash table; unknown
  members are validated and skipped; members the object lacks are null-filled when it closes;
* strings are unescaped into their column's bytes (keys into a scratch buffer);
* integers are range-checked int64; other numbers keep their text (cast once per column);
* a JSON-text leaf is re-encoded compactly, as ``msgspec.json.encode`` writes it (escapes,
  number forms); a number whose shortest form needs 16 or 17 digits is written as given and
  listed for a check after the kernel (``vrow``/``vs``/``ve``).

Helpers allocate nothing and are compiled without reference counting (``_nrt=False``) and
without numba's own inlining, which LLVM then does: either of those cost about 10 ns per
call that passes an array (measured), most of the kernel's time. Where a hot helper would take
many arrays it is written out by hand (a call passes each array as seven values).

A row the kernel cannot decide alone (a key repeated in one object, a number beyond the forms
above) is rolled back and flagged *slow*: the caller decodes it with the reference path. A row
that fails is rolled back and replaced by a null root. Work is bounded per byte; nesting is
capped at :data:`MAX_NESTING`; items, entries and members per row at ``cap_items``.
"""
import numpy as np

from connector.formats.core import njit
from connector.formats.core.kernels import emit as _emit
from connector.formats.json_schema._guard import MAX_NESTING

# helpers allocate nothing: compiled without reference counting (see the docstring)
_helper = njit(nogil=True, _nrt=False)

J_STRUCT, J_MAP, J_LIST, J_STRING, J_TS, J_DATE, J_INT, J_FLOAT, J_BOOL, J_NULL, J_JSON = range(11)
SKIP = -2  # a value the reader does not keep: validated only

T_OBJECT, T_ARRAY, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN, T_NULL = (1, 2, 4, 8, 16, 32, 64)
#: A node flag beside the types: an integral number written with a fraction or an exponent
#: (``2.0``, ``1e2``) is an integer, as JSON Schema says from draft 6 on (draft 4: only ``2``).
#: The kernel leaves such a number to the reference path (rare; it reads it exactly).
T_INTEGRAL = 128

E_SYNTAX, E_TRUNC, E_CTRL, E_ESCAPE, E_SURROGATE, E_TRAILING, E_DEEP, E_CAP, E_BIG, \
    E_INT_RANGE, E_EXPECT_OBJECT, E_EXPECT_ARRAY, E_EXPECT_STRING, E_EXPECT_INT, \
    E_EXPECT_NUMBER, E_EXPECT_BOOL, E_EXPECT_NULL, E_JSON_TYPE = range(1, 19)
E_SLOW = 99  # decided by the reference path

# frame kinds
F_STRUCT, F_MAP, F_LIST, F_SKIPOBJ, F_SKIPARR, F_JOBJ, F_JARR = range(7)
# frame states
S_FIRST, S_NEXT = 0, 1

_FNV = np.uint64(0xCBF29CE484222325)
_FNVP = np.uint64(0x100000001B3)
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)


@_helper
def _ws(buf, pos, end):
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
def _string(buf, pos, end, dst, at, lim, escape, want_hash, copy):
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
        cp = -1
        if e == 34:
            cp = 34
        elif e == 92:
            cp = 92
        elif e == 47:
            cp = 47
        elif e == 98:
            cp = 8
        elif e == 102:
            cp = 12
        elif e == 110:
            cp = 10
        elif e == 114:
            cp = 13
        elif e == 116:
            cp = 9
        elif e == 117:
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
            return pos, at, E_ESCAPE, h
        if at + 6 > lim:
            return pos, at, -1, h
        if escape and (cp < 32 or cp == 34 or cp == 92):
            dst[at] = 92
            if cp == 34 or cp == 92:
                dst[at + 1] = cp
                at += 2
            elif cp == 8:
                dst[at + 1] = 98
                at += 2
            elif cp == 9:
                dst[at + 1] = 116
                at += 2
            elif cp == 10:
                dst[at + 1] = 110
                at += 2
            elif cp == 12:
                dst[at + 1] = 102
                at += 2
            elif cp == 13:
                dst[at + 1] = 114
                at += 2
            else:
                dst[at + 1] = 117
                dst[at + 2] = 48
                dst[at + 3] = 48
                dst[at + 4] = _HEX[cp >> 4]
                dst[at + 5] = _HEX[cp & 15]
                at += 6
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
def _number(buf, pos, end):
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
def _int64(buf, s, e):
    """An integer token → (value, fits int64)."""
    neg = buf[s] == 45
    p = s + 1 if neg else s
    if e - p > 19:
        return 0, False
    v = np.uint64(0)
    for q in range(p, e):
        v = v * np.uint64(10) + np.uint64(buf[q] - 48)
    if neg:
        if v > np.uint64(9223372036854775808):
            return 0, False
        return -np.int64(v - np.uint64(1)) - 1, True
    if v > np.uint64(9223372036854775807):
        return 0, False
    return np.int64(v), True


@_helper
def _render(buf, s, e, is_int, dst, at, lim):
    """A number token as msgspec writes the value it parses to → (new ``at``, status):
    0 written, 1 written but its 16-17 digits must be checked to be the shortest form,
    2 beyond what is rendered here (the reference path decides), -1 ``dst`` is full."""
    if at + (e - s) + 32 > lim:
        return at, -1
    neg = buf[s] == 45
    p = s + 1 if neg else s
    if is_int:
        if e - p == 1 and buf[p] == 48:  # -0 is the integer 0
            dst[at] = 48
            return at + 1, 0
        for q in range(s, e):
            dst[at] = buf[q]
            at += 1
        return at, 0
    i0 = p
    i1 = p
    while i1 < e and 48 <= buf[i1] <= 57:
        i1 += 1
    f0 = i1
    f1 = i1
    if f0 < e and buf[f0] == 46:
        f0 += 1
        f1 = f0
        while f1 < e and 48 <= buf[f1] <= 57:
            f1 += 1
    x = 0
    if f1 < e:  # exponent
        q = f1 + 1
        xneg = False
        if buf[q] == 43 or buf[q] == 45:
            xneg = buf[q] == 45
            q += 1
        if e - q > 4:
            return at, 2
        for k in range(q, e):
            x = x * 10 + (buf[k] - 48)
        if xneg:
            x = -x
    ni = i1 - i0
    nd = ni + (f1 - f0)
    lead = -1
    trail = -1
    for k in range(nd):
        d = buf[i0 + k] if k < ni else buf[f0 + k - ni]
        if d != 48:
            if lead < 0:
                lead = k
            trail = k
    if neg:
        dst[at] = 45
        at += 1
    if lead < 0:  # zero: msgspec writes 0.0 (keeping the sign)
        dst[at] = 48
        dst[at + 1] = 46
        dst[at + 2] = 48
        return at + 3, 0
    nsig = trail - lead + 1
    if nsig > 17:
        return at, 2
    e10 = ni - 1 - lead + x
    if e10 > 307 or e10 < -307:
        return at, 2
    if -5 <= e10 <= 15:
        if e10 >= 0:
            for k in range(e10 + 1):
                j = lead + k
                dst[at] = (buf[i0 + j] if j < ni else buf[f0 + j - ni]) if j <= trail else 48
                at += 1
            dst[at] = 46
            at += 1
            if lead + e10 + 1 > trail:
                dst[at] = 48
                at += 1
            else:
                for j in range(lead + e10 + 1, trail + 1):
                    dst[at] = buf[i0 + j] if j < ni else buf[f0 + j - ni]
                    at += 1
        else:
            dst[at] = 48
            dst[at + 1] = 46
            at += 2
            for _ in range(-e10 - 1):
                dst[at] = 48
                at += 1
            for j in range(lead, trail + 1):
                dst[at] = buf[i0 + j] if j < ni else buf[f0 + j - ni]
                at += 1
    else:
        dst[at] = buf[i0 + lead] if lead < ni else buf[f0 + lead - ni]
        at += 1
        if nsig > 1:
            dst[at] = 46
            at += 1
            for j in range(lead + 1, trail + 1):
                dst[at] = buf[i0 + j] if j < ni else buf[f0 + j - ni]
                at += 1
        dst[at] = 101
        at += 1
        v = e10
        if v < 0:
            dst[at] = 45
            at += 1
            v = -v
        if v >= 100:
            dst[at] = 48 + v // 100
            at += 1
        if v >= 10:
            dst[at] = 48 + (v // 10) % 10
            at += 1
        dst[at] = 48 + v % 10
        at += 1
    return at, 1 if nsig >= 16 else 0


@_helper
def _digits(buf, s, k):
    """The decimal number of ``k`` digits at ``s``, or -1."""
    v = 0
    for i in range(s, s + k):
        d = buf[i] - 48
        if d < 0 or d > 9:
            return -1
        v = v * 10 + d
    return v


@_helper
def _days(y, m, d):
    """Days since 1970-01-01 of a valid proleptic Gregorian date, or -10**9 if invalid."""
    if y < 1 or m < 1 or m > 12 or d < 1:
        return -10**9
    mdays = 31
    if m == 4 or m == 6 or m == 9 or m == 11:
        mdays = 30
    elif m == 2:
        mdays = 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    if d > mdays:
        return -10**9
    y -= 1 if m <= 2 else 0
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m - 3 if m > 2 else m + 9) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@_helper
def _date(buf, s, e):
    """``YYYY-MM-DD`` → (ok, days since the epoch); anything else is left to Arrow's cast."""
    if e - s != 10 or buf[s + 4] != 45 or buf[s + 7] != 45:
        return False, 0
    y, m, d = _digits(buf, s, 4), _digits(buf, s + 5, 2), _digits(buf, s + 8, 2)
    if y < 0 or m < 0 or d < 0:
        return False, 0
    days = _days(y, m, d)
    return days != -10**9, days


@_helper
def _datetime(buf, s, e):
    """``YYYY-MM-DD(T| )HH:MM:SS[.f{1,6}][Z|±HH:MM]`` → (ok, µs since the epoch, UTC; no zone
    is UTC, as the cast after the kernel reads it). Other spellings are left to that cast."""
    if e - s < 19 or buf[s + 4] != 45 or buf[s + 7] != 45 or buf[s + 13] != 58 or \
            buf[s + 16] != 58 or (buf[s + 10] != 84 and buf[s + 10] != 32):
        return False, 0
    y, mo, d = _digits(buf, s, 4), _digits(buf, s + 5, 2), _digits(buf, s + 8, 2)
    h, mi, sec = _digits(buf, s + 11, 2), _digits(buf, s + 14, 2), _digits(buf, s + 17, 2)
    if y < 0 or mo < 0 or d < 0 or h < 0 or h > 23 or mi < 0 or mi > 59 or sec < 0 or sec > 59:
        return False, 0
    days = _days(y, mo, d)
    if days == -10**9:
        return False, 0
    p = s + 19
    frac = 0
    if p < e and buf[p] == 46:
        p += 1
        k = 0
        while p < e and 48 <= buf[p] <= 57 and k < 7:
            frac = frac * 10 + (buf[p] - 48)
            p += 1
            k += 1
        if k == 0 or k > 6:
            return False, 0
        for _ in range(6 - k):
            frac *= 10
    off = 0
    if p < e:
        if buf[p] == 90 and p + 1 == e:
            p += 1
        elif (buf[p] == 43 or buf[p] == 45) and e - p == 6 and buf[p + 3] == 58:
            oh, om = _digits(buf, p + 1, 2), _digits(buf, p + 4, 2)
            if oh < 0 or oh > 23 or om < 0 or om > 59:
                return False, 0
            off = (oh * 3600 + om * 60) * (1 if buf[p] == 43 else -1)
            p = e
        else:
            return False, 0
    return True, ((days * 86400 + h * 3600 + mi * 60 + sec - off) * 1_000_000 + frac)


@_helper
def _expected(k):
    """The error of a value whose JSON type node kind ``k`` does not take."""
    if k == J_STRUCT or k == J_MAP:
        return E_EXPECT_OBJECT
    if k == J_LIST:
        return E_EXPECT_ARRAY
    if k == J_STRING or k == J_TS or k == J_DATE:
        return E_EXPECT_STRING
    if k == J_INT:
        return E_EXPECT_INT
    if k == J_FLOAT:
        return E_EXPECT_NUMBER
    if k == J_BOOL:
        return E_EXPECT_BOOL
    return E_EXPECT_NULL


@_helper
def _seen_key(hrow, hkey, mask, r, obj, h):
    """True when key hash ``h`` was already seen in object ``obj`` (and record it otherwise);
    ``r`` stamps the row attempt: entries of earlier attempts count as free."""
    k = (h ^ (np.uint64(obj) * np.uint64(0x9E3779B97F4A7C15))) | np.uint64(1)
    i = np.int64(k & np.uint64(mask))
    while True:
        if hrow[i] != r:
            hrow[i] = r
            hkey[i] = k
            return False
        if hkey[i] == k:
            return True
        i = (i + 1) & mask


@_helper
def _copy(dst, src):
    """dst[:] = src without a temporary (numba's slice copy allocates one per call)."""
    for i in range(len(src)):
        dst[i] = src[i]


@njit(nogil=True)
def rows(buf, starts, ends, kind, ncol, nchild, nkey, nallowed, nf0, nf1, ntab, nmask, fchild,
         fname0, fname1, fplain, names, ftab, root, root_col, fill0, fill1, fills, cap_items, max_bytes,
         cbase, ccap, cnt, cval, cvalid, clen, bbase, bcap, bcnt, bdata, seen, scratch,
         hrow, hkey, err_out, slow_out, vrow, vs, ve, vn, r0):
    """Rows from ``r0`` on: (next row, column out of value room or -1, column out of byte
    room or -1, checks listed). Stops at the first row that overflows (rolled back)."""
    n = len(starts)
    sink = len(cval) - 1
    ncols = len(cbase)
    hmask = len(hrow) - 1
    snap = np.empty(ncols, np.int64)
    bsnap = np.empty(ncols, np.int64)
    fk = np.empty(MAX_NESTING + 1, np.int64)  # frame kind
    fnode = np.empty(MAX_NESTING + 1, np.int64)
    fstate = np.empty(MAX_NESTING + 1, np.int64)
    fcnt = np.empty(MAX_NESTING + 1, np.int64)
    fidx = np.empty(MAX_NESTING + 1, np.int64)  # the list's/text's value index (or -1)
    fobj = np.empty(MAX_NESTING + 1, np.int64)  # object id (keys, struct stamps)
    fpred = np.empty(MAX_NESTING + 1, np.int64)  # the struct field expected next
    obj_id = max(seen.max(), 0)  # stamps of earlier calls stay smaller (a row redone after growth)
    attempt = hrow.max() + 1 if len(hrow) else 0
    for r in range(r0, n):
        attempt += 1
        pos = starts[r]
        end = ends[r]
        err = 0
        items = 0
        sp = 0
        ovc = -1
        ovb = -1
        _copy(snap, cnt)
        _copy(bsnap, bcnt)
        v0 = vn
        cur = root
        expect_value = True
        jc = -1  # column of the JSON text being written (copy mode), else -1
        if end - pos > max_bytes:
            err = E_BIG
            expect_value = False
        while err == 0 and ovc < 0 and ovb < 0:
            if expect_value:
                expect_value = False
                pos = _ws(buf, pos, end)
                if pos >= end:
                    err = E_TRUNC
                    break
                ch = buf[pos]
                if jc >= 0:  # inside a JSON text: copy canonically
                    k = J_JSON
                    c = jc
                elif cur == SKIP:
                    k = -1
                    c = -1
                else:
                    k = kind[cur]
                    c = ncol[cur]
                if k == J_JSON and jc < 0:  # a JSON text starts: check its type
                    t = T_NULL
                    if ch == 123:
                        t = T_OBJECT
                    elif ch == 91:
                        t = T_ARRAY
                    elif ch == 34:
                        t = T_STRING
                    elif ch == 116 or ch == 102:
                        t = T_BOOLEAN
                    elif ch == 45 or 48 <= ch <= 57:
                        q, e2, isint = _number(buf, pos, end)
                        if e2:
                            err = e2
                            break
                        t = T_INTEGER if isint else T_NUMBER
                    if ch != 110 and (nallowed[cur] & t) == 0:
                        err = E_JSON_TYPE
                        if t == T_NUMBER and (nallowed[cur] & (T_INTEGRAL | T_INTEGER)) == T_INTEGRAL | T_INTEGER:
                            err = E_SLOW  # is it an integer (2.0, draft 6 on)? the reference decides
                        break
                if ch == 110:  # null
                    if pos + 4 > end or buf[pos + 1] != 117 or buf[pos + 2] != 108 or buf[pos + 3] != 108:
                        err = E_SYNTAX
                        break
                    pos += 4
                    if k == J_JSON and jc >= 0:
                        b = bcnt[c]
                        if b + 4 > bcap[c]:
                            ovb = c
                            break
                        at = bbase[c] + b
                        bdata[at] = 110
                        bdata[at + 1] = 117
                        bdata[at + 2] = 108
                        bdata[at + 3] = 108
                        bcnt[c] = b + 4
                    elif c >= 0:
                        for q in range(fill0[c], fill1[c]):
                            ovc = _emit(fills[q], 0, 0, 0, cbase, ccap, cnt, cval, cvalid, clen,
                                        sink, ovc)
                    continue
                if k == J_JSON:
                    start_text = jc < 0
                    if start_text:  # the text's value: its length is known when it ends
                        jc = c
                        ovc = _emit(c, 1, bcnt[c], 0, cbase, ccap, cnt, cval, cvalid, clen,
                                    sink, ovc)
                    b = bcnt[c]
                    if ch == 123 or ch == 91:
                        if sp >= MAX_NESTING:
                            err = E_DEEP
                            break
                        if b + 1 > bcap[c]:
                            ovb = c
                            break
                        bdata[bbase[c] + b] = ch
                        bcnt[c] = b + 1
                        fk[sp] = F_JOBJ if ch == 123 else F_JARR
                        fstate[sp] = S_FIRST
                        fcnt[sp] = 0
                        fidx[sp] = cnt[c] - 1 if start_text else -1
                        obj_id += 1
                        fobj[sp] = obj_id
                        sp += 1
                        pos += 1
                        continue
                    at = bbase[c] + b
                    lim = bbase[c] + bcap[c]
                    if ch == 34:
                        if at + 2 > lim:
                            ovb = c
                            break
                        bdata[at] = 34
                        pos, at, e2, _ = _string(buf, pos + 1, end, bdata, at + 1, lim - 1, True, False, True)
                        if e2 == -1:
                            ovb = c
                            break
                        if e2:
                            err = e2
                            break
                        bdata[at] = 34
                        at += 1
                    elif ch == 116 or ch == 102:
                        ln = 4 if ch == 116 else 5
                        if pos + ln > end:
                            err = E_SYNTAX
                            break
                        if at + ln > lim:
                            ovb = c
                            break
                        for q in range(ln):
                            bdata[at + q] = buf[pos + q]
                        if (ch == 116 and (buf[pos + 1] != 114 or buf[pos + 2] != 117 or buf[pos + 3] != 101)) or \
                                (ch == 102 and (buf[pos + 1] != 97 or buf[pos + 2] != 108 or
                                                buf[pos + 3] != 115 or buf[pos + 4] != 101)):
                            err = E_SYNTAX
                            break
                        pos += ln
                        at += ln
                    else:
                        q, e2, isint = _number(buf, pos, end)
                        if e2:
                            err = e2
                            break
                        at2, st = _render(buf, pos, q, isint, bdata, at, lim)
                        if st == -1:
                            ovb = c
                            break
                        if st == 2:
                            err = E_SLOW
                            break
                        if st == 1:
                            vrow[vn] = r
                            vs[vn] = pos
                            ve[vn] = q
                            vn += 1
                        pos = q
                        at = at2
                    bcnt[c] = at - bbase[c]
                    if start_text:  # a scalar text is complete
                        i = cnt[c] - 1
                        j = cbase[c] + i if i < ccap[c] else sink
                        clen[j] = bcnt[c] - cval[j]
                        jc = -1
                    continue
                if ch == 34:  # a string
                    if k == -1:  # not kept: only scanned
                        pos, _, e2, _ = _string(buf, pos + 1, end, scratch, 0, len(scratch), False, False,
                                                False)
                        if e2:
                            err = e2
                            break
                        continue
                    if k != J_STRING and k != J_TS and k != J_DATE:
                        err = _expected(k)
                        break
                    q = pos + 1  # the plain run (no escape): scanned here, not in a call
                    while q < end:
                        b = buf[q]
                        if b == 34 or b == 92 or b < 32:
                            break
                        q += 1
                    if k != J_STRING and q < end and buf[q] == 34:
                        if k == J_TS:
                            ok, v = _datetime(buf, pos + 1, q)
                        else:
                            ok, v = _date(buf, pos + 1, q)
                        if ok:  # the common ISO forms; others are cast after the kernel
                            ovc = _emit(c, 1, v, 0, cbase, ccap, cnt, cval, cvalid, clen, sink,
                                        ovc)
                            pos = q + 1
                            continue
                    b = bcnt[c]
                    at = bbase[c] + b
                    if q < end and buf[q] == 34:
                        ln = q - pos - 1
                        if b + ln > bcap[c]:
                            ovb = c
                            break
                        for j in range(ln):
                            bdata[at + j] = buf[pos + 1 + j]
                        pos = q + 1
                        at2 = at + ln
                    else:
                        pos, at2, e2, _ = _string(buf, pos + 1, end, bdata, at, bbase[c] + bcap[c],
                                                  False, False, True)
                        if e2 == -1:
                            ovb = c
                            break
                        if e2:
                            err = e2
                            break
                    bcnt[c] = at2 - bbase[c]
                    # a date or date-time kept as text is marked 2: cast after the kernel
                    ovc = _emit(c, 1 if k == J_STRING else 2, 0, at2 - at, cbase, ccap, cnt, cval,
                                cvalid, clen, sink, ovc)
                    continue
                if ch == 45 or 48 <= ch <= 57:  # a number
                    q, e2, isint = _number(buf, pos, end)
                    if e2:
                        err = e2
                        break
                    if k == -1:
                        pos = q
                        continue
                    if k == J_INT:
                        if not isint:  # 2.0, 1e2 are integers from draft 6 on: the reference decides
                            err = E_SLOW if nallowed[cur] & T_INTEGRAL else E_EXPECT_INT
                            break
                        v, ok = _int64(buf, pos, q)
                        if not ok:
                            err = E_INT_RANGE
                            break
                        ovc = _emit(c, 1, v, 0, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                        pos = q
                        continue
                    if k == J_FLOAT:
                        b = bcnt[c]
                        ln = q - pos
                        if b + ln > bcap[c]:
                            ovb = c
                            break
                        at = bbase[c] + b
                        for j in range(ln):
                            bdata[at + j] = buf[pos + j]
                        if isint and ln == 2 and buf[pos] == 45 and buf[pos + 1] == 48:
                            bdata[at] = 48  # the integer -0 is 0 (a float of +0.0)
                            ln = 1
                        bcnt[c] = b + ln
                        ovc = _emit(c, 1, 0, ln, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                        pos = q
                        continue
                    err = _expected(k)
                    break
                if ch == 123:  # an object
                    if k != -1 and k != J_STRUCT and k != J_MAP:
                        err = _expected(k)
                        break
                    if sp >= MAX_NESTING:
                        err = E_DEEP
                        break
                    fnode[sp] = cur
                    fstate[sp] = S_FIRST
                    fcnt[sp] = 0
                    obj_id += 1
                    fobj[sp] = obj_id
                    if k == J_STRUCT:
                        fk[sp] = F_STRUCT
                        fpred[sp] = nf0[cur]
                        ovc = _emit(c, 1, 0, 0, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                    elif k == J_MAP:
                        fk[sp] = F_MAP
                        fidx[sp] = cnt[c]
                        ovc = _emit(c, 1, 0, 0, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                    else:
                        fk[sp] = F_SKIPOBJ
                    sp += 1
                    pos += 1
                    continue
                if ch == 91:  # an array
                    if k != -1 and k != J_LIST:
                        err = _expected(k)
                        break
                    if sp >= MAX_NESTING:
                        err = E_DEEP
                        break
                    fnode[sp] = cur
                    fstate[sp] = S_FIRST
                    fcnt[sp] = 0
                    if k == J_LIST:
                        fk[sp] = F_LIST
                        fidx[sp] = cnt[c]
                        ovc = _emit(c, 1, 0, 0, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                    else:
                        fk[sp] = F_SKIPARR
                    sp += 1
                    pos += 1
                    continue
                if ch == 116 or ch == 102:  # true / false
                    ln = 4 if ch == 116 else 5
                    if pos + ln > end or \
                            (ch == 116 and (buf[pos + 1] != 114 or buf[pos + 2] != 117 or buf[pos + 3] != 101)) or \
                            (ch == 102 and (buf[pos + 1] != 97 or buf[pos + 2] != 108 or
                                            buf[pos + 3] != 115 or buf[pos + 4] != 101)):
                        err = E_SYNTAX
                        break
                    pos += ln
                    if k == -1:
                        continue
                    if k != J_BOOL:
                        err = _expected(k)
                        break
                    ovc = _emit(c, 1, 1 if ch == 116 else 0, 0, cbase, ccap, cnt, cval, cvalid, clen,
                                sink, ovc)
                    continue
                err = E_SYNTAX
                break
            # -- inside a container: what follows a value or an opening bracket
            if sp == 0:
                break
            t = sp - 1
            f = fk[t]
            pos = _ws(buf, pos, end)
            if pos >= end:
                err = E_TRUNC
                break
            ch = buf[pos]
            is_obj = f == F_STRUCT or f == F_MAP or f == F_SKIPOBJ or f == F_JOBJ
            close = 125 if is_obj else 93
            if ch == close:
                pos += 1
                if f == F_STRUCT:  # members the object lacks: null
                    nd = fnode[t]
                    for fi in range(nf0[nd], nf1[nd]):
                        if seen[fi] != fobj[t]:
                            cc = ncol[fchild[fi]]
                            for q in range(fill0[cc], fill1[cc]):
                                ovc = _emit(fills[q], 0, 0, 0, cbase, ccap, cnt, cval, cvalid,
                                            clen, sink, ovc)
                elif f == F_MAP or f == F_LIST:
                    cc = ncol[fnode[t]]
                    i = fidx[t]
                    cval[cbase[cc] + i if i < ccap[cc] else sink] = fcnt[t]
                elif f == F_JOBJ or f == F_JARR:
                    b = bcnt[jc]
                    if b + 1 > bcap[jc]:
                        ovb = jc
                        break
                    bdata[bbase[jc] + b] = close
                    bcnt[jc] = b + 1
                    i = fidx[t]
                    if i >= 0:  # the text's outermost bracket: its value is complete
                        j = cbase[jc] + i if i < ccap[jc] else sink
                        clen[j] = bcnt[jc] - cval[j]
                        jc = -1
                sp -= 1
                continue
            if fstate[t] == S_NEXT:
                if ch != 44:
                    err = E_SYNTAX
                    break
                pos = _ws(buf, pos + 1, end)
                if pos >= end:
                    err = E_TRUNC
                    break
                ch = buf[pos]
            fstate[t] = S_NEXT
            items += 1
            if items > cap_items:
                err = E_CAP
                break
            fcnt[t] += 1
            if f == F_JOBJ or f == F_JARR:
                b = bcnt[jc]
                if fcnt[t] > 1:
                    if b + 1 > bcap[jc]:
                        ovb = jc
                        break
                    bdata[bbase[jc] + b] = 44
                    b += 1
                    bcnt[jc] = b
            if not is_obj:
                cur = SKIP if f == F_SKIPARR else nchild[fnode[t]] if f == F_LIST else cur
                expect_value = True
                continue
            # an object member: "key": value
            if ch != 34:
                err = E_SYNTAX
                break
            if f == F_JOBJ:
                b = bcnt[jc]
                at = bbase[jc] + b
                lim = bbase[jc] + bcap[jc]
                if at + 2 > lim:
                    ovb = jc
                    break
                bdata[at] = 34
                pos, at, e2, h = _string(buf, pos + 1, end, bdata, at + 1, lim - 2, True, True, True)
                if e2 == -1:
                    ovb = jc
                    break
                if e2:
                    err = e2
                    break
                bdata[at] = 34
                bdata[at + 1] = 58
                bcnt[jc] = at + 2 - bbase[jc]
                if _seen_key(hrow, hkey, hmask, attempt, fobj[t], h):
                    err = E_SLOW
                    break
            elif f == F_MAP:
                nd = fnode[t]
                kc = nkey[nd]
                b = bcnt[kc]
                at = bbase[kc] + b
                pos, at2, e2, h = _string(buf, pos + 1, end, bdata, at, bbase[kc] + bcap[kc], False,
                                             True, True)
                if e2 == -1:
                    ovb = kc
                    break
                if e2:
                    err = e2
                    break
                bcnt[kc] = at2 - bbase[kc]
                ovc = _emit(kc, 1, 0, at2 - at, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
                if _seen_key(hrow, hkey, hmask, attempt, fobj[t], h):
                    err = E_SLOW
                    break
                cur = nchild[nd]
            elif f == F_STRUCT:
                nd = fnode[t]
                # most producers write members in the schema's order: try the one expected
                # next on the raw bytes (a name with a quote or backslash is never tried)
                fi = fpred[t]
                if fi < nf1[nd] and fplain[fi]:
                    a0 = fname0[fi]
                    kl = fname1[fi] - a0
                    p = pos + 1
                    if p + kl < end and buf[p + kl] == 34:
                        for q in range(kl):
                            if buf[p + q] != names[a0 + q]:
                                fi = -1
                                break
                    else:
                        fi = -1
                    if fi >= 0:
                        pos = p + kl + 1
                else:
                    fi = -1
                if fi < 0:
                    pos, kl, e2, h = _string(buf, pos + 1, end, scratch, 0, len(scratch), False,
                                             True, True)
                    if e2:
                        err = e2 if e2 > 0 else E_BIG
                        break
                    m = nmask[nd]
                    i = np.int64(h & np.uint64(m))
                    while True:
                        fi = ftab[ntab[nd] + i]
                        if fi < 0:
                            break
                        a0, a1 = fname0[fi], fname1[fi]
                        if a1 - a0 == kl:
                            same = True
                            for q in range(kl):
                                if names[a0 + q] != scratch[q]:
                                    same = False
                                    break
                            if same:
                                break
                        i = (i + 1) & m
                if fi >= 0:
                    if seen[fi] == fobj[t]:
                        err = E_SLOW  # a key repeated: the reference keeps the last
                        break
                    seen[fi] = fobj[t]
                    cur = fchild[fi]
                    fpred[t] = fi + 1
                else:
                    cur = SKIP
            else:  # F_SKIPOBJ
                pos, _, e2, h = _string(buf, pos + 1, end, scratch, 0, len(scratch), False, False, False)
                if e2:
                    err = e2
                    break
                cur = SKIP
            pos = _ws(buf, pos, end)
            if pos >= end or buf[pos] != 58:
                err = E_SYNTAX if pos < end else E_TRUNC
                break
            pos += 1
            expect_value = True
        if err == 0 and ovc < 0 and ovb < 0:
            pos = _ws(buf, pos, end)
            if pos != end:
                err = E_TRAILING
        if ovc >= 0 or ovb >= 0:  # out of room: roll back, the caller grows and redoes the row
            _copy(cnt, snap)
            _copy(bcnt, bsnap)
            vn = v0
            return r, ovc, ovb, vn
        if err:  # roll the row back and write a null value in its place
            _copy(cnt, snap)
            _copy(bcnt, bsnap)
            vn = v0
            if err == E_SLOW:
                slow_out[r] = 1
            else:
                err_out[r] = err
            ovc = -1
            for q in range(fill0[root_col], fill1[root_col]):
                ovc = _emit(fills[q], 0, 0, 0, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc)
            if ovc >= 0:
                _copy(cnt, snap)
                err_out[r] = 0
                slow_out[r] = 0
                return r, ovc, -1, vn
    return n, -1, -1, vn
