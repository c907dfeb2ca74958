"""Producing whole Arrow batches to Kafka with every delivery checked (the sink's executor side).

Delivery contract (what :func:`produce_batch` / :meth:`BatchProducer.finish` guarantee):

* the producer is idempotent (``enable.idempotence=true``, hence ``acks=all``): librdkafka's
  internal retries never duplicate or reorder a partition's records;
* ``delivery.report.only.error=true``: librdkafka calls back only for failed records, so the
  hot loop pays no Python call per delivered record; :meth:`BatchProducer.finish` flushes until
  the queue is empty and raises :class:`~connector.errors.DeliveryError` if any record failed
  (naming topic, partition and the broker's error) or a fatal producer error was seen;
* a record larger than ``message.max.bytes`` is refused before anything of its batch is queued.

A task that fails after some of its records were delivered is retried by Spark and writes them
again: at-least-once, as Spark's own Kafka sink.
"""
from __future__ import annotations

from typing import cast

import itertools
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError, KafkaException, Producer

from connector.errors import ConfigError, DeliveryError, MessageTooLargeError
from connector.kafka._conf import is_secret_setting

__all__ = [
    "DEFAULT_MESSAGE_MAX_BYTES",
    "OWNED_PRODUCER_SETTINGS",
    "BatchProducer",
    "producer_for",
]

log = logging.getLogger("asyncapi_kafka")

#: librdkafka's default ``message.max.bytes``.
DEFAULT_MESSAGE_MAX_BYTES = 1_000_000

#: Producer settings the sink sets itself, with the reason shown when a user tries to set them.
OWNED_PRODUCER_SETTINGS: Mapping[str, str] = {
    "enable.idempotence": "the sink always produces idempotently, so librdkafka's retries never "
                          "duplicate or reorder records",
    "acks": "the sink always waits for every in-sync replica (acks=all, required by idempotence)",
    "request.required.acks": "the sink always waits for every in-sync replica (acks=all)",
    "delivery.report.only.error": "the sink checks delivery reports itself",
    "transactional.id": "transactions are not supported: the sink is at-least-once, as Spark's "
                        "Kafka sink",
    "key.serializer": "keys are written from the 'key' column (bytes, string, or encoded with "
                      "the document's key schema)",
    "value.serializer": "values are encoded and framed by the sink from the document's schema",
    "interceptor.classes": "interceptors are not supported by the sink",
}

_OWNED_VALUES = {"enable.idempotence": True, "acks": "all", "delivery.report.only.error": True}

# One header costs its name, its value and about 2 varints; a record batch adds ~70 bytes.
_RECORD_OVERHEAD = 100


