"""Which librdkafka errors a read or a look-up rides out, and which end it.

Clusters move partition leaders, restart brokers one at a time and time out a request now and
then. librdkafka recovers from all of that by itself (it refreshes metadata, reconnects and
re-sends), but it still reports many of these errors to the application, and it flags few of
them ``retriable``: a Fetch answered ``REQUEST_TIMED_OUT`` arrives as a plain error event, and
``offsets_for_times`` raises ``NOT_LEADER_OR_FOLLOWER`` after a leader moved. The sets below
classify by error code (never by message text), the way Kafka's Java client marks its
``RetriableException`` subclasses.

=======================  ==========================================================
class                    what the caller does
=======================  ==========================================================
transient                keep going: retry the look-up after a metadata refresh
                         (driver, bounded by ``fetchOffset.*``) or keep consuming
                         while librdkafka recovers (executor, bounded by
                         ``kafkaConsumer.pollTimeoutMs`` without progress)
fatal                    fail now: authorization, authentication, TLS, corrupt or
                         unreadable records, librdkafka's fatal errors
anything else            partition-level: fail now (an unknown error must not be
                         mistaken for a recoverable one and skip records);
                         client-level (no topic): transient, as before
=======================  ==========================================================

Offset-out-of-range and unknown topic/partition are neither: the data-loss policy decides
(``failOnDataLoss``), after a metadata refresh for the latter.
"""
from __future__ import annotations

from confluent_kafka import KafkaError

__all__ = ["TRANSIENT_CODES", "FATAL_CODES", "GONE_CODES", "is_transient", "is_fatal", "error_text"]

# librdkafka >= 2.10 (confluent-kafka may predate the name).
_DESTROY_BROKER = getattr(KafkaError, "_DESTROY_BROKER", -137)

#: Broker answers and client states that pass once leadership, connections or replicas settle.
TRANSIENT_CODES = frozenset({
    KafkaError.NOT_LEADER_FOR_PARTITION,      # NOT_LEADER_OR_FOLLOWER: stale leader
    KafkaError.LEADER_NOT_AVAILABLE,          # election in progress
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
    KafkaError.BROKER_NOT_AVAILABLE,
    KafkaError.REPLICA_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.KAFKA_STORAGE_ERROR,           # the replica's disk is offline: a new leader comes
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.OFFSET_NOT_AVAILABLE,          # a new leader not yet caught up
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    KafkaError.FETCH_SESSION_ID_NOT_FOUND,
    KafkaError.INVALID_FETCH_SESSION_EPOCH,
    KafkaError.THROTTLING_QUOTA_EXCEEDED,
    KafkaError.PREFERRED_LEADER_NOT_AVAILABLE,
    KafkaError._TRANSPORT,                    # connection closed (broker restarting)
    KafkaError._FAIL,
    _DESTROY_BROKER,                          # a broker left the metadata with requests in flight
    KafkaError._UNKNOWN_BROKER,
    KafkaError._ISR_INSUFF,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._RESOLVE,
    KafkaError._TIMED_OUT,
    KafkaError._TIMED_OUT_QUEUE,
    KafkaError._WAIT_COORD,
    KafkaError._RETRY,
    KafkaError._NODE_UPDATE,
    KafkaError._WAIT_CACHE,
})

#: Errors no retry can fix: the query fails at once with the broker's text.
FATAL_CODES = frozenset({
    KafkaError._FATAL,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError._AUTHENTICATION,
    KafkaError._SSL,
    KafkaError.INVALID_MSG,                   # CORRUPT_MESSAGE: CRC mismatch
    KafkaError.INVALID_RECORD,
    KafkaError._BAD_MSG,
    KafkaError._BAD_COMPRESSION,
    KafkaError.UNSUPPORTED_COMPRESSION_TYPE,
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError._UNSUPPORTED_FEATURE,
    KafkaError._INVALID_ARG,
})

#: The topic or partition is unknown to the cluster: gone, unless a fresh metadata answer
#: still lists it.
GONE_CODES = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                        KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_ID})


def is_fatal(err: KafkaError) -> bool:
    """True for errors no retry can fix (librdkafka's fatal flag or :data:`FATAL_CODES`)."""
    return bool(err.fatal()) or err.code() in FATAL_CODES


def is_transient(err: KafkaError) -> bool:
    """True for errors librdkafka recovers from (its ``retriable`` flag or :data:`TRANSIENT_CODES`).

    Examples
    --------
    >>> from confluent_kafka import KafkaError
    >>> is_transient(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
    True
    >>> is_transient(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    False
    """
    return not is_fatal(err) and (bool(err.retriable()) or err.code() in TRANSIENT_CODES)


def error_text(err: object) -> str:
    """librdkafka's text for a :class:`KafkaError` (or ``str`` of anything else)."""
    return err.str() if isinstance(err, KafkaError) else str(err)
