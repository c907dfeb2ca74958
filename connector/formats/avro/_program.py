"""A resolved plan (:mod:`connector.formats.avro._plan`) → the bytecode the kernel runs.

Output *columns* are allocated over the reader tree, one per Arrow array of the result (a
``["null", T]`` union shares T's column; an ``[int, long]`` union is one int64 column; a
struct-form union is a struct column of member columns). Every plan node writes into the
column of its reader type, so several writer types read as one reader type (a writer union's
branches, records matched by alias) fill one column in row order.

Code for the plan is inline: the reader tree is finite (recursion is cut), so records, unions
and collections follow one another in one flat program. Writer data the reader does not keep
compiles to skip code over the writer graph; a skipped record is a subroutine, since writer
records may recurse. Everything here is built once per (writer, reader) pair and process; see
:mod:`connector.formats.avro._opcodes` for the instruction set and :class:`Tables` for what the
kernel (:mod:`connector.formats.avro._vm`) takes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from connector.formats.avro import _plan as P
from connector.formats.avro._opcodes import E_CUSTOM, K_F32, K_F64, K_I32, K_I64, SLOTS, Op
from connector.formats.avro._schema import Node, arrow_type_of, union_kind
from connector.formats.avro._walk import MAX_NESTING, min_size, skip_width
from connector.formats.core import null_fills

__all__ = ["Column", "Program", "Tables", "Rows", "Work"]

_READER_KIND = {"int": K_I32, "long": K_I64, "float": K_F32, "double": K_F64}
_STORAGE = {"i32": K_I32, "i64": K_I64, "f32": K_F32, "f64": K_F64}
# numeric columns: the dtype of their Arrow value buffer as the kernel stores it (see _assemble)
_CONST_DTYPE = {"i32": np.int32, "i64": np.int64, "f32": np.uint32, "f64": np.int64}
_SCALAR_COL = {"null": "null", "boolean": "bool", "int": "i32", "long": "i64", "float": "f32",
               "double": "f64", "bytes": "bin", "string": "bin", "fixed": "bin", "enum": "enum"}


class Tables(NamedTuple):
    """A program as the kernel takes it (numba resolves the fields by name at compile time)."""

    code: np.ndarray    # int64 (instructions, SLOTS): see ``_opcodes.Op``
    aux: np.ndarray     # int64: union branch tables, enum symbol maps, member lists
    consts: np.ndarray  # uint8: string/bytes defaults
    fill0: np.ndarray   # int64 per column: its null-fill list is fills[fill0[c]:fill1[c]]
    fill1: np.ndarray
    fills: np.ndarray
    root: int           # the root column
    cap_items: int      # max_collection_items per row
    max_bytes: int      # max_record_bytes


class Work(NamedTuple):
    """A kernel call's scratch (allocated by the caller: the kernel allocates nothing)."""

    reg: np.ndarray    # the row's registers: column out of value room, of byte room, items, frames
    snap: np.ndarray   # column counts at the row's start, to roll a row back
    bsnap: np.ndarray  # column byte counts at the row's start
    rem: np.ndarray    # per frame: a collection's items left in its block
    done: np.ndarray   # per frame: items so far
    col: np.ndarray    # per frame: the collection's column (-1: skipped)
    idx: np.ndarray    # per frame: the collection's value slot, for its count
    ret: np.ndarray    # per frame: a subroutine's return pc
    f32: np.ndarray    # one float32 and its bits (u32), one float64 and its bits (i64)
    u32: np.ndarray
    f64: np.ndarray
    i64: np.ndarray

    @staticmethod
    def new(ncols: int) -> "Work":
        w32, w64 = np.zeros(1, np.float32), np.zeros(1, np.float64)

        def frames() -> np.ndarray:
            return np.empty(MAX_NESTING, np.int64)

        return Work(np.empty(4, np.int64), np.empty(ncols, np.int64), np.empty(ncols, np.int64),
                    frames(), frames(), frames(), frames(), frames(),
                    w32, w32.view(np.uint32), w64, w64.view(np.int64))


