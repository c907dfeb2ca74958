"""Executor-side reads of one offset range into Arrow record batches.

Records go from librdkafka to Arrow without a Python object per record: a
:class:`~connector.kafka._native.NativeConsumer` (librdkafka's C API, the library
confluent-kafka loaded) fills an array of message addresses, and the compiled loops of
:mod:`connector.kafka._batch_kernel` copy keys, values, timestamps and headers into Arrow
buffers. Error events (rare) come to Python one by one and are handled by
:mod:`connector.kafka._fetch_errors`.

Every task (:func:`read_ranges` call) gets a fresh consumer, closed when its last range ends
(also when the task stops early): an idle consumer kept for the next task crashed the whole
Python worker (a segfault in librdkafka's metadata cache) once its topic was deleted and
recreated. Within a task, each range's partition is assigned on its own, ahead of its turn, and
read from its own queue, so no range waits behind a fetch another left in flight (a consumer
re-assigned from range to range waited ~50 ms for it on the mock cluster). The throwaway group id is per process
and renewed after a fork.
"""
from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence

from typing import TYPE_CHECKING

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from connector.errors import KafkaReadError

from ._fetch_errors import Progress, check_gap, on_error, where
from ._ranges import OffsetRange
from ._raw_schema import RAW_ARROW_SCHEMA, RAW_ARROW_SCHEMA_NO_HEADERS

if TYPE_CHECKING:
    from ._native import NativeConsumer

__all__ = ["RAW_ARROW_SCHEMA", "RAW_ARROW_SCHEMA_NO_HEADERS", "read_range", "read_ranges", "commit_offsets",
           "consumer_stats"]

_log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- consumers

#: Spark's Kafka source uses "spark-kafka-source"; ours names the connector.
DEFAULT_GROUP_PREFIX = "asyncapi-kafka"

_lock = threading.Lock()
_pid = os.getpid()
_stats = {"created": 0, "open": 0}
_process_token = str(uuid.uuid4())  # one throwaway group per process (and prefix)


def _check_pid() -> None:
    global _pid, _process_token
    if os.getpid() != _pid:
        _stats.update(created=0, open=0)
        _pid = os.getpid()
        _process_token = str(uuid.uuid4())


def consumer_stats() -> dict[str, int]:
    """Consumers this process created, and how many are open now (for tests and metrics)."""
    with _lock:
        _check_pid()
        return dict(_stats)


def _consumer_conf(conf: Mapping[str, str], isolation_level: str,
                   group_prefix: str = DEFAULT_GROUP_PREFIX) -> dict[str, str]:
    c = {str(k): str(v) for k, v in conf.items()}
    with _lock:
        _check_pid()
        # Spark's shape: <groupIdPrefix>-<uuid>-executor (the source never commits to it)
        c.setdefault("group.id", f"{group_prefix}-{_process_token}-executor")
    # Ranges are bounded, so a fetch that waits at the high watermark only delays the end of
    # a task: keep that wait short.
    c.setdefault("fetch.wait.max.ms", "50")
    c.update({
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "enable.partition.eof": "true",
        # Out-of-range must surface as an error so it is reported, never silently reset.
        "auto.offset.reset": "error",
        "isolation.level": isolation_level,
    })
    return c


def _open_consumer(conf: dict[str, str], capacity: int) -> NativeConsumer:
    from ._native import NativeConsumer  # numba kernels: imported by executors only

    consumer = NativeConsumer(conf, _log, capacity)
    with _lock:
        _check_pid()
        _stats["created"] += 1
        _stats["open"] += 1
    return consumer


def _close_consumer(consumer: NativeConsumer) -> None:
    try:
        consumer.close()
    finally:
        with _lock:
            _stats["open"] -= 1


# ---------------------------------------------------------------------------- reading

