"""Avro encoding entry point: the compiled kernel, or the per-record reference.

The kernel (:mod:`._encode_vm`) runs the schema's program (:mod:`._encode_program`) over the
Arrow buffers, row by row, writing each row's framing header and Avro bytes into one output
buffer. Values must be of ``arrow_type_of(node)`` (the generic ``Encoder`` coerces Spark's
types first); any other type, or a surprise inside the kernel path, takes the checked
per-record reference (``EncodeOptions(fast_path=False)`` selects it too).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from connector.formats.avro._encode_program import EncodeProgram, EncOut, compile_encoder
from connector.formats.avro._opcodes import COL_BUF1, COL_OFFSET, COL_VALID, ENC_MESSAGES, EncErr
from connector.formats.avro._encode_ref import RowError, encode_record
from connector.formats.avro._schema import arrow_type_of
from connector.formats.core import EncodeError, note_fallback, prepend, valid_mask

__all__ = ["encode_avro"]

_MAX_BYTES = (1 << 31) - 1  # int32 Arrow offsets


def encode_avro(node, values: pa.Array, fast: bool = True, prefix: bytes = b""):
    """(payloads BinaryArray, errors: list / object array, or None when every row encoded); each
    payload after ``prefix``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if fast:
        try:
            if not values.type.equals(arrow_type_of(node)):
                raise TypeError(f"values of {values.type}, not the schema's {arrow_type_of(node)}")
            prog = compile_encoder(node)
            return encode_compiled(prog, values, prefix)
        except EncodeError:
            raise
        except Exception as e:  # noqa: BLE001 - any surprise: the checked per-record path
            note_fallback("avro", e)  # a shape the compiled encoder did not foresee
    return encode_reference(node, values, prefix)


def _table(prog: EncodeProgram, values: pa.Array) -> tuple[np.ndarray, list]:
    """The kernel's column table (see :mod:`._encode_vm`) and the arrays it points into."""
    arrays = prog.arrays(values)
    ctab = np.zeros((len(arrays), 4), np.int64)
    for c, a in enumerate(arrays):
        bufs = a.buffers()
        if a.type == pa.null() or (a.null_count and a.null_count == len(a) and bufs[0] is None):
            ctab[c, COL_VALID] = -1
        elif a.null_count:
            ctab[c, COL_VALID] = bufs[0].address
        ctab[c, COL_OFFSET] = a.offset
        for k in (1, 2):  # values, or offsets and data
            if len(bufs) > k and bufs[k] is not None:
                ctab[c, COL_BUF1 + k - 1] = bufs[k].address
    return ctab, arrays


def encode_compiled(prog: EncodeProgram, values: pa.Array, prefix: bytes = b""):
    """:func:`encode_avro`'s kernel path."""
    from connector.formats.avro._encode_vm import encode_rows

    n = len(values)
    values.validate()  # buffers as large as the arrays claim (O(1) a column): the kernel reads them raw
    ctab, arrays = _table(prog, values)
    pre = np.frombuffer(prefix, np.uint8) if prefix else np.zeros(0, np.uint8)
    cap = min(_MAX_BYTES, int(n * (prog.bytes_per_row + len(prefix))) + 1024)
    o = EncOut(n, pre, np.empty(cap, np.uint8), np.zeros(n + 1, np.int32), np.zeros(n, np.int64),
               np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((prog.depth + 1, 4), np.int64),
               np.zeros(1, np.int64))
    row = 0
    while True:
        row = encode_rows(prog.tables, ctab, o, row)
        if row >= n:
            break
        if cap >= _MAX_BYTES:
            raise EncodeError("one encoded column of this batch exceeds 2 GiB; write smaller Arrow batches "
                              "(spark.sql.execution.arrow.maxRecordsPerBatch)")
        cap = min(_MAX_BYTES, 2 * cap)
        grown = np.empty(cap, np.uint8)
        grown[:o.offs[row]] = o.out[:o.offs[row]]
        o = o._replace(out=grown)
    out, offs, ecode, epc, epos = o.out, o.offs, o.err, o.epc, o.epos
    size = int(offs[n])
    if n:
        prog.bytes_per_row = max(8.0, 1.1 * (size / n - len(prefix)))
    bad = ecode != 0
    any_bad = bool(bad.any())
    valid = valid_mask(values)
    if any_bad:
        valid &= ~bad
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    payloads = pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offs), pa.py_buffer(out[:size])])
    if not any_bad:
        return payloads, None
    errors = np.full(n, None, object)
    for r in np.flatnonzero(bad).tolist():
        errors[r] = f"avro encode failed: {_message(prog, arrays, int(ecode[r]), int(epc[r]), int(epos[r]))}"
    return payloads, errors


def _message(prog: EncodeProgram, arrays: list, code: int, pc: int, pos: int) -> str:
    path, n = prog.where[pc]
    assert n is not None
    why = ENC_MESSAGES[EncErr(code)]
    value: Any = None
    if "{value" in why:
        value = arrays[prog.code[pc][1]][pos].as_py()
        value = value if code == EncErr.PRECISION else str(value)[:40]
    return f"{path}: " + why.format(n=n, value=value, scale=n.scale or 0)


def encode_reference(node, values: pa.Array, prefix: bytes = b""):
    """Per-record reference path (``_avro_ref``)."""
    rows = values.to_pylist()
    out: list = [None] * len(rows)
    errors: list = [None] * len(rows)
    for i, v in enumerate(rows):
        if v is None:
            continue
        try:
            out[i] = encode_record(node, v)
        except RowError as e:
            errors[i] = f"avro encode failed: {e}"
    return prepend(out, prefix), errors