class Rows(NamedTuple):
    """One kernel call's rows: payload ``r`` is ``buf[starts[r]:ends[r]]``, decoded from pc
    ``entry[r]`` (its writer's code); its error code goes to ``err[r]``."""

    buf: np.ndarray     # uint8
    starts: np.ndarray  # int64
    ends: np.ndarray    # int64
    entry: np.ndarray   # int64
    err: np.ndarray     # int32


@dataclass
class Column:
    """One output array: ``kind`` is its storage on the tape (see :mod:`._assemble`)."""

    kind: str
    typ: pa.DataType
    node: Node | None = None
    children: list[int] = field(default_factory=list)
    # struct columns filled by records: per variant, (reader fields it decodes, {field: default})
    variants: list[tuple[frozenset, dict[int, pa.Array]]] = field(default_factory=list)


class Program:
    """The kernel's code, aux table, constants and null-fill lists, and the output columns.

    ``plans`` are the plans of one reader and one or more writers: each writer's code starts
    at ``entries[i]``, all of them fill the same columns (so a batch holding rows of several
    writers decodes in one kernel call, in row order); ``entries[-1]`` is a row with no
    payload (a null value)."""

    def __init__(self, plans: P.Plan | list[P.Plan], reader: Node):
        self.cols: list[Column] = []
        self._colmap: dict[int, int] = {}
        self.root_col = self._alloc(reader)
        self._code: list[list[int]] = []
        self.aux: list[int] = []
        self._consts = bytearray()
        self.messages: list[str] = []
        self._subs: dict[int, int] = {}  # writer record → pc of its skip subroutine
        self._calls: list[tuple[int, Node]] = []  # CALL instructions to point at subroutines
        self.entries: list[int] = []
        self._symbols: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for plan in plans if isinstance(plans, list) else [plans]:
            self.entries.append(len(self._code))
            self._plan(plan)
            self._add(Op.HALT)
        self.entries.append(len(self._code))
        self._add(Op.NULL, self.root_col)
        self._add(Op.HALT)
        while self._calls:
            at, w = self._calls.pop()
            self._code[at][2] = self._subroutine(w)
        self._freeze()

    # -- columns ---------------------------------------------------------------------------
    def _new(self, kind: str, typ: pa.DataType, node: Node | None = None) -> int:
        self.cols.append(Column(kind, typ, node))
        return len(self.cols) - 1

    def _alloc(self, r: Node) -> int:
        t = arrow_type_of(r)
        k = r.kind
        if k == "union":
            uk, nn = union_kind(r), r.nonnull
            if uk == "struct":
                c = self._new("struct", t, r)
                self.cols[c].children = [self._alloc(b) for b in nn]
            elif uk == "nullable":
                c = self._alloc(nn[0]) if nn else self._new("null", t, r)
            else:
                c = self._new("i64" if uk == "long" else "f64", t, r)
            for b in r.branches:
                self._colmap.setdefault(id(b), c)
        elif k == "record":
            c = self._new("struct", t, r)
            self.cols[c].children = [self._alloc(f.type) for f in r.fields]
        elif k == "array":
            c = self._new("list", t, r)
            self.cols[c].children = [self._alloc(r.items)]
        elif k == "map":
            c = self._new("map", t, r)
            key = self._new("bin", pa.string())
            self.cols[c].children = [key, self._alloc(r.items)]
        elif pa.types.is_decimal(t):
            c = self._new("dec", t, r)
        else:
            c = self._new(_SCALAR_COL[k], t, r)
        self._colmap[id(r)] = c
        return c

    def col_of(self, plan: P.Plan) -> int:
        return self._colmap[id(plan.reader)]

    # -- code ------------------------------------------------------------------------------
    def _add(self, op: Op, *args: int) -> int:
        self._code.append([op, *args] + [0] * (SLOTS - 1 - len(args)))
        return len(self._code) - 1

    def _aux(self, values) -> int:
        at = len(self.aux)
        self.aux.extend(int(v) for v in values)
        return at

    def message(self, why: str) -> int:
        if why not in self.messages:
            self.messages.append(why)
        return E_CUSTOM + self.messages.index(why)

    def _members(self, union_col: int) -> int:
        members = self.cols[union_col].children
        return self._aux([len(members), *members])

    def _plan(self, plan: P.Plan) -> None:
        """Append the code decoding ``plan`` (inline)."""
        if isinstance(plan, P.ErrorPlan):
            self._add(Op.ERROR, -1, self.message(plan.why))
            return
        if isinstance(plan, P.ToUnionPlan):
            c = self.col_of(plan)
            if self.cols[c].kind != "struct" or union_kind(plan.R) != "struct":
                self._plan(plan.inner)  # the inner value fills the union's column
                return
            rb = plan.R.branches[plan.rb]
            m = -1 if rb.kind == "null" else plan.R.nonnull.index(rb)
            self._add(Op.TOUNION, c, m, self._members(c))
            if m >= 0:
                self._plan(plan.inner)
            return
        c = self.col_of(plan)
        if isinstance(plan, P.NullPlan):
            self._add(Op.NULL, c)
        elif isinstance(plan, P.BoolPlan):
            self._add(Op.BOOL, c)
        elif isinstance(plan, P.NumPlan):
            r = plan.r
            millis = int(pa.types.is_timestamp(arrow_type_of(r)) and isinstance(r.logical, str)
                         and r.logical.endswith("millis"))
            store = _STORAGE[self.cols[c].kind]
            if plan.varint:
                self._add(Op.VARNUM, c, int(plan.wk == "int"), _READER_KIND[r.kind], millis,
                          store)
            else:
                self._add(Op.FLOATNUM, c, plan.width or 0, _READER_KIND[r.kind], 0, store)
        elif isinstance(plan, P.BytesPlan):
            size = -1 if plan.size is None else plan.size
            if self.cols[c].kind == "dec":
                p = self.cols[c].typ.precision
                self._add(Op.DECIMAL, c, size, p, self.message(f"decimal value exceeds precision {p}"))
            else:
                self._add(Op.BYTES, c, size)
        elif isinstance(plan, P.EnumPlan):
            self._add(Op.ENUM, c, plan.nw, self._aux(plan.map))
        elif isinstance(plan, P.RecordPlan):
            col = self.cols[c]
            at = self._add(Op.REC, c, 0)
            for p, w, _ in plan.steps:
                if p is not None:
                    self._plan(p)
                else:
                    self._skip(w)
            # reader fields the writer lacks: the kernel writes the simple defaults, the
            # assembly fills the others (records, collections, decimals) per variant
            rest = {ri: d for ri, d in plan.defaults.items() if not self._default(col.children[ri], d)}
            col.variants.append((frozenset(ri for p, _, ri in plan.steps if p is not None), rest))
            self._code[at][2] = len(col.variants) - 1
        elif isinstance(plan, P.WriterUnionPlan):
            struct = plan.R is not None and union_kind(plan.R) == "struct"
            targets = []
            for bp, rb, why in plan.branches:
                if why is not None:
                    targets.append((None, -1, self.message(why)))
                    continue
                m = 0
                if struct:
                    b = plan.R.branches[rb]
                    m = -1 if b.kind == "null" else plan.R.nonnull.index(b)
                targets.append((bp if m >= 0 else None, m, 0))
            self._union(c if struct else -1, targets, self._plan)
        elif isinstance(plan, P.CollectionPlan):
            if plan.is_map:
                entry = plan.item
                assert isinstance(entry, P.MapEntryPlan)
                self._collection(c, 1, self.cols[c].children[0], entry.value, self._plan, True)
            else:
                self._collection(c, plan.item.min_size, -1, plan.item, self._plan, False)
        else:
            raise TypeError(f"no kernel code for {type(plan).__name__}")

    def _default(self, c: int, d: pa.Array) -> bool:
        """Append code writing default ``d`` (one value) into column ``c``; False when the
        assembly must fill it instead."""
        kind, t = self.cols[c].kind, self.cols[c].typ
        if d.null_count:
            self._add(Op.NULL, c)
        elif kind in _CONST_DTYPE:
            v = np.frombuffer(d.buffers()[1], _CONST_DTYPE[kind])[d.offset]
            self._add(Op.CONST, c, int(v))
        elif kind == "bool":
            self._add(Op.CONST, c, int(d[0].as_py()))
        elif kind == "enum":
            node = self.cols[c].node
            sym = d[0].as_py()
            if node is None or sym not in node.symbols:
                return False
            self._add(Op.CONST, c, list(node.symbols).index(sym))
        elif kind == "bin" and (pa.types.is_string(t) or pa.types.is_binary(t)):
            v = d[0].as_py()
            b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            self._add(Op.CBYTES, c, len(self._consts), len(b))
            self._consts += b
        else:
            return False
        return True

    def _union(self, c: int, targets: list, body) -> None:
        """UNION, then each branch's code and a jump to the end (the last falls through);
        ``targets``: (what ``body`` compiles or None, member, error code) per writer branch.
        A null branch of a non-struct union is no code: the kernel writes its null."""
        at = self._add(Op.UNION, c)
        rows, jumps = [], []
        coded = [i for i, (what, _, _) in enumerate(targets) if what is not None]
        for i, (what, m, err) in enumerate(targets):
            if what is None:
                rows += [-1, m, err]
                continue
            if c < 0 and isinstance(what, P.NullPlan):
                rows += [-2, self.col_of(what), 0]
                continue
            rows += [len(self._code), m, 0]
            body(what)
            if i != coded[-1]:
                jumps.append(self._add(Op.JMP, -1, 0))
        end = len(self._code)
        for j in jumps:
            self._code[j][2] = end
        aux = self._aux([len(targets), *rows])
        if c >= 0:
            self._members(c)  # follows the branches in aux
        self._code[at][2:4] = [aux, end]

    def _collection(self, c: int, min_item: int, key: int, item, body, is_map: bool) -> None:
        """ARRAY, the item's code, NEXT; a map's items start with their key (into column
        ``key``; -1: skipped)."""
        at = self._add(Op.ARRAY, c, min_item, 0, key, int(is_map))
        body(item)
        self._add(Op.NEXT, -1, at)
        self._code[at][3] = len(self._code)

    def _skip(self, w: Node) -> None:
        """Append code walking one writer value without output."""
        wd = skip_width(w)
        k = w.kind
        if wd is not None:
            if wd:
                self._add(Op.FIXSKIP, -1, wd)
        elif k in ("int", "long", "enum"):
            self._add(Op.VARSKIP, -1)
        elif k in ("bytes", "string"):
            self._add(Op.BYTES, -1, -1)
        elif k == "record":
            self._calls.append((self._add(Op.CALL, -1, 0), w))
        elif k == "union":
            self._union(-1, [(b, 0, 0) for b in w.branches], self._skip)
        elif k == "array":
            self._collection(-1, min_size(w.items), -1, w.items, self._skip, False)
        else:  # map: entries of a key (skipped: no key column) and a value
            self._collection(-1, 1, -1, w.items, self._skip, True)

    def _subroutine(self, w: Node) -> int:
        """pc of the subroutine skipping writer record ``w`` (compiled once)."""
        got = self._subs.get(id(w))
        if got is None:
            got = self._subs[id(w)] = len(self._code)
            for f in w.fields:
                self._skip(f.type)
            self._add(Op.RET)
        return got

    # -- tables ----------------------------------------------------------------------------
    def _freeze(self) -> None:
        self.code = np.array(self._code, np.int64).reshape(-1, SLOTS)
        self.aux_arr = np.array(self.aux or [0], np.int64)
        self.fill0, self.fill1, self.fills = null_fills(self.cols)
        self.consts = np.frombuffer(bytes(self._consts) or b"\0", np.uint8)
        self.entry_pcs = np.array(self.entries, np.int64)

    def symbols(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """The reader's symbols of enum column ``c``: (offsets, UTF-8 bytes), built once."""
        got = self._symbols.get(c)
        if got is None:
            node = self.cols[c].node
            assert node is not None  # enum columns keep their reader node
            texts = [s.encode("utf-8") for s in node.symbols] or [b""]
            offs = np.zeros(len(texts) + 1, np.int64)
            np.cumsum([len(t) for t in texts], out=offs[1:])
            got = self._symbols[c] = (offs, np.frombuffer(b"".join(texts) or b"\0", np.uint8))
        return got

    def tables(self, cap_items: int, max_bytes: int) -> Tables:
        """The program as the kernel takes it, under these row limits."""
        return Tables(self.code, self.aux_arr, self.consts, self.fill0, self.fill1, self.fills,
                      self.root_col, cap_items, max_bytes)