def read_range(conf: Mapping[str, str], rng: OffsetRange, *, batch_size: int = 10000,
               include_headers: bool = True, fail_on_data_loss: bool = True,
               poll_timeout_s: float = 120.0, isolation_level: str | None = None,
               logger: logging.Logger | None = None,
               group_prefix: str = DEFAULT_GROUP_PREFIX) -> Iterator[pa.RecordBatch]:
    """Read records ``[rng.start, rng.end)`` of one partition as Arrow record batches.

    Parameters
    ----------
    conf : mapping of str to str
        librdkafka settings (from :func:`kafka_conf_from_options`); the settings the source
        owns (auto commit, offset reset, partition EOF, isolation level) are set here.
    rng : OffsetRange
        What to read.
    batch_size : int
        Maximum rows per batch; memory stays bounded by one batch.
    include_headers : bool
        Produce the ``headers`` column (:data:`RAW_ARROW_SCHEMA`), else
        :data:`RAW_ARROW_SCHEMA_NO_HEADERS`.
    fail_on_data_loss : bool
        Records that aged out (or a partition that vanished) raise :class:`DataLossError`;
        when false a warning is logged and the rows still available are returned.
    poll_timeout_s : float
        Longest time without a new record before giving up with :class:`KafkaReadError`.
        Transient broker errors (a leader moved, a broker restarting, a request timed out)
        are ridden out meanwhile, while librdkafka recovers; fatal ones (authorization,
        corrupt records) fail at once. See :mod:`connector.kafka._fetch_errors`.
    isolation_level : str, optional
        ``read_committed`` or ``read_uncommitted``; default: the ``isolation.level`` of
        ``conf``, else ``read_committed`` (the same rule as :class:`KafkaOffsetReader`, so
        planned ends and reads agree).
    group_prefix : str
        Prefix of the throwaway consumer group id (option ``groupIdPrefix``), for clusters
        whose ACLs allow only some group names; a ``group.id`` in ``conf`` wins.

    Yields
    ------
    pyarrow.RecordBatch
        Rows in offset order. Offsets may jump (compaction, transaction markers).

    Examples
    --------
    >>> from connector.kafka import OffsetRange, read_range
    >>> from connector.testing import EmbeddedKafka
    >>> with EmbeddedKafka() as kafka:                                  # doctest: +SKIP
    ...     kafka.produce("t", b"hello", partition=0); kafka.flush()
    ...     conf = {"bootstrap.servers": kafka.bootstrap_servers}
    ...     [b.num_rows for b in read_range(conf, OffsetRange("t", 0, 0, 1))]
    [1]
    """
    yield from (batch for _, batch in read_ranges(
        conf, [rng], batch_size=batch_size, include_headers=include_headers,
        fail_on_data_loss=fail_on_data_loss, poll_timeout_s=poll_timeout_s,
        isolation_level=isolation_level, logger=logger, group_prefix=group_prefix))


# Per consumer of a task of several ranges: what librdkafka may queue past the point read (its
# default, 64 MB, times the consumers opened ahead would be a lot of memory for small ranges).
_QUEUE_KB_SEVERAL = "8192"