class BatchProducer:
    """One librdkafka producer plus the failed deliveries it reported, reused by a worker.

    Not thread-safe: a Python worker runs one task at a time.
    """

    def __init__(self, conf: Mapping[str, object]):
        full = dict(conf)
        full.update(_OWNED_VALUES)
        full["error_cb"] = self._on_error
        full["on_delivery"] = self._on_delivery
        try:
            self.producer = Producer(full)
        except (KafkaException, ValueError, TypeError) as e:
            text = _err_text(e)
            for k, v in conf.items():  # librdkafka may quote a value back: never a secret one
                if is_secret_setting(str(k)) and v and str(v) in text:
                    text = text.replace(str(v), "***")
            # Not chained: librdkafka's own exception text could carry a secret value.
            raise ConfigError(f"invalid Kafka producer setting: {text}") from None
        self.max_bytes = int(str(conf.get("message.max.bytes") or DEFAULT_MESSAGE_MAX_BYTES))
        self.failures: list[tuple[str, int, str]] = []
        self.failed_count = 0
        self.fatal: str | None = None
        self.broken = False

    def _on_delivery(self, err, msg) -> None:
        # Only failures arrive here (delivery.report.only.error): keep a few, count all.
        if err is not None:
            self.failed_count += 1
            if len(self.failures) < 10:
                text = err.str()
                if err.code() == KafkaError._MSG_TIMED_OUT:
                    text += " (not delivered within delivery.timeout.ms, retries included)"
                self.failures.append((msg.topic(), msg.partition(), text))

    def _on_error(self, err) -> None:
        if err.fatal():
            self.fatal = err.str()
        else:  # transient (broker down, reconnecting): the delivery reports decide
            log.debug("kafka producer: %s", err.str())

    def reset(self) -> None:
        self.failures, self.failed_count, self.fatal = [], 0, None

    def check(self) -> None:
        """Raise :class:`DeliveryError` if any record failed so far (called between batches)."""
        if self.failed_count or self.fatal:
            self.broken = True
            where = _describe_failures(self.failures)
            fatal = f"fatal producer error: {self.fatal}. " if self.fatal else ""
            raise DeliveryError(
                f"{fatal}{self.failed_count} record(s) were not delivered ({where or 'no detail'}). "
                "The task fails so that Spark retries it (records already delivered are written "
                "again: at-least-once)", failures=tuple(self.failures))

    def check_sizes(self, topic_of, values: pa.Array, keys: pa.Array | None,
                    header_bytes: pa.Array | int | None) -> None:
        """Refuse records over ``message.max.bytes`` before any of the batch is queued."""
        size = pc.fill_null(pc.binary_length(values), 0)
        if keys is not None:
            size = pc.add(size, pc.fill_null(pc.binary_length(keys), 0))
        if header_bytes is not None:
            size = pc.add(size, header_bytes)
        size = pc.add(size, _RECORD_OVERHEAD)
        over = pc.greater(size, self.max_bytes)
        if pc.any(over).as_py():
            row = pc.index(over, True).as_py()
            raise MessageTooLargeError(
                f"record {row} of the batch for topic {topic_of(row)!r} is about {size[row].as_py()} bytes "
                f"with key and headers, over the producer's message.max.bytes={self.max_bytes}: raise "
                "'kafka.message.max.bytes' (and the topic's max.message.bytes) or write smaller records")

    def produce(self, topics, values: list, keys: list | None, partitions: list | None,
                headers: list | None) -> int:
        """Queue one batch of records (already encoded and framed); returns how many.

        ``topics`` is one topic name or a list (one per record); ``keys``, ``partitions`` and
        ``headers`` are lists or None. Serves delivery reports as it goes and raises as soon as
        one record failed.
        """
        n = len(values)
        produce = self.producer.produce
        poll = self.producer.poll
        if isinstance(topics, str) and keys is None and partitions is None and headers is None:
            self._produce_values(topics, values)
            poll(0)
            self.check()
            return n
        topic_it = itertools.repeat(topics, n) if isinstance(topics, str) else topics
        if keys is None and partitions is None and headers is None:
            # The common shape gets the shortest call: (topic, value).
            rows = zip(topic_it, values)
        else:
            # produce(topic, value, key, partition, callback, on_delivery, timestamp, headers)
            rows = zip(topic_it, values, keys if keys is not None else itertools.repeat(None, n),
                       partitions if partitions is not None else itertools.repeat(-1, n),
                       itertools.repeat(None, n), itertools.repeat(None, n), itertools.repeat(0, n),
                       headers if headers is not None else itertools.repeat(None, n))
        i, row = 0, cast(tuple, ())
        try:
            for i, row in enumerate(rows):  # noqa: B007 - i names the failing record below
                try:
                    produce(*row)
                except BufferError:
                    self._wait_for_room(produce, row)
        except KafkaException as e:
            self.broken = True
            part = row[3] if len(row) > 3 and row[3] != -1 else "any"
            raise DeliveryError(f"producing record {i} to topic {row[0] if row else '?'!r} partition {part} "
                                f"failed: {_err_text(e)}") from e
        poll(0)
        self.check()
        return n

    def _produce_values(self, topic: str, values: list) -> None:
        """The common shape's loop - one topic, values only - with nothing per record but the
        ``produce`` call (no tuple, no index: the index is found only if a call fails)."""
        produce = self.producer.produce
        v = None
        try:
            for v in values:
                try:
                    produce(topic, v)
                except BufferError:
                    self._wait_for_room(produce, (topic, v))
        except KafkaException as e:
            self.broken = True
            i = next((j for j, x in enumerate(values) if x is v), "?")
            raise DeliveryError(f"producing record {i} to topic {topic!r} partition any failed: "
                                f"{_err_text(e)}") from e

    def _wait_for_room(self, call, row) -> None:
        # The local queue is full (queue.buffering.max.messages/kbytes): serve delivery reports
        # until librdkafka has room, failing fast if deliveries are failing.
        while True:
            self.producer.poll(0.05)
            self.check()
            try:
                call(*row)
                return
            except BufferError:
                continue

    def finish(self, timeout_s: float | None = None) -> None:
        """Wait for every queued record's delivery report; raise if any failed.

        Without ``timeout_s`` this waits as long as librdkafka may retry
        (``delivery.timeout.ms``, default 300 s): every record then either is delivered or
        reports a failure, so nothing is silently lost.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = self.producer.flush(1.0)
            self.check()
            if left == 0:
                return
            if deadline is not None and time.monotonic() > deadline:
                self.broken = True
                raise DeliveryError(f"{left} record(s) still undelivered after {timeout_s:g}s")

    def abandon(self) -> None:
        """Drop what is still queued (after a failure) so it is not sent after the task failed."""
        self.broken = True
        try:
            self.producer.purge(in_queue=True, in_flight=False)
            self.producer.flush(0)
        except (KafkaException, RuntimeError):  # best effort: the producer is thrown away anyway
            pass


def _describe_failures(failures: Sequence[tuple[str, int | None, str]]) -> str:
    """``topic 't' partition 3: <error>`` per distinct failure (with a count when repeated).

    librdkafka reports no partition (None) for a record it never assigned one: the producer
    had no metadata for the topic (brokers unreachable, or the topic does not exist and is not
    auto-created), so the message says that instead of ``t[None]``.
    """
    counts: dict[tuple[str, int | None, str], int] = {}
    for f in failures:
        counts[f] = counts.get(f, 0) + 1
    parts = []
    for (topic, partition, text), n in counts.items():
        if partition is None or partition < 0:
            where = (f"topic {topic!r}, no partition assigned (the producer never got the topic's "
                     "metadata: brokers unreachable, or the topic does not exist)")
        else:
            where = f"topic {topic!r} partition {partition}"
        parts.append(f"{where}: {text}" + (f" (x{n})" if n > 1 else ""))
    return "; ".join(parts)


def _err_text(e: BaseException) -> str:
    err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
    return err.str() if err is not None else (str(e) or type(e).__name__)


_POOL: dict[tuple, BatchProducer] = {}
_POOL_PID: list[int] = [os.getpid()]
_POOL_LOCK = threading.Lock()


def producer_for(conf: Mapping[str, object]) -> BatchProducer:
    """The worker process's producer for ``conf`` (created once, reused across tasks, as
    Spark's ``CachedKafkaProducer``); a producer that saw a failure is replaced."""
    key = tuple(sorted((str(k), str(v)) for k, v in conf.items()))
    with _POOL_LOCK:
        if _POOL_PID[0] != os.getpid():  # forked: the parent's producers are not ours
            _POOL.clear()
            _POOL_PID[0] = os.getpid()
        bp = _POOL.get(key)
        if bp is not None and bp.broken:
            _POOL.pop(key, None)
            bp = None
        if bp is None:
            bp = _POOL[key] = BatchProducer(conf)
        bp.reset()
        return bp
