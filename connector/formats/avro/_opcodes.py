"""The instruction sets and row errors of the Avro decoder and encoder: the one definition
that each compiler (:mod:`._program`, :mod:`._encode_program`) emits and each kernel
(:mod:`._vm`, :mod:`._encode_vm`) dispatches on, a type's decoder and encoder instructions side
by side. Apart from the kernels so that programs are built without importing numba (slow to
import); numba reads the members as constants.

An instruction is a row of ``code`` (int64): the op, then its operands in the order listed
beside it (``col`` is the column: the decoder's output column, the encoder's input column;
-1: none).
"""
from __future__ import annotations

from enum import IntEnum

__all__ = ["Op", "Err", "EncOp", "EncErr", "K_I32", "K_I64", "K_F32", "K_F64", "E_CUSTOM", "SLOTS",
           "ENC_SLOTS", "COL_VALID", "COL_OFFSET", "COL_BUF1", "COL_BUF2", "messages", "ENC_MESSAGES"]

SLOTS = 8  # slots per decoder instruction: the op and up to 7 operands
ENC_SLOTS = 5  # slots per encoder instruction: op, col, a, b, c
# the encoder's column table: per input column, its validity bitmap's address (0: no null, -1:
# all null), the array's offset, its first and second buffers' addresses
COL_VALID, COL_OFFSET, COL_BUF1, COL_BUF2 = 0, 1, 2, 3


class Op(IntEnum):
    """Decoder instructions, one per schema construct; each has one handler in ``_vm``."""

    HALT = 0      # -: the row's value is complete
    REC = 1       # col, variant: one struct value (the variant tells which writer filled it)
    NULL = 2      # col: a null value (struct children get one too)
    BOOL = 3      # col: one byte, 0 or 1
    VARNUM = 4    # col, int check, reader kind, millis→µs, storage: a zigzag varint (int, long,
    #               date, time, timestamps, promoted to long/float/double)
    VARSKIP = 5   # -: skip a varint
    FLOATNUM = 6  # col, width (4/8), reader kind, -, storage: a float or double
    FIXSKIP = 7   # -, width: skip bytes
    BYTES = 8     # col, size (-1: length-prefixed): string, bytes, fixed: (start, length)
    ENUM = 9      # col, writer symbols, aux offset of the reader index per symbol (-1: none)
    UNION = 10    # col (struct-form union) or -1, aux offset, end: ``aux`` holds the count, then
    #               (target, member, error) per branch (target -1: the end; -2: a null into
    #               column ``member``, then the end), then the member columns
    TOUNION = 11  # col, member, aux offset of members: a non-union value into a struct-form union
    ARRAY = 12    # col, min item size, end, key column, is map: starts a collection (a frame)
    NEXT = 13     # -, pc of its ARRAY: ends one item; the next item, block or the collection's end
    JMP = 14      # -, target
    CALL = 15     # -, target: a subroutine (skipping a writer record, which may recurse)
    RET = 16      # -: back from a subroutine
    ERROR = 17    # -, code: fail the row
    CONST = 18    # col, value: a reader default the writer lacks (number bits, boolean, enum index)
    CBYTES = 19   # col, consts offset, length: a string/bytes default
    DECIMAL = 20  # col, size (-1: length-prefixed), precision, error code: big-endian two's
    #               complement → decimal128 (low word in the value, high word in the length slot)


# reader kinds and storage of numeric columns
K_I32, K_I64, K_F32, K_F64 = 0, 1, 2, 3


class Err(IntEnum):
    """Row errors the kernel writes (0: none); program-specific ones are ``E_CUSTOM + index``."""

    TRUNC = 1
    VARINT = 2
    INT32 = 3
    LENGTH = 4
    BOOL = 5
    ENUM_RANGE = 6
    ENUM_UNKNOWN = 7
    BRANCH = 8
    COUNT = 9
    CAP = 10
    DEEP = 11
    TRAILING = 12
    MILLIS = 13
    BIG = 14


E_CUSTOM = 100  # program-specific messages (``Program.messages``): E_CUSTOM + index

