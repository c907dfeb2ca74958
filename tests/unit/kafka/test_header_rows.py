"""Per-record header lists built and combined column-wise (the sink's type and schema-id headers next
to the DataFrame's ``headers`` column) equal the obvious per-record Python."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.kafka import concat_header_rows, header_rows, split_header
from connector.kafka._produce import HEADER_TYPE

_pair = st.tuples(st.sampled_from(["a", "b", "__TypeId__"]), st.binary(max_size=3))
_rows = st.lists(st.one_of(st.none(), st.lists(_pair, max_size=3)), max_size=12)


def _arrow(rows) -> pa.Array:
    return pa.array([None if r is None else [{"key": k, "value": v} for k, v in r] for r in rows], HEADER_TYPE)


def _py(arr: pa.Array) -> list:
    return [[(e["key"], e["value"]) for e in r] if r else [] for r in arr.to_pylist()]


@settings(max_examples=100, deadline=None)
@given(_rows, _rows, st.integers(0, 2))
def test_concat_equals_per_record_concatenation(first, second, cut):
    n = min(len(first), len(second))
    a, b = _arrow(first[:n]), _arrow(second[:n])
    if n > cut:  # sliced inputs (non-zero offsets) too
        a, b, first, second, n = a.slice(cut), b.slice(cut), first[cut:], second[cut:], n - cut
    got = concat_header_rows(a, b)
    assert _py(got) == [(x or []) + (y or []) for x, y in zip(first[:n], second[:n])]
    assert concat_header_rows(None, b) is b and concat_header_rows(a, None) is a


@settings(max_examples=100, deadline=None)
@given(_rows)
def test_split_takes_the_last_value_and_leaves_the_rest(rows):
    values, rest = split_header(_arrow(rows), "__TypeId__")
    want = [[v for k, v in (r or []) if k == "__TypeId__"] for r in rows]
    assert values.to_pylist() == [w[-1] if w else None for w in want]
    assert _py(rest) == [[(k, v) for k, v in (r or []) if k != "__TypeId__"] for r in rows]


def test_header_rows_gives_each_group_its_pairs():
    got = header_rows(5, [(np.array([0, 3]), (("t", b"A"), ("id", b"\x01"))), (np.array([4]), (("t", b"B"),))])
    assert _py(got) == [[("t", b"A"), ("id", b"\x01")], [], [], [("t", b"A"), ("id", b"\x01")], [("t", b"B")]]
    assert _py(header_rows(2, [])) == [[], []]
