"""The kernel's column buffers → Arrow arrays of the reader's type, column by column.

Each column's values are in row order in its own buffer region; each becomes one Arrow array
with numpy and Arrow kernels, bottom-up along the reader tree: structs from their children
(reader-only fields the kernel could not write, records, collections and decimals, from their
defaults), lists and maps from item counts. Values the kernel leaves raw are finished here,
where a bad one fails its row (never the group): UTF-8 of strings (one Arrow validation per
column that holds a byte beyond ASCII). The row of a bad value is found by walking up the tree
(list offsets map items to their lists), only when one fails.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from connector.formats.avro._decimal import decimal_array
from connector.formats.avro._program import Column, Program
from connector.formats.core import ColumnBuffers, ColumnTree, struct_array, validity_bitmap

__all__ = ["Assembly"]


_K: Any = None  # the compiled helpers, imported at the first assembly (numba is slow to import)


def _kernels() -> Any:
    global _K
    if _K is None:
        from connector.formats.avro import _assemble_kernels

        _K = _assemble_kernels
    return _K



class Assembly(ColumnTree):
    """Builds the arrays of one decode call; rows failing here get ``why`` (first reason)."""

    def __init__(self, prog: Program, bufs: ColumnBuffers, dead: np.ndarray, why: np.ndarray):
        super().__init__(prog.cols, prog.root_col, bufs)
        self.prog = prog
        self.dead, self.why = dead, why
        self._sparse: dict[int, np.ndarray] = {}  # column -> the struct rows its values are of

    def _rows_of(self, c: int, idx: np.ndarray) -> np.ndarray:
        """Rows of values ``idx`` of column ``c``: :meth:`ColumnTree._rows_of`, through the
        struct fields whose column holds only some rows' values (a field some writers lack,
        filled from its default by the assembly)."""
        while c != self._root:
            sparse = self._sparse.get(c)
            if sparse is not None:
                idx = sparse[idx]
            p = self._parent[c]
            if p in self._offsets:  # items of lists/maps → the list's index
                idx = np.searchsorted(self._offsets[p], idx, side="right") - 1
            c = p
        return idx

    def fail(self, c: int, idx: np.ndarray, why: str) -> None:
        rows = self._rows_of(c, idx)
        rows = rows[~self.dead[rows]]
        if len(rows):
            self.dead[rows] = True
            self.why[rows] = why

    def _column(self, c: int, col: Column, valid, val, lens, nulls: int) -> pa.Array:
        m = len(val)
        k = col.kind
        if k == "struct":
            return self._struct(col, valid, val, nulls)
        bitmap = validity_bitmap(valid, nulls)
        if k == "dec":  # the kernel wrote each value's low word in val, its high word in len
            return decimal_array(col.typ, val, lens, bitmap, nulls)
        if k == "bin":
            return self._bytes(c, col, bitmap, lens, m, nulls)
        if k == "enum":
            got = _kernels().enum_strings(val, valid, *self.prog.symbols(c))
            if got is None:
                raise AssertionError("enum index out of range on the tape")  # never: see the kernel
            offs, data = got
            return pa.Array.from_buffers(col.typ, m, [bitmap, pa.py_buffer(offs), pa.py_buffer(data)],
                                         null_count=nulls)
        if k == "bool":
            data = pa.py_buffer(np.packbits(val.astype(bool), bitorder="little"))
        elif k == "i32":
            data = pa.py_buffer(val.astype(np.int32))
        elif k == "f32":
            data = pa.py_buffer(val.astype(np.uint32))
        else:  # i64, f64: the tape holds the value (or its bits) already
            data = pa.py_buffer(np.ascontiguousarray(val))
        return pa.Array.from_buffers(col.typ, m, [bitmap, data], null_count=nulls)

    def _bytes(self, c: int, col: Column, bitmap, lens, m: int, nulls: int) -> pa.Array:
        t = col.typ
        data = self.bufs.column_bytes(c)
        offs = _kernels().string_offsets(lens)
        if offs is None:
            raise OverflowError("more than 2 GiB of strings in one column of one batch")
        arr = pa.Array.from_buffers(t, m, [bitmap, pa.py_buffer(offs), pa.py_buffer(data)], null_count=nulls)
        if not pa.types.is_string(t) or not len(data) or data.max() < 0x80:
            return arr  # ASCII is UTF-8: one vectorized max instead of a validation per string
        try:
            arr.validate(full=True)
            return arr
        except pa.ArrowInvalid:
            pass
        bad = np.zeros(m, bool)
        for i in np.flatnonzero(lens > 0).tolist():  # only on a column that failed
            try:
                data[offs[i]:offs[i + 1]].tobytes().decode("utf-8")
            except UnicodeDecodeError:
                bad[i] = True
        self.fail(c, np.flatnonzero(bad), "invalid UTF-8 in a string")
        keep = np.repeat(~bad, lens)
        lens = np.where(bad, 0, lens)
        offs = np.zeros(m + 1, np.int64)
        np.cumsum(lens, out=offs[1:])
        return pa.Array.from_buffers(t, m, [bitmap, pa.py_buffer(offs.astype(np.int32)),
                                            pa.py_buffer(data[keep])], null_count=nulls)

    def _struct(self, col: Column, valid, val, nulls: int) -> pa.Array:
        if any(len(d) for _, d in col.variants):  # reader fields some writers lack: defaults
            froms = [self._from_column(col, i, valid, val) for i in range(len(col.children))]
            for x, from_col in zip(col.children, froms):
                if from_col is not None:  # the column holds values of these struct rows only
                    self._sparse[x] = np.flatnonzero(from_col)
            kids = [self._defaulted(col, i, self.build(x), valid, val, from_col)
                    for i, (x, from_col) in enumerate(zip(col.children, froms))]
        else:
            kids = [self.build(x) for x in col.children]
        return struct_array(col.typ, kids, valid, nulls)

    @staticmethod
    def _from_column(col: Column, i: int, valid, variant) -> np.ndarray | None:
        """Rows of a struct whose field ``i`` is in its column: the writer had it (or the
        struct is null); None: every row."""
        takers = [v for v, (_, d) in enumerate(col.variants) if i in d]
        return ~valid | ~np.isin(variant, takers) if takers else None

    @staticmethod
    def _defaulted(col: Column, i: int, kid: pa.Array, valid, variant, from_col) -> pa.Array:
        """Field ``i`` of a struct: from its column where the writer had it (or the struct is
        null), the reader's default elsewhere (``from_col``: see :meth:`_from_column`)."""
        if from_col is None:
            return kid
        takers = [v for v, (_, d) in enumerate(col.variants) if i in d]
        m = len(valid)
        if len(takers) == 1 and not from_col.any() and not len(kid):  # every row: one writer without it
            return col.variants[takers[0]][1][i].take(pa.array(np.zeros(m, np.int64)))
        parts = []
        src = np.full(m, -1, np.int64)
        src[from_col] = np.arange(int(from_col.sum()))
        off = len(kid)
        parts.append(kid)
        for v in takers:
            here = valid & (variant == v)
            k = int(here.sum())
            if k:
                parts.append(col.variants[v][1][i].take(pa.array(np.zeros(k, np.int64))))
                src[here] = off + np.arange(k)
                off += k
        return pa.concat_arrays(parts).take(pa.array(src))
