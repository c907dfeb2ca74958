"""plan_ranges against Spark's KafkaOffsetRangeCalculator, and the data-loss checks."""
from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connector.errors import DataLossError, KafkaReadError
from connector.kafka import OffsetRange, plan_ranges, report_data_loss, validate_ranges
from connector.kafka._ranges import (
    ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO, PARTITION_OFFSET_CHANGED, PARTITIONS_DELETED,
    START_OFFSET_RESET
)
from connector.kafka._reader import apply_timestamp_results

T1, T2, T3 = ("t1", 1), ("t2", 1), ("t3", 1)


def R(tp, a, b):
    return OffsetRange(tp[0], tp[1], a, b)


def plan(ranges, **kw):
    start = {(r.topic, r.partition): r.start for r in ranges}
    end = {(r.topic, r.partition): r.end for r in ranges}
    return plan_ranges(start, end, **kw)


# Cases from Spark's KafkaOffsetRangeCalculatorSuite, expectations computed by its algorithm.
CASES = [
    # no minPartitions: one range per partition, empty ranges dropped
    ([R(T1, 1, 2)], {}, [R(T1, 1, 2)]),
    ([R(T1, 1, 1)], {}, []),
    ([R(T1, 1, 2), R(T2, 1, 1)], {}, [R(T1, 1, 2)]),
    ([R(T1, 5, 2)], {}, []),
    # minPartitions <= partitions: no split
    ([R(T1, 1, 2), R(T2, 1, 2), R(T3, 1, 2)], {"min_partitions": 3},
     [R(T1, 1, 2), R(T2, 1, 2), R(T3, 1, 2)]),
    # one partition split into minPartitions, the last part takes the remainder
    ([R(T1, 1, 5)], {"min_partitions": 4}, [R(T1, 1, 2), R(T1, 2, 3), R(T1, 3, 4), R(T1, 4, 5)]),
    ([R(T1, 1, 6)], {"min_partitions": 4}, [R(T1, 1, 2), R(T1, 2, 3), R(T1, 3, 4), R(T1, 4, 6)]),
    ([R(T1, 1, 11)], {"min_partitions": 3}, [R(T1, 1, 4), R(T1, 4, 7), R(T1, 7, 11)]),
    # skewed: the small range (4/24*3 = 0.5 rounds half up to 1) stays whole and is left out
    ([R(T1, 1, 5), R(T2, 1, 21)], {"min_partitions": 3},
     [R(T1, 1, 5), R(T2, 1, 11), R(T2, 11, 21)]),
    # empty ranges are ignored before splitting
    ([R(T1, 1, 5), R(T2, 1, 1), R(T3, 3, 3)], {"min_partitions": 3},
     [R(T1, 1, 2), R(T1, 2, 3), R(T1, 3, 5)]),
    # SPARK-28489: never drop offsets; minPartitions is a hint (each range rounds to 1 part)
    ([R(T1, 0, 10000), R(T2, 0, 10000), R(T3, 0, 10000)], {"min_partitions": 4},
     [R(T1, 0, 10000), R(T2, 0, 10000), R(T3, 0, 10000)]),
    # SPARK-36576: one large and many small partitions
    ([R(("t", i), 0, 10) for i in range(4)] + [R(("u", 0), 0, 1000)], {"min_partitions": 8},
     [R(("t", i), 0, 10) for i in range(4)]
     + [R(("u", 0), 0, 250), R(("u", 0), 250, 500), R(("u", 0), 500, 750),
        R(("u", 0), 750, 1000)]),
    # maxRecordsPerPartition: ceil(size / max) equal parts
    ([R(T1, 0, 10)], {"max_records_per_partition": 3},
     [R(T1, 0, 2), R(T1, 2, 4), R(T1, 4, 7), R(T1, 7, 10)]),
    ([R(T1, 0, 10), R(T2, 0, 3)], {"max_records_per_partition": 5},
     [R(T1, 0, 5), R(T1, 5, 10), R(T2, 0, 3)]),
    ([R(T1, 0, 10)], {"max_records_per_partition": 10}, [R(T1, 0, 10)]),
    # both: max first, then minPartitions over the result
    ([R(T1, 0, 10), R(T2, 0, 2)], {"max_records_per_partition": 5, "min_partitions": 5},
     [R(T1, 0, 2), R(T1, 2, 5), R(T1, 5, 7), R(T1, 7, 10), R(T2, 0, 2)]),
]


