"""The numba kernel of :mod:`connector.formats.protobuf._wktjson` (imported lazily: numba is
slow to import). Compiled once, cached on disk.

:func:`render` takes named structures: the values (``_wktjson.Values``), the output
(``_wktjson.Text``) and its scratch (``_wktjson.Scratch``: frames of the containers open, the
Struct entries being written). Per value it dispatches on the well-known type to write
(``_layout.Wkt``) to a handler below — a Value, a Struct or ListValue opened, an Any — and,
once a value is written, :func:`_advance` finds what follows it in its container. A handler
returns the output position, the status (``_layout.Status``) and, where a nested value is to
be written next, its span and type; handlers (``@inline``) are pasted into the kernel at import
(``core._inline``), small helpers are ordinary compiled functions.
"""
from enum import IntEnum

import numpy as np

from connector.formats.core import JSON_ESCAPES, njit
from connector.formats.core.kernels import helper, inline, kernel, put_escaped, varint
from connector.formats.protobuf._layout import Status, Wkt
from connector.formats.protobuf._limits import MAX_DEPTH

__all__ = ["render", "splice"]


class _Any(IntEnum):
    """The payloads of an Any rendered here (others: ``Status.PY``)."""

    STRUCT = Wkt.STRUCT
    VALUE = Wkt.VALUE
    LIST = Wkt.LIST
    TIMESTAMP = 10
    DURATION = 11
    INT64 = 12
    UINT64 = 13
    INT32 = 14
    UINT32 = 15
    BOOL = 16
    STRING = 17
    DOUBLE = 18


_ANY_TYPES = [("google.protobuf.Struct", _Any.STRUCT), ("google.protobuf.Value", _Any.VALUE),
              ("google.protobuf.ListValue", _Any.LIST), ("google.protobuf.Timestamp", _Any.TIMESTAMP),
              ("google.protobuf.Duration", _Any.DURATION), ("google.protobuf.Int64Value", _Any.INT64),
              ("google.protobuf.UInt64Value", _Any.UINT64), ("google.protobuf.Int32Value", _Any.INT32),
              ("google.protobuf.UInt32Value", _Any.UINT32), ("google.protobuf.BoolValue", _Any.BOOL),
              ("google.protobuf.StringValue", _Any.STRING), ("google.protobuf.DoubleValue", _Any.DOUBLE)]
_ANY_NAMES = np.frombuffer(b"".join(n.encode() for n, _ in _ANY_TYPES), np.uint8)
_ANY_ENDS = np.cumsum([len(n) for n, _ in _ANY_TYPES]).astype(np.int64)
_ANY_CODES = np.array([int(c) for _, c in _ANY_TYPES], np.int64)

_ESC = JSON_ESCAPES  # as json.dumps escapes
_NULL = np.frombuffer(b"null", np.uint8)
_TRUE = np.frombuffer(b"true", np.uint8)
_FALSE = np.frombuffer(b"false", np.uint8)
_AT_TYPE = np.frombuffer(b'{"@type":', np.uint8)
_VALUE_KEY = np.frombuffer(b',"value":', np.uint8)
_F_STRUCT, _F_LIST, _F_CLOSE = 0, 1, 2  # frames: a Struct's entries, a ListValue's items, an Any's }
_NUMBER = 0  # the placeholder of a number in the text (``_wktjson`` splices the numbers in)


# -- writes ---------------------------------------------------------------------------------------
@inline
def _put(out, at, lit):
    """The bytes ``lit`` at ``out[at]``; the position after them."""
    for i in range(len(lit)):
        out[at + i] = lit[i]
    return at + len(lit)


@inline
def _put_string(buf, s, e, out, at):
    """JSON string of the UTF-8 bytes ``buf[s:e]`` (escaped as json.dumps does) at ``out[at]``."""
    out[at] = 34
    at += 1
    for i in range(s, e):
        c = buf[i]
        x = _ESC[c]
        if x == 0:
            out[at] = c
            at += 1
        else:
            at = put_escaped(out, at, c, x)
    out[at] = 34
    return at + 1


@helper
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


