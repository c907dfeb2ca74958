"""Writer groups placed back in row order: runs one after another (concatenated) and
interleaved groups (taken) give the same column."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.formats.core import scatter


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=40), st.booleans())
def test_scatter_places_every_group_at_its_rows(owner, runs):
    n = len(owner)
    groups = sorted(owner) if runs else owner  # runs: each group's rows one after another
    typ = pa.struct([("g", pa.int64()), ("row", pa.int64())])
    parts = []
    for g in sorted(set(groups), reverse=True):  # the caller's group order is not row order
        rows = np.flatnonzero(np.array(groups) == g)
        if g == 3:
            continue  # a group that decoded nothing: its rows are null
        parts.append((rows, pa.array([{"g": g, "row": int(r)} for r in rows], typ)))
    got = scatter(n, parts, typ).to_pylist()
    assert got == [None if g == 3 else {"g": g, "row": r} for r, g in enumerate(groups)]
