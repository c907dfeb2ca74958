"""The compiled JSON kernel: one strict pass per payload, values straight into per-column buffers.

Imported lazily (numba is slow to import); compiled once and cached on disk. A JSON Schema
tree becomes node tables (:class:`~connector.formats.json_schema._kstate.JTables`, built by
:mod:`connector.formats.json_schema._program`) that this loop walks while it parses the bytes,
with an explicit stack (no recursion driven by the data):

* the whole text is validated as JSON (RFC 8259: literals, number grammar, escapes, no control
  characters in strings, no trailing bytes; UTF-8 is checked before, over the whole payload);
* an object read as a struct dispatches each key through the struct's hash table; unknown
  members are validated and skipped; members the object lacks are null-filled when it closes;
* strings are unescaped into their column's bytes (keys into a scratch buffer);
* integers are range-checked int64; other numbers keep their text (cast once per column);
* a JSON-text leaf is re-encoded compactly, as ``msgspec.json.encode`` writes it (escapes,
  number forms); a number whose shortest form needs 16 or 17 digits is written as given and
  listed for a check after the kernel (``W.vrow``/``W.vs``/``W.ve``).

Validation (:mod:`connector.formats.json_schema._valid` decides what each node asks): the
kernel checks what the columns cannot show afterwards — a required member absent, an unknown
member where the schema closes the object or gives extra members a schema, counts of items and
members, a null where the schema refuses one — and marks a row whose value reached a part of the
schema only the reference validator judges (``R.check``). It never fails a row for these: the
reference validator gives the verdict and the message of every marked row.

The loop dispatches each value to a handler of its construct (null, string, number, boolean,
object or array, JSON text) and each step inside a container to the handler of its frame (close,
struct member, map entry, text member). State is named (:mod:`connector.formats.json_schema._kstate`):
``T`` the schema's tables, ``B`` the column buffers, ``W`` scratch space, ``R`` the rows and their
verdicts, ``F`` the parse stack. How it is compiled keeps it as fast as the hand-inlined loop it
replaced (same-run A/B over the JSON corpus: ``benchmarks/json_ab_bench.py``):

* handlers are inlined by numba (``inline="always"``); as calls, each would pass every array of
  each record as seven values;
* nothing is compiled with reference counting (``_nrt=False``): with it, every inlined access to
  a record's array costs an incref/decref pair (5x slower, measured);
* the parse stack is on the machine stack (``_stack``): heap arrays passed in may, for all the
  compiler knows, alias the buffers, so every byte written reloads the stack (rows of JSON text
  70% slower, measured).

Small scanners (:mod:`~connector.formats.json_schema._kscan`, :mod:`~connector.formats.json_schema._kleaf`)
take only the bytes they read; LLVM inlines them or calls them.

A row the kernel cannot decide alone (a key repeated in one object, a number beyond the forms
above) is rolled back and flagged *slow*: the caller decodes it with the reference path. A row
that fails is rolled back and replaced by a null root. Work is bounded per byte; nesting is
capped at :data:`MAX_NESTING`; items, entries and members per row at ``cap_items``.
"""
import numpy as np

from connector.formats.core import njit
from connector.formats.core.kernels import emit as _emit_core
from connector.formats.json_schema._guard import MAX_NESTING
from connector.formats.json_schema._kleaf import date_days, datetime_us, int64_of, render_number
from connector.formats.json_schema._kstate import (  # noqa: F401 - the vocabulary, named where it is used
    E_BIG,
    E_CAP,
    E_CTRL,
    E_DEEP,
    E_ESCAPE,
    E_EXPECT_ARRAY,
    E_EXPECT_BOOL,
    E_EXPECT_INT,
    E_EXPECT_NULL,
    E_EXPECT_NUMBER,
    E_EXPECT_OBJECT,
    E_EXPECT_STRING,
    E_INT_RANGE,
    E_JSON_TYPE,
    E_SLOW,
    E_SURROGATE,
    E_SYNTAX,
    E_TRAILING,
    E_TRUNC,
    J_BOOL,
    J_DATE,
    J_FLOAT,
    J_INT,
    J_JSON,
    J_LIST,
    J_MAP,
    J_NULL,
    J_STRING,
    J_STRUCT,
    J_TS,
    SKIP,
    T_ARRAY,
    T_BOOLEAN,
    T_INTEGER,
    T_INTEGRAL,
    T_NULL,
    T_NUMBER,
    T_OBJECT,
    T_STRING,
    V_CHECK,
    V_COUNT,
    V_NULL,
    V_REQUIRED,
    V_UNKNOWN,
    JStack,
)
from connector.formats.json_schema._kscan import (
    is_null,
    literal_len,
    scan_number,
    scan_string,
    skip_ws,
)

