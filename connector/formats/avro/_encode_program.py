"""The Avro encoder's program: a writer type tree (with its Arrow type) compiled once into
instructions the encode kernel (:mod:`connector.formats.avro._encode_vm`) runs per row.

The program walks the Arrow column, not the schema: each instruction reads one *column* (an
Arrow array of the value's tree: the root, a struct's child, a list's values, a map's keys or
items) at the current index and appends Avro bytes. Records are inline (their fields'
instructions follow one another, all at the record's index); an array or map pushes a frame
whose items run at the child's indexes, so nesting is bounded by the (cut) tree's depth, never
by the data. Built without numba (slow to import); the instruction set is ``_opcodes.EncOp``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from connector.formats.avro._opcodes import ENC_SLOTS, EncOp
from connector.formats.avro._schema import Node, arrow_type_of, union_kind

__all__ = ["EncodeProgram", "EncTables", "EncOut", "compile_encoder"]

_VALUES = -1  # the column step to a list's / map's values (else: a struct's field index)


class EncTables(NamedTuple):
    """A program as the encode kernel takes it (numba resolves the fields by name)."""

    code: np.ndarray    # int64 (instructions, ENC_SLOTS): see ``_opcodes.EncOp``
    aux: np.ndarray     # int64: enum symbol tables, struct-union member tables
    consts: np.ndarray  # uint8: enum symbols, constant bytes


class EncOut(NamedTuple):
    """One encode call's rows and output: ``n`` rows, each ``prefix`` and its Avro bytes in
    ``out`` up to ``offs[r + 1]``; a failed row's (error, pc, index) in ``err``/``epc``/``epos``;
    the frames of its collections in ``stack`` (``sp[0]`` of them)."""

    n: int
    prefix: np.ndarray  # uint8
    out: np.ndarray     # uint8
    offs: np.ndarray    # int32 (n + 1)
    err: np.ndarray     # int64 per row
    epc: np.ndarray
    epos: np.ndarray
    stack: np.ndarray   # int64 (depth + 1, 4): ARRAY pc, parent index, item index, item end
    sp: np.ndarray      # int64 (1)


class EncodeProgram:
    """Instructions (``code``, int64 rows of 5), their ``aux`` table and ``consts`` bytes; the
    columns (``steps``: parent column and step, from the root) and, per instruction, the place
    an error names (``where``: field path and node)."""

    def __init__(self):
        self.code: list[list[int]] = []
        self.aux: list[int] = []
        self.consts = bytearray()
        self.steps: list[tuple[int, int]] = [(-1, 0)]  # column 0: the root
        self.where: list[tuple[str, Node | None]] = []
        self.depth = 0  # collections nested at most (the kernel's frame stack)
        self.bytes_per_row = 64.0  # learnt from the last batch (sizes the output buffer)

    def finish(self) -> "EncodeProgram":
        self.emit(EncOp.HALT, "", None)
        self.tables = EncTables(np.array(self.code, np.int64).reshape(-1, ENC_SLOTS),
                                np.array(self.aux or [0], np.int64),
                                np.frombuffer(bytes(self.consts) or b"\x00", np.uint8).copy())
        return self

    def emit(self, op: EncOp, path: str, node: Node | None, col: int = -1, a: int = 0, b: int = 0,
             c: int = 0) -> int:
        self.code.append([op, col, a, b, c])
        self.where.append((path, node))
        return len(self.code) - 1

    def column(self, parent: int, step: int) -> int:
        self.steps.append((parent, step))
        return len(self.steps) - 1

    def const(self, data: bytes) -> tuple[int, int]:
        off = len(self.consts)
        self.consts += data
        return off, len(data)

    def arrays(self, values: pa.Array) -> list[pa.Array]:
        """Every column's array in ``values`` (struct children sliced like their parent; a
        list's or map's values whole, as its offsets index them)."""
        out: list[Any] = [values]
        for parent, step in self.steps[1:]:
            p = out[parent]
            out.append(p.values if step == _VALUES else p.field(step))
        return out


def compile_encoder(node: Node) -> EncodeProgram:
    """The program of a writer tree (``parse_avro(..., keep_cuts=True)``), for values of
    ``arrow_type_of(node)``; memoized on the node."""
    prog = node.memo.get("encode_program")
    if prog is None:
        prog = EncodeProgram()
        _node(prog, node, 0, "value", 0)
        prog = node.memo["encode_program"] = prog.finish()
    return prog


def _node(p: EncodeProgram, n: Node, col: int, path: str, depth: int) -> None:
    k = n.kind
    if k == "union":
        _union(p, n, col, path, depth)
    elif k == "null":
        return
    elif k == "record":
        p.emit(EncOp.REC, path, n, col)
        j = 0  # the Arrow struct has no child for a field cut at the recursion depth
        for f in n.fields:
            if f.type.kind == "cut":  # its one possible value
                p.emit(EncOp.CONST, path, None, -1, *p.const(f.type.empty))
                continue
            _node(p, f.type, p.column(col, j), f"{path}.{f.name}", depth)
            j += 1
    elif k == "boolean":
        p.emit(EncOp.BOOL, path, n, col)
    elif k in ("int", "long"):
        width = 8 if arrow_type_of(n).bit_width == 64 else 4
        p.emit(EncOp.INT, path, n, col, width, int(bool(n.logical and n.logical.endswith("timestamp-millis"))))
    elif k == "float":
        p.emit(EncOp.F32, path, n, col)
    elif k == "double":
        p.emit(EncOp.F64, path, n, col)
    elif pa.types.is_decimal(t := arrow_type_of(n)):
        p.emit(EncOp.DECIMAL, path, n, col, int(n.size) if k == "fixed" else -1, t.precision)
    elif k == "enum":
        at = len(p.aux)
        p.aux.append(len(n.symbols))
        for s in n.symbols:
            p.aux += list(p.const(s.encode("utf-8")))
        p.emit(EncOp.ENUM, path, n, col, at)
    elif k in ("string", "bytes"):
        p.emit(EncOp.BYTES, path, n, col, int(n.logical == "uuid" and k == "string"))
    elif k == "fixed":
        p.emit(EncOp.FIXED, path, n, col, int(n.size))
    elif k in ("array", "map"):
        _collection(p, n, col, path, depth + 1)
    else:
        raise TypeError(f"{path}: no encoding for Avro {k}")


def _collection(p: EncodeProgram, n: Node, col: int, path: str, depth: int) -> None:
    p.depth = max(p.depth, depth)
    at = p.emit(EncOp.ARRAY, path, n, col, 0)
    values = p.column(col, _VALUES)
    if n.kind == "map":
        p.emit(EncOp.BYTES, f"{path}[key]", Node("string"), p.column(values, 0), 0)
        _node(p, n.items, p.column(values, 1), f"{path}[value]", depth)
    else:
        _node(p, n.items, values, f"{path}[]", depth)
    p.emit(EncOp.NEXT, path, None, -1, at)
    p.code[at][2] = len(p.code)


def _union(p: EncodeProgram, n: Node, col: int, path: str, depth: int) -> None:
    br = n.branches
    index = {id(b): i for i, b in enumerate(br)}
    nn = n.nonnull
    null_i = next((i for i, b in enumerate(br) if b.kind == "null"), -1)
    uk = union_kind(n)
    if uk == "long":
        p.emit(EncOp.ULONG, path, n, col, null_i, next(i for i, b in enumerate(br) if b.kind == "int"),
               next(i for i, b in enumerate(br) if b.kind == "long"))
    elif uk == "double":
        p.emit(EncOp.UDOUBLE, path, n, col, null_i, next(i for i, b in enumerate(br) if b.kind == "double"))
    elif uk == "nullable":
        at = p.emit(EncOp.OPT, path, n, col, null_i, index[id(nn[0])] if nn else -1)
        if nn:
            _node(p, nn[0], col, path, depth)
        p.code[at][4] = len(p.code)
    else:
        aux = len(p.aux)
        p.aux.append(len(nn))
        p.aux += [0, 0, 0] * len(nn)
        at = p.emit(EncOp.USTRUCT, path, n, col, null_i, aux)
        jumps = []
        for i, b in enumerate(nn):
            member = p.column(col, i)
            p.aux[aux + 1 + 3 * i: aux + 4 + 3 * i] = [member, index[id(b)], len(p.code)]
            _node(p, b, member, path, depth)
            jumps.append(p.emit(EncOp.JMP, path, None, -1, 0))
        for j in jumps:
            p.code[j][2] = len(p.code)
        p.code[at][4] = len(p.code)

