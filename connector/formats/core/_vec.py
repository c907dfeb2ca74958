"""Vectorized encoding helpers every format's encoder shares: varints, byte rows, row errors.

Each encoder turns a whole Arrow column into one ``pa.BinaryArray`` per schema node; these are
the pieces they assemble it from (Avro and Protobuf varints are the same LEB128 bytes).
"""
from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.errors import EncodeError

__all__ = ["RowErrors", "binary_from_buffers", "zigzag", "varint_lengths", "varints",
           "byte_rows", "join_rows", "prepend", "valid_mask",
           "int_values",
           "with_validity", "dense"]

_U64 = np.uint64
_NONE = np.array(None, object)  # compares like None; numpy's stubs refuse a bare None operand


@functools.cache
def _empty_bytes() -> pa.Scalar:
    # Made on first use, not at import: pyarrow's first conversion of a Python value imports
    # pandas (to ask whether it is a pandas object), a second or more of every import.
    return pa.scalar(b"", pa.binary())


class RowErrors:
    """Maps positions of a (nested) column to top-level rows and records row errors."""

    def __init__(self, errors: np.ndarray, parent: "RowErrors | None" = None, offsets=None):
        self.errors, self.parent, self.offsets = errors, parent, offsets
        self.root: RowErrors = self if parent is None else parent.root
        self.failed = False  # on the root: whether any row failed (skips scans when none did)

    def items(self, offsets: np.ndarray) -> "RowErrors":
        return RowErrors(self.errors, self, offsets)

    def bad_rows(self) -> np.ndarray | None:
        """Mask of failed top-level rows, or None when none failed."""
        return np.not_equal(self.errors, _NONE).astype(bool) if self.root.failed else None

    def top(self, pos: np.ndarray) -> np.ndarray:
        if self.parent is None:
            return pos
        rows = np.searchsorted(self.offsets, pos, side="right") - 1
        return self.parent.top(rows)

    def fail(self, bad: np.ndarray, message, values=None) -> None:
        """Record ``message`` (text, or a callable of the position's value) at ``bad`` positions."""
        if not bad.any():
            return
        pos = np.flatnonzero(bad)
        self.root.failed = True
        rows = self.top(pos)
        for p, r in zip(pos.tolist(), rows.tolist()):
            if self.errors[r] is None:
                self.errors[r] = message if isinstance(message, str) else message(values[p].as_py())


def binary_from_buffers(offsets: np.ndarray, data: np.ndarray, n: int) -> pa.BinaryArray:
    if n and int(offsets[-1]) >= 1 << 31:  # int32 offsets would wrap: never a silently wrong value
        raise EncodeError("one encoded column of this batch exceeds 2 GiB; write smaller Arrow batches "
                          "(spark.sql.execution.arrow.maxRecordsPerBatch)")
    return pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)),
                                                        pa.py_buffer(np.ascontiguousarray(data))])


def zigzag(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64, copy=False)
    return ((v << 1) ^ (v >> 63)).view(_U64)


def varint_lengths(z: np.ndarray) -> np.ndarray:
    nb = np.ones(len(z), np.int64)
    for k in range(1, 10):
        more = z >= _U64(1 << (7 * k))
        if not more.any():
            break
        nb += more
    return nb


def varints(z: np.ndarray, present: np.ndarray | None = None, prefix: bytes = b"") -> pa.BinaryArray:
    """``prefix`` + LEB128 bytes of unsigned ``z`` per row (empty where ``present`` is False)."""
    n = len(z)
    nb = varint_lengths(z)
    width = int(nb.max()) if n else 0
    plen = len(prefix)
    if plen == 0 and width <= 1:
        offsets = np.zeros(n + 1, np.int64)
        if present is None:
            offsets[1:] = np.arange(1, n + 1)
            return binary_from_buffers(offsets, z.astype(np.uint8), n)
        np.cumsum(present, out=offsets[1:])
        return binary_from_buffers(offsets, z.astype(np.uint8)[present], n)
    mat = np.empty((n, plen + width), np.uint8)
    if plen:
        mat[:, :plen] = np.frombuffer(prefix, np.uint8)
    for k in range(width):  # 7 bits a byte, the high bit set where more bytes follow
        byte = (z & _U64(0x7F)).astype(np.uint8)
        if k + 1 < width:
            byte |= (nb > k + 1).view(np.uint8) << 7
            z = z >> _U64(7)
        mat[:, plen + k] = byte
    return byte_rows(mat, nb + plen, present)


def byte_rows(mat: np.ndarray, lens: np.ndarray, present: np.ndarray | None) -> pa.BinaryArray:
    """Row ``i`` = the first ``lens[i]`` bytes of ``mat[i]`` (none where not ``present``)."""
    n, width = mat.shape
    if present is not None:
        lens = np.where(present, lens, 0)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    if n and int(lens.min()) == width:  # every row full width (e.g. timestamps): no compaction
        return binary_from_buffers(offsets, mat.reshape(-1), n)
    if n and present is not None and bool((lens[present] == width).all()):
        return binary_from_buffers(offsets, mat[present].reshape(-1), n)
    keep = np.arange(width)[None, :] < lens[:, None]
    return binary_from_buffers(offsets, mat[keep], n)




def join_rows(*args) -> pa.Array:
    parts = [p for p in args if not (isinstance(p, pa.Scalar) and p.as_py() == b"")]
    if len(parts) == 1 and isinstance(parts[0], pa.Array) and parts[0].null_count == 0:
        return parts[0]
    return pc.binary_join_element_wise(*parts, _empty_bytes(), null_handling="replace", null_replacement="")




def prepend(payloads, prefix: bytes) -> pa.Array:
    """``prefix + payload`` per row (nulls stay null); ``payloads`` an array or a list of bytes."""
    if not isinstance(payloads, pa.Array):
        if prefix:
            payloads = [None if p is None else prefix + p for p in payloads]
        return pa.array(payloads, pa.binary())
    if not prefix:
        return payloads
    return pc.binary_join_element_wise(pa.scalar(prefix, pa.binary()), payloads, _empty_bytes())




def valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def int_values(arr: pa.Array) -> np.ndarray:
    if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type) or pa.types.is_time(arr.type):
        arr = arr.cast(pa.int64() if not pa.types.is_date32(arr.type) else pa.int32())
    if arr.null_count:
        arr = arr.fill_null(0)
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def with_validity(b: pa.Array, valid: np.ndarray) -> pa.Array:
    """``b`` with rows where ``valid`` is False marked null."""
    if valid.all():
        return b
    if b.offset or b.null_count:
        b = dense(b)
    bufs = b.buffers()
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(b.type, len(b), [bitmap, bufs[1], bufs[2]])


def dense(b: pa.Array) -> pa.Array:
    """Copy to offset 0 with empty (not null) values."""
    return pc.binary_join_element_wise(b, _empty_bytes(), null_handling="replace", null_replacement="")