# nothing here allocates: compiled without reference counting; handlers inlined by numba
# (see the docstring)
_helper = njit(nogil=True, _nrt=False)
_handler = njit(nogil=True, _nrt=False, inline="always")

# frame kinds
F_STRUCT, F_MAP, F_LIST, F_SKIPOBJ, F_SKIPARR, F_JOBJ, F_JARR = range(7)
# frame states
S_FIRST, S_NEXT = 0, 1


# -- the parse stack, on the machine stack ---------------------------------------------------
_FRAMES = MAX_NESTING + 1


def _make_stack():
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def stack(typingctx, n):
        """An int64 array of ``n`` (a constant) on the calling function's stack frame: the
        compiler knows nothing else writes there (a heap array passed in could alias the
        buffers). Only for the function that calls it, and only without reference counting."""
        if not isinstance(n, types.IntegerLiteral):
            return None
        size = n.literal_value
        arrty = types.Array(types.int64, 1, "C")

        def codegen(context, builder, signature, args):
            ary = context.make_array(arrty)(context, builder)
            i64 = ir.IntType(64)
            data = cgutils.alloca_once(builder, i64, size=size)
            context.populate_array(ary, data=data, shape=[ir.Constant(i64, size)],
                                   strides=[ir.Constant(i64, 8)], itemsize=ir.Constant(i64, 8), meminfo=None)
            return ary._getvalue()
        return arrty(n), codegen
    return stack


_stack = _make_stack()


# -- small shared pieces ---------------------------------------------------------------------
@_handler
def _emit(B, c, valid, v, ln, ovc):
    """One value into column ``c`` (core's write; the last value slot is the overflow sink)."""
    return _emit_core(c, valid, v, ln, B.cbase, B.ccap, B.cnt, B.cval, B.cvalid, B.clen, len(B.cval) - 1, ovc)


@_handler
def _nulls(T, B, c, ovc):
    """A null at column ``c``: null in it and in every column below it that a null fills."""
    for q in range(T.fill0[c], T.fill1[c]):
        ovc = _emit(B, T.fills[q], 0, 0, 0, ovc)
    return ovc


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


@_handler
def _seen_key(W, r, obj, h):
    """True when key hash ``h`` was already seen in object ``obj`` (and record it otherwise);
    ``r`` stamps the row attempt: entries of earlier attempts count as free."""
    mask = len(W.hrow) - 1
    k = (h ^ (np.uint64(obj) * np.uint64(0x9E3779B97F4A7C15))) | np.uint64(1)
    i = np.int64(k & np.uint64(mask))
    while True:
        if W.hrow[i] != r:
            W.hrow[i] = r
            W.hkey[i] = k
            return False
        if W.hkey[i] == k:
            return True
        i = (i + 1) & mask


@_helper
def _copy(dst, src):
    """dst[:] = src without a temporary (numba's slice copy allocates one per call)."""
    for i in range(len(src)):
        dst[i] = src[i]


@_helper
def _max(a, floor):
    """The largest of ``a`` and ``floor`` (numba's ``a.max()`` needs reference counting)."""
    m = floor
    for x in a:
        if x > m:
            m = x
    return m


@_handler
def _within(T, nd, count):
    """Whether ``count`` items or members keep node ``nd``'s bounds (V_COUNT)."""
    return (T.nflags[nd] & V_COUNT) == 0 or (T.nlo[nd] <= count <= T.nhi[nd])


