"""Names shared by the Protobuf programs and their compiled kernels: what each table column, kind,
status and error code means. One definition each, read by the Python side that builds the
tables and by the numba side that runs them (numba reads ``IntEnum`` members as constants);
apart from both so that tables are built without importing numba (slow to import).

- the encoder: :mod:`._encode_program` builds the tables, :mod:`._encode_kernel` runs them;
- the wire check: :mod:`._validate` builds the tables, :mod:`._kernel` runs them;
- the JSON text of well-known types: :mod:`._wktjson` calls :mod:`._wktkernel`.
"""
from __future__ import annotations

from enum import IntEnum

__all__ = ["Kind", "Src", "Col", "Bind", "Pres", "Chk", "EncErr", "ENUM_BAD", "FieldKind", "WireErr",
           "WIRE_REASONS", "Wkt", "Status"]


# -- the encoder ---------------------------------------------------------------------------------
class Kind(IntEnum):
    """An encoder node's kind: how its value is written."""

    VARINT = 0   # int32/int64/uint*/bool/enum
    ZIGZAG = 1   # sint32/sint64
    FIX32 = 2    # fixed32/sfixed32/float
    FIX64 = 3    # fixed64/sfixed64/double
    BYTES = 4    # string/bytes
    TS = 5       # google.protobuf.Timestamp from microseconds
    DUR = 6      # google.protobuf.Duration from microseconds
    MSG = 7      # a message: its fields are its kids
    REP = 8      # a repeated field or map: one tagged item each
    PACKED = 9   # a packed repeated numeric field


class Src(IntEnum):
    """Where a leaf's value comes from: the Arrow physical type of its column."""

    I32 = 0
    I64 = 1
    F32 = 2
    F64 = 3
    BOOL = 4
    DEC = 5   # decimal128 (uint64 past int64)
    ENUM = 6  # enum numbers, looked up per batch from the names
    STR = 7   # string/binary: (start, length)


class Col(IntEnum):
    """Columns of the encoder's node table ``P`` (static, one row per node)."""

    KIND = 0
    SRC = 1
    TAG = 2      # the field's tag, varint-ready
    PRES = 3     # Pres
    NULLERR = 4  # a null here fails the row
    CHK = 5      # Chk
    C0 = 6       # a message: its kids are KIDS[C0:C1]; a repeated field: its item node
    C1 = 7
    ONEOF = 8    # the oneof's index, -1: none
    DEF = 9      # the default an implicit field leaves out


class Bind(IntEnum):
    """Columns of the per-batch binding ``D``: addresses and offsets of a node's column."""

    VALID = 0      # validity bitmap address (0: no null)
    VOFF = 1       # the bitmap's offset
    DATA = 2       # the values' address
    DOFF = 3       # the values' offset
    OFFS = 4       # list or string offsets' address
    BYTESADDR = 5  # string data's address


class Pres(IntEnum):
    """Presence: a proto3 implicit field holding its default is not written."""

    IMPLICIT = 0
    EXPLICIT = 1
    ALWAYS = 2


class Chk(IntEnum):
    """A leaf's range check."""

    NONE = 0
    U32 = 1
    U64 = 2
    ENUM = 3


class EncErr(IntEnum):
    """Encoder row errors (0: none); ROOM: the output is full, the kernel grows it and redoes
    the row."""

    NULL = 1
    U32 = 2
    U64 = 3
    ENUM = 4
    ONEOF = 5
    ROOM = 6


ENUM_BAD = 1 << 40  # an enum name with no number (valid numbers are int32)


# -- the wire check ------------------------------------------------------------------------------
class FieldKind(IntEnum):
    """What the wire check knows of a field: its packed item shape, or a message to enter."""

    OTHER = 0
    VARINT = 1
    F64 = 2
    F32 = 3
    MSG = 4


class WireErr(IntEnum):
    """Wire-level faults the check reports (0: none)."""

    VARINT = 1
    OVERFLOW = 2
    TAG = 3
    WIRE_TYPE = 4
    TRUNCATED = 5
    LENGTH = 6
    PACKED = 7
    UNTERMINATED = 8
    END_GROUP = 9
    DEEP = 10


WIRE_REASONS = {
    WireErr.VARINT: "truncated or over-long varint",
    WireErr.OVERFLOW: "varint overflows 64 bits",
    WireErr.TAG: "field number 0 or tag over 32 bits",
    WireErr.WIRE_TYPE: "invalid wire type",
    WireErr.TRUNCATED: "truncated field",
    WireErr.LENGTH: "length past the end of the message",
    WireErr.PACKED: "bad packed repeated field",
    WireErr.UNTERMINATED: "unterminated group",
    WireErr.END_GROUP: "end-group tag without a matching start",
    WireErr.DEEP: "nested deeper than {depth} levels",
}


# -- JSON text of well-known types ---------------------------------------------------------------
class Wkt(IntEnum):
    """The well-known type a column of JSON text holds."""

    STRUCT = 0
    VALUE = 1
    LIST = 2
    ANY = 3


class Status(IntEnum):
    """Per value: written; its row to the reference path; this value to ``json_text``."""

    OK = 0
    REDO = 1
    PY = 2
