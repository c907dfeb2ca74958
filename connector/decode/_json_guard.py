"""Vectorized checks of JSON payloads the typed readers do not make themselves.

* UTF-8: pyarrow's JSON reader passes invalid UTF-8 in strings through (and in ignored
  fields and keys), msgspec skips unknown fields without decoding them: every payload is
  validated as a whole, with one Arrow cast (rows are located only when it fails).
* Nesting depth and collection size: a row nested deeper than ``MAX_NESTING`` or holding more
  than ``max_collection_items`` array items, map entries and object members is an error.
  One cumulative count of ``{``, ``[`` and ``,`` bytes bounds both; only rows over the bound
  are measured exactly (string-aware, still vectorized).
"""
from __future__ import annotations

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


def structure_errors(rows: np.ndarray, offs: np.ndarray, data: np.ndarray,
                     max_items: int) -> dict[int, str]:
    """Errors of the (syntactically valid) rows ``rows`` that nest or hold too much."""
    lens = (offs[1:] - offs[:-1])[rows]
    # depth d takes 2d bytes and k items take 2k - 1 bytes: a row this short exceeds neither
    rows = rows[lens > 2 * min(MAX_NESTING, max_items)]
    if not len(rows):
        return {}
    lo, hi = int(offs[rows[0]]), int(offs[rows[-1] + 1])
    part = data[lo:hi]
    mask = (part == 0x7B) | (part == 0x5B) | (part == 0x2C)
    bound = _per_row(mask, offs[rows[0]:rows[-1] + 2] - lo)[rows - rows[0]]
    out: dict[int, str] = {}
    for i in rows[bound > min(MAX_NESTING, max_items)]:
        depth, items = _exact(data[offs[i]:offs[i + 1]])
        if depth > MAX_NESTING:
            out[int(i)] = f"JSON nested deeper than {MAX_NESTING} levels"
        elif items > max_items:
            out[int(i)] = (f"record holds more than max_collection_items={max_items} "
                           "items, entries and members")
    return out
