"""What an executor's read does with each error event librdkafka hands it.

=========================================  ===============================================
event                                      outcome
=========================================  ===============================================
end of partition (``_PARTITION_EOF``)      the range ends in an offset gap, more records
                                           became visible, or records are lost (data-loss
                                           policy)
offset out of range / auto reset           data-loss policy (``failOnDataLoss``): records
                                           aged out or the partition shrank
unknown topic or partition                 a fresh metadata answer still lists it: transient;
                                           else data-loss policy (the partition is gone)
fatal (:func:`is_fatal`): authorization,   the task fails at once with librdkafka's text
TLS/SASL, corrupt record, ...
transient (:func:`is_transient`): a        keep consuming: librdkafka refreshes metadata,
leader moved, a broker restarting, a       reconnects and fetches again by itself
request timed out, ...
any other error of a partition             the task fails (an unknown error must not pass
                                           for recoverable and skip records)
any other client-level error (no topic)    transient
=========================================  ===============================================

Riding out is bounded: a read that receives no record for ``kafkaConsumer.pollTimeoutMs``
fails with :class:`~connector.errors.KafkaReadError`, naming the last transient error seen.
"""
from __future__ import annotations

import logging
import time

from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException

from connector.errors import KafkaReadError

from ._ranges import COULD_NOT_READ_OFFSET_RANGE, OffsetRange, report_data_loss
from ._transient import GONE_CODES, error_text, is_fatal, is_transient

if TYPE_CHECKING:
    from ._native import ErrorEvent, NativeConsumer

__all__ = ["Progress", "where", "watermarks", "check_gap", "on_error"]

_log = logging.getLogger(__name__)

_OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}
# Wait between two tries of a watermark look-up that hit a transient error.
_RETRY_S = 0.1


def where(rng: OffsetRange, offset: int) -> str:
    return f"topic {rng.topic}, partition {rng.partition}, offset {offset}"


class Progress:
    """When a read last moved forward, and the last transient error seen since then.

    Parameters
    ----------
    timeout_s : float
        ``kafkaConsumer.pollTimeoutMs``: longest time without a new record.
    """

    __slots__ = ("at", "error", "errors", "timeout_s")

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.at = time.monotonic()
        self.error: str | None = None
        self.errors = 0

    def advanced(self) -> None:
        """Records arrived (or the caller took its time with the last batch): restart the clock."""
        self.at = time.monotonic()
        self.error = None

    def transient(self, text: str) -> None:
        self.error = text
        self.errors += 1

    def check(self, rng: OffsetRange, pos: int) -> None:
        """Raise when no record arrived for ``timeout_s``."""
        waited = time.monotonic() - self.at
        if waited <= self.timeout_s:
            return
        last = (f"; the last Kafka error was: {self.error} ({self.errors} transient error(s) ridden out "
                "during this read)") if self.error else ""
        raise KafkaReadError(f"no records received for {waited:.1f}s (kafkaConsumer.pollTimeoutMs="
                             f"{round(self.timeout_s * 1000)}) while reading {where(rng, pos)} "
                             f"(range end {rng.end}){last}")


def watermarks(consumer: NativeConsumer, rng: OffsetRange, timeout: float) -> tuple[int, int]:
    """``(low, high)`` of the range's partition, retrying transient errors within ``timeout``."""
    deadline = time.monotonic() + timeout
    tries = 0
    while True:
        tries += 1
        try:
            return consumer.watermarks(rng.topic, rng.partition,
                                       max(deadline - time.monotonic(), 0.001))
        except KafkaException as e:
            err = e.args[0] if e.args else e
            if not (isinstance(err, KafkaError) and is_transient(err)) \
                    or time.monotonic() + _RETRY_S >= deadline:
                raise KafkaReadError(f"cannot list offsets of {where(rng, rng.start)} "
                                     f"({tries} attempt(s) within {timeout:g}s): {error_text(err)}") from e
        time.sleep(_RETRY_S)
        try:  # learn a moved leader before the next try
            consumer.partitions(rng.topic, max(deadline - time.monotonic(), 0.001))
        except KafkaException:
            pass


