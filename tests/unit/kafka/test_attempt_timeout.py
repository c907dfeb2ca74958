"""A driver look-up shares fetchOffset.timeoutMs among its attempts.

Seen in CI: during a rolling restart one ListOffsets request went to a broker that had just gone
down and waited the whole 20 s budget, so the retry that would have asked the new leader never
ran ("out of time after 1 attempt in 20.0s")."""
from __future__ import annotations

import time

import pytest

from connector.kafka import KafkaOffsetReader


def _reader(num_retries: int, interval_s: float) -> KafkaOffsetReader:
    r = object.__new__(KafkaOffsetReader)  # no consumer needed: only the retry arithmetic
    r.num_retries, r.retry_interval_s = num_retries, interval_s
    return r


@pytest.mark.parametrize("retries, interval", [(1, 1.0), (3, 1.0), (50, 0.1)])
def test_an_attempt_leaves_room_for_a_retry(retries, interval):
    r = _reader(retries, interval)
    deadline = time.monotonic() + 20.0
    first = r._attempt_timeout(deadline, tries=1)
    assert 1.0 <= first <= 20.0 - interval - 1.0
    assert r._attempt_timeout(deadline, tries=retries + 1) == pytest.approx(20.0, abs=0.05)  # the last: all


def test_without_room_for_a_retry_the_attempt_takes_all_that_is_left():
    # fetchOffset.timeoutMs=1500 with a 1 s wait: a retry cannot fit, so the one attempt gets 1.5 s
    r = _reader(3, 1.0)
    assert r._attempt_timeout(time.monotonic() + 1.5, tries=1) == pytest.approx(1.5, abs=0.05)
    assert r._attempt_timeout(time.monotonic() + 0.2, tries=1) <= 0.2
