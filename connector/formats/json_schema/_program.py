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
from typing import Any

import numpy as np
import pyarrow as pa

from connector.formats.core import null_fills
from connector.formats.json_schema import _kstate as K
from connector.formats.json_schema._kstate import JTables
from connector.formats.json_schema._schema import JNode

__all__ = ["JColumn", "JsonProgram", "fnv1a"]

_KIND = {"struct": K.J_STRUCT, "map": K.J_MAP, "list": K.J_LIST, "string": K.J_STRING, "timestamp": K.J_TS,
         "date": K.J_DATE, "int": K.J_INT, "float": K.J_FLOAT, "bool": K.J_BOOL, "null": K.J_NULL, "json": K.J_JSON}
_COLUMN = {"struct": "struct", "map": "map", "list": "list", "string": "bin", "timestamp": "bin",
           "date": "bin", "float": "bin", "json": "bin", "int": "i64", "bool": "bool",
           "null": "null"}
_TYPES = {"object": K.T_OBJECT, "array": K.T_ARRAY, "string": K.T_STRING, "integer": K.T_INTEGER,
          "number": K.T_NUMBER, "boolean": K.T_BOOLEAN, "null": K.T_NULL}
_INTEGRAL = K.T_INTEGRAL  # 2.0 is an integer (JNode.integral)


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
    check: Any = None  # the values' validation (a _valid.LeafCheck), applied when the column is built



class JsonProgram:
    """Node, field and key tables of one schema tree, and its output columns.

    ``rules`` (:func:`connector.formats.json_schema._valid.plan_validation`, by node ``id``): what
    each node asks the kernel (flags, counts, required fields) and its column (``JColumn.check``);
    None: no validation."""

    def __init__(self, root: JNode, rules: dict | None = None):
        self.cols: list[JColumn] = []
        self._rules = rules or {}
        # kind, col, child, key col, allowed, f0, f1, tab, mask, flags, lo, hi
        self._rows: list[list[int]] = []
        self._fields: list[tuple[int, int, int, bool]] = []  # child node, name start, name end, required
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
        rule = self._rules.get(id(n))
        row = [_KIND[n.kind], self._col(_COLUMN[n.kind], n, n.arrow), -1, -1,
               127 | (_INTEGRAL if n.integral and n.kind in ("int", "json") else 0), 0, 0, 0, 0, 0, 0, 0]
        if rule is not None:
            row[9:12] = [(K.V_NULL if rule.null else 0) | (K.V_CHECK if rule.check else 0) |
                         (K.V_UNKNOWN if rule.unknown else 0) | (K.V_COUNT if rule.counted else 0) |
                         (K.V_REQUIRED if rule.required else 0), rule.lo, rule.hi]
        self._rows.append(row)
        c = row[1]
        if rule is not None and rule.leaf is not None:
            self.cols[c].check = rule.leaf
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
            required = rule.required if rule is not None else ()
            for name, k in kids:
                self._fields.append((k, len(self._names), len(self._names) + len(name),
                                     name.decode() in required))
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

    def _freeze(self) -> None:
        rows = np.array(self._rows, np.int64).reshape(-1, 12)
        (self.kind, self.ncol, self.nchild, self.nkey, self.nallowed, self.nf0, self.nf1,
         self.ntab, self.nmask, self.nflags, self.nlo, self.nhi) = (np.ascontiguousarray(rows[:, i])
                                                                    for i in range(12))
        f = np.array(self._fields or [(0, 0, 0, False)], np.int64).reshape(-1, 4)
        self.fchild, self.fname0, self.fname1 = (np.ascontiguousarray(f[:, i]) for i in range(3))
        self.freq = np.ascontiguousarray(f[:, 3].astype(np.bool_))
        # names the kernel may compare with raw key bytes (no byte an escape could stand for)
        self.fplain = np.array([all(b >= 0x20 and b not in b'"\\' for b in self._names[a:b])
                                for _, a, b, _ in self._fields] or [False], np.bool_)
        self.nfields = len(self._fields)
        self.names = np.frombuffer(bytes(self._names) or b"\0", np.uint8)
        self.ftab = np.array(self._tab or [-1], np.int64)
        self.fill0, self.fill1, self.fills = null_fills(self.cols)

    def tables(self, root: int | None = None) -> JTables:
        """The kernel's schema tables (``root``: another root node, e.g. the kernel's SKIP to
        validate the JSON only)."""
        return JTables(kind=self.kind | (self.nflags << 8), ncol=self.ncol, nchild=self.nchild, nkey=self.nkey, nallowed=self.nallowed,
                       nf0=self.nf0, nf1=self.nf1, ntab=self.ntab, nmask=self.nmask, nflags=self.nflags,
                       nlo=self.nlo, nhi=self.nhi, fchild=self.fchild, fname0=self.fname0,
                       fname1=self.fname1, fplain=self.fplain, freq=self.freq,
                       names=self.names, ftab=self.ftab, fill0=self.fill0, fill1=self.fill1, fills=self.fills,
                       root=self.root if root is None else root, root_col=self.root_col)
