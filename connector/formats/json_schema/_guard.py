"""Vectorized checks of JSON payloads the typed readers do not make themselves.

* UTF-8: pyarrow's JSON reader passes invalid UTF-8 in strings through (and in ignored
  fields and keys), msgspec skips unknown fields without decoding them: every payload is
  validated as a whole, with one Arrow cast (rows are located only when it fails).
* Nesting depth and collection size: a row nested deeper than ``MAX_NESTING`` or holding more
  than ``max_collection_items`` array items, map entries and object members is an error.
  A count of ``{``, ``[`` and ``,`` bytes bounds both; only rows over the bound are measured
  exactly (string-aware, vectorized over the row's bytes).
"""
from __future__ import annotations

from itertools import repeat

import numpy as np
import pyarrow as pa

__all__ = ["MAX_NESTING", "bad_utf8", "structure_errors"]

MAX_NESTING = 512  # objects/arrays inside one another; msgspec's own limit is Python's stack


def _per_row(mask: np.ndarray, offs: np.ndarray) -> np.ndarray:
    """Count of True bytes of ``mask`` in each row [offs[i], offs[i+1]) (offs from 0)."""
    rows = np.searchsorted(offs, np.flatnonzero(mask), "right") - 1
    return np.bincount(rows, minlength=len(offs) - 1)[:len(offs) - 1]


def bad_utf8(payloads: pa.BinaryArray, offs: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Boolean mask of rows that are not valid UTF-8."""
    n = len(payloads)
    try:
        payloads.cast(pa.string())
        return np.zeros(n, bool)
    except (pa.ArrowInvalid, UnicodeDecodeError):
        pass
    lo = int(offs[0])
    high = _per_row(data[lo:int(offs[-1])] >= 0x80, offs - lo) > 0
    out = np.zeros(n, bool)
    for i in np.flatnonzero(high):
        try:
            data[offs[i]:offs[i + 1]].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            out[i] = True
    return out


def _exact(row: np.ndarray) -> tuple[int, int]:
    """(max nesting depth, commas + opening brackets outside strings) of one valid JSON text."""
    bs = row == 0x5C
    idx = np.arange(len(row))
    last_plain = np.maximum.accumulate(np.where(bs, -1, idx))
    q = np.flatnonzero(row == 0x22)
    run = np.where(q > 0, q - 1 - last_plain[np.maximum(q - 1, 0)], 0)
    toggles = np.zeros(len(row), np.int8)
    toggles[q[run % 2 == 0]] = 1
    outside = (np.cumsum(toggles) % 2) == 0
    opens = ((row == 0x7B) | (row == 0x5B)) & outside
    closes = ((row == 0x7D) | (row == 0x5D)) & outside
    depth = np.cumsum(opens.astype(np.int64) - closes)
    items = int(opens.sum() + ((row == 0x2C) & outside).sum())
    return int(depth.max(initial=0)), items


def structure_errors(rows: np.ndarray, blobs: list, max_items: int) -> dict[int, str]:
    """Errors of the (syntactically valid) payloads ``blobs`` of ``rows`` that nest or hold
    too much. Depth d takes 2d bytes and k items 2k - 1: short rows are skipped; for longer
    ones, bytes.count of ``{``, ``[`` and ``,`` (C scans) bounds both before an exact check."""
    limit = min(MAX_NESTING, max_items)
    lens = np.fromiter(map(len, blobs), np.int64, len(blobs))
    big = np.flatnonzero(lens > 2 * limit)
    if not len(big):
        return {}
    sel = [blobs[j] for j in big.tolist()]
    bound = sum(np.fromiter(map(bytes.count, sel, repeat(c, len(sel))), np.int64, len(sel))
                for c in (b"{", b"[", b","))
    out: dict[int, str] = {}
    for j in big[bound > limit].tolist():
        depth, items = _exact(np.frombuffer(blobs[j], np.uint8))
        if depth > MAX_NESTING:
            out[int(rows[j])] = f"JSON nested deeper than {MAX_NESTING} levels"
        elif items > max_items:
            out[int(rows[j])] = (f"record holds more than max_collection_items={max_items} "
                                 "items, entries and members")
    return out