@helper
def _put_int(v, out, at):
    if v < 0:
        out[at] = 45
        return _put_uint(np.uint64(-(v + 1)) + np.uint64(1), out, at + 1)
    return _put_uint(np.uint64(v), out, at)


@helper
def _put_digits(v, n, out, at):
    """``v`` as exactly ``n`` digits."""
    for k in range(n - 1, -1, -1):
        out[at + k] = 48 + v % 10
        v //= 10
    return at + n


@helper
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


@inline
def _put_number(Y, W, bits, at, nd):
    """A double (its bits) as the number placeholder, listed in ``Y.dbl``; not finite: None."""
    W.i64[0] = bits
    x = W.f64[0]
    if x != x or x - x != 0.0:  # NaN or infinite: the reference refuses
        return at, nd, False
    Y.dbl[nd] = x
    Y.out[at] = _NUMBER
    return at + 1, nd + 1, True


# -- reads ----------------------------------------------------------------------------------------
@helper
def _varint(buf, pos, end):
    """(value, new position, well-formed)."""
    u, pos, fault = varint(buf, pos, end)
    return u, pos, fault == 0


@helper
def _span(buf, p, e):
    """(start, end, ok) of a length-delimited field's bytes starting at ``p``."""
    ln, p, ok = _varint(buf, p, e)
    if not ok or ln > np.uint64(e - p):
        return p, p, False
    return p, p + np.int64(ln), True


@helper
def _fixed64(buf, p):
    bits = np.uint64(0)
    for k in range(8):
        bits |= np.uint64(buf[p + k]) << np.uint64(8 * k)
    return np.int64(bits)


@helper
def _key_less(buf, a0, a1, b0, b1):
    la, lb = a1 - a0, b1 - b0
    for k in range(min(la, lb)):
        x, y = buf[a0 + k], buf[b0 + k]
        if x != y:
            return x < y
    return la < lb


@helper
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
            a, b, ok = _span(buf, p, e)
            if not ok:
                return False, w1, a1, b1, w2, a2, b2
            p = b
        elif wt == 1:
            if p + 8 > e:
                return False, w1, a1, b1, w2, a2, b2
            a, b = _fixed64(buf, p), 0
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


# -- handlers: one per well-known type ------------------------------------------------------------
@inline
def _value(V, Y, W, s, e, at, nd):
    """A ``google.protobuf.Value``: null, number, string, bool written; a Struct or ListValue
    returned as the value to write next. (at, nd, status, next start, end, type or -1)."""
    buf, out = V.data, Y.out
    if s == e:  # no kind: null
        at = _put(out, at, _NULL)
        return at, nd, Status.OK, 0, 0, -1
    tag, p, ok = _varint(buf, s, e)
    num = np.int64(tag >> np.uint64(3)) if ok else 0
    wt = np.int64(tag & np.uint64(7)) if ok else -1
    if num == 1 and wt == 0:
        _, p, ok = _varint(buf, p, e)
        at = _put(out, at, _NULL)
    elif num == 2 and wt == 1 and p + 8 <= e:
        at, nd, ok = _put_number(Y, W, _fixed64(buf, p), at, nd)
        p += 8
    elif num == 3 and wt == 2:
        a, p, ok = _span(buf, p, e)
        if ok:
            at = _put_string(buf, a, p, out, at)
    elif num == 4 and wt == 0:
        v, p, ok = _varint(buf, p, e)
        at = _put(out, at, _TRUE if v else _FALSE)
    elif (num == 5 or num == 6) and wt == 2:
        a, p, ok = _span(buf, p, e)
        if ok and p == e:  # a second kind after it would be the one protobuf keeps
            return at, nd, Status.OK, a, p, (Wkt.STRUCT if num == 5 else Wkt.LIST)
        ok = False
    else:
        ok = False
    if not ok or p != e:
        return at, nd, Status.REDO, 0, 0, -1  # a second kind, or a malformed one
    return at, nd, Status.OK, 0, 0, -1