@_handler
def _length(B, c, b0, k, raw):
    """minLength/maxLength: a string's code points (its bytes written since ``b0``, UTF-8 lead
    bytes counted); a date or date-time keeps no text: its ``raw`` bytes as written, never fewer
    than its code points (the plan asks only what that bound decides)."""
    if k != J_STRING:
        return raw
    n = 0
    for q in range(B.bbase[c] + b0, B.bbase[c] + B.bcnt[c]):
        if (B.bdata[q] & 0xC0) != 0x80:
            n += 1
    return n


# -- values ----------------------------------------------------------------------------------
@_handler
def _string_value(B, buf, pos, end, k, c, ovc):
    """The string whose opening quote is at ``pos``, read as node kind ``k`` into column ``c``
    → (pos, error, ovc, ovb). Dates and date-times in the common ISO forms become their values
    here; others are kept as text (valid 2) and cast after the kernel."""
    q = pos + 1  # the plain run (no escape): scanned here, not in a call
    while q < end:
        b = buf[q]
        if b == 34 or b == 92 or b < 32:
            break
        q += 1
    if k != J_STRING and q < end and buf[q] == 34:
        if k == J_TS:
            ok, v = datetime_us(buf, pos + 1, q)
        else:
            ok, v = date_days(buf, pos + 1, q)
        if ok:
            return q + 1, 0, _emit(B, c, 1, v, 0, ovc), -1
    b = B.bcnt[c]
    at = B.bbase[c] + b
    if q < end and buf[q] == 34:
        ln = q - pos - 1
        if b + ln > B.bcap[c]:
            return pos, 0, ovc, c
        for j in range(ln):
            B.bdata[at + j] = buf[pos + 1 + j]
        pos = q + 1
        at2 = at + ln
    else:
        pos, at2, e2, _ = scan_string(buf, pos + 1, end, B.bdata, at, B.bbase[c] + B.bcap[c], False, False, True)
        if e2 == -1:
            return pos, 0, ovc, c
        if e2:
            return pos, e2, ovc, -1
    B.bcnt[c] = at2 - B.bbase[c]
    # a date or date-time kept as text is marked 2: cast after the kernel
    return pos, 0, _emit(B, c, 1 if k == J_STRING else 2, 0, at2 - at, ovc), -1


@_handler
def _number_value(T, B, buf, pos, end, cur, k, c, ovc):
    """The number at ``pos`` as node ``cur`` (kind ``k``, column ``c``; -1: skipped)
    → (pos, error, ovc, ovb)."""
    q, e2, isint = scan_number(buf, pos, end)
    if e2:
        return q, e2, ovc, -1
    if k == -1:
        return q, 0, ovc, -1
    if k == J_INT:
        if not isint:  # 2.0, 1e2 are integers from draft 6 on: the reference decides
            return q, E_SLOW if T.nallowed[cur] & T_INTEGRAL else E_EXPECT_INT, ovc, -1
        v, ok = int64_of(buf, pos, q)
        if not ok:
            return q, E_INT_RANGE, ovc, -1
        return q, 0, _emit(B, c, 1, v, 0, ovc), -1
    if k == J_FLOAT:
        b = B.bcnt[c]
        ln = q - pos
        if b + ln > B.bcap[c]:
            return pos, 0, ovc, c
        at = B.bbase[c] + b
        for j in range(ln):
            B.bdata[at + j] = buf[pos + j]
        if isint and ln == 2 and buf[pos] == 45 and buf[pos + 1] == 48:
            B.bdata[at] = 48  # the integer -0 is 0 (a float of +0.0)
            ln = 1
        B.bcnt[c] = b + ln
        return q, 0, _emit(B, c, 1, 0, ln, ovc), -1
    return q, _expected(k), ovc, -1


@_handler
def _bool_value(B, buf, pos, end, k, c, ovc):
    """``true`` or ``false`` at ``pos`` → (pos, error, ovc)."""
    ln = literal_len(buf, pos, end)
    if ln == 0:
        return pos, E_SYNTAX, ovc
    if k == -1:
        return pos + ln, 0, ovc
    if k != J_BOOL:
        return pos + ln, _expected(k), ovc
    return pos + ln, 0, _emit(B, c, 1, 1 if ln == 4 else 0, 0, ovc)


