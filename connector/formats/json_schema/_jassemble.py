"""The JSON kernel's column buffers → Arrow arrays of the schema's type; and the reference
conversion of the rows the kernel leaves (:func:`slow_values`).

Columns become arrays bottom-up along the schema tree. Strings and JSON text are ready (the
payload was checked as UTF-8 and the kernel's escapes produce UTF-8); number texts are cast to
float64 and date-time/date strings finished as ``_types.finish`` does, once per column. A
value that does not cast fails its row (found through list and map offsets), never the group.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from connector.formats.core import ColumnBuffers, ColumnTree, struct_array, validity_bitmap
from connector.formats.json_schema._program import JColumn, JsonProgram
from connector.formats.json_schema._schema import JNode
from connector.formats.json_schema._types import finish, json_type, read_type

__all__ = ["JAssembly", "slow_values"]

_ARROW_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError, UnicodeDecodeError)


class JAssembly(ColumnTree):
    """Builds the arrays of one decode call; ``failed``: {row: reason} found on the way;
    ``flagged``: rows whose values a column's validation (``JColumn.check``) sends to the
    reference validator."""

    def __init__(self, prog: JsonProgram, bufs: ColumnBuffers, n: int):
        super().__init__(prog.cols, prog.root_col, bufs)
        self.prog, self.n = prog, n
        self.failed: dict[int, str] = {}
        self.flagged = np.zeros(n, bool)

    def build(self, c: int) -> pa.Array:
        arr = super().build(c)
        check = self.prog.cols[c].check
        if check is not None:
            bad = check.failing(arr, arr.values if check.kind == "list" else None)
            if bad.any():
                self.flagged[self._rows_of(c, np.flatnonzero(bad))] = True
        return arr

    def _column(self, c: int, col: JColumn, valid, val, lens, nulls: int) -> pa.Array:
        m = len(val)
        k = col.kind
        if k == "struct":
            return struct_array(col.typ, [self.build(x) for x in col.children], valid, nulls)
        if col.node is not None and col.node.kind in ("timestamp", "date"):
            return self._temporal(c, col, val, lens)
        bitmap = validity_bitmap(valid, nulls)
        if k == "bool":
            data = pa.py_buffer(np.packbits(val.astype(bool), bitorder="little"))
            return pa.Array.from_buffers(col.typ, m, [bitmap, data], null_count=nulls)
        if k == "i64":
            return pa.Array.from_buffers(col.typ, m, [bitmap, pa.py_buffer(np.ascontiguousarray(val))],
                                         null_count=nulls)
        offs = np.zeros(m + 1, np.int64)
        np.cumsum(lens, out=offs[1:])
        if offs[-1] > 2**31 - 1:
            raise OverflowError("more than 2 GiB of text in one column of one batch")
        text = pa.Array.from_buffers(pa.string(), m, [bitmap, pa.py_buffer(offs.astype(np.int32)),
                                                      pa.py_buffer(self.bufs.column_bytes(c))],
                                     null_count=nulls)
        return self._finish(c, col, text)

    def _temporal(self, c: int, col: JColumn, val: np.ndarray, lens: np.ndarray) -> pa.Array:
        """Dates and date-times: the kernel parsed the common ISO forms (valid 1); the others
        are text (valid 2), cast here as ``finish`` casts them."""
        assert col.node is not None  # date and date-time columns keep their node
        raw = self.bufs.column_raw_valid(c)
        m = len(val)
        vals = val.copy()
        pending = np.flatnonzero(raw == 2)
        ok = raw != 0
        if len(pending):
            pl = lens[pending]
            offs = np.zeros(len(pending) + 1, np.int64)
            np.cumsum(pl, out=offs[1:])
            text = pa.Array.from_buffers(pa.string(), len(pending),
                                         [None, pa.py_buffer(offs.astype(np.int32)),
                                          pa.py_buffer(self.bufs.column_bytes(c))])
            conv = self._finish(c, col, text, pending)
            got = conv.cast(pa.int64() if col.node.kind == "timestamp" else pa.int32())
            good = got.is_valid().to_numpy(zero_copy_only=False)
            vals[pending] = got.fill_null(0).to_numpy(zero_copy_only=False)
            ok[pending[~good]] = False
        nulls = m - int(np.count_nonzero(ok))
        bitmap = pa.py_buffer(np.packbits(ok, bitorder="little")) if nulls else None
        data = vals if col.node.kind == "timestamp" else vals.astype(np.int32)
        return pa.Array.from_buffers(col.typ, m, [bitmap, pa.py_buffer(np.ascontiguousarray(data))],
                                     null_count=nulls)

    def _finish(self, c: int, col: JColumn, text: pa.Array, where: np.ndarray | None = None) -> pa.Array:
        """Strings as read → the node's type (numbers, date-times, dates); bad values fail
        their rows."""
        node = col.node
        if node is None or node.kind in ("string", "json"):
            return text
        if node.kind == "float":
            def conv(a):
                return a.cast(pa.float64())
        else:
            def conv(a):
                return finish(a, node)
        try:
            return conv(text)
        except _ARROW_ERRORS:
            pass
        parts, bad = [], []
        for i in range(len(text)):
            try:
                parts.append(conv(text.slice(i, 1)))
            except _ARROW_ERRORS as e:
                bad.append(i)
                self._fail(c, i if where is None else int(where[i]), f"{type(e).__name__}: {e}")
                parts.append(pa.nulls(1, col.typ))
        return pa.concat_arrays(parts)

    def _fail(self, c: int, i: int, why: str) -> None:
        row = int(self._rows_of(c, np.array([i], np.int64))[0])
        self.failed.setdefault(row, why)


class BadValue(ValueError):
    """A JSON value that does not fit its schema's type (a row error)."""


