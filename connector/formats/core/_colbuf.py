"""Per-column output buffers that the compiled decoders (Avro, JSON) write into.

Column ``c`` owns ``base[c] .. base[c] + cap[c]`` of the value buffers (``val`` int64,
``valid`` uint8, ``len`` int64; one slot past the end is a sink for writes that overflow) and
``bbase[c] .. bbase[c] + bcap[c]`` of ``bdata`` for its bytes; ``cnt``/``bcnt`` count what it
holds. Kernels write values in row order, roll a failed row back to the counts at its start,
and stop at a row that overflows a column; :meth:`ColumnBuffers.grow` then makes room and the
kernel redoes that row. Room is sized from what the previous group of the same schema needed
per row, so a steady stream never regrows.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

__all__ = ["ColumnBuffers", "ColumnTree", "KernelBuffers", "collection_offsets", "collection_array", "null_fills",
           "struct_array", "validity_bitmap"]


class KernelBuffers(NamedTuple):
    """The buffers as a kernel takes them, by name (numba compiles field access to a plain load)."""

    cbase: np.ndarray  # column → first value slot
    ccap: np.ndarray  # column → value slots
    cnt: np.ndarray  # column → values written
    cval: np.ndarray  # int64 values (one slot past the end: the overflow sink)
    cvalid: np.ndarray  # uint8 validity (0 null, else a kernel code)
    clen: np.ndarray  # int64 lengths (bytes of a byte column's value)
    bbase: np.ndarray  # column → first byte
    bcap: np.ndarray  # column → bytes
    bcnt: np.ndarray  # column → bytes written
    bdata: np.ndarray  # uint8


class ColumnBuffers:
    """Buffers of one decode call; ``learnt`` carries the per-row sizes between calls."""

    def __init__(self, learnt: tuple[np.ndarray, np.ndarray], n: int):
        per_row, bytes_per_row = learnt
        self.learnt = learnt
        self.n = n
        self.cap = np.ceil(per_row * n * 1.1).astype(np.int64) + 16
        self.bcap = np.ceil(bytes_per_row * n * 1.1).astype(np.int64) + 64
        ncols = len(per_row)
        self.base = np.zeros(ncols, np.int64)
        np.cumsum(self.cap[:-1], out=self.base[1:])
        self.bbase = np.zeros(ncols, np.int64)
        np.cumsum(self.bcap[:-1], out=self.bbase[1:])
        total = int(self.cap.sum()) + 1  # the last slot is the overflow sink
        self.val = np.empty(total, np.int64)
        self.valid = np.empty(total, np.uint8)
        self.len = np.empty(total, np.int64)
        self.bdata = np.empty(int(self.bcap.sum()), np.uint8)
        self.cnt = np.zeros(ncols, np.int64)
        self.bcnt = np.zeros(ncols, np.int64)

    @staticmethod
    def initial(bin_columns: list[bool]) -> tuple[np.ndarray, np.ndarray]:
        """Per-row sizes before any group: one value per column, 16 bytes per byte column."""
        return (np.ones(len(bin_columns)),
                np.array([16.0 if b else 0.0 for b in bin_columns]))

    def args(self) -> tuple:
        """The kernels' buffer arguments: base, cap, cnt, val, valid, len, bbase, bcap, bcnt,
        bdata."""
        return (self.base, self.cap, self.cnt, self.val, self.valid, self.len, self.bbase,
                self.bcap, self.bcnt, self.bdata)

    def named(self) -> KernelBuffers:
        """The buffers by name (a new record after :meth:`grow`, which replaces arrays)."""
        return KernelBuffers(*self.args())

    def grow(self, over: int, overb: int, row_bytes: int) -> None:
        """Room for column ``over``'s values or ``overb``'s bytes (a row of ``row_bytes``)."""
        from connector.formats.core import kernels as _colkernel

        K: Any = _colkernel  # numba dispatchers: mypy cannot see their signatures
        if over >= 0:
            self.cap = np.maximum(self.cap, self.cnt + 16)
            self.cap[over] = 2 * self.cap[over] + 64
            self.base, self.val, self.valid, self.len = K.regrow(self.base, self.cnt, self.val,
                                                                 self.valid, self.len, self.cap)
        if overb >= 0:
            self.bcap = np.maximum(self.bcap, self.bcnt + 64)
            self.bcap[overb] = 2 * self.bcap[overb] + 8 * row_bytes + 64
            self.bbase, self.bdata = K.regrow_bytes(self.bbase, self.bcnt, self.bdata, self.bcap)

    def learn(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-row sizes for the next call (the larger of this group's and half the last)."""
        per_row, bytes_per_row = self.learnt
        return (np.maximum(self.cnt / self.n, per_row * 0.5),
                np.maximum(self.bcnt / self.n, bytes_per_row * 0.5))

    def column(self, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(valid as bool, value, length) of column ``c``."""
        s = int(self.base[c])
        e = s + int(self.cnt[c])
        return self.valid[s:e].view(bool), self.val[s:e], self.len[s:e]

    def column_raw_valid(self, c: int) -> np.ndarray:
        """Column ``c``'s validity bytes as the kernel wrote them (0 null, else a kernel code)."""
        s = int(self.base[c])
        return self.valid[s:s + int(self.cnt[c])]

    def column_bytes(self, c: int) -> np.ndarray:
        s = int(self.bbase[c])
        return self.bdata[s:s + int(self.bcnt[c])]


def null_fills(cols) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fill0, fill1, fills): the columns that take one null value when column ``c`` takes one
    are ``fills[fill0[c]:fill1[c]]`` — ``c`` and, for a struct, every column below it. ``cols``:
    a program's columns (each with ``kind`` and ``children``)."""
    def below(c: int) -> list[int]:
        col = cols[c]
        return [c] + ([k for child in col.children for k in below(child)] if col.kind == "struct" else [])

    lists = [below(c) for c in range(len(cols))]
    lens = np.array([len(f) for f in lists], np.int64)
    fill1 = np.cumsum(lens)
    return fill1 - lens, fill1, np.array([x for f in lists for x in f], np.int64)