def check_gap(consumer, rng, expected, got, fail, timeout, logger) -> None:
    # A gap at the start is legitimate (compaction, transaction markers) unless the records
    # before the gap are gone from the log.
    low, _ = watermarks(consumer, rng, timeout)
    if expected < low:
        report_data_loss(COULD_NOT_READ_OFFSET_RANGE,
                         f"Cannot fetch offset {expected} of topic partition "
                         f"{rng.topic}-{rng.partition}: the earliest offset is now {low}; "
                         f"records [{expected}, {min(got, low)}) are lost.", fail, logger)


def _lost(rng: OffsetRange, frm: int, to: int, why: str) -> str:
    return (f"Could not read records in offset [{frm}, {to}) for topic partition "
            f"{rng.topic}-{rng.partition}: {why}.")


def _still_listed(consumer: NativeConsumer, rng: OffsetRange, timeout: float) -> bool:
    """Whether a fresh metadata answer lists the range's partition (True when none came:
    the no-progress bound then decides)."""
    try:
        err, partitions = consumer.partitions(rng.topic, timeout)
    except KafkaException:
        return True
    if err and not partitions:
        return err not in GONE_CODES
    return rng.partition in partitions


def on_error(consumer: NativeConsumer, rng: OffsetRange, event: ErrorEvent, pos: int,
             fail: bool, progress: Progress, logger):
    """Handle one error event at read position ``pos`` (see the module's table).

    Returns ``"stop"`` (the range is done), an offset to resume from (after records were
    lost), or None (keep reading).
    """
    err = event.error
    code = err.code()
    timeout = progress.timeout_s
    if code == KafkaError._PARTITION_EOF:
        hw = event.offset
        if hw is not None and hw >= rng.end or pos >= rng.end:
            return "stop"  # the range ends in an offset gap
        low, high = watermarks(consumer, rng, timeout)
        if high > pos:
            return None  # more records became visible since this EOF was emitted
        report_data_loss(COULD_NOT_READ_OFFSET_RANGE,
                         _lost(rng, pos, rng.end, f"the partition now ends at {high}"),
                         fail, logger)
        return "stop"
    if code in _OUT_OF_RANGE:
        low, high = watermarks(consumer, rng, timeout)
        if pos < low:
            report_data_loss(COULD_NOT_READ_OFFSET_RANGE,
                             _lost(rng, pos, min(low, rng.end),
                                   f"the earliest offset is now {low} (records aged out)"),
                             fail, logger)
            if low >= rng.end:
                return "stop"
            consumer.assign(rng.topic, rng.partition, low)
            return low
        if pos >= high:
            report_data_loss(COULD_NOT_READ_OFFSET_RANGE,
                             _lost(rng, pos, rng.end, f"the partition now ends at {high}"),
                             fail, logger)
            return "stop"
        # The log moved under the fetch but ``pos`` is valid again: fetch it once more.
        consumer.assign(rng.topic, rng.partition, pos)
        return pos
    if code in GONE_CODES:
        if _still_listed(consumer, rng, min(timeout, 10.0)):
            progress.transient(err.str())
            _log.info("Kafka reported %s while reading %s but the cluster still lists the partition: "
                      "reading on", err.str(), where(rng, pos))
            return None
        report_data_loss(COULD_NOT_READ_OFFSET_RANGE,
                         _lost(rng, pos, rng.end, "the topic partition does not exist any "
                               "more"), fail, logger)
        return "stop"
    if is_fatal(err) or (event.topic is not None and not is_transient(err)):
        raise KafkaReadError(f"Kafka error while reading {where(rng, pos)}: {err.str()} "
                             f"({err.name()}, not retriable)")
    progress.transient(err.str())
    _log.info("transient Kafka error while reading %s, reading on: %s", where(rng, pos), err.str())
    return None
