"""The JSON kernel's state, by name: what :func:`connector.formats.json_schema._kernel.rows` reads and
writes, built by the program (:class:`~connector.formats.json_schema._program.JsonProgram`) and the
engine, never passed as positional runs of arrays.

numba compiles a namedtuple of arrays into a plain record: ``T.kind[cur]`` costs what ``kind[cur]``
costs, and a field added here cannot bind the wrong array (a reordering changes no call).

* :class:`JTables` — the schema, once per schema and process (``JsonProgram.tables``).
* :class:`JRows` — one group of payloads and what the kernel says of each row.
* :class:`JWork` — scratch space of one decode call: the parse stack, object stamps, the
  duplicate-key table, the number texts listed for a check after the kernel.
* :class:`JLimits` — the caps a row must keep.

The column buffers are :class:`connector.formats.core.KernelBuffers` (``ColumnBuffers.named()``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["JTables", "JRows", "JWork", "JStack", "JLimits", "work_for", "SKIP", "TYPE_ERRORS"]

# -- the kernel's vocabulary (numbers the program, the kernel and the engine share) ----------
SKIP = -2  # a node the reader does not keep: its value is validated as JSON only

#: node kinds
J_STRUCT, J_MAP, J_LIST, J_STRING, J_TS, J_DATE, J_INT, J_FLOAT, J_BOOL, J_NULL, J_JSON = range(11)

#: JSON types a JSON-text node allows (``JTables.nallowed``)
T_OBJECT, T_ARRAY, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN, T_NULL = (1, 2, 4, 8, 16, 32, 64)
#: A node flag beside the types: an integral number written with a fraction or an exponent
#: (``2.0``, ``1e2``) is an integer, as JSON Schema says from draft 6 on (draft 4: only ``2``).
#: The kernel leaves such a number to the reference path (rare; it reads it exactly).
T_INTEGRAL = 128

#: Validation flags of a node (``JTables.nflags``): what sends a row to the reference validator.
V_NULL = 1  # a null here (the schema refuses null, or only the validator can say)
V_CHECK = 2  # any other value here (a keyword only the validator checks)
V_UNKNOWN = 4  # struct: a member outside its fields (additionalProperties false or a schema)
V_COUNT = 8  # struct, map, list: members or items outside nlo .. nhi; date(-time): its text's bytes
V_REQUIRED = 16  # struct: some of its fields are required (JTables.freq)

#: A row's error (``JRows.codes``; 0: none)
E_SYNTAX, E_TRUNC, E_CTRL, E_ESCAPE, E_SURROGATE, E_TRAILING, E_DEEP, E_CAP, E_BIG, E_INT_RANGE, \
    E_EXPECT_OBJECT, E_EXPECT_ARRAY, E_EXPECT_STRING, E_EXPECT_INT, E_EXPECT_NUMBER, E_EXPECT_BOOL, \
    E_EXPECT_NULL, E_JSON_TYPE = range(1, 19)
E_SLOW = 99  # decided by the reference path
#: the errors of a value its column's type cannot hold (the schema may refuse it too)
TYPE_ERRORS = (E_INT_RANGE, E_JSON_TYPE)


class JTables(NamedTuple):
    """One schema tree as tables, one row per node (``n*``) and per struct field (``f*``)."""

    kind: np.ndarray  # node kind (J_*), and its V_* flags shifted left by 8 (one load reads both)
    ncol: np.ndarray  # the node's output column
    nchild: np.ndarray  # list/map: the item node
    nkey: np.ndarray  # map: the key column
    nallowed: np.ndarray  # JSON-text leaf: allowed JSON types (T_* bits, T_INTEGRAL)
    nf0: np.ndarray  # struct: its fields are nf0 .. nf1 - 1
    nf1: np.ndarray
    ntab: np.ndarray  # struct: where its key hash table starts in ftab
    nmask: np.ndarray  # struct: that table's size - 1
    nflags: np.ndarray  # validation: V_* bits (see the kernel)
    nlo: np.ndarray  # validation: least items / members (V_COUNT)
    nhi: np.ndarray  # validation: most items / members (V_COUNT)
    fchild: np.ndarray  # field → its node
    fname0: np.ndarray  # field → its name, names[fname0:fname1]
    fname1: np.ndarray
    fplain: np.ndarray  # the name can be compared with raw key bytes (no escapable byte)
    freq: np.ndarray  # validation: the field is required
    names: np.ndarray  # uint8: every field name
    ftab: np.ndarray  # open-addressing tables of field indices by FNV-1a hash of the name
    fill0: np.ndarray  # column → the columns a null there fills, fills[fill0:fill1]
    fill1: np.ndarray
    fills: np.ndarray
    root: int  # root node (SKIP: validate the JSON only)
    root_col: int


class JRows(NamedTuple):
    """The payloads of one group (``data[starts[r]:ends[r]]``) and the verdict on each."""

    data: np.ndarray  # uint8
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    codes: np.ndarray  # int32: the row's error (E_*), 0 when it decoded
    slow: np.ndarray  # uint8: 1 when the reference path decides the row
    check: np.ndarray  # uint8: 1 when the reference validator must judge the row


class JWork(NamedTuple):
    """Scratch space of one decode call (a row redone after the buffers grow reuses it)."""

    seen: np.ndarray  # int64 per field: stamp of the last object that held it
    scratch: np.ndarray  # uint8: unescaped keys
    hrow: np.ndarray  # duplicate-key table: the row attempt that filled a slot
    hkey: np.ndarray  # uint64: the (object, key hash) in a slot
    vrow: np.ndarray  # number texts to check after the kernel: row, start, end
    vs: np.ndarray
    ve: np.ndarray
    snap: np.ndarray  # per-column value counts at the row's start (rollback)
    bsnap: np.ndarray  # per-column byte counts at the row's start


class JStack(NamedTuple):
    """The parse stack, one entry per open object or array (the kernel allocates it on the
    machine stack: the compiler then knows no other array is written through it)."""

    fk: np.ndarray  # frame kind (F_*)
    fnode: np.ndarray  # its node
    fstate: np.ndarray  # S_FIRST, S_NEXT
    fcnt: np.ndarray  # items or members so far
    fidx: np.ndarray  # list/map/text: index of its value in its column (text: -1 inside)
    fobj: np.ndarray  # object stamp (keys seen, duplicate keys)
    fpred: np.ndarray  # struct: the field expected next


class JLimits(NamedTuple):
    cap_items: int  # items, entries and members per row
    max_bytes: int  # bytes per payload


def work_for(nfields: int, ncols: int, lengths: np.ndarray) -> JWork:
    """Scratch space for rows of ``lengths`` bytes (numbers to check: at most one per 16 bytes)."""
    longest = int(lengths.max()) if len(lengths) else 0
    hsize = 16
    while hsize < longest // 2 + 16:
        hsize *= 2
    vcap = int(lengths.sum()) // 16 + 1
    return JWork(seen=np.full(max(nfields, 1), -1, np.int64), scratch=np.empty(longest + 16, np.uint8),
                 hrow=np.full(hsize, -1, np.int64), hkey=np.zeros(hsize, np.uint64),
                 vrow=np.empty(vcap, np.int64), vs=np.empty(vcap, np.int64), ve=np.empty(vcap, np.int64),
                 snap=np.empty(ncols, np.int64), bsnap=np.empty(ncols, np.int64))