@inline
def _open_list(W, sp, s, e, out, at):
    """A ``ListValue``: its frame (items read as they are written) and ``[``. (sp, at, status)"""
    if sp >= MAX_DEPTH:
        return sp, at, Status.REDO
    W.fk[sp] = _F_LIST
    W.fa[sp] = s
    W.fb[sp] = e
    out[at] = 91
    return sp + 1, at + 1, Status.OK


@inline
def _sort_entries(buf, W, e0, m):
    """``W.order[e0:e0 + m]``: entries ``e0 ..`` in key order (a bottom-up merge sort)."""
    for q in range(m):
        W.order[e0 + q] = e0 + q
    width = 1
    while width < m:
        lo = 0
        while lo < m:
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            x, y, z = lo, mid, lo
            while x < mid or y < hi:
                if y >= hi or (x < mid and not _key_less(
                        buf, W.ek0[W.order[e0 + y]], W.ek1[W.order[e0 + y]],
                        W.ek0[W.order[e0 + x]], W.ek1[W.order[e0 + x]])):
                    W.tmp[e0 + z] = W.order[e0 + x]
                    x += 1
                else:
                    W.tmp[e0 + z] = W.order[e0 + y]
                    y += 1
                z += 1
            lo = hi
        for q in range(m):
            W.order[e0 + q] = W.tmp[e0 + q]
        width *= 2


@inline
def _open_struct(V, W, sp, etop, s, e, out, at):
    """A ``Struct``: its entries (field 1: a key and a Value each) read and sorted by key, its
    frame and ``{``. (sp, entries top, at, status)"""
    if sp >= MAX_DEPTH:
        return sp, etop, at, Status.REDO
    buf = V.data
    e0 = etop
    p = s
    ok = True
    while p < e and ok:
        tag, p, ok = _varint(buf, p, e)
        if ok and tag == np.uint64(10):
            a, p, ok = _span(buf, p, e)
            if ok:
                ok, w1, ka, kb, w2, va, vb = _two_fields(buf, a, p)
                ok = ok and (w1 < 0 or w1 == 2) and (w2 < 0 or w2 == 2) and etop < len(W.ek0)
                if ok:
                    W.ek0[etop] = ka if w1 >= 0 else 0
                    W.ek1[etop] = kb if w1 >= 0 else 0
                    W.ev0[etop] = va if w2 >= 0 else -1
                    W.ev1[etop] = vb if w2 >= 0 else -1
                    etop += 1
        else:
            ok = False
    if not ok:
        return sp, etop, at, Status.REDO
    m = etop - e0
    _sort_entries(buf, W, e0, m)
    twice = False
    for q in range(1, m):
        u, v = W.order[e0 + q - 1], W.order[e0 + q]
        twice = twice or not _key_less(buf, W.ek0[u], W.ek1[u], W.ek0[v], W.ek1[v])
    if twice:
        return sp, etop, at, Status.REDO  # a key twice: protobuf keeps the last
    W.fk[sp] = _F_STRUCT
    W.fa[sp] = e0
    W.fb[sp] = e0
    W.fc[sp] = etop
    out[at] = 123
    return sp + 1, etop, at + 1, Status.OK


@helper
def _any_type(buf, ua, ub):
    """The type code of the Any whose type URL is ``buf[ua:ub]`` (-1: not rendered here)."""
    slash = ua - 1
    for q in range(ua, ub):
        if buf[q] == 47:
            slash = q
    t0 = 0
    for j in range(len(_ANY_CODES)):
        t1 = _ANY_ENDS[j]
        if t1 - t0 == ub - slash - 1:
            same = True
            for q in range(t1 - t0):
                if _ANY_NAMES[t0 + q] != buf[slash + 1 + q]:
                    same = False
                    break
            if same:
                return _ANY_CODES[j]
        t0 = t1
    return -1


