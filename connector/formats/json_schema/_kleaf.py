"""Leaf values of the compiled kernel: 64-bit integers, number text as msgspec writes the value
it parses to, and the ISO dates and date-times the kernel converts itself (others are left to
Arrow's cast). Helpers allocate nothing (see :mod:`connector.formats.json_schema._kernel`).
"""
import numpy as np

from connector.formats.core import njit

_helper = njit(nogil=True, _nrt=False)


@_helper
def int64_of(buf, s, e):
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
def render_number(buf, s, e, is_int, dst, at, lim):
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
def date_days(buf, s, e):
    """``YYYY-MM-DD`` → (ok, days since the epoch); anything else is left to Arrow's cast."""
    if e - s != 10 or buf[s + 4] != 45 or buf[s + 7] != 45:
        return False, 0
    y, m, d = _digits(buf, s, 4), _digits(buf, s + 5, 2), _digits(buf, s + 8, 2)
    if y < 0 or m < 0 or d < 0:
        return False, 0
    days = _days(y, m, d)
    return days != -10**9, days


@_helper
def datetime_us(buf, s, e):
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