def collection_offsets(counts: np.ndarray) -> np.ndarray:
    """int64 offsets (``len(counts) + 1``) of a list or map column whose rows hold ``counts`` items."""
    offs = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offs[1:])
    if offs[-1] > 2**31 - 1:
        raise OverflowError("more than 2**31 collection items in one batch")
    return offs


def collection_array(kind: str, offs: np.ndarray, children: list[pa.Array], typ: pa.DataType,
                     valid: np.ndarray, nulls: int) -> pa.Array:
    """A ``list`` (one child) or ``map`` (keys, items) array from its offsets and built children."""
    offsets = pa.array(offs.astype(np.int32))
    mask = pa.array(~valid) if nulls else None
    if kind == "list":
        return pa.ListArray.from_arrays(offsets, children[0], type=typ, mask=mask)
    keys, items = children
    return pa.MapArray.from_arrays(offsets, keys, items, type=typ, mask=mask)


def validity_bitmap(valid: np.ndarray, nulls: int) -> pa.Buffer | None:
    """The Arrow validity bitmap of ``valid`` (bool per value); None when no value is null."""
    return pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None


def struct_array(typ: pa.DataType, kids: list[pa.Array], valid: np.ndarray, nulls: int) -> pa.Array:
    """A struct array of ``typ`` from its built fields, null where ``valid`` is False (a struct
    without fields has no child to take its length from: it is built from its bitmap)."""
    if not kids:
        return pa.Array.from_buffers(typ, len(valid), [validity_bitmap(valid, nulls)], null_count=nulls,
                                     children=[])
    return pa.StructArray.from_arrays(kids, fields=list(typ), mask=pa.array(~valid) if nulls else None)


class ColumnTree:
    """What a kernel's assembly knows of its columns: each column's parent, and the offsets of
    the list/map columns built so far, to find the row a value of any column belongs to; and
    the building of the columns every format builds alike (lists, maps, nulls), bottom-up.

    ``cols`` are the program's columns (each with ``kind``, ``typ`` and ``children``); ``root``
    the root column; ``bufs`` the call's :class:`ColumnBuffers`. A format's assembly builds the
    other kinds in :meth:`_column`."""

    def __init__(self, cols, root: int, bufs: ColumnBuffers):
        self._cols = cols
        self.bufs = bufs
        self._root = root
        self._parent: dict[int, int] = {}
        self._offsets: dict[int, np.ndarray] = {}
        for c, col in enumerate(cols):
            for k in col.children:
                self._parent[k] = c

    def build(self, c: int) -> pa.Array:
        """Column ``c`` (and the columns below it) as one Arrow array of its type."""
        col = self._cols[c]
        valid, val, lens = self.bufs.column(c)
        nulls = len(val) - int(np.count_nonzero(valid))
        if col.kind in ("list", "map"):  # val holds each row's item count
            self._offsets[c] = offs = collection_offsets(val)  # the children's rows are found through them
            return collection_array(col.kind, offs, [self.build(x) for x in col.children], col.typ, valid, nulls)
        if col.kind == "null":
            return pa.nulls(len(val), col.typ)
        return self._column(c, col, valid, val, lens, nulls)

    def _column(self, c: int, col: Any, valid: np.ndarray, val: np.ndarray, lens: np.ndarray,
                nulls: int) -> pa.Array:
        """A column of a kind the format builds itself (structs, scalars...): its values ``val``
        and lengths ``lens``, ``nulls`` of them null (``valid``)."""
        raise NotImplementedError

    def _rows_of(self, c: int, idx: np.ndarray) -> np.ndarray:
        """Rows of values ``idx`` of column ``c`` (the root has one value per row)."""
        while c != self._root:
            p = self._parent[c]
            if p in self._offsets:  # items of lists/maps → the list's index
                idx = np.searchsorted(self._offsets[p], idx, side="right") - 1
            c = p
        return idx