@inline
def _timestamp(out, at, secs, nanos):
    """A Timestamp as RFC 3339 text in UTC (None outside protobuf's range)."""
    if nanos < 0 or nanos > 999_999_999 or secs < -62135596800 or secs > 253402300799:
        return at, False
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
    for v, sep in ((mo, 45), (d, 45), (sod // 3600, 84), (sod // 60 % 60, 58), (sod % 60, 58)):
        out[at] = sep
        at = _put_digits(v, 2, out, at + 1)
    at = _put_fraction(nanos, out, at)
    out[at] = 90
    out[at + 1] = 34
    return at + 2, True


@inline
def _duration(out, at, secs, nanos):
    """A Duration as protobuf's JSON text (None outside its range or with mixed signs)."""
    if nanos <= -1_000_000_000 or nanos >= 1_000_000_000 or (secs < 0 < nanos) or \
            (nanos < 0 < secs) or secs > 315576000000 or secs < -315576000000:
        return at, False
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
    return at + 2, True


@inline
def _wrapper(V, Y, W, code, w1, x1, y1, at, nd):
    """A wrapper's value (field 1 only; absent: the default). (at, nd, ok)"""
    out = Y.out
    want = 1 if code == _Any.DOUBLE else 2 if code == _Any.STRING else 0
    if w1 >= 0 and w1 != want:
        return at, nd, False
    if w1 < 0:
        x1, y1 = 0, 0
    if code == _Any.INT64 or code == _Any.UINT64:  # 64-bit integers are strings
        out[at] = 34
        if code == _Any.INT64:
            at = _put_int(x1, out, at + 1)
        else:
            at = _put_uint(np.uint64(x1), out, at + 1)
        out[at] = 34
        return at + 1, nd, True
    if code == _Any.INT32:
        return _put_int(np.int64(np.int32(x1 & 0xFFFFFFFF)), out, at), nd, True
    if code == _Any.UINT32:
        return _put_int(x1 & 0xFFFFFFFF, out, at), nd, True
    if code == _Any.BOOL:
        at = _put(out, at, _TRUE if x1 != 0 else _FALSE)
        return at, nd, True
    if code == _Any.STRING:
        at = _put_string(V.data, x1, y1, out, at)
        return at, nd, True
    return _put_number(Y, W, x1, at, nd)  # DoubleValue


@inline
def _any(V, Y, W, sp, s, e, at, nd):
    """A ``google.protobuf.Any``: ``{"@type":url,"value":...}`` with a Struct, Value or
    ListValue payload returned as the value to write next (a frame closes the ``}``) and the
    others written here. (at, nd, sp, status, next start, end, type or -1)"""
    buf, out = V.data, Y.out
    ok, w1, ua, ub, w2, va, vb = _two_fields(buf, s, e)
    if not ok or (w1 >= 0 and w1 != 2) or (w2 >= 0 and w2 != 2):
        return at, nd, sp, Status.REDO, 0, 0, -1
    if w1 < 0 and w2 < 0:  # an empty Any
        out[at] = 123
        out[at + 1] = 125
        return at + 2, nd, sp, Status.OK, 0, 0, -1
    code = _any_type(buf, ua, ub) if w1 >= 0 else -1
    if code < 0:
        return at, nd, sp, Status.PY, 0, 0, -1
    if w2 < 0:
        va, vb = e, e  # no value: the payload's defaults
    at = _put(out, at, _AT_TYPE)
    at = _put_string(buf, ua, ub, out, at)
    at = _put(out, at, _VALUE_KEY)
    if code <= _Any.LIST:
        if sp >= MAX_DEPTH:
            return at, nd, sp, Status.REDO, 0, 0, -1
        W.fk[sp] = _F_CLOSE
        return at, nd, sp + 1, Status.OK, va, vb, code
    ok, w1, x1, y1, w2, x2, _ = _two_fields(buf, va, vb)
    if not ok:
        return at, nd, sp, Status.PY, 0, 0, -1
    if code == _Any.TIMESTAMP or code == _Any.DURATION:
        if (w1 >= 0 and w1 != 0) or (w2 >= 0 and w2 != 0):
            return at, nd, sp, Status.PY, 0, 0, -1
        secs = x1 if w1 >= 0 else 0
        nanos = np.int64(np.int32((x2 if w2 >= 0 else 0) & 0xFFFFFFFF))
        if code == _Any.TIMESTAMP:
            at, ok = _timestamp(out, at, secs, nanos)
        else:
            at, ok = _duration(out, at, secs, nanos)
    elif w2 >= 0:  # wrappers: field 1 only
        ok = False
    else:
        at, nd, ok = _wrapper(V, Y, W, code, w1, x1, y1, at, nd)
    if not ok:
        return at, nd, sp, Status.PY, 0, 0, -1
    out[at] = 125
    return at + 1, nd, sp, Status.OK, 0, 0, -1


@inline
def _advance(V, Y, W, sp, etop, at):
    """After a value: close the containers it ends and find the next value to write (a list's
    next item, a struct's next entry, after its key). (sp, entries top, at, status, next start,
    end, type or -1: the row is done)"""
    buf, out = V.data, Y.out
    st = Status.OK
    s, e, k = 0, 0, -1
    while sp > 0 and k < 0 and st == Status.OK:
        t = sp - 1
        if W.fk[t] == _F_CLOSE:
            out[at] = 125
            at += 1
            sp -= 1
        elif W.fk[t] == _F_LIST:
            p = W.fa[t]
            if p >= W.fb[t]:
                out[at] = 93
                at += 1
                sp -= 1
                continue
            a = 0
            tag, p, ok = _varint(buf, p, W.fb[t])
            if ok and tag == np.uint64(10):
                a, p, ok = _span(buf, p, W.fb[t])
            if not ok or tag != np.uint64(10):
                st = Status.REDO
                continue
            if out[at - 1] != 91:
                out[at] = 44
                at += 1
            W.fa[t] = p
            s, e, k = a, p, Wkt.VALUE
        else:  # a struct: its next entry in key order
            i = W.fb[t]
            if i >= W.fc[t]:
                out[at] = 125
                at += 1
                etop = W.fa[t]
                sp -= 1
                continue
            j = W.order[i]
            if i > W.fa[t]:
                out[at] = 44
                at += 1
            at = _put_string(buf, W.ek0[j], W.ek1[j], out, at)
            out[at] = 58
            at += 1
            W.fb[t] = i + 1
            if W.ev0[j] >= 0:
                s, e, k = W.ev0[j], W.ev1[j], Wkt.VALUE
            else:
                at = _put(out, at, _NULL)
    return sp, etop, at, st, s, e, k


# -- the renderer ---------------------------------------------------------------------------------
@kernel()
def render(V, kind, Y, W):
    """Every valid value of ``V`` (of well-known type ``kind``) → ``Y.out`` (offsets
    ``Y.offs``, status ``Y.status``); returns the number of doubles listed in ``Y.dbl``."""
    at = 0
    nd = 0
    Y.offs[0] = 0
    for r in range(len(V.offs) - 1):
        a0 = at
        nd0 = nd
        st = Status.OK
        if V.valid[r]:
            sp = 0
            etop = 0
            s, e, k = V.offs[r], V.offs[r + 1], kind  # the value to write next
            while True:
                if k == Wkt.VALUE:
                    at, nd, st, s, e, k = _value(V, Y, W, s, e, at, nd)
                elif k == Wkt.STRUCT:
                    sp, etop, at, st = _open_struct(V, W, sp, etop, s, e, Y.out, at)
                    k = -1
                elif k == Wkt.LIST:
                    sp, at, st = _open_list(W, sp, s, e, Y.out, at)
                    k = -1
                else:
                    at, nd, sp, st, s, e, k = _any(V, Y, W, sp, s, e, at, nd)
                if st == Status.OK and k < 0:
                    sp, etop, at, st, s, e, k = _advance(V, Y, W, sp, etop, at)
                if st != Status.OK or k < 0:
                    break
        if st != Status.OK:  # nothing of this value is kept: its text nor its numbers
            at = a0
            nd = nd0
            Y.status[r] = st
        Y.offs[r + 1] = at
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
            if c == _NUMBER:
                for q in range(fmt_offs[j], fmt_offs[j + 1]):
                    out[at] = fmt[q]
                    at += 1
                j += 1
            else:
                out[at] = c
                at += 1
        oo[r + 1] = at
    return out[:at], oo
