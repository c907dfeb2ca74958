"""Exactly-once writes: one Kafka transaction per task attempt, fenced per (query, partition),
committed together with its (batch, partition) marker.

A task attempt, on its first non-empty input batch:

==========================  ====================================================================
step                        why
==========================  ====================================================================
``init_transactions``       with ``transactional.id`` = ``<prefix>-<query id>-<partition>``, the
                            same for every attempt of the task: the coordinator bumps the
                            producer epoch, aborts (or completes) the transaction an older
                            attempt left open, and fences that attempt (its next request fails
                            with ``PRODUCER_FENCED``)
read the marker             the committed offset of consumer group ``<transactional.id>`` on
                            ``<topic>[0]`` (asked with ``require_stable``): the last batch this
                            task committed plus one, with its row count and digest as metadata
marker >= batch + 1         this batch was written by an earlier attempt: write nothing (the
                            input is still encoded, to compare rows and digest: a replay that
                            differs is logged, see ``docs/exactly-once.md``)
otherwise                   ``begin_transaction``, produce every row, wait for every delivery
                            report, ``send_offsets_to_transaction`` (the marker: offset
                            ``batch + 1`` on ``<topic>[0]`` for the group), ``commit_transaction``:
                            rows and marker become visible together, or neither
==========================  ====================================================================

Any error aborts the transaction (or leaves it to the next attempt's fencing and to
``transaction.timeout.ms``) and fails the task: Spark's retry is a new attempt that fences and
looks again. Two tasks are never atomic together (librdkafka has no two-phase commit, KIP-939):
readers of committed data may see one task's rows of a micro-batch before another's.

``max.in.flight.requests.per.connection`` is 1 by default here: with several requests of a
partition in flight, a retriable error on the first makes the broker refuse the next ones
(``OUT_OF_ORDER_SEQUENCE_NUMBER``), which librdkafka turns into an abortable transaction error;
with one, librdkafka retries inside the transaction.
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import logging
import os
import threading
import time
import zlib
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from connector.errors import DeliveryError, TransactionError

__all__ = ["Marker", "TaskTransaction", "Opening", "Digest", "MARKER_PARTITION", "transactional_id"]

log = logging.getLogger("asyncapi_kafka")

#: The partition of the write's topic whose committed offset (per task's group) is the marker.
MARKER_PARTITION = 0
_DEFAULT_TXN_TIMEOUT_MS = 60_000  # librdkafka's transaction.timeout.ms
_ABORT_WAIT_S = 5.0
_FENCED_NAMES = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})
# settings an admin client built from the producer's settings must not inherit
_PRODUCER_ONLY = ("transactional.id", "enable.idempotence", "acks", "request.required.acks",
                  "delivery.report.only.error", "log.queue", "max.in.flight.requests.per.connection",
                  "transaction.timeout.ms", "enable.gapless.guarantee")


def transactional_id(prefix: str, job: str, partition: int) -> str:
    """``<prefix>-<job>-<partition>``: the same for every attempt of one task of one query (or
    batch write), so each new attempt fences the older ones."""
    return f"{prefix}-{job}-{partition}"


@dataclasses.dataclass(frozen=True)
class Marker:
    """What a committed task attempt left: the batch it wrote, its rows and their digest."""

    batch: int
    rows: int | None = None
    digest: str | None = None

    def metadata(self) -> str:
        return json.dumps({"batch": self.batch, "rows": self.rows, "digest": self.digest}, separators=(",", ":"))

    @classmethod
    def parse(cls, offset: int, metadata: str | None) -> Marker | None:
        """The marker of a committed offset (None when nothing was committed). A broker that
        drops offset metadata (tansu) still keeps the offset: rows and digest are then None."""
        if offset is None or offset <= 0:
            return None
        rows = digest = None
        try:
            doc = json.loads(metadata.rstrip("\x00")) if metadata else {}
            rows, digest = doc.get("rows"), doc.get("digest")
        except (ValueError, AttributeError):
            pass
        return cls(offset - 1, rows, digest)


class Digest:
    """A CRC-32 of the bytes a task writes (values, keys, partitions), to tell a replay that
    differs from the attempt that committed."""

    def __init__(self) -> None:
        self._crc = 0
        self.rows = 0

    def update(self, values: pa.Array, keys: pa.Array | None = None, partitions=None) -> None:
        self.rows += len(values)
        for arr in (values, keys):
            if arr is None:
                continue
            self._crc = _crc_binary(arr, self._crc)
        if partitions is not None:
            p = partitions.to_numpy(zero_copy_only=False) if isinstance(partitions, pa.Array) else np.asarray(partitions)
            self._crc = zlib.crc32(np.ascontiguousarray(p, np.int32).tobytes(), self._crc)

    @property
    def value(self) -> str:
        return f"{self._crc:08x}"


def _crc_binary(arr: pa.Array, crc: int) -> int:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return crc
    large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    dtype = np.int64 if large else np.int32
    validity, offsets, data = arr.buffers()[:3]
    offs = np.frombuffer(offsets, dtype, count=n + 1, offset=arr.offset * np.dtype(dtype).itemsize)
    crc = zlib.crc32(np.diff(offs).astype(np.int64).tobytes(), crc)
    if arr.null_count:
        crc = zlib.crc32(np.asarray(arr.is_null()).tobytes(), crc)
    if data is not None and offs[n] > offs[0]:
        crc = zlib.crc32(memoryview(data)[int(offs[0]):int(offs[n])], crc)
    return crc


class TaskTransaction:
    """One task attempt's transactional producer (a :class:`~connector.kafka.BatchProducer`
    with a ``transactional.id``) and its marker.

    Parameters
    ----------
    conf : mapping
        The sink's producer settings (secrets included; never printed).
    transactional_id : str
        :func:`transactional_id` of the task.
    topic : str
        The write's topic: partition :data:`MARKER_PARTITION` of it carries the marker.
    timeout_s : float
        Bound on fencing, the marker look-up and the commit (``fetchOffset.timeoutMs``).
    """

    def __init__(self, conf: Mapping[str, object], transactional_id: str, topic: str, *, timeout_s: float = 30.0):
        from connector.kafka._produce import BatchProducer

        full = dict(conf)
        full.setdefault("max.in.flight.requests.per.connection", "1")
        full["transactional.id"] = transactional_id
        self.transactional_id = transactional_id
        self.topic = topic
        self.timeout_s = timeout_s
        self.txn_timeout_s = int(str(full.get("transaction.timeout.ms") or _DEFAULT_TXN_TIMEOUT_MS)) / 1000
        self._conf = {k: v for k, v in conf.items() if k not in _PRODUCER_ONLY}
        self.producer = BatchProducer(full, resend_unconfirmed=False)
        self._lib = self.producer._lib
        self._rk = self.producer._rk
        self._began: float | None = None

    # -- the steps ------------------------------------------------------------------------------

    def start(self) -> Marker | None:
        """Fence older attempts (``init_transactions``), then read the marker they may have
        committed; None when this task never committed."""
        self._call(lambda ms: self._lib.init_transactions(self._rk, ms), "initializing transactions (fencing "
                   "older attempts)")
        self.producer.know(self.topic, self.timeout_s)
        return self.committed()

    def committed(self) -> Marker | None:
        """The marker committed for this task (its consumer group's offset on the marker partition)."""
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

        admin = _admin_for(self._conf)
        req = ConsumerGroupTopicPartitions(self.transactional_id, [TopicPartition(self.topic, MARKER_PARTITION)])
        try:
            fut = admin.list_consumer_group_offsets([req], require_stable=True, request_timeout=self.timeout_s)
            res = fut[self.transactional_id].result()
        except KafkaException as e:
            raise TransactionError(f"reading the exactly-once marker of {self.transactional_id!r} (consumer group "
                                   f"offsets of topic {self.topic!r} partition {MARKER_PARTITION}) failed: "
                                   f"{e.args[0].str() if e.args else e}", code=_name_of(e)) from e
        tp = res.topic_partitions[0]
        if tp.error is not None:
            raise TransactionError(f"reading the exactly-once marker of {self.transactional_id!r} failed: "
                                   f"{tp.error.str()}", code=tp.error.name())
        return Marker.parse(tp.offset, tp.metadata)

    def begin(self) -> None:
        self._call(lambda ms: self._lib.begin_transaction(self._rk), "beginning a transaction", retry=False)
        self._began = time.monotonic()

    def produce(self, topics, values, keys=None, partitions=None, headers=None) -> int:
        """:meth:`BatchProducer.produce` inside the transaction (a fenced producer's failure is a
        :class:`TransactionError` with ``fenced`` set)."""
        try:
            return self.producer.produce(topics, values, keys, partitions, headers)
        except DeliveryError as e:
            raise self._fenced_or(e) from e

    def commit(self, marker: Marker) -> None:
        """Wait for every record's delivery report, add the marker to the transaction, commit."""
        from connector.kafka._librdkafka import TP

        try:
            self.producer.finish()
        except DeliveryError as e:
            raise self._fenced_or(e) from e
        lib = self._lib
        meta = marker.metadata().encode()
        buf = ctypes.create_string_buffer(meta)  # NUL-terminated: librdkafka may read it as a C string
        tpl = lib.topic_partition_list_new(1)
        cgmd = lib.consumer_group_metadata_new(self.transactional_id.encode())
        try:
            tp = lib.topic_partition_list_add(tpl, self.topic.encode(), MARKER_PARTITION)
            ctypes.c_int64.from_address(tp + TP.offset).value = marker.batch + 1
            ctypes.c_void_p.from_address(tp + TP.metadata).value = ctypes.addressof(buf)
            # with its NUL, as confluent-kafka commits metadata (its readers take it as a C string)
            ctypes.c_size_t.from_address(tp + TP.metadata_size).value = len(meta) + 1
            try:
                self._call(lambda ms: lib.send_offsets_to_transaction(self._rk, tpl, cgmd, ms),
                           "adding the exactly-once marker to the transaction")
            finally:  # librdkafka copied the list; the metadata buffer is ours, not its to free
                ctypes.c_void_p.from_address(tp + TP.metadata).value = None
                ctypes.c_size_t.from_address(tp + TP.metadata_size).value = 0
        finally:
            lib.topic_partition_list_destroy(tpl)
            lib.consumer_group_metadata_destroy(cgmd)
        self._call(lambda ms: lib.commit_transaction(self._rk, ms), "committing the transaction")

    def abort(self) -> None:
        """Abort the open transaction, best effort (a fenced or failed producer cannot: the next
        attempt's fencing or ``transaction.timeout.ms`` aborts it)."""
        try:  # at most a few seconds: a broker may not let a fenced producer abort (tansu waits)
            err = self._lib.abort_transaction(self._rk, int(min(self.timeout_s, _ABORT_WAIT_S) * 1000))
            if err:
                self._lib.error_destroy(err)
        except Exception:  # best effort: the task is failing already
            log.debug("abort_transaction failed", exc_info=True)

    def close(self) -> None:
        self.producer.close()

    # -- librdkafka's error objects ----------------------------------------------------------------

    def _fenced_or(self, e: DeliveryError) -> Exception:
        """A delivery failure of a fenced producer as the :class:`TransactionError` it is; any
        other stays a :class:`DeliveryError`."""
        from connector.kafka._librdkafka import err_name

        buf = ctypes.create_string_buffer(512)
        code = self._lib.fatal_error(self._rk, buf, len(buf))
        if code and err_name(code) in _FENCED_NAMES:
            return self._error("producing the transaction's records", code, buf.value.decode("utf-8", "replace"),
                               abortable=False, fatal=True)
        names = {err_name(c) for c in self.producer.reports.codes}
        fenced = names & _FENCED_NAMES
        if fenced:  # the broker's answer to the records themselves (an abortable error)
            return self._error("producing the transaction's records", next(c for c in self.producer.reports.codes
                                                                         if err_name(c) in fenced),
                               str(e), abortable=True, fatal=False)
        if names == {"_PURGE_QUEUE"}:
            # librdkafka purges the queue when the transaction turns abortable (a broker's
            # PRODUCER_FENCED is one cause); it tells the cause only to a commit, which is not tried
            return TransactionError(f"the transaction of {self.transactional_id!r} became abortable and librdkafka "
                                    f"dropped its queued records (a newer attempt of this task fenced it, or a "
                                    f"produce request failed for good): {e}", code="_PURGE_QUEUE")
        return e

    def _call(self, fn, what: str, *, retry: bool = True) -> None:
        """``fn(timeout_ms)`` returning an ``rd_kafka_error_t *``: retried while librdkafka says
        the error is retriable and time is left; anything else becomes :class:`TransactionError`."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            left_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            err = fn(left_ms)
            if not err:
                return
            lib = self._lib
            try:
                code = lib.error_code(err)
                text = (lib.error_string(err) or b"").decode("utf-8", "replace")
                retriable = bool(lib.error_is_retriable(err))
                abortable = bool(lib.error_txn_requires_abort(err))
                fatal = bool(lib.error_is_fatal(err))
            finally:
                lib.error_destroy(err)
            if retry and retriable and time.monotonic() < deadline:
                log.info("%s for %s: %s; retrying", what, self.transactional_id, text)
                continue
            raise self._error(what, code, text, abortable=abortable, fatal=fatal)

    def _error(self, what: str, code: int, text: str, *, abortable: bool, fatal: bool) -> TransactionError:
        from connector.kafka._librdkafka import err_name

        name = err_name(code)
        fenced = name in _FENCED_NAMES or "fenced" in text.lower()
        why = ""
        if self._began is not None and time.monotonic() - self._began > self.txn_timeout_s:
            why = (f": the transaction was open {time.monotonic() - self._began:.0f}s, longer than "
                   f"transaction.timeout.ms={int(self.txn_timeout_s * 1000)}, so the coordinator aborted it; raise "
                   "'kafka.transaction.timeout.ms' (up to the brokers' transaction.max.timeout.ms) or write smaller "
                   "partitions")
        elif fenced:
            why = (": a newer attempt of this task took over its transactional id (a retry or a speculative "
                   "copy), which writes instead of this one")
        kind = "fatal" if fatal else "abortable" if abortable else "error"
        return TransactionError(f"{what} for transactional id {self.transactional_id!r} failed ({kind}): {text} "
                                f"[{name}]{why}", code=name, fenced=fenced)


class Opening:
    """A :class:`TaskTransaction` created and started (fencing, marker look-up: a few round
    trips, about 50 ms) in a thread of its own, so that it overlaps the task's wait for its first
    input batch and that batch's encoding. :meth:`result` joins it."""

    def __init__(self, conf: Mapping[str, object], transactional_id: str, topic: str, *, timeout_s: float = 30.0):
        self._txn: TaskTransaction | None = None
        self._marker: Marker | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._finished = self._abandoned = False
        self._thread = threading.Thread(target=self._run, args=(conf, transactional_id, topic, timeout_s),
                                        daemon=True, name=f"txn-{transactional_id}")
        self._thread.start()

    def _run(self, conf, transactional_id: str, topic: str, timeout_s: float) -> None:
        try:
            self._txn = TaskTransaction(conf, transactional_id, topic, timeout_s=timeout_s)
            self._marker = self._txn.start()
        except BaseException as e:  # noqa: BLE001 - re-raised by result() in the task's thread
            self._error = e
        with self._lock:
            self._finished = True
            if self._abandoned:
                self._close_txn()

    def abandon(self) -> None:
        """Not needed after all (the task had no rows, or failed before its first): the thread
        closes the transaction when it is done; the task does not wait for it."""
        with self._lock:
            self._abandoned = True
            if self._finished:
                self._close_txn()

    def _close_txn(self) -> None:
        if self._txn is not None:
            self._txn.close()
            self._txn = None

    def result(self) -> tuple[TaskTransaction, Marker | None]:
        """The started transaction and the marker committed for its task (None: never)."""
        self._thread.join()
        if self._error is not None:
            self.close()
            raise self._error
        assert self._txn is not None
        return self._txn, self._marker

    def close(self) -> None:
        self._thread.join()
        self._close_txn()


def _name_of(e: Exception) -> str:
    from confluent_kafka import KafkaError

    err = e.args[0] if e.args else None
    return err.name() if isinstance(err, KafkaError) else ""


_ADMINS: dict[tuple, object] = {}
_ADMIN_PID: list[int] = [os.getpid()]
_ADMIN_LOCK = threading.Lock()


def _admin_for(conf: Mapping[str, object]):
    """The worker process's admin client for these settings (marker look-ups)."""
    from confluent_kafka.admin import AdminClient

    key = tuple(sorted((str(k), str(v)) for k, v in conf.items()))
    with _ADMIN_LOCK:
        if _ADMIN_PID[0] != os.getpid():
            _ADMINS.clear()
            _ADMIN_PID[0] = os.getpid()
        admin = _ADMINS.get(key)
        if admin is None:
            admin = _ADMINS[key] = AdminClient({str(k): str(v) for k, v in conf.items()}, logger=log)
        return admin
