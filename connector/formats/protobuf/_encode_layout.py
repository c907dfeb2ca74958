"""The layout of a compiled Protobuf encoder program: node kinds, value sources, table columns,
presence, checks and row error codes, shared by :mod:`~connector.formats.protobuf._encode_program`
(which builds the tables) and :mod:`~connector.formats.protobuf._encode_kernel` (which runs them)."""

# node kinds
VARINT, ZIGZAG, FIX32, FIX64, BYTES, TS, DUR, MSG, REP, PACKED = range(10)
# where a leaf's value comes from (the Arrow physical type)
I32, I64, F32, F64, BOOL, DEC, ENUM, STR = range(8)
# columns of P (static, per node) and D (per batch: addresses and offsets of the node's column)
KIND, SRC, TAG, PRES, NULLERR, CHK, C0, C1, ONEOF, DEF = range(10)
VALID, VOFF, DATA, DOFF, OFFS, BYTESADDR = range(6)
# presence: a proto3 implicit field holding its default is not written
IMPLICIT, EXPLICIT, ALWAYS = range(3)
CHK_NONE, CHK_U32, CHK_U64, CHK_ENUM = range(4)
# row error codes (E_ROOM: the output buffer is full, the kernel grows it and redoes the row)
E_NULL, E_U32, E_U64, E_ENUM, E_ONEOF, E_ROOM = range(1, 7)
ENUM_BAD = 1 << 40  # an enum name with no number (valid numbers are int32)
