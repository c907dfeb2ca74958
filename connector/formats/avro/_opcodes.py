"""The instruction set and error codes of the Avro kernel (:mod:`connector.formats.avro._vm`),
apart from it so that programs are built without importing numba (slow to import)."""

(OP_HALT, OP_REC, OP_NULL, OP_BOOL, OP_VARNUM, OP_VARSKIP, OP_FLOATNUM, OP_FIXSKIP, OP_BYTES,
 OP_ENUM, OP_UNION, OP_TOUNION, OP_ARRAY, OP_NEXT, OP_JMP, OP_CALL, OP_RET, OP_ERROR, OP_CONST,
 OP_CBYTES) = range(20)
K_I32, K_I64, K_F32, K_F64 = range(4)  # reader kinds and storage of numeric columns

E_TRUNC, E_VARINT, E_INT32, E_LENGTH, E_BOOL, E_ENUM_RANGE, E_ENUM_UNKNOWN, E_BRANCH, E_COUNT, \
    E_CAP, E_DEEP, E_TRAILING, E_MILLIS, E_BIG = range(1, 15)
E_CUSTOM = 100  # program-specific messages: E_CUSTOM + index
