"""numpy views over Arrow binary arrays: offsets, data bytes, validity, byte gathers.

Arrow ``binary`` / ``large_binary`` layout (one chunk)::

    validity  bitmap, LSB first, bit (array.offset + i) for row i   (absent: all valid)
    offsets   int32 / int64, n + 1 entries from array.offset on
    data      uint8; row i is data[offsets[i]:offsets[i+1]]

Everything here works on whole columns: no per-row Python code.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wireformat._errors import LimitExceededError, WireFormatError

__all__ = ["BinView", "binary_view", "single_array", "gather_be", "gather_bytes", "gather_fixed", "fixed_head",
           "validity_buffer", "with_validity", "build_payload"]

_EMPTY_DATA = np.zeros(1, dtype=np.uint8)


@dataclass(frozen=True)
class BinView:
    """Columnar view of one binary array.

    ``start``/``end`` are absolute positions into ``data`` (int64); ``data`` always
    holds at least one byte so clipped gathers never index an empty array.
    """

    array: pa.Array
    start: np.ndarray
    end: np.ndarray
    data: np.ndarray
    valid: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return len(self.start)


def single_array(values, what: str = "values") -> pa.Array:
    """One contiguous array from an Array or ChunkedArray (several chunks are concatenated)."""
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 1:
            return values.chunk(0)
        if values.num_chunks == 0:
            return pa.array([], type=values.type)
        # A BinaryArray result cannot span several data buffers: one copy here.
        return pa.concat_arrays(values.chunks)
    if isinstance(values, pa.Array):
        return values
    raise WireFormatError(f"{what} must be a pyarrow Array or ChunkedArray, got {type(values).__name__}")


def validity_mask(arr: pa.Array) -> np.ndarray:
    """Boolean validity of each row (True = not null)."""
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, dtype=bool)
    if arr.type == pa.null():
        return np.zeros(n, dtype=bool)
    bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little", count=arr.offset + n)[arr.offset:].astype(bool)


def binary_view(values, what: str = "values") -> BinView:
    """Offsets, data and validity of a ``binary`` / ``large_binary`` array as numpy arrays."""
    arr = single_array(values, what)
    if pa.types.is_binary(arr.type):
        off_dtype = np.int32
    elif pa.types.is_large_binary(arr.type):
        off_dtype = np.int64
    else:
        raise WireFormatError(f"{what} must be binary or large_binary, got {arr.type}")
    n = len(arr)
    bufs = arr.buffers()
    if n == 0 or bufs[1] is None:
        empty = np.zeros(n, dtype=np.int64)
        return BinView(arr, empty, empty, _EMPTY_DATA, np.zeros(n, dtype=bool), empty)
    offsets = np.frombuffer(bufs[1], dtype=off_dtype)[arr.offset:arr.offset + n + 1].astype(np.int64)
    data = _EMPTY_DATA
    if bufs[2] is not None and bufs[2].size > 0:
        data = np.frombuffer(bufs[2], dtype=np.uint8)
    return BinView(arr, offsets[:-1], offsets[1:], data, validity_mask(arr), np.diff(offsets))


def gather_be(data: np.ndarray, pos: np.ndarray, nbytes: int) -> np.ndarray:
    """Big-endian unsigned integers of ``nbytes`` bytes at each ``pos`` (uint64).

    Positions past the end are clipped: callers mask those rows by length first.
    """
    out = np.zeros(len(pos), dtype=np.uint64)
    for k in range(nbytes):
        out <<= np.uint64(8)
        out |= data.take(pos + k, mode="clip")
    return out


def gather_bytes(data: np.ndarray, pos: np.ndarray, nbytes: int) -> np.ndarray:
    """``(len(pos), nbytes)`` uint8 matrix of the bytes at each position (clipped)."""
    return data.take(pos[:, None] + np.arange(nbytes, dtype=np.int64), mode="clip")


def fixed_head(view: BinView, nbytes: int):
    """``(n, nbytes)`` first bytes of every row, or None unless all rows are valid and long enough.

    The fast path of fixed framings: one Arrow ``binary_slice`` yields magic byte,
    flags and id of every row back to back, instead of one numpy gather per byte.
    """
    n = len(view)
    if n == 0 or view.array.null_count or int(view.length.min()) < nbytes:
        return None
    sl = pc.binary_slice(view.array, 0, nbytes)
    bufs = sl.buffers()
    off_dtype = np.int64 if pa.types.is_large_binary(sl.type) else np.int32
    offs = np.frombuffer(bufs[1], dtype=off_dtype)[sl.offset:sl.offset + n + 1]
    if offs[0] != 0 or offs[-1] != n * nbytes or bufs[2] is None:
        return None
    return np.frombuffer(bufs[2], dtype=np.uint8)[:n * nbytes].reshape(n, nbytes)


def gather_fixed(view: BinView, mask: np.ndarray, rel: int, nbytes: int) -> np.ndarray:
    """``(mask.sum(), nbytes)`` bytes at ``start + rel`` of the ``mask`` rows (each long enough).

    Arrow's ``binary_slice`` over the selected rows lays the slices out back to back,
    which is several times faster than a 2-D numpy gather for 16-byte GUIDs.
    """
    m = int(mask.sum())
    if m == 0:
        return np.zeros((0, nbytes), dtype=np.uint8)
    arr = view.array
    sub = arr if m == len(arr) else arr.filter(pa.array(mask))
    sl = pc.binary_slice(sub, rel, rel + nbytes)
    bufs = sl.buffers()
    off_dtype = np.int64 if pa.types.is_large_binary(sl.type) else np.int32
    offs = np.frombuffer(bufs[1], dtype=off_dtype)[sl.offset:sl.offset + m + 1]
    if sl.null_count == 0 and offs[0] == 0 and offs[-1] == m * nbytes and bufs[2] is not None:
        return np.frombuffer(bufs[2], dtype=np.uint8)[:m * nbytes].reshape(m, nbytes)
    return gather_bytes(view.data, view.start[mask] + rel, nbytes)


def validity_buffer(mask: np.ndarray):
    """Arrow validity bitmap for a boolean mask (None when every row is valid)."""
    if mask.all():
        return None
    return pa.py_buffer(np.packbits(mask, bitorder="little"))


def with_validity(arr: pa.Array, mask: np.ndarray) -> pa.Array:
    """``arr`` (binary-like, same length) with rows where ``mask`` is False set to null; no data copy."""
    old = validity_mask(arr)
    mask = mask & old
    if mask.all() and arr.null_count == 0:
        return arr
    bufs = arr.buffers()
    if arr.offset:
        # The new bitmap starts at bit 0, so re-base the offsets onto it (offsets only, not data).
        off_dtype = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
        offsets = np.frombuffer(bufs[1], dtype=off_dtype)[arr.offset:arr.offset + len(arr) + 1]
        bufs = [None, pa.py_buffer(np.ascontiguousarray(offsets)), bufs[2]]
    return pa.Array.from_buffers(arr.type, len(arr), [validity_buffer(mask)] + list(bufs[1:]))


def _to_binary(arr: pa.Array) -> pa.Array:
    if pa.types.is_binary(arr.type):
        return arr
    try:
        return arr.cast(pa.binary())
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        # Over 2 GiB of payload in one batch: large_binary is the only layout that fits.
        return arr.cast(pa.large_binary())


def build_payload(view: BinView, skip: np.ndarray, ok: np.ndarray, replaced: dict | None = None,
                  uniform_skip: int | None = None) -> pa.Array:
    """Payload column: row i = ``data[start[i] + skip[i] : end[i]]`` where ``ok``, null elsewhere.

    Parameters
    ----------
    view : BinView
        The parsed input.
    skip : numpy.ndarray
        Header length per row (int64).
    ok : numpy.ndarray
        Rows that parsed.
    replaced : dict, optional
        ``{row: bytes}`` payloads that are not slices of the input (decompressed rows).
    uniform_skip : int, optional
        The caller knows every OK row skips this many bytes (saves a check).

    Notes
    -----
    Arrow's ``binary`` layout cannot skip bytes between rows, so a payload with a
    header removed is a copy done by Arrow C++ in one pass (``binary_slice`` when
    every row skips the same number of bytes, else a ``binary_view`` over the input
    buffer cast to ``binary``).  Without a header (``skip`` all 0) the input buffers
    are reused as they are.
    """
    arr = view.array
    n = len(view)
    if n == 0:
        return pa.array([], type=pa.binary())
    if not replaced:
        if uniform_skip is not None:
            h, uniform = uniform_skip, True
        else:
            first_ok = int(np.argmax(ok)) if ok.any() else -1
            h = int(skip[first_ok]) if first_ok >= 0 else 0
            uniform = first_ok < 0 or bool(np.all((skip == h) | ~ok))
        if uniform:
            # An explicit stop: pyarrow 26 fails without one, and overflows on huge ones.
            stop = max(int(view.length.max(initial=0)), h)
            sliced = arr if h == 0 else pc.binary_slice(arr, h, stop)
            return _to_binary(with_validity(sliced, ok))
    pstart = view.start + skip
    plen = np.where(ok, view.end - pstart, 0)
    if view.data.size >= (1 << 31) or plen.max(initial=0) >= (1 << 31):
        raise LimitExceededError("input data buffer over 2 GiB cannot be re-sliced")
    # binary_view element: int32 length, then 12 inline bytes (len <= 12) or
    # 4-byte prefix + int32 buffer index + int32 offset.
    words = np.zeros((n, 4), dtype=np.int32)
    words[:, 0] = plen
    words[:, 1] = gather_bytes(view.data, pstart, 4).view("<i4").ravel()
    words[:, 3] = pstart
    raw = words.view(np.uint8)
    short = np.flatnonzero(plen <= 12)
    if len(short):
        inline = gather_bytes(view.data, pstart[short], 12)
        inline[np.arange(12)[None, :] >= plen[short, None]] = 0
        raw[short, 4:16] = inline
    buffers = [validity_buffer(ok), pa.py_buffer(raw), arr.buffers()[2] or pa.py_buffer(b"")]
    if replaced:
        extra = bytearray()
        for row, blob in replaced.items():
            words[row, 0] = len(blob)
            if len(blob) <= 12:
                raw[row, 4:16] = np.frombuffer(blob.ljust(12, b"\0"), dtype=np.uint8)
            else:
                raw[row, 4:8] = np.frombuffer(blob[:4], dtype=np.uint8)
                words[row, 2] = 1
                words[row, 3] = len(extra)
                extra += blob
        if len(extra) >= (1 << 31):
            raise LimitExceededError("decompressed payloads of one batch exceed 2 GiB")
        buffers.append(pa.py_buffer(bytes(extra)))
    return _to_binary(pa.Array.from_buffers(pa.binary_view(), n, buffers))
