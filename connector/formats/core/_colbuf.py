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

__all__ = ["ColumnBuffers", "ColumnState", "ColumnTree", "collection_offsets", "collection_array"]


class ColumnState(NamedTuple):
    """The buffers as a kernel takes them: one argument whose fields numba resolves by name
    when it compiles the kernel (see the module docstring for what each holds)."""

    base: np.ndarray   # int64 per column: first value slot
    cap: np.ndarray    # int64 per column: value slots
    cnt: np.ndarray    # int64 per column: values written
    val: np.ndarray    # int64 per slot (+ the sink)
    valid: np.ndarray  # uint8 per slot
    len: np.ndarray    # int64 per slot: byte length (strings, bytes) or a second word
    bbase: np.ndarray  # int64 per column: first byte
    bcap: np.ndarray   # int64 per column: bytes
    bcnt: np.ndarray   # int64 per column: bytes written
    bdata: np.ndarray  # uint8: every column's bytes


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

    def state(self) -> ColumnState:
        """The buffers as one named kernel argument (build it again after :meth:`grow`)."""
        return ColumnState(self.base, self.cap, self.cnt, self.val, self.valid, self.len,
                           self.bbase, self.bcap, self.bcnt, self.bdata)

    def args(self) -> tuple:
        """The buffers as positional kernel arguments, in :class:`ColumnState`'s order."""
        return tuple(self.state())

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


class ColumnTree:
    """What a kernel's assembly knows of its columns: each column's parent, and the offsets of
    the list/map columns built so far, to find the row a value of any column belongs to.

    ``cols`` are the program's columns (each with ``children``); ``root`` the root column."""

    def __init__(self, cols, root: int):
        self._root = root
        self._parent: dict[int, int] = {}
        self._offsets: dict[int, np.ndarray] = {}
        for c, col in enumerate(cols):
            for k in col.children:
                self._parent[k] = c

    def _rows_of(self, c: int, idx: np.ndarray) -> np.ndarray:
        """Rows of values ``idx`` of column ``c`` (the root has one value per row)."""
        while c != self._root:
            p = self._parent[c]
            if p in self._offsets:  # items of lists/maps → the list's index
                idx = np.searchsorted(self._offsets[p], idx, side="right") - 1
            c = p
        return idx