_Bad = BadValue


def _expect(ok: bool, what: str, v: Any):
    if not ok:
        raise _Bad(f"expected {what}, got {type(v).__name__}")


#: An integer written with a fraction or an exponent (``2.0``) is taken below 2^53 only: past
#: it, readers that parse JSON numbers as doubles (most) may hold another integer.
INTEGRAL_MAX = 2 ** 53


def _integral(v: Any) -> bool:
    """A decoded number (an exact Decimal from the kernel's slow path, or a float) with a zero
    fraction."""
    return v == v.to_integral_value() if type(v) is Decimal else type(v) is float and v.is_integer()


def _plain(v: Any) -> Any:
    """Decimals (the slow path's exact numbers) back to floats, for JSON text and float columns."""
    t = type(v)
    if t is Decimal:
        f = float(v)
        if not math.isfinite(f):
            raise _Bad("number out of the 64-bit floating-point range")
        return f
    if t is dict:
        return {k: _plain(x) for k, x in v.items()}
    if t is list:
        return [_plain(x) for x in v]
    return v


def value_converter(n: JNode, *, dates_as_text: bool = True) -> Callable[[Any], Any]:
    """A strict converter of one decoded JSON value (msgspec/orjson) to the Python value of ``n``.

    ``dates_as_text``: date-times and dates stay strings (the value of ``read_type(n)``:
    :func:`finish` converts them as the kernel's path does); else they become ``datetime``/``date``
    (the value of ``n.arrow``). A value of another type raises :class:`BadValue`."""
    k = n.kind
    if k == "struct":
        fields = [(name, value_converter(t, dates_as_text=dates_as_text)) for name, t in n.fields]

        def struct(v):
            if v is None:
                return None
            _expect(type(v) is dict, "an object", v)
            return {name: c(v.get(name)) for name, c in fields}
        return struct
    if k in ("map", "list"):
        c = value_converter(n.items, dates_as_text=dates_as_text)

        def coll(v):
            if v is None:
                return None
            if k == "map":
                _expect(type(v) is dict, "an object", v)
                return [(key, c(x)) for key, x in v.items()]
            _expect(type(v) is list, "an array", v)
            return [c(x) for x in v]
        return coll
    integral = n.integral  # 2.0 is an integer (draft 6 on)
    if k == "json":
        allowed = n.allowed

        def text(v):
            if v is None:
                return None
            if allowed is not None and json_type(v) not in allowed and not (
                    integral and "integer" in allowed and _integral(v)):
                raise _Bad(f"expected one of {sorted(allowed)}, got {json_type(v)}")
            return msgspec.json.encode(_plain(v)).decode()
        return text

    def scalar(v):
        if v is None:
            return None
        if k == "string" or (dates_as_text and k in ("timestamp", "date")):
            _expect(type(v) is str, "a string", v)
            return v
        if k == "int":
            if integral and type(v) is not int and _integral(v):
                if abs(v) >= INTEGRAL_MAX:
                    raise _Bad("integer written with a fraction or an exponent beyond ±2^53 (readers that "
                               "parse JSON numbers as doubles disagree on its value): write it without them")
                return int(v)
            _expect(type(v) is int and -2**63 <= v < 2**63, "a 64-bit integer", v)
            return v
        if k == "float":
            _expect(type(v) in (int, float, Decimal), "a number", v)
            return float(_plain(v))
        if k == "bool":
            _expect(type(v) is bool, "a boolean", v)
            return v
        if k == "timestamp":
            _expect(type(v) is str, "a date-time string", v)
            ts = datetime.fromisoformat(v)
            return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
        if k == "date":
            _expect(type(v) is str, "a date string", v)
            return date.fromisoformat(v)
        raise _Bad(f"expected null, got {type(v).__name__}")
    return scalar


def slow_values(node: JNode, values: list) -> tuple[pa.Array, dict[int, str]]:
    """Values decoded by msgspec → (an array of ``node.arrow``, {index: reason} of the values
    that do not fit; those are null)."""
    conv = value_converter(node)
    rt = read_type(node)
    bad: dict[int, str] = {}
    rows = []
    for i, v in enumerate(values):
        try:
            rows.append(conv(v))
        except (_Bad, *_ARROW_ERRORS) as e:  # a bad date-time is a ValueError of its parser
            bad[i] = f"{type(e).__name__}: {e}"
            rows.append(None)
    try:  # one conversion for the lot; a value Arrow refuses sends it row by row
        arr = pa.array(rows, rt)
    except _ARROW_ERRORS:
        out = []
        for i, r in enumerate(rows):
            try:
                out.append(pa.array([r], rt))
            except _ARROW_ERRORS as e:
                bad[i] = f"{type(e).__name__}: {e}"
                out.append(pa.nulls(1, rt))
        arr = pa.concat_arrays(out) if out else pa.array([], rt)
    try:
        return finish(arr, node), bad
    except _ARROW_ERRORS:
        pass
    parts = []
    for i in range(len(arr)):
        try:
            parts.append(finish(arr.slice(i, 1), node))
        except _ARROW_ERRORS as e:
            bad.setdefault(i, f"{type(e).__name__}: {e}")
            parts.append(pa.nulls(1, node.arrow))
    return pa.concat_arrays(parts), bad
