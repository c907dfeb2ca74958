"""Streaming offset logic, tested directly: partitions added (no peer here supports
CreatePartitions), partitions deleted, offsets going backwards, Spark's rate limit."""
import json

import pytest

from connector.spark import _offsets as off

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, condition, message):
        self.calls.append((condition, message))


def test_json_round_trip_is_sorted_and_stable():
    offsets = {("b", 0): 5, ("a", 10): 1, ("a", 2): 3}
    js = off.to_json(offsets)
    assert json.dumps(js) == '{"a": {"2": 3, "10": 1}, "b": {"0": 5}}'
    assert off.from_json(js) == offsets
    assert json.dumps(off.to_json(off.from_json(js))) == json.dumps(js)


def test_rate_limit_prorates_like_spark():
    start = {A0: 0, A1: 0}
    until = {A0: 1000, A1: 100}
    out = off.rate_limit(start, until, 110)
    # 110 * 1000/1100 = 100, 110 * 100/1100 = 10
    assert out == {A0: 100, A1: 10}


def test_rate_limit_never_starves_small_partitions():
    start = {A0: 0, A1: 0}
    until = {A0: 100_000, A1: 1}
    out = off.rate_limit(start, until, 10)
    assert out[A1] == 1  # share 0.0001 rounds up to one record
    assert out[A0] == 9  # 9.999 rounds down


def test_rate_limit_with_no_backlog_returns_until():
    assert off.rate_limit({A0: 5}, {A0: 5}, 10) == {A0: 5}


def test_rate_limit_keeps_partitions_unknown_to_start_at_until():
    assert off.rate_limit({A0: 0}, {A0: 100, B0: 7}, 10) == {A0: 10, B0: 7}


def test_symbolic_latest_resolves_to_latest_and_earliest_to_earliest():
    rec = Recorder()
    out = off.resolve_start({A0: off.LATEST, A1: off.EARLIEST}, latest={A0: 50, A1: 60},
                            earliest={A0: 10, A1: 20}, report=rec)
    assert out == {A0: 50, A1: 20}
    assert rec.calls == []


def test_added_partition_starts_at_earliest_and_is_only_reported_when_not_zero():
    rec = Recorder()
    out = off.resolve_start({A0: 5}, latest={A0: 9, A1: 4, B0: 3}, earliest={A0: 0, A1: 0, B0: 2}, report=rec)
    assert out == {A0: 5, A1: 0, B0: 2}
    assert [c for c, _ in rec.calls] == ["KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"]
    assert "b-0" in rec.calls[0][1]


def test_deleted_partition_is_reported():
    rec = Recorder()
    out = off.resolve_start({A0: 5, A1: 7}, latest={A0: 9}, earliest={A0: 0}, report=rec)
    assert out == {A0: 5}
    assert rec.calls[0][0] == "KAFKA_DATA_LOSS.PARTITIONS_DELETED" and "a-1" in rec.calls[0][1]


def test_offsets_going_backwards_are_reported_and_restart_from_earliest():
    rec = Recorder()
    out = off.resolve_start({A0: 500}, latest={A0: 20}, earliest={A0: 0}, report=rec)
    assert out == {A0: 0}
    assert rec.calls[0][0] == "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED"


def test_report_can_raise_to_fail_the_query():
    def strict(condition, message):
        raise RuntimeError(condition)

    with pytest.raises(RuntimeError, match="KAFKA_DATA_LOSS.PARTITIONS_DELETED"):
        off.resolve_start({A0: 1}, latest={}, earliest={}, report=strict)


def test_hold_back_waits_for_min_rows_until_the_delay_passes():
    start = {A0: 10, A1: 0}
    begin = dict(start)
    kw = dict(min_rows=30, max_delay_ms=1000)
    assert off.hold_back(start, begin, {A0: 25, A1: 10}, waited_ms=0, **kw)          # 25 new < 30
    assert not off.hold_back(start, begin, {A0: 30, A1: 10}, waited_ms=0, **kw)      # 30 new
    assert not off.hold_back(start, begin, {A0: 11, A1: 0}, waited_ms=1000, **kw)    # delay passed
    # a partition that appeared since `start` counts from where it begins
    assert not off.hold_back(start, {**begin, B0: 0}, {A0: 10, A1: 0, B0: 30}, waited_ms=0, **kw)


def test_hold_back_never_delays_a_symbolic_latest_start():
    # `latest` re-resolves to "now" on every call: waiting would skip what arrives meanwhile.
    assert not off.hold_back({A0: off.LATEST}, {A0: 50}, {A0: 50}, min_rows=30, waited_ms=0, max_delay_ms=10**9)
    assert off.hold_back({A0: off.EARLIEST}, {A0: 40}, {A0: 50}, min_rows=30, waited_ms=0, max_delay_ms=10**9)