@pytest.mark.parametrize("ranges,kw,expected", CASES)
def test_plan_ranges_like_spark(ranges, kw, expected):
    assert plan(ranges, **kw) == expected


def test_plan_ranges_rejects_non_positive_settings():
    with pytest.raises(ValueError):
        plan([R(T1, 0, 1)], min_partitions=0)
    with pytest.raises(ValueError):
        plan([R(T1, 0, 1)], max_records_per_partition=0)


sizes = st.dictionaries(st.tuples(st.sampled_from("abc"), st.integers(0, 5)),
                        st.tuples(st.integers(0, 1000), st.integers(0, 5000)), max_size=8)


@given(sizes, st.none() | st.integers(1, 40), st.none() | st.integers(1, 3000))
def test_plan_ranges_cover_every_offset_once(data, min_parts, max_records):
    start = {tp: a for tp, (a, n) in data.items()}
    end = {tp: a + n for tp, (a, n) in data.items()}
    out = plan_ranges(start, end, min_partitions=min_parts, max_records_per_partition=max_records)
    for tp in data:
        parts = [r for r in out if r.topic_partition == tp]
        covered = [o for r in parts for o in range(r.start, r.end)]
        assert covered == list(range(start[tp], end[tp]))
    assert all(r.size > 0 for r in out)
    if max_records is not None:
        assert all(r.size <= max_records for r in out)


def test_report_data_loss_raises_or_warns(caplog):
    with pytest.raises(DataLossError) as info:
        report_data_loss(PARTITIONS_DELETED, "Partitions t-0 have been deleted.", True)
    assert info.value.condition == PARTITIONS_DELETED
    assert "failOnDataLoss" in str(info.value)
    with caplog.at_level(logging.WARNING):
        report_data_loss(PARTITIONS_DELETED, "Partitions t-0 have been deleted.", False)
    assert PARTITIONS_DELETED in caplog.text and "t-0" in caplog.text


def test_validate_ranges_detects_each_kind_of_loss(caplog):
    start = {("t", 0): 5, ("t", 1): 10, ("t", 2): 0}
    end = {("t", 0): 20, ("t", 1): 3, ("t", 3): 7}
    earliest = {("t", 0): 8, ("t", 1): 0, ("t", 3): 2}
    conditions = []
    for cond in (PARTITIONS_DELETED, ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO,
                 PARTITION_OFFSET_CHANGED, START_OFFSET_RESET):
        conditions.append(cond)
    with pytest.raises(DataLossError) as info:
        validate_ranges(start, end, earliest, True)
    assert info.value.condition == PARTITIONS_DELETED
    with caplog.at_level(logging.WARNING):
        s, e = validate_ranges(start, end, earliest, False)
    for cond in conditions:
        assert cond in caplog.text
    # t-0 starts at the earliest available, t-1 (went backwards) is dropped, t-3 is new and
    # starts at its earliest offset, t-2 (deleted) is gone.
    assert s == {("t", 0): 8, ("t", 3): 2}
    assert e == {("t", 0): 20, ("t", 3): 7}


def test_validate_ranges_without_loss_is_identity():
    start = {("t", 0): 5, ("t", 1): 0}
    end = {("t", 0): 9, ("t", 1): 0}
    assert validate_ranges(start, end, {("t", 0): 5, ("t", 1): 0}, True) == (start, end)
    # new partition starting at 0 is not data loss
    assert validate_ranges({}, {("t", 0): 4}, {("t", 0): 0}, True) == ({("t", 0): 0},
                                                                         {("t", 0): 4})


def test_timestamp_results_follow_spark_strategy():
    req = {("t", 0): 100, ("t", 1): 100}
    found = {("t", 0): 7, ("t", 1): -1}
    latest = {("t", 0): 9, ("t", 1): 4}
    with pytest.raises(KafkaReadError, match="t-1"):
        apply_timestamp_results(req, found, is_ending=False, strategy="error", latest=latest)
    assert apply_timestamp_results(req, found, is_ending=False, strategy="latest",
                                   latest=latest) == {("t", 0): 7, ("t", 1): 4}
    # ending timestamps without a match always resolve to latest
    assert apply_timestamp_results(req, found, is_ending=True, strategy="error",
                                   latest=latest) == {("t", 0): 7, ("t", 1): 4}
