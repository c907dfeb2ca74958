"""Compiled Protobuf encoding: Arrow column → framed wire bytes in one numba pass per batch.

A :class:`Program` is built once per (message descriptor, Arrow type): one node per field as the
Arrow type holds it, in tables the kernel (:mod:`connector.formats.protobuf._encode_kernel`)
interprets. Per batch, :meth:`Program.encode` binds every node to its column's buffers (read in
place, never copied) and the kernel writes each row's framing prefix and message into one
buffer, backwards (a nested message's length is known when its body is written: no sizing
pass, no copy per level of nesting). Bytes are what upb's ``SerializeToString`` writes for the same values:

==========================  ==========================================================
field                       bytes
==========================  ==========================================================
int32/int64/enum/uint/bool  varint (negative int32/int64/enum: 10-byte two's complement)
sint32/sint64               zigzag varint
fixed*/sfixed*/float/double 4 or 8 little-endian bytes
string/bytes/message        ``varint(len)`` + bytes
repeated numeric (packed)   one tag, ``varint(total)``, the items back to back
repeated other / map        ``tag + item`` per item (map items: entry messages with key
                            and value always written)
Timestamp / Duration        ``{1: seconds, 2: nanos}`` from microseconds
wrappers                    ``{1: value}`` (the value left out when it is the default)
==========================  ==========================================================

Fields in field-number order. Presence: a null is never written; a field without presence
(proto3 implicit) is also not written when it holds its default (0, "", false, +0.0, first enum
value). Row errors name the field: a null in a proto2 ``required`` field, a null item in a
repeated field or a null map value, an unknown enum name, uint32/uint64 out of range, several
members of one oneof set. Schemas using Any, Struct, Value, ListValue or groups have no program
(:func:`build`): the per-record path (``_encode``) writes them.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.formats.core import binary_from_buffers, valid_mask, with_validity
from connector.formats.protobuf._layout import ENUM_BAD, Bind, Chk, Col, EncErr, Kind, Pres, Src
from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS, is_map

__all__ = ["Program", "build"]

MAX_DEPTH = 256  # nesting of the program (the Arrow type is finite: recursion is cut there)

_KIND = {FD.TYPE_INT32: Kind.VARINT, FD.TYPE_INT64: Kind.VARINT, FD.TYPE_UINT32: Kind.VARINT, FD.TYPE_UINT64: Kind.VARINT,
         FD.TYPE_BOOL: Kind.VARINT, FD.TYPE_ENUM: Kind.VARINT, FD.TYPE_SINT32: Kind.ZIGZAG, FD.TYPE_SINT64: Kind.ZIGZAG,
         FD.TYPE_FIXED32: Kind.FIX32, FD.TYPE_SFIXED32: Kind.FIX32, FD.TYPE_FLOAT: Kind.FIX32,
         FD.TYPE_FIXED64: Kind.FIX64, FD.TYPE_SFIXED64: Kind.FIX64, FD.TYPE_DOUBLE: Kind.FIX64,
         FD.TYPE_STRING: Kind.BYTES, FD.TYPE_BYTES: Kind.BYTES}
_WIRE = {Kind.VARINT: 0, Kind.ZIGZAG: 0, Kind.FIX64: 1, Kind.FIX32: 5}


class Tables(NamedTuple):
    """A program as the kernel takes it (numba resolves the fields by name at compile time)."""

    P: np.ndarray     # int64 (nodes, len(Col)): each node's kind, source, tag, presence ...
    KIDS: np.ndarray  # int64: a message node's fields are KIDS[P[i, C0]:P[i, C1]]
    depth: int        # frames a row needs at most
    n_oneof: int      # oneofs in the program


class Batch(NamedTuple):
    """One kernel call: ``n`` rows, each written after ``prefix``."""

    n: int
    prefix: np.ndarray  # uint8


class Out(NamedTuple):
    """The kernel's output and scratch, allocated by the caller (the kernel allocates nothing):
    the bytes, written from the end; per row the bytes written (from the end) after it and a
    failure's (error, node, item); the frames of a row's open messages and repeated fields;
    per oneof the message instance that set it; the last instance id."""

    out: np.ndarray    # uint8
    ends: np.ndarray   # int64 (n + 1)
    code: np.ndarray   # int64 per row: EncErr (0: fine)
    enode: np.ndarray
    eitem: np.ndarray
    fn: np.ndarray     # int64 per frame: node, item, next child, end, bytes when begun, instance
    fj: np.ndarray
    fcur: np.ndarray
    fend: np.ndarray
    fmark: np.ndarray
    fstamp: np.ndarray
    seen: np.ndarray   # int64 per oneof
    stamp: np.ndarray  # int64 (1)

    @staticmethod
    def new(n: int, nbytes: int, depth: int, n_oneof: int) -> "Out":
        def rows() -> np.ndarray:
            return np.zeros(n, np.int64)

        def frames() -> np.ndarray:
            return np.empty(depth + 1, np.int64)

        return Out(np.empty(max(nbytes, 64), np.uint8), np.zeros(n + 1, np.int64), rows(), rows(),
                   rows(), frames(), frames(), frames(), frames(), frames(), frames(),
                   np.full(max(n_oneof, 1), -1, np.int64), np.zeros(1, np.int64))


def _grown(out: np.ndarray, pos: int, need: int) -> tuple[np.ndarray, int]:
    """``out`` (written from ``pos`` to its end) with at least ``need`` free bytes before its
    tail, and the tail's new start."""
    used = len(out) - pos
    cap = max(2 * len(out), used + need + 1024)
    grown = np.empty(cap, np.uint8)
    grown[cap - used:] = out[pos:]
    return grown, cap - used


