"""connector.kafka.Pushdown: what pushed predicates select, plan and drop (no broker, no JVM)."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.kafka import OffsetRange, Predicate, Pushdown, plan_ranges

P = Predicate


def test_topic_and_parameter_predicates_select_topics():
    pd = Pushdown((P("warehouse", "in", ("berlin", "bonn")), P("topic", "startswith", "shop.")))
    assert pd.selects_topic("shop.berlin", {"warehouse": "berlin"})
    assert not pd.selects_topic("shop.paris", {"warehouse": "paris"})
    assert not pd.selects_topic("old.berlin", {"warehouse": "berlin"})
    # a missing parameter value is NULL: unknown, so the topic is not read, negated or not
    assert not Pushdown((P("warehouse", "=", "x", negated=True),)).selects_topic("t", {})
    assert Pushdown((P("warehouse", "<=>", "x", negated=True),)).selects_topic("t", {})
    assert Pushdown((P("warehouse", "isnull"),)).selects_topic("t", {})


def test_partition_predicates():
    pd = Pushdown((P("partition", ">=", 1), P("partition", "in", (1, 2, 5)), P("partition", "=", 2, negated=True)))
    assert [p for p in range(8) if pd.selects_partition(p)] == [1, 5]


@pytest.mark.parametrize("preds, expected", [
    ([], None),
    ([P("offset", ">=", 3), P("offset", "<", 6)], [(3, 6)]),
    ([P("offset", ">", 3), P("offset", "<=", 6)], [(4, 7)]),
    ([P("offset", "=", 7)], [(7, 8)]),
    ([P("offset", "in", (1, 8, 50_000))], [(1, 9), (50_000, 50_001)]),  # close values: one range
    ([P("offset", ">", 10), P("offset", "<", 5)], []),
    ([P("offset", "<", 0)], []),
    ([P("offset", "=", 3, negated=True)], [(0, 2 ** 63 - 1)]),  # NOT: every offset may pass; rows decide
    ([P("offset", "isnull")], []),
])
def test_offset_intervals(preds, expected):
    assert Pushdown(tuple(preds)).offset_intervals() == expected


def test_timestamp_start_rounds_microseconds_up_to_the_next_millisecond():
    assert Pushdown((P("timestamp", ">=", 5_000_000),)).timestamp_start_ms() == 5_000
    assert Pushdown((P("timestamp", ">", 5_000_000),)).timestamp_start_ms() == 5_001
    assert Pushdown((P("timestamp", ">=", 5_000_001),)).timestamp_start_ms() == 5_001
    assert Pushdown((P("timestamp", "=", 7_000_000), P("timestamp", ">", 1))).timestamp_start_ms() == 7_000
    assert Pushdown((P("timestamp", "<", 9_000_000),)).timestamp_start_ms() is None  # upper bounds never cut
    assert Pushdown((P("timestamp", ">=", 5_000_000, negated=True),)).timestamp_start_ms() is None


def _batch(offsets, times_us):
    return pa.RecordBatch.from_arrays(
        [pa.array(offsets, pa.int64()), pa.array(times_us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))],
        names=["offset", "timestamp"])


def test_row_mask_drops_nulls_like_sql():
    batch = _batch([1, 2, 3, 4], [1_000, None, 3_000, 4_000])
    pd = Pushdown((P("timestamp", ">=", 2_000), P("offset", "<", 4)))
    assert batch.filter(pd.row_mask(batch)).column("offset").to_pylist() == [3]
    neg = Pushdown((P("timestamp", "=", 3_000, negated=True),))
    assert batch.filter(neg.row_mask(batch)).column("offset").to_pylist() == [1, 4]
    assert batch.filter(Pushdown((P("timestamp", "isnull"),)).row_mask(batch)).column("offset").to_pylist() == [2]
    assert Pushdown((P("partition", "=", 1),)).row_mask(batch) is None  # planning decides partitions


_ops = st.sampled_from(["=", "<=>", "<", "<=", ">", ">=", "in", "isnull", "isnotnull"])


@st.composite
def _predicates(draw, column, top):
    op = draw(_ops)
    small = st.integers(0, top)
    value = tuple(draw(st.lists(small, min_size=1, max_size=4))) if op == "in" else \
        None if op in ("isnull", "isnotnull") else draw(small)
    return P(column, op, value, draw(st.booleans()))


@settings(max_examples=300, deadline=None)
@given(st.lists(_predicates("offset", 40), max_size=4), st.lists(_predicates("timestamp", 40_000), max_size=3),
       st.lists(st.integers(0, 40), min_size=1, max_size=30), st.data())
def test_mask_planning_and_scalar_reference_agree(offset_preds, time_preds, offsets, data):
    # Kafka times are whole milliseconds (µs = ms * 1000); the filter's literal may be any µs.
    ms = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 40)), min_size=len(offsets), max_size=len(offsets)))
    times = [None if m is None else m * 1000 for m in ms]
    pd = Pushdown(tuple(offset_preds + time_preds))
    batch = _batch(offsets, times)
    mask = pd.row_mask(batch)
    got = batch.filter(mask).column("offset").to_pylist() if mask is not None else offsets
    # the scalar reference: SQL's three-valued AND over every predicate
    kept = [i for i, (o, t) in enumerate(zip(offsets, times))
            if all(p.test(o if p.column == "offset" else t) is True for p in pd.predicates)]
    assert got == [offsets[i] for i in kept]
    # planning is a superset: every kept offset lies in an interval, every kept time is >= the start
    intervals = pd.offset_intervals()
    if intervals is not None:
        assert all(any(a <= offsets[i] < b for a, b in intervals) for i in kept)
    start = pd.timestamp_start_ms()
    if start is not None:
        assert all(ms[i] is not None and ms[i] >= start for i in kept)


def test_plan_ranges_cuts_partitions_to_offset_intervals():
    start, end = {("t", 0): 0, ("t", 1): 5}, {("t", 0): 100, ("t", 1): 8}
    assert plan_ranges(start, end, offsets=[(3, 6), (50, 60)]) == [
        OffsetRange("t", 0, 3, 6), OffsetRange("t", 0, 50, 60), OffsetRange("t", 1, 5, 6)]
    assert plan_ranges(start, end, offsets=[]) == []
    assert plan_ranges(start, end, offsets=[(50, 60)], max_records_per_partition=4) == [
        OffsetRange("t", 0, 50, 53), OffsetRange("t", 0, 53, 56), OffsetRange("t", 0, 56, 60)]
