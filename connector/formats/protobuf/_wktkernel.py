"""The numba kernel of :mod:`connector.formats.protobuf._wktjson` (imported lazily: numba is
slow to import). Compiled once, cached on disk."""
import numpy as np

from connector.formats.core import njit
from connector.formats.protobuf._limits import MAX_DEPTH

K_STRUCT, K_VALUE, K_LIST, K_ANY = range(4)
OK, REDO, PY = 0, 1, 2  # as in _wktjson
# payloads of an Any rendered here: (type name, code)
_ANY_TYPES = [("google.protobuf.Struct", 0), ("google.protobuf.Value", 1),
              ("google.protobuf.ListValue", 2), ("google.protobuf.Timestamp", 10),
              ("google.protobuf.Duration", 11), ("google.protobuf.Int64Value", 12),
              ("google.protobuf.UInt64Value", 13), ("google.protobuf.Int32Value", 14),
              ("google.protobuf.UInt32Value", 15), ("google.protobuf.BoolValue", 16),
              ("google.protobuf.StringValue", 17), ("google.protobuf.DoubleValue", 18)]
ANY_NAMES = np.frombuffer(b"".join(n.encode() for n, _ in _ANY_TYPES), np.uint8)
ANY_ENDS = np.cumsum([len(n) for n, _ in _ANY_TYPES]).astype(np.int64)
ANY_CODES = np.array([c for _, c in _ANY_TYPES], np.int64)
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
_F_STRUCT, _F_LIST, _F_CLOSE = 0, 1, 2
_helper = njit(nogil=True, _nrt=False)


@_helper
def _varint(buf, pos, end):
    u = np.uint64(0)
    for k in range(10):
        if pos >= end:
            return u, pos, False
        b = buf[pos]
        pos += 1
        u |= np.uint64(b & 0x7F) << np.uint64(7 * k)
        if b < 0x80:
            return u, pos, k < 9 or b <= 1
    return u, pos, False


@_helper
def _put_string(buf, s, e, out, at):
    """JSON string of the UTF-8 bytes ``buf[s:e]`` (escaped as json.dumps does) at ``out[at]``."""
    out[at] = 34
    at += 1
    for i in range(s, e):
        c = buf[i]
        if c == 34 or c == 92:
            out[at] = 92
            out[at + 1] = c
            at += 2
        elif c < 32:
            out[at] = 92
            if c == 8:
                out[at + 1] = 98
                at += 2
            elif c == 9:
                out[at + 1] = 116
                at += 2
            elif c == 10:
                out[at + 1] = 110
                at += 2
            elif c == 12:
                out[at + 1] = 102
                at += 2
            elif c == 13:
                out[at + 1] = 114
                at += 2
            else:
                out[at + 1] = 117
                out[at + 2] = 48
                out[at + 3] = 48
                out[at + 4] = _HEX[c >> 4]
                out[at + 5] = _HEX[c & 15]
                at += 6
        else:
            out[at] = c
            at += 1
    out[at] = 34
    return at + 1


@_helper
def _put_int(v, out, at):
    if v < 0:
        out[at] = 45
        at += 1
        u = np.uint64(-(v + 1)) + np.uint64(1)
    else:
        u = np.uint64(v)
    return _put_uint(u, out, at)


@_helper
def _put_uint(u, out, at):
    n = 1
    t = u
    while t >= np.uint64(10):
        t //= np.uint64(10)
        n += 1
    for k in range(n - 1, -1, -1):
        out[at + k] = 48 + np.int64(u % np.uint64(10))
        u //= np.uint64(10)
    return at + n


@_helper
def _put_digits(v, n, out, at):
    """``v`` as exactly ``n`` digits."""
    for k in range(n - 1, -1, -1):
        out[at + k] = 48 + v % 10
        v //= 10
    return at + n