class _NoProgram(Exception):
    """A shape the program does not encode (Any/Struct/Value/ListValue, groups)."""


def _src(t: pa.DataType) -> int:
    if pa.types.is_int32(t):
        return Src.I32
    if pa.types.is_int64(t) or pa.types.is_timestamp(t):
        return Src.I64
    if pa.types.is_float32(t):
        return Src.F32
    if pa.types.is_float64(t):
        return Src.F64
    if pa.types.is_boolean(t):
        return Src.BOOL
    if pa.types.is_decimal128(t) and t.scale == 0:
        return Src.DEC
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return Src.STR
    raise _NoProgram(f"no compiled encoding from {t}")


class _Node:
    __slots__ = ("row", "path", "col", "null", "enum", "names", "numbers")

    def __init__(self, path: str, col: tuple):
        self.row = [0] * len(Col)
        self.row[Col.ONEOF] = -1
        self.path, self.col = path, col  # col: how the column derives from the parent's
        self.null: str | None = None  # the error text when a null here is an error
        self.enum: Any = None  # the enum descriptor of an enum field
        self.names: pa.Array | None = None
        self.numbers: np.ndarray | None = None


class Program:
    """Tables of one (message, Arrow type), built once; :meth:`encode` runs them on a batch."""

    def __init__(self, desc, arrow_type: pa.DataType):
        self.nodes: list[_Node] = []
        self.kids: list[int] = []
        self.oneofs: list[tuple[str, str]] = []
        if self._message(desc, arrow_type, "value", ("root",), 0) != 0 or self.nodes[0].row[Col.KIND] != Kind.MSG:
            raise _NoProgram("the root is not a message with fields")
        self.tables = Tables(np.array([nd.row for nd in self.nodes], np.int64).reshape(len(self.nodes), len(Col)),
                             np.array(self.kids or [0], np.int64), self._frames(), len(self.oneofs))

    def _frames(self) -> int:
        """Frames of the kernel's stack a row needs: the longest chain of messages and
        repeated fields (a node's children come after it)."""
        frames = [0] * len(self.nodes)
        for i in range(len(self.nodes) - 1, -1, -1):
            row = self.nodes[i].row
            if row[Col.KIND] == Kind.MSG:
                below = [frames[k] for k in self.kids[row[Col.C0]:row[Col.C1]]]
            elif row[Col.KIND] in (Kind.REP, Kind.PACKED):
                below = [frames[row[Col.C0]]]
            else:
                below = []
            frames[i] = (row[Col.KIND] in (Kind.MSG, Kind.REP)) + max(below, default=0)
        return frames[0]

    def _new(self, path: str, col: tuple) -> int:
        self.nodes.append(_Node(path, col))
        return len(self.nodes) - 1

    def _tag(self, i: int, number: int, wire: int) -> None:
        self.nodes[i].row[Col.TAG] = (number << 3) | wire

    def _message(self, desc, t: pa.DataType, path: str, col: tuple, depth: int) -> int:
        """A message node (the root, a field's, an item's): kind MSG, its fields as kids."""
        if depth > MAX_DEPTH:
            raise _NoProgram("nesting deeper than the compiled encoder's bound")
        name = desc.full_name
        if name in WKT_JSON:
            raise _NoProgram(f"{name} is written from JSON text per record")
        i = self._new(path, col)
        self.nodes[i].row[Col.PRES] = Pres.EXPLICIT  # a message is written when not null, even empty
        if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
            self.nodes[i].row[Col.KIND] = Kind.TS if name.endswith("Timestamp") else Kind.DUR
            self.nodes[i].row[Col.SRC] = Src.I64
            return i
        self.nodes[i].row[Col.KIND] = Kind.MSG
        kids = []
        if name in WKT_SCALARS:  # {1: value}, the value in the wrapper's own column
            kids.append(self._scalar(desc.fields_by_name["value"], t, path, ("same",), Pres.IMPLICIT))
        else:
            index = {f.name: k for k, f in enumerate(t)}
            oneofs: dict = {}
            for f in sorted(desc.fields, key=lambda x: x.number):
                if f.name not in index:
                    continue  # cut by the recursion depth: never written
                k = self._field(f, t[index[f.name]].type, f"{path}.{f.name}", ("field", index[f.name]), depth)
                if f.containing_oneof is not None:
                    key = f.containing_oneof.name
                    if key not in oneofs:
                        oneofs[key] = len(self.oneofs)
                        self.oneofs.append((path, key))
                    self.nodes[k].row[Col.ONEOF] = oneofs[key]
                kids.append(k)
        self.nodes[i].row[Col.C0] = len(self.kids)
        self.kids.extend(kids)
        self.nodes[i].row[Col.C1] = len(self.kids)
        return i

    def _field(self, f, t: pa.DataType, path: str, col: tuple, depth: int) -> int:
        if f.type == FD.TYPE_GROUP:
            raise _NoProgram("groups are written per record")
        if is_map(f):
            i = self._new(path, col)
            self.nodes[i].row[Col.KIND] = Kind.REP
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            e = self._new(path, ("entries",))
            nd = self.nodes[e]
            nd.row[Col.KIND], nd.row[Col.PRES] = Kind.MSG, Pres.ALWAYS
            self._tag(e, f.number, 2)
            kid = self._scalar(kf, t.key_type, f"{path}[key]", ("field", 0), Pres.ALWAYS)
            if vf.type == FD.TYPE_MESSAGE:
                vid = self._message(vf.message_type, t.item_type, f"{path}[value]", ("field", 1), depth + 2)
                self._tag(vid, vf.number, 2)
            else:
                vid = self._scalar(vf, t.item_type, f"{path}[value]", ("field", 1), Pres.ALWAYS)
            self.nodes[vid].row[Col.PRES] = Pres.ALWAYS
            self.nodes[vid].row[Col.NULLERR] = 1
            self.nodes[vid].null = f"{path}: null map value"
            nd.row[Col.C0] = len(self.kids)
            self.kids.extend([kid, vid])
            nd.row[Col.C1] = len(self.kids)
            self.nodes[i].row[Col.C0] = e
            return i
        if f.is_repeated:
            i = self._new(path, col)
            item_path = f"{path}[]"
            if f.type == FD.TYPE_MESSAGE:
                it = self._message(f.message_type, t.value_type, item_path, ("values",), depth + 1)
                self._tag(it, f.number, 2)
            else:
                it = self._scalar(f, t.value_type, item_path, ("values",), Pres.ALWAYS)
            self.nodes[it].row[Col.PRES] = Pres.ALWAYS
            self.nodes[it].row[Col.NULLERR] = 1
            self.nodes[it].null = f"{path}: null item in a repeated field"
            packed = f.is_packed and f.type != FD.TYPE_MESSAGE
            self.nodes[i].row[Col.KIND] = Kind.PACKED if packed else Kind.REP
            self.nodes[i].row[Col.C0] = it
            if packed:
                self._tag(i, f.number, 2)
            return i
        if f.type == FD.TYPE_MESSAGE:
            i = self._message(f.message_type, t, path, col, depth + 1)
            self._tag(i, f.number, 2)
        else:
            i = self._scalar(f, t, path, col, Pres.EXPLICIT if f.has_presence else Pres.IMPLICIT)
        if f.is_required:  # proto2: a message without it does not parse
            self.nodes[i].row[Col.NULLERR] = 1
            self.nodes[i].null = f"{path}: null for a required field"
        return i

    def _scalar(self, f, t: pa.DataType, path: str, col: tuple, presence: int) -> int:
        i = self._new(path, col)
        nd = self.nodes[i]
        kind = _KIND[f.type]
        nd.row[Col.KIND], nd.row[Col.PRES] = kind, presence
        self._tag(i, f.number, 2 if kind == Kind.BYTES else _WIRE[kind])
        if f.type == FD.TYPE_ENUM:
            if not pa.types.is_string(t):
                raise _NoProgram(f"enum as {t}")
            nd.row[Col.SRC], nd.row[Col.CHK] = Src.ENUM, Chk.ENUM
            nd.enum = f.enum_type
            nd.names = pa.array([v.name for v in f.enum_type.values], pa.string())
            nd.numbers = np.array([v.number for v in f.enum_type.values], np.int64)
            nd.row[Col.DEF] = f.enum_type.values[0].number if f.enum_type.values else 0
            return i
        nd.row[Col.SRC] = _src(t)
        if f.type in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
            nd.row[Col.CHK] = Chk.U32
        elif f.type in (FD.TYPE_UINT64, FD.TYPE_FIXED64) and nd.row[Col.SRC] == Src.DEC:
            nd.row[Col.CHK] = Chk.U64
        if f.type == FD.TYPE_FLOAT and nd.row[Col.SRC] != Src.F32 or f.type == FD.TYPE_DOUBLE and nd.row[Col.SRC] != Src.F64:
            raise _NoProgram(f"{f.full_name} from {t}")
        return i

    # -- per batch ---------------------------------------------------------------------------

    def _bind(self, values: pa.Array):
        """D (addresses and offsets of every node's column) and the columns (kept alive)."""
        D = np.zeros((len(self.nodes), len(Bind)), np.int64)
        cols: list = [None] * len(self.nodes)
        keep: list = []
        stack = [(0, values)]
        while stack:
            i, arr = stack.pop()
            cols[i] = arr
            nd = self.nodes[i]
            bufs = arr.buffers()
            D[i, Bind.VALID] = bufs[0].address if bufs[0] is not None and arr.null_count else 0
            D[i, Bind.VOFF] = D[i, Bind.DOFF] = arr.offset
            kind, src = nd.row[Col.KIND], nd.row[Col.SRC]
            if kind in (Kind.REP, Kind.PACKED):
                D[i, Bind.OFFS] = bufs[1].address
                child = nd.row[Col.C0]
                stack.append((child, arr.values))
            elif kind == Kind.MSG:
                for k in self.kids[nd.row[Col.C0]:nd.row[Col.C1]]:
                    c = self.nodes[k].col
                    stack.append((k, arr if c[0] == "same" else arr.field(c[1])))
            elif src == Src.ENUM:
                nums = self._enum_numbers(nd, arr)
                keep.append(nums)
                D[i, Bind.DATA], D[i, Bind.DOFF] = nums.ctypes.data, 0
            elif src == Src.STR:
                D[i, Bind.OFFS] = bufs[1].address
                D[i, Bind.BYTESADDR] = bufs[2].address if bufs[2] is not None else 0
            else:
                D[i, Bind.DATA] = bufs[1].address
        return D, cols, keep

    @staticmethod
    def _enum_numbers(nd: _Node, arr: pa.Array) -> np.ndarray:
        """Numbers of enum names (unknown names: their digits, as the decoder writes them, or
        :data:`ENUM_BAD`)."""
        assert nd.names is not None and nd.numbers is not None
        idx = pc.index_in(arr, value_set=nd.names)
        known = valid_mask(idx)
        nums = nd.numbers[np.where(known, idx.fill_null(0).to_numpy(zero_copy_only=False), 0)]
        unknown = ~known & valid_mask(arr)
        if unknown.any():  # the decoder writes unknown numbers as their digits
            where = np.flatnonzero(unknown)
            names = arr.take(pa.array(where))
            digits = pc.fill_null(pc.match_substring_regex(names, r"^-?[0-9]{1,10}$"), False)
            num = pc.cast(pc.if_else(digits, names, "0"), pa.int64()).to_numpy(zero_copy_only=False)
            ok = digits.to_numpy(zero_copy_only=False) & (num >= -(1 << 31)) & (num < (1 << 31))
            nums[where] = np.where(ok, num, ENUM_BAD)
        return np.ascontiguousarray(nums, np.int64)

    def encode(self, values: pa.Array, prefix: bytes = b"") -> tuple:
        """(payloads, errors or None): ``prefix`` + message per row; null rows → null."""
        from connector.formats.protobuf._encode_kernel import encode

        n = len(values)
        D, cols, keep = self._bind(values)
        T = self.tables
        y = Out.new(n, values.nbytes + n * (len(prefix) + 8), T.depth, T.n_oneof)  # about the input's size
        batch = Batch(n, np.frombuffer(prefix, np.uint8))
        r, pos = n - 1, len(y.out)
        while True:
            r, pos, need = encode(T, D, batch, y, r, pos)
            if r < 0:
                break
            grown, pos = _grown(y.out, pos, need)
            y = y._replace(out=grown)
        del keep
        total = len(y.out) - pos
        y.ends[0] = total
        out, offs, code, enode, eitem = y.out[pos:], total - y.ends, y.code, y.enode, y.eitem
        payloads = binary_from_buffers(offs, out, n)
        valid = valid_mask(values) & (code == 0)
        if not code.any():
            return (payloads if valid.all() else with_validity(payloads, valid)), None
        errors = np.full(n, None, object)
        for r in np.flatnonzero(code).tolist():
            errors[r] = "protobuf encode failed: " + self._message_of(int(code[r]), int(enode[r]),
                                                                      int(eitem[r]), cols)
        return with_validity(payloads, valid), errors

    def _message_of(self, code: int, node: int, item: int, cols: list) -> str:
        nd = self.nodes[node]
        if code == EncErr.NULL:
            return nd.null or f"{nd.path}: null"
        if code == EncErr.U32:
            return f"{nd.path}: value out of range for uint32"
        if code == EncErr.U64:
            return f"{nd.path}: value out of range for uint64"
        if code == EncErr.ENUM:
            v = cols[node][item].as_py()
            return f"{nd.path}: {str(v)[:40]!r} is not a value of enum {nd.enum.full_name}"
        path, name = self.oneofs[nd.row[Col.ONEOF]]
        return f"{path}: oneof {name} has several fields set"


def build(desc, arrow_type: pa.DataType) -> Program | None:
    """The program of ``desc`` as ``arrow_type`` holds it, or None for the per-record path."""
    try:
        return Program(desc, arrow_type)
    except _NoProgram:
        return None
