"""A JSON Schema tree (:class:`JNode`) → the tables the JSON kernel walks, and its columns.

One node per schema node (the tree is finite: recursion is cut by ``parse_json_schema``),
one output column per Arrow array: structs (validity), lists and maps (item counts; a map's
keys are a string column), strings, date-times, dates, numbers and JSON text (their bytes),
integers, booleans, nulls. A struct's property names go into an open-addressing table keyed
by the FNV-1a hash of their UTF-8 bytes, the hash the kernel computes while it unescapes a
key. Built once per schema and process; see :mod:`connector.formats.json_schema._kernel`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from connector.formats.json_schema._kstate import JTables
from connector.formats.json_schema._schema import JNode

__all__ = ["JColumn", "JsonProgram", "fnv1a"]

_KIND = {"struct": 0, "map": 1, "list": 2, "string": 3, "timestamp": 4, "date": 5, "int": 6,
         "float": 7, "bool": 8, "null": 9, "json": 10}
_COLUMN = {"struct": "struct", "map": "map", "list": "list", "string": "bin", "timestamp": "bin",
           "date": "bin", "float": "bin", "json": "bin", "int": "i64", "bool": "bool",
           "null": "null"}
_TYPES = {"object": 1, "array": 2, "string": 4, "integer": 8, "number": 16, "boolean": 32,
          "null": 64}
_INTEGRAL = 128  # the kernel's T_INTEGRAL: 2.0 is an integer (JNode.integral)


def fnv1a(b: bytes) -> int:
    """64-bit FNV-1a, as the kernel hashes keys."""
    h = 0xCBF29CE484222325
    for x in b:
        h = ((h ^ x) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


@dataclass
class JColumn:
    """One output array: ``kind`` is its storage (struct, list, map, bin, i64, bool, null)."""

    kind: str
    node: JNode | None
    typ: pa.DataType
    children: list[int] = field(default_factory=list)


class JsonProgram:
    """Node, field and key tables of one schema tree, and its output columns."""

    def __init__(self, root: JNode):
        self.cols: list[JColumn] = []
        self._rows: list[list[int]] = []  # kind, col, child, key col, allowed, f0, f1, tab, mask
        self._fields: list[tuple[int, int, int]] = []  # child node, name start, name end
        self._names = bytearray()
        self._tab: list[int] = []
        self.root = self._node(root)
        self.root_col = self._rows[self.root][1]
        self._freeze()

    def _col(self, kind: str, node: JNode | None, typ: pa.DataType) -> int:
        self.cols.append(JColumn(kind, node, typ))
        return len(self.cols) - 1

    def _node(self, n: JNode) -> int:
        nid = len(self._rows)
        # allowed JSON types (json nodes), and the kernel's T_INTEGRAL flag (int and json nodes)
        row = [_KIND[n.kind], self._col(_COLUMN[n.kind], n, n.arrow), -1, -1,
               127 | (_INTEGRAL if n.integral and n.kind in ("int", "json") else 0), 0, 0, 0, 0]
        self._rows.append(row)
        c = row[1]
        if n.kind in ("list", "map"):
            if n.kind == "map":
                row[3] = self._col("bin", None, pa.string())
                self.cols[c].children.append(row[3])
            row[2] = self._node(n.items)
            self.cols[c].children.append(self._rows[row[2]][1])
        elif n.kind == "json" and n.allowed is not None:
            row[4] = sum(_TYPES[t] for t in n.allowed) | (_INTEGRAL if n.integral else 0)
        elif n.kind == "struct":
            kids = [(name.encode(), self._node(t)) for name, t in n.fields]
            self.cols[c].children = [self._rows[k][1] for _, k in kids]
            f0 = len(self._fields)
            for name, k in kids:
                self._fields.append((k, len(self._names), len(self._names) + len(name)))
                self._names += name
            size = 1
            while size < 2 * len(kids) + 1:
                size *= 2
            tab = [-1] * size
            for i, (name, _) in enumerate(kids):
                j = fnv1a(name) & (size - 1)
                while tab[j] >= 0:
                    j = (j + 1) & (size - 1)
                tab[j] = f0 + i
            row[5:9] = [f0, len(self._fields), len(self._tab), size - 1]
            self._tab += tab
        return nid

    def _fill(self, c: int) -> list[int]:
        col = self.cols[c]
        out = [c]
        if col.kind == "struct":
            for k in col.children:
                out += self._fill(k)
        return out

    def _freeze(self) -> None:
        rows = np.array(self._rows, np.int64).reshape(-1, 9)
        (self.kind, self.ncol, self.nchild, self.nkey, self.nallowed, self.nf0, self.nf1,
         self.ntab, self.nmask) = (np.ascontiguousarray(rows[:, i]) for i in range(9))
        f = np.array(self._fields or [(0, 0, 0)], np.int64).reshape(-1, 3)
        self.fchild, self.fname0, self.fname1 = (np.ascontiguousarray(f[:, i]) for i in range(3))
        # names the kernel may compare with raw key bytes (no byte an escape could stand for)
        self.fplain = np.array([all(b >= 0x20 and b not in b'"\\' for b in self._names[a:b])
                                for _, a, b in self._fields] or [False], np.bool_)
        self.nfields = len(self._fields)
        self.names = np.frombuffer(bytes(self._names) or b"\0", np.uint8)
        self.ftab = np.array(self._tab or [-1], np.int64)
        fills = [self._fill(c) for c in range(len(self.cols))]
        flens = np.array([len(x) for x in fills], np.int64)
        self.fill1 = np.cumsum(flens)
        self.fill0 = self.fill1 - flens
        self.fills = np.array([x for y in fills for x in y], np.int64)

    def tables(self, root: int | None = None) -> JTables:
        """The kernel's schema tables (``root``: another root node, e.g. the kernel's SKIP to
        validate the JSON only)."""
        nodes = len(self.kind)
        return JTables(kind=self.kind, ncol=self.ncol, nchild=self.nchild, nkey=self.nkey, nallowed=self.nallowed,
                       nf0=self.nf0, nf1=self.nf1, ntab=self.ntab, nmask=self.nmask,
                       nflags=np.zeros(nodes, np.int64), nlo=np.zeros(nodes, np.int64),
                       nhi=np.zeros(nodes, np.int64), fchild=self.fchild, fname0=self.fname0,
                       fname1=self.fname1, fplain=self.fplain, freq=np.zeros(len(self.fchild), np.bool_),
                       names=self.names, ftab=self.ftab, fill0=self.fill0, fill1=self.fill1, fills=self.fills,
                       root=self.root if root is None else root, root_col=self.root_col)