@_handler
def _open(T, B, W, F, sp, cur, k, c, obj, obj_id, ovc):
    """An object (``obj``) or array starting at node ``cur`` (kind ``k``; -1 skipped): its frame
    → (error, sp, obj_id, ovc)."""
    if obj:
        if k != -1 and k != J_STRUCT and k != J_MAP:
            return _expected(k), sp, obj_id, ovc
    elif k != -1 and k != J_LIST:
        return _expected(k), sp, obj_id, ovc
    if sp >= MAX_NESTING:
        return E_DEEP, sp, obj_id, ovc
    F.fnode[sp] = cur
    F.fstate[sp] = S_FIRST
    F.fcnt[sp] = 0
    if obj:
        obj_id += 1
        F.fobj[sp] = obj_id
    if k == J_STRUCT:
        F.fk[sp] = F_STRUCT
        F.fpred[sp] = T.nf0[cur]
        ovc = _emit(B, c, 1, 0, 0, ovc)
    elif k == J_MAP or k == J_LIST:
        F.fk[sp] = F_MAP if k == J_MAP else F_LIST
        F.fidx[sp] = B.cnt[c]
        ovc = _emit(B, c, 1, 0, 0, ovc)
    else:
        F.fk[sp] = F_SKIPOBJ if obj else F_SKIPARR
    return 0, sp + 1, obj_id, ovc


@_helper
def _json_type(buf, pos, end, ch):
    """The T_* type of the JSON value at ``pos`` (first byte ``ch``; anything unknown: T_NULL,
    refused later as a syntax error) → (type, error)."""
    if ch == 123:
        return T_OBJECT, 0
    if ch == 91:
        return T_ARRAY, 0
    if ch == 34:
        return T_STRING, 0
    if ch == 116 or ch == 102:
        return T_BOOLEAN, 0
    if ch == 45 or 48 <= ch <= 57:
        _, e2, isint = scan_number(buf, pos, end)
        if e2:
            return T_NULL, e2
        return (T_INTEGER if isint else T_NUMBER), 0
    return T_NULL, 0


