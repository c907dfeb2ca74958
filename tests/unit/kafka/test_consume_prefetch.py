"""How far a range's consumer fetches ahead (librdkafka's ``queued.min.messages``)."""
from __future__ import annotations

from connector.kafka._consume import _bounded


def test_a_consumer_fetches_ahead_at_most_its_range():
    base = {"bootstrap.servers": "b:9092"}
    assert _bounded(base, {}, 5)["queued.min.messages"] == "5"
    assert _bounded(base, {}, 10**9)["queued.min.messages"] == "100000"
    assert _bounded(base, {}, 5)["fetch.queue.backoff.ms"] == "20"
    assert "queued.min.messages" not in base  # not changed in place


def test_the_users_setting_wins():
    user = {"queued.min.messages": "7"}
    conf = {**user, "bootstrap.servers": "b:9092"}
    assert _bounded(conf, user, 5)["queued.min.messages"] == "7"
    user = {"fetch.queue.backoff.ms": "500"}
    conf = {**user, "bootstrap.servers": "b:9092"}
    assert _bounded(conf, user, 5)["fetch.queue.backoff.ms"] == "500"
