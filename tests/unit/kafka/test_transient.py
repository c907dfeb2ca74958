"""The one classification of librdkafka errors: transient (ridden out), fatal (fails at once).

By error code and librdkafka's flags, never by message text: the same code with any text is
classified the same way.
"""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from connector.kafka._transient import FATAL_CODES, GONE_CODES, TRANSIENT_CODES, is_fatal, is_transient

TRANSIENT = [KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT,
             KafkaError.NETWORK_EXCEPTION, KafkaError.NOT_COORDINATOR, KafkaError.KAFKA_STORAGE_ERROR,
             KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.FENCED_LEADER_EPOCH, KafkaError._TRANSPORT,
             KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT]
FATAL = [KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
         KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION, KafkaError._SSL,
         KafkaError.INVALID_MSG, KafkaError._BAD_MSG, KafkaError._BAD_COMPRESSION, KafkaError.INVALID_RECORD]


@pytest.mark.parametrize("code", TRANSIENT)
def test_transient_codes_are_ridden_out_whatever_the_text(code):
    for text in (None, "Fetch from broker 2 failed at offset 66: Broker: Request timed out", "fatal"):
        err = KafkaError(code, text) if text else KafkaError(code)
        assert is_transient(err) and not is_fatal(err)


@pytest.mark.parametrize("code", FATAL)
def test_fatal_codes_fail_at_once_whatever_the_text(code):
    for text in (None, "Request timed out (retriable)"):
        err = KafkaError(code, text) if text else KafkaError(code)
        assert is_fatal(err) and not is_transient(err)


def test_flags_win_over_unknown_codes():
    assert is_transient(KafkaError(KafkaError.UNKNOWN, "x", retriable=True))
    assert not is_transient(KafkaError(KafkaError.UNKNOWN, "x"))
    assert is_fatal(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "x", fatal=True))
    assert not is_transient(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "x", fatal=True))


def test_the_sets_do_not_overlap():
    assert not (TRANSIENT_CODES & FATAL_CODES) and not (GONE_CODES & (TRANSIENT_CODES | FATAL_CODES))
    assert KafkaError.OFFSET_OUT_OF_RANGE not in TRANSIENT_CODES | FATAL_CODES  # the data-loss policy decides