@_handler
def _text_value(T, B, W, F, buf, pos, end, ch, cur, jc, sp, obj_id, r, vn, ovc):
    """A value of a JSON-text leaf, copied canonically: the leaf's own value at node ``cur``
    (``jc`` < 0), or a value inside the text being written to column ``jc``.
    Returns (pos, error, ovc, ovb, jc, sp, obj_id, vn)."""
    start_text = jc < 0
    if start_text:
        c = T.ncol[cur]
        if ch == 110:  # null: the leaf's value is null, not the text "null"
            if not is_null(buf, pos, end):
                return pos, E_SYNTAX, ovc, -1, jc, sp, obj_id, vn
            return pos + 4, 0, _nulls(T, B, c, ovc), -1, jc, sp, obj_id, vn
        t, err = _json_type(buf, pos, end, ch)
        if err:
            return pos, err, ovc, -1, jc, sp, obj_id, vn
        allowed = T.nallowed[cur]
        if (allowed & t) == 0:
            if t == T_NUMBER and (allowed & (T_INTEGRAL | T_INTEGER)) == T_INTEGRAL | T_INTEGER:
                err = E_SLOW  # is it an integer (2.0, draft 6 on)? the reference decides
            else:
                err = E_JSON_TYPE
            return pos, err, ovc, -1, jc, sp, obj_id, vn
        jc = c
        ovc = _emit(B, c, 1, B.bcnt[c], 0, ovc)  # the text's value: its length is known when it ends
    c = jc
    b = B.bcnt[c]
    at = B.bbase[c] + b
    lim = B.bbase[c] + B.bcap[c]
    if ch == 110:  # null inside the text
        if not is_null(buf, pos, end):
            return pos, E_SYNTAX, ovc, -1, jc, sp, obj_id, vn
        if b + 4 > B.bcap[c]:
            return pos, 0, ovc, c, jc, sp, obj_id, vn
        for q in range(4):
            B.bdata[at + q] = buf[pos + q]
        B.bcnt[c] = b + 4
        return pos + 4, 0, ovc, -1, jc, sp, obj_id, vn
    if ch == 123 or ch == 91:
        if sp >= MAX_NESTING:
            return pos, E_DEEP, ovc, -1, jc, sp, obj_id, vn
        if b + 1 > B.bcap[c]:
            return pos, 0, ovc, c, jc, sp, obj_id, vn
        B.bdata[at] = ch
        B.bcnt[c] = b + 1
        F.fk[sp] = F_JOBJ if ch == 123 else F_JARR
        F.fstate[sp] = S_FIRST
        F.fcnt[sp] = 0
        F.fidx[sp] = B.cnt[c] - 1 if start_text else -1
        obj_id += 1
        F.fobj[sp] = obj_id
        return pos + 1, 0, ovc, -1, jc, sp + 1, obj_id, vn
    if ch == 34:
        if at + 2 > lim:
            return pos, 0, ovc, c, jc, sp, obj_id, vn
        B.bdata[at] = 34
        pos, at, e2, _ = scan_string(buf, pos + 1, end, B.bdata, at + 1, lim - 1, True, False, True)
        if e2 == -1:
            return pos, 0, ovc, c, jc, sp, obj_id, vn
        if e2:
            return pos, e2, ovc, -1, jc, sp, obj_id, vn
        B.bdata[at] = 34
        at += 1
    elif ch == 116 or ch == 102:
        ln = literal_len(buf, pos, end)
        if ln == 0:
            return pos, E_SYNTAX, ovc, -1, jc, sp, obj_id, vn
        if at + ln > lim:
            return pos, 0, ovc, c, jc, sp, obj_id, vn
        for q in range(ln):
            B.bdata[at + q] = buf[pos + q]
        pos += ln
        at += ln
    else:
        q, e2, isint = scan_number(buf, pos, end)
        if e2:
            return q, e2, ovc, -1, jc, sp, obj_id, vn
        at2, st = render_number(buf, pos, q, isint, B.bdata, at, lim)
        if st == -1:
            return pos, 0, ovc, c, jc, sp, obj_id, vn
        if st == 2:
            return pos, E_SLOW, ovc, -1, jc, sp, obj_id, vn
        if st == 1:
            W.vrow[vn] = r
            W.vs[vn] = pos
            W.ve[vn] = q
            vn += 1
        pos = q
        at = at2
    B.bcnt[c] = at - B.bbase[c]
    if start_text:  # a scalar text is complete
        i = B.cnt[c] - 1
        j = B.cbase[c] + i if i < B.ccap[c] else len(B.cval) - 1
        B.clen[j] = B.bcnt[c] - B.cval[j]
        jc = -1
    return pos, 0, ovc, -1, jc, sp, obj_id, vn


# -- containers ------------------------------------------------------------------------------
@_handler
def _close(T, B, W, F, R, t, f, close, jc, r, ovc):
    """The frame ``t`` (kind ``f``) ends with byte ``close`` → (ovc, ovb, jc)."""
    if f == F_STRUCT:  # members the object lacks: null (a required one: the validator judges)
        nd = F.fnode[t]
        obj = F.fobj[t]
        req = T.nflags[nd] & V_REQUIRED
        for fi in range(T.nf0[nd], T.nf1[nd]):
            if W.seen[fi] != obj:
                ovc = _nulls(T, B, T.ncol[T.fchild[fi]], ovc)
                if req and T.freq[fi]:
                    R.check[r] = 1
        if not _within(T, nd, F.fcnt[t]):
            R.check[r] = 1
    elif f == F_MAP or f == F_LIST:
        nd = F.fnode[t]
        cc = T.ncol[nd]
        i = F.fidx[t]
        B.cval[B.cbase[cc] + i if i < B.ccap[cc] else len(B.cval) - 1] = F.fcnt[t]
        if not _within(T, nd, F.fcnt[t]):
            R.check[r] = 1
    elif f == F_JOBJ or f == F_JARR:
        b = B.bcnt[jc]
        if b + 1 > B.bcap[jc]:
            return ovc, jc, jc
        B.bdata[B.bbase[jc] + b] = close
        B.bcnt[jc] = b + 1
        i = F.fidx[t]
        if i >= 0:  # the text's outermost bracket: its value is complete
            j = B.cbase[jc] + i if i < B.ccap[jc] else len(B.cval) - 1
            B.clen[j] = B.bcnt[jc] - B.cval[j]
            jc = -1
    return ovc, -1, jc