@_helper
def _put_fraction(nanos, out, at):
    """protobuf's fraction: none, 3, 6 or 9 digits."""
    if nanos == 0:
        return at
    out[at] = 46
    at += 1
    if nanos % 1_000_000 == 0:
        return _put_digits(nanos // 1_000_000, 3, out, at)
    if nanos % 1_000 == 0:
        return _put_digits(nanos // 1_000, 6, out, at)
    return _put_digits(nanos, 9, out, at)


@_helper
def _key_less(buf, a0, a1, b0, b1):
    la, lb = a1 - a0, b1 - b0
    for k in range(min(la, lb)):
        x, y = buf[a0 + k], buf[b0 + k]
        if x != y:
            return x < y
    return la < lb


@_helper
def _two_fields(buf, s, e):
    """Fields 1 and 2 of a small message (their spans or varints): (ok, f1 wire type, f1 a, f1 b,
    f2 wire type, f2 a, f2 b); a LEN field gives (start, end), a varint (value, 0), an I64 its
    bits. Not ok: another field, a field twice, or a malformed one."""
    w1, a1, b1, w2, a2, b2 = -1, 0, 0, -1, 0, 0
    p = s
    while p < e:
        tag, p, ok = _varint(buf, p, e)
        if not ok:
            return False, w1, a1, b1, w2, a2, b2
        num = np.int64(tag >> np.uint64(3))
        wt = np.int64(tag & np.uint64(7))
        if wt == 0:
            v, p, ok = _varint(buf, p, e)
            if not ok:
                return False, w1, a1, b1, w2, a2, b2
            a, b = np.int64(v), 0
        elif wt == 2:
            ln, p, ok = _varint(buf, p, e)
            if not ok or ln > np.uint64(e - p):
                return False, w1, a1, b1, w2, a2, b2
            a, b = p, p + np.int64(ln)
            p = b
        elif wt == 1:
            if p + 8 > e:
                return False, w1, a1, b1, w2, a2, b2
            bits = np.uint64(0)
            for k in range(8):
                bits |= np.uint64(buf[p + k]) << np.uint64(8 * k)
            a, b = np.int64(bits), 0
            p += 8
        else:
            return False, w1, a1, b1, w2, a2, b2
        if num == 1 and w1 < 0:
            w1, a1, b1 = wt, a, b
        elif num == 2 and w2 < 0:
            w2, a2, b2 = wt, a, b
        else:
            return False, w1, a1, b1, w2, a2, b2
    return True, w1, a1, b1, w2, a2, b2


@njit(nogil=True)
def render(data, offs, valid, kind, out, out_offs, status, dbl, names, name_ends, codes):
    """Every valid value → ``out`` (offsets ``out_offs``); returns the number of doubles."""
    n = len(offs) - 1
    f64 = np.empty(1, np.float64)
    i64 = f64.view(np.int64)
    fk = np.empty(MAX_DEPTH + 2, np.int64)
    fa = np.empty(MAX_DEPTH + 2, np.int64)
    fb = np.empty(MAX_DEPTH + 2, np.int64)
    fc = np.empty(MAX_DEPTH + 2, np.int64)
    cap = len(data) // 2 + 16  # entries alive at once: each takes at least two bytes
    ek0 = np.empty(cap, np.int64)
    ek1 = np.empty(cap, np.int64)
    ev0 = np.empty(cap, np.int64)
    ev1 = np.empty(cap, np.int64)
    tmp = np.empty(cap, np.int64)
    order = np.empty(cap, np.int64)
    at = 0
    nd = 0
    out_offs[0] = 0
    for r in range(n):
        a0 = at
        nd0 = nd
        st = OK
        if valid[r]:
            sp = 0
            etop = 0
            s, e, k = offs[r], offs[r + 1], kind  # the value to write next
            todo = True
            while st == OK:
                if todo:
                    todo = False
                    if k == K_VALUE:
                        ok = True
                        p = s
                        if p == e:  # no kind: null
                            for ch in (110, 117, 108, 108):
                                out[at] = ch
                                at += 1
                        else:
                            tag, p, ok = _varint(data, p, e)
                            num = np.int64(tag >> np.uint64(3)) if ok else 0
                            wt = np.int64(tag & np.uint64(7)) if ok else -1
                            if num == 1 and wt == 0:
                                _, p, ok = _varint(data, p, e)
                                for ch in (110, 117, 108, 108):
                                    out[at] = ch
                                    at += 1
                            elif num == 2 and wt == 1 and p + 8 <= e:
                                bits = np.uint64(0)
                                for q in range(8):
                                    bits |= np.uint64(data[p + q]) << np.uint64(8 * q)
                                p += 8
                                i64[0] = np.int64(bits)
                                x = f64[0]
                                if x != x or x - x != 0.0:  # NaN or infinite: the reference refuses
                                    st = REDO
                                    break
                                dbl[nd] = x
                                nd += 1
                                out[at] = 0
                                at += 1
                            elif num == 3 and wt == 2:
                                ln, p, ok = _varint(data, p, e)
                                if not ok or ln > np.uint64(e - p):
                                    st = REDO
                                    break
                                at = _put_string(data, p, p + np.int64(ln), out, at)
                                p += np.int64(ln)
                            elif num == 4 and wt == 0:
                                v, p, ok = _varint(data, p, e)
                                if v:
                                    for ch in (116, 114, 117, 101):
                                        out[at] = ch
                                        at += 1
                                else:
                                    for ch in (102, 97, 108, 115, 101):
                                        out[at] = ch
                                        at += 1
                            elif (num == 5 or num == 6) and wt == 2:
                                ln, p, ok = _varint(data, p, e)
                                if not ok or ln > np.uint64(e - p):
                                    st = REDO
                                    break
                                s, e, k = p, p + np.int64(ln), (K_STRUCT if num == 5 else K_LIST)
                                p = e
                                todo = True
                            else:
                                st = REDO
                                break
                            if not ok or (not todo and p != e):
                                st = REDO  # a second kind, or a malformed one
                                break
                            if todo:
                                continue
                    elif k == K_STRUCT or k == K_LIST:
                        if sp >= MAX_DEPTH:
                            st = REDO
                            break
                        if k == K_LIST:
                            fk[sp], fa[sp], fb[sp] = _F_LIST, s, e
                            sp += 1
                            out[at] = 91
                            at += 1
                        else:
                            e0 = etop
                            p = s
                            while p < e:  # entries: field 1, each a key (1) and a Value (2)
                                tag, p, ok = _varint(data, p, e)
                                if not ok or tag != np.uint64(10):
                                    st = REDO
                                    break
                                ln, p, ok = _varint(data, p, e)
                                if not ok or ln > np.uint64(e - p):
                                    st = REDO
                                    break
                                ok, w1, ka, kb, w2, va, vb = _two_fields(data, p, p + np.int64(ln))
                                p += np.int64(ln)
                                if not ok or (w1 >= 0 and w1 != 2) or (w2 >= 0 and w2 != 2):
                                    st = REDO
                                    break
                                if etop >= cap:
                                    st = REDO
                                    break
                                ek0[etop] = ka if w1 >= 0 else 0
                                ek1[etop] = kb if w1 >= 0 else 0
                                ev0[etop] = va if w2 >= 0 else -1
                                ev1[etop] = vb if w2 >= 0 else -1
                                etop += 1
                            if st != OK:
                                break
                            m = etop - e0
                            for q in range(m):
                                order[e0 + q] = e0 + q
                            width = 1  # bottom-up merge sort of the entries by key bytes
                            while width < m:
                                lo = 0
                                while lo < m:
                                    mid = min(lo + width, m)
                                    hi = min(lo + 2 * width, m)
                                    x, y, z = lo, mid, lo
                                    while x < mid or y < hi:
                                        if y >= hi or (x < mid and not _key_less(
                                                data, ek0[order[e0 + y]], ek1[order[e0 + y]],
                                                ek0[order[e0 + x]], ek1[order[e0 + x]])):
                                            tmp[e0 + z] = order[e0 + x]
                                            x += 1
                                        else:
                                            tmp[e0 + z] = order[e0 + y]
                                            y += 1
                                        z += 1
                                    lo = hi
                                for q in range(m):
                                    order[e0 + q] = tmp[e0 + q]
                                width *= 2
                            for q in range(1, m):
                                u, v = order[e0 + q - 1], order[e0 + q]
                                if not _key_less(data, ek0[u], ek1[u], ek0[v], ek1[v]):
                                    st = REDO  # a key twice: protobuf keeps the last
                                    break
                            if st != OK:
                                break
                            fk[sp], fa[sp], fb[sp], fc[sp] = _F_STRUCT, e0, e0, etop
                            sp += 1
                            out[at] = 123
                            at += 1
                    else:  # K_ANY
                        ok, w1, ua, ub, w2, va, vb = _two_fields(data, s, e)
                        if not ok or (w1 >= 0 and w1 != 2) or (w2 >= 0 and w2 != 2):
                            st = REDO
                            break
                        if w1 < 0 and w2 < 0:  # an empty Any
                            out[at] = 123
                            out[at + 1] = 125
                            at += 2
                        else:
                            if w1 < 0:
                                st = PY
                                break
                            slash = ua - 1
                            for q in range(ua, ub):
                                if data[q] == 47:
                                    slash = q
                            code = -1
                            t0 = 0
                            for j in range(len(codes)):
                                t1 = name_ends[j]
                                if t1 - t0 == ub - slash - 1:
                                    same = True
                                    for q in range(t1 - t0):
                                        if names[t0 + q] != data[slash + 1 + q]:
                                            same = False
                                            break
                                    if same:
                                        code = codes[j]
                                        break
                                t0 = t1
                            if code < 0:
                                st = PY
                                break
                            if w2 < 0:
                                va, vb = e, e  # no value: the payload's defaults
                            for ch in (123, 34, 64, 116, 121, 112, 101, 34, 58):  # {"@type":
                                out[at] = ch
                                at += 1
                            at = _put_string(data, ua, ub, out, at)
                            for ch in (44, 34, 118, 97, 108, 117, 101, 34, 58):  # ,"value":
                                out[at] = ch
                                at += 1
                            if code <= 2:
                                if sp >= MAX_DEPTH:
                                    st = REDO
                                    break
                                fk[sp] = _F_CLOSE
                                sp += 1
                                s, e, k = va, vb, (K_STRUCT if code == 0 else K_VALUE if code == 1
                                                   else K_LIST)
                                todo = True
                                continue
                            ok, w1, x1, y1, w2, x2, _ = _two_fields(data, va, vb)
                            if not ok:
                                st = PY
                                break
                            if code == 10 or code == 11:  # Timestamp, Duration
                                if (w1 >= 0 and w1 != 0) or (w2 >= 0 and w2 != 0):
                                    st = PY
                                    break
                                secs = x1 if w1 >= 0 else 0
                                nanos = x2 if w2 >= 0 else 0
                                nanos = np.int64(np.int32(nanos & 0xFFFFFFFF))
                                if code == 10:
                                    if nanos < 0 or nanos > 999_999_999 or \
                                            secs < -62135596800 or secs > 253402300799:
                                        st = PY
                                        break
                                    days = secs // 86400
                                    sod = secs - days * 86400
                                    z = days + 719468  # civil from days (H. Hinnant)
                                    era = z // 146097
                                    doe = z - era * 146097
                                    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
                                    y = yoe + era * 400
                                    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
                                    mp = (5 * doy + 2) // 153
                                    d = doy - (153 * mp + 2) // 5 + 1
                                    mo = mp + 3 if mp < 10 else mp - 9
                                    y += 1 if mo <= 2 else 0
                                    out[at] = 34
                                    at = _put_digits(y, 4, out, at + 1)
                                    out[at] = 45
                                    at = _put_digits(mo, 2, out, at + 1)
                                    out[at] = 45
                                    at = _put_digits(d, 2, out, at + 1)
                                    out[at] = 84
                                    at = _put_digits(sod // 3600, 2, out, at + 1)
                                    out[at] = 58
                                    at = _put_digits(sod // 60 % 60, 2, out, at + 1)
                                    out[at] = 58
                                    at = _put_digits(sod % 60, 2, out, at + 1)
                                    at = _put_fraction(nanos, out, at)
                                    out[at] = 90
                                    out[at + 1] = 34
                                    at += 2
                                else:
                                    if nanos <= -1_000_000_000 or nanos >= 1_000_000_000 or \
                                            (secs < 0 < nanos) or (nanos < 0 < secs) or \
                                            secs > 315576000000 or secs < -315576000000:
                                        st = PY
                                        break
                                    out[at] = 34
                                    at += 1
                                    if secs < 0 or nanos < 0:
                                        out[at] = 45
                                        at += 1
                                        secs, nanos = -secs, -nanos
                                    at = _put_int(secs, out, at)
                                    at = _put_fraction(nanos, out, at)
                                    out[at] = 115
                                    out[at + 1] = 34
                                    at += 2
                            else:  # wrappers: field 1 only
                                if w2 >= 0:
                                    st = PY
                                    break
                                want = 1 if code == 18 else 2 if code == 17 else 0
                                if w1 >= 0 and w1 != want:
                                    st = PY
                                    break
                                if code == 12 or code == 13:  # 64-bit integers are strings
                                    out[at] = 34
                                    if code == 12:
                                        at = _put_int(x1 if w1 >= 0 else 0, out, at + 1)
                                    else:
                                        at = _put_uint(np.uint64(x1) if w1 >= 0 else np.uint64(0),
                                                       out, at + 1)
                                    out[at] = 34
                                    at += 1
                                elif code == 14:
                                    at = _put_int(np.int64(np.int32((x1 if w1 >= 0 else 0) & 0xFFFFFFFF)),
                                                  out, at)
                                elif code == 15:
                                    at = _put_int((x1 if w1 >= 0 else 0) & 0xFFFFFFFF, out, at)
                                elif code == 16:
                                    if w1 >= 0 and x1 != 0:
                                        for ch in (116, 114, 117, 101):
                                            out[at] = ch
                                            at += 1
                                    else:
                                        for ch in (102, 97, 108, 115, 101):
                                            out[at] = ch
                                            at += 1
                                elif code == 17:
                                    at = _put_string(data, x1 if w1 >= 0 else 0,
                                                     y1 if w1 >= 0 else 0, out, at)
                                else:  # DoubleValue
                                    i64[0] = x1 if w1 >= 0 else 0
                                    x = f64[0]
                                    if x != x or x - x != 0.0:
                                        st = PY
                                        break
                                    dbl[nd] = x
                                    nd += 1
                                    out[at] = 0
                                    at += 1
                            out[at] = 125
                            at += 1
                # what follows the value just written: the next one of its container
                if sp == 0:
                    break
                t = sp - 1
                if fk[t] == _F_CLOSE:
                    out[at] = 125
                    at += 1
                    sp -= 1
                    continue
                if fk[t] == _F_LIST:
                    p = fa[t]
                    if p >= fb[t]:
                        out[at] = 93
                        at += 1
                        sp -= 1
                        continue
                    tag, p, ok = _varint(data, p, fb[t])
                    if not ok or tag != np.uint64(10):
                        st = REDO
                        break
                    ln, p, ok = _varint(data, p, fb[t])
                    if not ok or ln > np.uint64(fb[t] - p):
                        st = REDO
                        break
                    if out[at - 1] != 91:
                        out[at] = 44
                        at += 1
                    s, e, k = p, p + np.int64(ln), K_VALUE
                    fa[t] = e
                    todo = True
                    continue
                i = fb[t]  # a struct: its next entry in key order
                if i >= fc[t]:
                    out[at] = 125
                    at += 1
                    etop = fa[t]
                    sp -= 1
                    continue
                j = order[i]
                if i > fa[t]:
                    out[at] = 44
                    at += 1
                at = _put_string(data, ek0[j], ek1[j], out, at)
                out[at] = 58
                at += 1
                fb[t] = i + 1
                if ev0[j] < 0:
                    for ch in (110, 117, 108, 108):
                        out[at] = ch
                        at += 1
                    continue
                s, e, k = ev0[j], ev1[j], K_VALUE
                todo = True
        if st != OK:  # nothing of this value is kept: its text nor its numbers
            at = a0
            nd = nd0
            status[r] = st
        out_offs[r + 1] = at
    return nd


@njit(nogil=True)
def splice(text, offs, fmt, fmt_offs):
    """Each 0x00 of ``text`` replaced by the next number of ``fmt``."""
    n = len(offs) - 1
    out = np.empty(len(text) + len(fmt), np.uint8)
    oo = np.empty(n + 1, np.int64)
    at = 0
    j = 0
    oo[0] = 0
    for r in range(n):
        for i in range(offs[r], offs[r + 1]):
            c = text[i]
            if c == 0:
                for q in range(fmt_offs[j], fmt_offs[j + 1]):
                    out[at] = fmt[q]
                    at += 1
                j += 1
            else:
                out[at] = c
                at += 1
        oo[r + 1] = at
    return out[:at], oo
