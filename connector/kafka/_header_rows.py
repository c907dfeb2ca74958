"""Per-record header lists (:data:`HEADER_TYPE`) built and combined column-wise, for a write whose
records carry headers that differ by row (each message's type header, its framing's schema-id
header) next to the DataFrame's own ``headers`` column. No Python loop over records."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.kafka._raw_schema import HEADERS_TYPE

__all__ = ["header_rows", "concat_header_rows", "split_header"]

_ENTRY = HEADERS_TYPE.value_type


def header_rows(n: int, groups: list[tuple[np.ndarray, tuple[tuple[str, bytes], ...]]]) -> pa.ListArray:
    """``n`` header lists: the rows of each group carry its (name, value) pairs, other rows none."""
    table: list[tuple[str, bytes]] = []
    start = np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)
    for rows, pairs in groups:
        start[rows] = len(table)
        count[rows] = len(pairs)
        table += list(pairs)
    offsets = np.concatenate([[0], np.cumsum(count)])
    total = int(offsets[-1])
    within = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1], count)
    index = np.repeat(start, count) + within
    entries = pa.array([{"key": k, "value": v} for k, v in table], _ENTRY).take(pa.array(index, pa.int64())) \
        if table else pa.array([], _ENTRY)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), entries)


def _lengths(rows: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.list_value_length(rows), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def concat_header_rows(first: pa.Array | None, second: pa.Array | None) -> pa.Array | None:
    """Each record's headers of ``first`` then those of ``second`` (either may be None)."""
    if first is None or second is None:
        return first if second is None else second
    if isinstance(first, pa.ChunkedArray):
        first = first.combine_chunks()
    n = len(first)
    la, lb = _lengths(first), _lengths(second)
    parents = np.concatenate([np.repeat(np.arange(n, dtype=np.int64) * 2, la),
                              np.repeat(np.arange(n, dtype=np.int64) * 2 + 1, lb)])
    items = pa.concat_arrays([first.flatten().cast(_ENTRY), second.flatten().cast(_ENTRY)])
    items = items.take(pa.array(np.argsort(parents, kind="stable")))
    offsets = np.concatenate([[0], np.cumsum(la + lb)])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items)


def split_header(rows: pa.Array, name: str) -> tuple[pa.Array, pa.Array]:
    """(each record's last value of header ``name``, null where it has none; the header lists
    without ``name``)."""
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    n = len(rows)
    flat = rows.flatten()
    lengths = _lengths(rows)
    parents = np.repeat(np.arange(n, dtype=np.int64), lengths)
    hit = pc.fill_null(pc.equal(flat.field("key"), pa.scalar(name, flat.field("key").type)), False) \
        .to_numpy(zero_copy_only=False) if len(flat) else np.zeros(0, bool)
    value_at = np.full(n, -1, np.int64)
    owners, entries = parents[hit][::-1], np.flatnonzero(hit)[::-1]
    owners, first = np.unique(owners, return_index=True)  # the last occurrence per record
    value_at[owners] = entries[first]
    taken = pa.array(np.where(value_at >= 0, value_at, 0), pa.int64())
    values = pc.if_else(pa.array(value_at >= 0), flat.field("value").cast(pa.binary()).take(taken)
                        if len(flat) else pa.nulls(n, pa.binary()), pa.nulls(n, pa.binary()))
    keep = ~hit
    kept = np.bincount(parents[keep], minlength=n) if n else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(kept)])
    rest = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), flat.filter(pa.array(keep)).cast(_ENTRY))
    return values, rest