@_handler
def _text_key(B, W, F, buf, pos, end, t, jc, attempt):
    """A member name inside JSON text, written escaped as msgspec writes it → (pos, error, ovb)."""
    b = B.bcnt[jc]
    at = B.bbase[jc] + b
    lim = B.bbase[jc] + B.bcap[jc]
    if at + 2 > lim:
        return pos, 0, jc
    B.bdata[at] = 34
    pos, at, e2, h = scan_string(buf, pos + 1, end, B.bdata, at + 1, lim - 2, True, True, True)
    if e2 == -1:
        return pos, 0, jc
    if e2:
        return pos, e2, -1
    B.bdata[at] = 34
    B.bdata[at + 1] = 58
    B.bcnt[jc] = at + 2 - B.bbase[jc]
    if _seen_key(W, attempt, F.fobj[t], h):
        return pos, E_SLOW, -1  # a key repeated: the reference keeps the last
    return pos, 0, -1


@_handler
def _map_key(T, B, W, F, buf, pos, end, t, attempt, ovc):
    """A map entry's key into the map's key column → (pos, value node, error, ovc, ovb)."""
    nd = F.fnode[t]
    kc = T.nkey[nd]
    b = B.bcnt[kc]
    at = B.bbase[kc] + b
    pos, at2, e2, h = scan_string(buf, pos + 1, end, B.bdata, at, B.bbase[kc] + B.bcap[kc], False, True, True)
    if e2 == -1:
        return pos, SKIP, 0, ovc, kc
    if e2:
        return pos, SKIP, e2, ovc, -1
    B.bcnt[kc] = at2 - B.bbase[kc]
    ovc = _emit(B, kc, 1, 0, at2 - at, ovc)
    if _seen_key(W, attempt, F.fobj[t], h):
        return pos, SKIP, E_SLOW, ovc, -1
    return pos, T.nchild[nd], 0, ovc, -1


@_handler
def _field_of(T, W, nd, kl, h):
    """The field of struct node ``nd`` named by the ``kl`` key bytes in ``W.scratch`` (FNV-1a
    hash ``h``), or -1."""
    m = T.nmask[nd]
    i = np.int64(h & np.uint64(m))
    while True:
        fi = T.ftab[T.ntab[nd] + i]
        if fi < 0:
            return -1
        a0 = T.fname0[fi]
        if T.fname1[fi] - a0 == kl:
            same = True
            for q in range(kl):
                if T.names[a0 + q] != W.scratch[q]:
                    same = False
                    break
            if same:
                return fi
        i = (i + 1) & m


@_handler
def _struct_key(T, W, F, R, buf, pos, end, t, r):
    """A struct member's name → (pos, value node (SKIP: not a field), error)."""
    nd = F.fnode[t]
    # most producers write members in the schema's order: try the one expected next on the raw
    # bytes (a name with a quote or backslash is never tried)
    fi = F.fpred[t]
    if fi < T.nf1[nd] and T.fplain[fi]:
        a0 = T.fname0[fi]
        kl = T.fname1[fi] - a0
        p = pos + 1
        if p + kl < end and buf[p + kl] == 34:
            for q in range(kl):
                if buf[p + q] != T.names[a0 + q]:
                    fi = -1
                    break
        else:
            fi = -1
        if fi >= 0:
            pos = p + kl + 1
    else:
        fi = -1
    if fi < 0:
        pos, kl, e2, h = scan_string(buf, pos + 1, end, W.scratch, 0, len(W.scratch), False, True, True)
        if e2:
            return pos, SKIP, e2 if e2 > 0 else E_BIG
        fi = _field_of(T, W, nd, kl, h)
    if fi < 0:
        if T.nflags[nd] & V_UNKNOWN:
            R.check[r] = 1
        return pos, SKIP, 0
    if W.seen[fi] == F.fobj[t]:
        return pos, SKIP, E_SLOW  # a key repeated: the reference keeps the last
    W.seen[fi] = F.fobj[t]
    F.fpred[t] = fi + 1
    return pos, T.fchild[fi], 0