_MESSAGES = {
    Err.TRUNC: "truncated payload",
    Err.VARINT: "varint longer than 10 bytes or beyond 64 bits",
    Err.INT32: "int varint beyond 32 bits",
    Err.LENGTH: "negative length or length past the end of the payload",
    Err.BOOL: "boolean byte is neither 0 nor 1",
    Err.ENUM_RANGE: "enum index out of range",
    Err.ENUM_UNKNOWN: "enum symbol unknown to the reader, which has no default",
    Err.BRANCH: "union branch index out of range",
    Err.COUNT: "collection block count larger than the payload",
    Err.CAP: "record declares more than max_collection_items={cap_items} items",
    Err.DEEP: "nesting deeper than {depth} levels",
    Err.TRAILING: "trailing bytes after the record",
    Err.MILLIS: "timestamp in milliseconds beyond the microsecond range",
    Err.BIG: "payload exceeds max_record_bytes={cap_bytes}",
}


def messages(cap_items: int, cap_bytes: int, depth: int) -> dict[int, str]:
    """The text of every kernel row error under these limits."""
    return {int(e): m.format(cap_items=cap_items, cap_bytes=cap_bytes, depth=depth)
            for e, m in _MESSAGES.items()}


class EncOp(IntEnum):
    """Encoder instructions (each reads column ``col`` at the current index and appends Avro
    bytes); each has one handler in ``_encode_vm``."""

    HALT = 0      # -: the row is complete
    REC = 1       # col: a struct value (null: the row fails)
    BOOL = 2      # col: one byte from the bit-packed values
    INT = 3       # col, source width (4: int32/date32, 8: int64/timestamp), millis (µs → floor ms)
    F32 = 4       # col: the value's 4 little-endian bytes
    F64 = 5       # col: the value's 8 little-endian bytes
    BYTES = 6     # col, uuid check: ``varint(len)`` and the bytes (string or binary)
    FIXED = 7     # col, size: the bytes (length checked)
    ENUM = 8      # col, aux offset (count, then offset and length of each symbol in ``consts``)
    DECIMAL = 9   # col, fixed size (-1: bytes, fastavro's width), precision (0: unchecked)
    CONST = 10    # -, consts offset, length: bytes every row writes here (a field cut at the
    #               recursion depth)
    OPT = 11      # col, null branch (-1: none), branch, end: a union of null and at most one type
    ULONG = 12    # col, null branch, int branch, long branch: ``[int, long]`` as the branch that fits
    UDOUBLE = 13  # col, null branch, double branch: ``[float, double]`` as the double
    USTRUCT = 14  # col, null branch, aux offset (count, then member column, branch, target per
    #               member), end: the struct form of other unions (exactly one member set)
    JMP = 15      # -, target
    ARRAY = 16    # col, end: a collection of ``count, items, 0`` (one block; a map's items start
    #               with their key)
    NEXT = 17     # -, its ARRAY: the next item, or the collection's end


class EncErr(IntEnum):
    """Encoder row errors (0: none); ``ROOM``: the output is full, the caller grows it and
    redoes the row."""

    NULL = 1
    NULL_UNION = 2
    SEVERAL = 3
    ENUM = 4
    FIXED = 5
    UUID = 6
    PRECISION = 7
    FIXED_DECIMAL = 8
    ROOM = 9


# the text of each encoder row error, after the field's path: ``n`` is the schema node, ``value``
# the refused value (read only where a text names it)
ENC_MESSAGES = {
    EncErr.NULL: "null for a non-nullable Avro {n.kind}",
    EncErr.NULL_UNION: "null for a union without a null branch",
    EncErr.SEVERAL: "union value sets several members; set exactly one",
    EncErr.ENUM: "{value!r} is not a symbol of enum {n.name}",
    EncErr.FIXED: "fixed({n.size}) needs {n.size} bytes",
    EncErr.UUID: "{value!r} is not a UUID",
    EncErr.PRECISION: "decimal {value} overflows precision {n.precision} (scale {scale})",
    EncErr.FIXED_DECIMAL: "decimal does not fit fixed({n.size})",
}
