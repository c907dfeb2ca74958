"""What every format's round trip shares: value strategies, the batch of rows a test writes,
and deep comparison.

A Hypothesis example is a *batch* of rows (``batches``): the encoders and decoders under test
are column-wise, so one call per example covers many values at the cost of one, and a failing
batch shrinks to its one failing row.
"""
from __future__ import annotations

import math
import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

#: examples per schema and direction (each a batch of rows); see ``batches``.
EXAMPLES = 10
#: rows per batch: with :data:`EXAMPLES` a few hundred values per schema.
MAX_ROWS = 28
MIN_ROWS = 16

# ROUNDTRIP_EXAMPLES / ROUNDTRIP_SHRINK=0: more examples, or a quick first failure while developing
PROPERTY = settings(max_examples=int(os.environ.get("ROUNDTRIP_EXAMPLES", EXAMPLES)), deadline=None,
                    derandomize=True, database=None, suppress_health_check=list(HealthCheck),
                    report_multiple_bugs=False,
                    phases=[Phase.explicit, Phase.generate] + ([] if os.environ.get("ROUNDTRIP_SHRINK") == "0"
                                                              else [Phase.shrink]))

_LARGE = 130  # items of a "large" collection: past 127, block counts take two varint bytes


def texts(max_size: int = 24) -> st.SearchStrategy:
    """Unicode text (no surrogates: not valid UTF-8), now and then long."""
    return st.one_of(st.text(max_size=max_size), st.sampled_from(["", "x" * 3000, "😀 é 日本語 \"\\\n\t\x00"]))


def keys() -> st.SearchStrategy:
    """Map keys: unicode, empty, JSON-special characters."""
    return st.one_of(st.text(max_size=12), st.sampled_from(["", "key", "ключ", "🔑", "a\"b", "a\\b", "\x01"]))


def floats64() -> st.SearchStrategy:
    return st.floats()


def floats32() -> st.SearchStrategy:
    return st.floats(width=32)


def collection(items: st.SearchStrategy, large: bool = False, unique_by=None, level: int = 0) -> st.SearchStrategy:
    """Arrays and maps: empty or a few items (fewer inside ``level`` other collections), and with
    ``large`` now and then over 127 items (callers allow it for cheap items outside other
    collections: Hypothesis' buffer is small)."""
    small = st.lists(items, max_size=(4, 2)[min(level, 1)] if level < 2 else 1, unique_by=unique_by)
    if not large:
        return small
    return st.one_of(small, st.lists(items, min_size=_LARGE, max_size=_LARGE + 5, unique_by=unique_by))


def batches(row: st.SearchStrategy, large_row: st.SearchStrategy | None = None) -> st.SearchStrategy:
    """A batch of rows; at most one of them drawn from ``large_row`` (large collections: more
    per batch would overrun Hypothesis' buffer and waste the example)."""
    rows = st.lists(row, min_size=MIN_ROWS, max_size=MAX_ROWS)
    if large_row is None:
        return rows
    return st.tuples(rows, st.lists(large_row, max_size=1), st.integers(0, MAX_ROWS)).map(
        lambda t: t[0][:t[2]] + t[1] + t[0][t[2]:])


def _named(v) -> bool:
    return isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)


def same(a, b) -> bool:
    """Deep equality where NaN equals NaN, -0.0 differs from 0.0, bools are not ints, and a
    ``(type name, value)`` pair may also be given bare: fastavro's ``return_record_name`` names
    the records of a union, and any named type a union refers to by name."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if _named(a) and not isinstance(b, tuple):
        return same(a[1], b)
    if _named(b) and not isinstance(a, tuple):
        return same(a, b[1])
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _where(a, b, path="") -> str:
    """The path of the first difference between ``a`` and ``b`` (which differ)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(map(repr, a.keys() ^ b.keys()))[:5]} in one only"
        k = next(k for k in a if not same(a[k], b[k]))
        return _where(a[k], b[k], f"{path}.{k}")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        i = next(i for i, (x, y) in enumerate(zip(a, b)) if not same(x, y))
        return _where(a[i], b[i], f"{path}[{i}]")
    return f"{path}: got {a!r:.300} want {b!r:.300}"


def first_difference(got: list, want: list, what: str) -> str | None:
    """None when ``got`` equals ``want`` row by row, else a message naming the first bad row
    and where in it the values differ."""
    if len(got) != len(want):
        return f"{what}: {len(got)} rows back for {len(want)} written"
    for i, (g, w) in enumerate(zip(got, want)):
        if not same(g, w):
            return f"{what}: row {i} differs at {_where(g, w, 'value')}"
    return None
