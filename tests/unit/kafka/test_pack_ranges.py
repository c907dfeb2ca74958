"""pack_ranges: small offset ranges share a read task; every range is kept once, in order."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connector.kafka import OffsetRange, pack_ranges
from connector.options._parse import parse_options


def _ranges(sizes):
    return [OffsetRange("t", p, 100, 100 + n) for p, n in enumerate(sizes)]


@given(st.lists(st.integers(1, 500), max_size=40), st.integers(0, 1000))
def test_every_range_once_in_order_and_groups_within_target(sizes, target):
    ranges = _ranges(sizes)
    groups = pack_ranges(ranges, target)
    assert [r for g in groups for r in g] == ranges  # nothing lost, duplicated or reordered
    assert pack_ranges(ranges, target) == groups     # deterministic
    for g in groups:
        assert len(g) == 1 or sum(r.size for r in g) <= target


def test_large_ranges_stay_alone_small_ones_share():
    groups = pack_ranges(_ranges([2500] * 8 + [60_000, 10]), 50_000)
    assert [len(g) for g in groups] == [8, 1, 1]


@pytest.mark.parametrize("target", [None, 0])
def test_off_gives_one_range_per_task(target):
    assert [len(g) for g in pack_ranges(_ranges([1, 2, 3]), target)] == [1, 1, 1]


def test_option_default_and_zero():
    base = {"asyncapi": "x.yaml", "channel": "c"}
    assert parse_options(base).min_records_per_partition == 50_000
    assert parse_options({**base, "minRecordsPerPartition": "0"}).min_records_per_partition == 0
