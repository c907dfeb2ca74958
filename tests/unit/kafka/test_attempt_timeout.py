"""A driver look-up shares fetchOffset.timeoutMs among its attempts.

Seen in CI: during a rolling restart one ListOffsets request went to a broker that had just gone
down and waited the whole 20 s budget, so the retry that would have asked the new leader never
ran ("out of time after 1 attempt in 20.0s")."""
from __future__ import annotations

import time

import pytest

from connector.kafka import KafkaOffsetReader


def _reader(num_retries: int) -> KafkaOffsetReader:
    r = object.__new__(KafkaOffsetReader)  # no consumer needed: only the retry arithmetic
    r.num_retries = num_retries
    return r


@pytest.mark.parametrize("retries", [1, 3, 50])
def test_no_attempt_but_the_last_takes_the_whole_budget(retries):
    r = _reader(retries)
    deadline = time.monotonic() + 20.0
    first = r._attempt_timeout(deadline, tries=1)
    assert 1.0 <= first <= 20.0 / 2 + 0.01
    assert r._attempt_timeout(deadline, tries=retries + 1) == pytest.approx(20.0, abs=0.05)


def test_an_attempt_gets_at_least_a_second_unless_less_is_left():
    r = _reader(50)
    assert r._attempt_timeout(time.monotonic() + 20.0, tries=1) >= 1.0
    assert r._attempt_timeout(time.monotonic() + 0.2, tries=1) <= 0.2