def read_ranges(conf: Mapping[str, str], ranges: Sequence[OffsetRange], *, ahead: int = 7,
                batch_size: int = 10000, include_headers: bool = True, fail_on_data_loss: bool = True,
                poll_timeout_s: float = 120.0, isolation_level: str | None = None,
                logger: logging.Logger | None = None,
                group_prefix: str = DEFAULT_GROUP_PREFIX) -> Iterator[tuple[OffsetRange, pa.RecordBatch]]:
    """:func:`read_range` over several ranges, one after another, with one consumer.

    The partitions of the next ``ahead`` ranges are assigned while the current one is read, so
    their first fetches overlap it: a task that carries several small ranges
    (:func:`pack_ranges`) does not wait for them one after another. Each range is read from its
    partition's own queue and its partition is unassigned when the range ends. A range of a
    partition the consumer read before gets a consumer of its own (:func:`_segments`). Consumers
    are closed when their last range ends or the caller stops early. With several ranges each partition queues at most
    8 MB ahead of the reader (``queued.max.messages.kbytes``, unless set).

    One consumer per task, not per range: each consumer costs librdkafka's threads about 1 ms
    of CPU (connections, metadata, the group coordinator; more with TLS), as much as reading
    some 4,000 records. Measured (8 ranges of 500 records, noida-db, load 12-15): 154 ms one
    after another, 32 ms with the 8 opened at once (medians of 7).

    Yields
    ------
    (OffsetRange, pyarrow.RecordBatch)
        The range each batch belongs to, ranges in the given order.
    """
    if batch_size <= 0:
        raise ValueError("batch_size must be positive")
    todo = [r for r in ranges if r.end > r.start]
    if not todo:
        return
    iso = isolation_level or conf.get("isolation.level") or "read_committed"
    c = _bounded(_consumer_conf(conf, iso, group_prefix), conf, max(r.end - r.start for r in todo))
    if len(todo) > 1 and ahead > 0:
        c.setdefault("queued.max.messages.kbytes", _QUEUE_KB_SEVERAL)
    schema = RAW_ARROW_SCHEMA if include_headers else RAW_ARROW_SCHEMA_NO_HEADERS
    seg = _segments(todo)
    consumers: dict[int, NativeConsumer] = {}  # by segment
    assigned: list[int] = []  # indexes of todo whose partitions are assigned, in order
    try:
        for i, rng in enumerate(todo):
            try:
                k = assigned[-1] + 1 if assigned else i
                while k < len(todo) and len(assigned) < max(ahead, 0) + 1:
                    if seg[k] not in consumers:
                        consumers[seg[k]] = _open_consumer(c, batch_size)
                        _know_topics(consumers[seg[k]], [r.topic for r, s in zip(todo, seg) if s == seg[k]],
                                     poll_timeout_s)
                    consumers[seg[k]].add(todo[k].topic, todo[k].partition, todo[k].start)
                    assigned.append(k)
                    k += 1
                consumer = consumers[seg[i]]
                consumer.use(rng.topic, rng.partition)
                for batch in _read(consumer, rng, batch_size, schema, fail_on_data_loss,
                                   poll_timeout_s, logger):
                    yield rng, batch
                assigned.pop(0)
                consumer.discard()  # (empty after a range) the window is shared with the next
                if i + 1 < len(todo) and seg[i + 1] == seg[i]:
                    consumer.remove(rng.topic, rng.partition)
                else:
                    _close_consumer(consumers.pop(seg[i]))
            except KafkaException as e:
                err = e.args[0] if e.args else e
                text = err.str() if isinstance(err, KafkaError) else str(err)
                raise KafkaReadError(f"Kafka error while reading {where(rng, rng.start)} "
                                     f"(range end {rng.end}): {text}") from e
    finally:
        for consumer in consumers.values():  # also when the caller stops early (a LIMIT)
            _close_consumer(consumer)


_KNOW_TIMEOUT_S = 5.0  # the metadata warm-up waits at most this long (the read has its own timeout)


def _know_topics(consumer: NativeConsumer, topics: list[str], timeout_s: float) -> None:
    """Ask the metadata of every topic a consumer will read, at once: a partition of a topic
    the consumer has not seen, assigned while it reads another, otherwise waits for that topic's
    metadata (measured: about 100 ms per topic, 40 ranges of 10 topics in 4.0 s against 0.08 s)."""
    seen = list(dict.fromkeys(topics))
    if len(seen) > 1:
        consumer.know(seen, min(timeout_s, _KNOW_TIMEOUT_S))


def _segments(todo: Sequence[OffsetRange]) -> list[int]:
    """The consumer of each range: a new one where a range's partition was read before by the
    current one (librdkafka would hold the re-assigned partition's first fetch for
    ``fetch.queue.backoff.ms``, a second, once its queue had reached ``queued.min.messages``).

    >>> from connector.kafka import OffsetRange
    >>> _segments([OffsetRange("t", p, s, s + 5) for p, s in [(0, 0), (1, 0), (0, 5), (2, 0), (0, 10)]])
    [0, 0, 1, 1, 2]
    """
    out: list[int] = []
    current = 0
    seen: set[tuple[str, int]] = set()
    for r in todo:
        if (r.topic, r.partition) in seen:
            current += 1
            seen.clear()
        seen.add((r.topic, r.partition))
        out.append(current)
    return out


#: librdkafka's default ``queued.min.messages``: how many messages a consumer fetches ahead.
_QUEUED_MIN_DEFAULT = 100_000
_QUEUE_BACKOFF_MS = "20"


def _bounded(c: dict[str, str], user: Mapping[str, str], longest: int) -> dict[str, str]:
    """``c`` for a consumer of ranges of at most ``longest`` records: each partition fetches
    ahead at most that many (unless the user set ``queued.min.messages``), not the rest of the
    partition. Measured (ranges of 5,000 records in partitions of 25,000, lz4): librdkafka's
    threads spent 4x the CPU per record read decompressing and queuing records past the range
    end, which are then thrown away.

    A partition whose queue reached that bound is not fetched again for
    ``fetch.queue.backoff.ms`` (1 s by default), which a range ending in an offset gap (a
    transaction marker) then waited for: it is 20 ms unless the user set it."""
    if "queued.min.messages" in user:
        return c
    out = {**c, "queued.min.messages": str(max(1, min(longest, _QUEUED_MIN_DEFAULT)))}
    if "fetch.queue.backoff.ms" not in user:
        out["fetch.queue.backoff.ms"] = _QUEUE_BACKOFF_MS
    return out