# -- the loop --------------------------------------------------------------------------------
@_helper
def rows(T, B, W, R, lim, vn, r0):
    """Rows from ``r0`` on: (next row, column out of value room or -1, column out of byte
    room or -1, checks listed). Stops at the first row that overflows (rolled back)."""
    F = JStack(_stack(_FRAMES), _stack(_FRAMES), _stack(_FRAMES), _stack(_FRAMES), _stack(_FRAMES),
               _stack(_FRAMES), _stack(_FRAMES))
    buf = R.data
    n = len(R.starts)
    obj_id = _max(W.seen, 0)  # stamps of earlier calls stay smaller (a row redone after growth)
    attempt = _max(W.hrow, -1) + 1
    for r in range(r0, n):
        attempt += 1
        pos = R.starts[r]
        end = R.ends[r]
        err = 0
        items = 0
        sp = 0
        ovc = -1
        ovb = -1
        R.check[r] = 0
        _copy(W.snap, B.cnt)
        _copy(W.bsnap, B.bcnt)
        v0 = vn
        cur = T.root
        expect_value = True
        jc = -1  # column of the JSON text being written (copy mode), else -1
        if end - pos > lim.max_bytes:
            err = E_BIG
            expect_value = False
        while err == 0 and ovc < 0 and ovb < 0:
            if expect_value:  # -- a value: dispatched on its first byte and its node's kind
                expect_value = False
                pos = skip_ws(buf, pos, end)
                if pos >= end:
                    err = E_TRUNC
                    break
                ch = buf[pos]
                vf = 0  # the node's validation flags
                if jc < 0 and cur != SKIP:
                    k = T.kind[cur]  # the kind, and the flags above it (one load per value)
                    vf = k >> 8
                    k &= 255
                    c = T.ncol[cur]
                    if vf & (V_CHECK if ch != 110 else V_NULL):
                        R.check[r] = 1
                else:
                    k = -1
                    c = -1
                if jc >= 0 or k == J_JSON:
                    pos, err, ovc, ovb, jc, sp, obj_id, vn = _text_value(T, B, W, F, buf, pos, end, ch, cur, jc, sp, obj_id, r, vn, ovc)
                elif ch == 110:
                    if not is_null(buf, pos, end):
                        err = E_SYNTAX
                    else:
                        pos += 4
                        if c >= 0:
                            ovc = _nulls(T, B, c, ovc)
                elif ch == 34:
                    if k == -1:  # not kept: only scanned
                        pos, _, err, _ = scan_string(buf, pos + 1, end, W.scratch, 0, len(W.scratch), False, False,
                                                     False)
                    elif k != J_STRING and k != J_TS and k != J_DATE:
                        err = _expected(k)
                    elif vf & V_COUNT:  # minLength / maxLength
                        p0 = pos
                        b0 = B.bcnt[c]
                        pos, err, ovc, ovb = _string_value(B, buf, pos, end, k, c, ovc)
                        if not _within(T, cur, _length(B, c, b0, k, pos - p0 - 2)):
                            R.check[r] = 1
                    else:
                        pos, err, ovc, ovb = _string_value(B, buf, pos, end, k, c, ovc)
                elif ch == 45 or 48 <= ch <= 57:
                    pos, err, ovc, ovb = _number_value(T, B, buf, pos, end, cur, k, c, ovc)
                elif ch == 123 or ch == 91:
                    err, sp, obj_id, ovc = _open(T, B, W, F, sp, cur, k, c, ch == 123, obj_id, ovc)
                    pos += 1
                elif ch == 116 or ch == 102:
                    pos, err, ovc = _bool_value(B, buf, pos, end, k, c, ovc)
                else:
                    err = E_SYNTAX
                continue
            # -- inside a container: what follows a value or an opening bracket
            if sp == 0:
                break
            t = sp - 1
            f = F.fk[t]
            pos = skip_ws(buf, pos, end)
            if pos >= end:
                err = E_TRUNC
                break
            ch = buf[pos]
            is_obj = f == F_STRUCT or f == F_MAP or f == F_SKIPOBJ or f == F_JOBJ
            close = 125 if is_obj else 93
            if ch == close:
                pos += 1
                ovc, ovb, jc = _close(T, B, W, F, R, t, f, close, jc, r, ovc)
                sp -= 1
                continue
            if F.fstate[t] == S_NEXT:
                if ch != 44:
                    err = E_SYNTAX
                    break
                pos = skip_ws(buf, pos + 1, end)
                if pos >= end:
                    err = E_TRUNC
                    break
                ch = buf[pos]
            F.fstate[t] = S_NEXT
            items += 1
            if items > lim.cap_items:
                err = E_CAP
                break
            F.fcnt[t] += 1
            if (f == F_JOBJ or f == F_JARR) and F.fcnt[t] > 1:  # the comma, in the text
                b = B.bcnt[jc]
                if b + 1 > B.bcap[jc]:
                    ovb = jc
                    break
                B.bdata[B.bbase[jc] + b] = 44
                B.bcnt[jc] = b + 1
            if not is_obj:
                cur = SKIP if f == F_SKIPARR else T.nchild[F.fnode[t]] if f == F_LIST else cur
                expect_value = True
                continue
            # an object member: "key": value
            if ch != 34:
                err = E_SYNTAX
                break
            if f == F_JOBJ:
                pos, err, ovb = _text_key(B, W, F, buf, pos, end, t, jc, attempt)
            elif f == F_MAP:
                pos, cur, err, ovc, ovb = _map_key(T, B, W, F, buf, pos, end, t, attempt, ovc)
            elif f == F_STRUCT:
                pos, cur, err = _struct_key(T, W, F, R, buf, pos, end, t, r)
            else:  # F_SKIPOBJ
                pos, _, err, _ = scan_string(buf, pos + 1, end, W.scratch, 0, len(W.scratch), False, False, False)
                cur = SKIP
            if err or ovb >= 0:
                break
            pos = skip_ws(buf, pos, end)
            if pos >= end or buf[pos] != 58:
                err = E_SYNTAX if pos < end else E_TRUNC
                break
            pos += 1
            expect_value = True
        if err == 0 and ovc < 0 and ovb < 0:
            pos = skip_ws(buf, pos, end)
            if pos != end:
                err = E_TRAILING
        if ovc >= 0 or ovb >= 0:  # out of room: roll back, the caller grows and redoes the row
            _copy(B.cnt, W.snap)
            _copy(B.bcnt, W.bsnap)
            return r, ovc, ovb, v0
        if err:  # roll the row back and write a null value in its place
            _copy(B.cnt, W.snap)
            _copy(B.bcnt, W.bsnap)
            vn = v0
            if err == E_SLOW:
                R.slow[r] = 1
            else:
                R.codes[r] = err
            ovc = _nulls(T, B, T.root_col, -1)
            if ovc >= 0:
                _copy(B.cnt, W.snap)
                R.codes[r] = 0
                R.slow[r] = 0
                return r, ovc, -1, vn
    return n, -1, -1, vn


@njit(nogil=True)
def duplicates(codes, lens):
    """Per list (``lens[r]`` consecutive entries of ``codes``: one number per distinct item value),
    whether it holds a value twice: one pass, ``last[code]`` remembering the list that held it
    last (uniqueItems; a sort of every (list, value) pair cost about 10% of a decode)."""
    n = len(lens)
    out = np.zeros(n, np.bool_)
    top = 0
    for x in codes:
        if x > top:
            top = x
    last = np.full(top + 1, -1, np.int64)
    at = 0
    for r in range(n):
        for _ in range(lens[r]):
            k = codes[at]
            at += 1
            if last[k] == r:
                out[r] = True
            last[k] = r
    return out