def _fetch(consumer: NativeConsumer, want: int, end: int, rng: OffsetRange, nxt: int,
           progress: Progress) -> None:
    """Fill the consumer's (empty) window with up to ``want`` messages/events.

    ``rd_kafka_consume_batch_queue`` blocks until it has the count or its timeout expires,
    and a range that ends in an offset gap (compaction, transaction markers) never fills the
    count, so it is called in short slices and returns as soon as the range end, an error
    event or a pause in the data is seen.
    """
    slice_s = min(0.1, progress.timeout_s)
    while consumer.count() < want:
        got = consumer.consume(want - consumer.count(), slice_s)
        if not got:
            if consumer.count():
                return
            progress.check(rng, nxt)
            continue
        if consumer.first_error(consumer.hi - got) < consumer.hi:
            return
        if consumer.last_offset() >= end - 1:
            return


def _read(consumer: NativeConsumer, rng: OffsetRange, batch_size: int, schema: pa.Schema,
          fail: bool, poll_timeout_s: float, logger) -> Iterator[pa.RecordBatch]:
    topic, partition, end = rng.topic, rng.partition, rng.end
    nxt = rng.start
    first = True
    progress = Progress(poll_timeout_s)  # the consumer is assigned at rng.start (read_ranges)
    while nxt < end:
        _fetch(consumer, min(batch_size, end - nxt), end, rng, nxt, progress)
        records = errors = False
        while consumer.count():
            k = consumer.first_error()
            if k > consumer.lo:
                run = k - consumer.lo
                batches, below_end = consumer.take_records(k, end, topic, partition, schema)
                if batches:
                    records = True
                    lo_off, hi_off = batches[0]["offset"][0].as_py(), batches[-1]["offset"][-1].as_py()
                    if first and lo_off > nxt:
                        check_gap(consumer, rng, nxt, lo_off, fail, poll_timeout_s, logger)
                    first = False
                    nxt = hi_off + 1
                    yield from batches
                    progress.advanced()  # also: the caller's time with the batch is not our wait
                if below_end < run:  # a record at or past the end: the range is complete
                    consumer.discard()
                    if first:  # the whole range is a gap: legitimate unless it aged out
                        check_gap(consumer, rng, nxt, end, fail, poll_timeout_s, logger)
                    return
                continue
            errors = True
            action = on_error(consumer, rng, consumer.take_error(), nxt, fail, progress, logger)
            if action == "stop":
                consumer.discard()
                return
            if action is not None:  # re-assigned past lost records
                consumer.discard()
                nxt = action
                first = False
                progress.advanced()
                break
        if errors and not records:
            progress.check(rng, nxt)  # errors alone are no progress


def commit_offsets(conf: Mapping[str, str], group_id: str,
                   offsets: Mapping[tuple[str, int], int], *, timeout_s: float = 30.0) -> None:
    """Commit ``offsets`` for ``group_id`` (lag monitoring only; the source never reads them).

    Raises
    ------
    KafkaReadError
        The commit failed.
    """
    if not offsets:
        return
    c = {str(k): str(v) for k, v in conf.items()}
    c.update({"group.id": group_id, "enable.auto.commit": "false",
              "socket.timeout.ms": str(int(timeout_s * 1000))})
    consumer = Consumer(c, logger=_log)
    try:
        res = consumer.commit(offsets=[TopicPartition(t, p, o)
                                       for (t, p), o in sorted(offsets.items())],
                              asynchronous=False)
        bad = [f"{r.topic}-{r.partition}: {r.error.str()}" for r in res or [] if r.error]
        if bad:
            raise KafkaReadError(f"committing offsets for group {group_id} failed: {bad}")
    except KafkaException as e:
        raise KafkaReadError(f"committing offsets for group {group_id} failed: "
                             f"{e.args[0].str()}") from e
    finally:
        consumer.close()
