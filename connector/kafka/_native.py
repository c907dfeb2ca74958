"""A librdkafka consumer handle driven directly (no confluent-kafka ``Message`` per record).

:class:`NativeConsumer` is what an executor's read task uses for its offset ranges: it assigns
the partitions of the next ranges at their offsets (each range's partition added and removed on
its own, so the others keep fetching ahead), reads one partition at a time from that partition's
own queue (forwarding to the consumer queue is cut before the partition is assigned, so
librdkafka never re-routes it), fills an array of message addresses with
``rd_kafka_consume_batch_queue`` (the GIL is released while it waits) and hands runs of records
to the compiled loops of :mod:`connector.kafka._batch_kernel`. The messages it holds are its
*window* ``ptrs[lo:hi]``; each is destroyed exactly once (when its records are taken, when an
error is read, or at :meth:`NativeConsumer.discard`/:meth:`NativeConsumer.close`), or
``rd_kafka_destroy`` would wait for them forever.

Errors reach the window as messages with ``err`` set, as with confluent-kafka's ``consume``:
a partition's queue carries its fetch errors and end-of-partition events; the consumer queue,
to which the main queue (client errors without a topic) is forwarded, is read (without waiting)
before each read of a partition's queue. Such a message is read into an :class:`ErrorEvent`
whose ``error`` is a :class:`confluent_kafka.KafkaError` built from its code and text (no
``retriable``/``fatal`` flags, the same as confluent-kafka's message errors), so
:mod:`connector.kafka._transient` classifies it by code.

librdkafka's logs are queued (``log.queue``) on a queue of this handle and re-logged on the
caller's logger after each call, at confluent-kafka's level mapping and in its format, so no raw
lines reach stderr and no Python code runs on librdkafka's threads.
"""
from __future__ import annotations

import ctypes
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException

from . import _batch_kernel as kernel
from ._librdkafka import MSG, RD_KAFKA_CONSUMER, TP, api, err_text, new_handle

__all__ = ["NativeConsumer", "ErrorEvent", "tune_malloc"]

_EVENT_LOG = 0x4  # RD_KAFKA_EVENT_LOG
# syslog level -> logging level (as confluent-kafka maps them)
_LEVELS = (logging.CRITICAL, logging.CRITICAL, logging.CRITICAL, logging.ERROR, logging.WARNING,
           logging.INFO, logging.INFO, logging.DEBUG)


@dataclass(frozen=True)
class ErrorEvent:
    """A message librdkafka returned with ``err`` set.

    ``offset`` is the message's offset (the high watermark for end-of-partition), None when
    negative; ``topic`` is None for client-level errors.
    """

    error: KafkaError
    offset: int | None
    topic: str | None


class _MdPartition(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int32), ("err", ctypes.c_int), ("leader", ctypes.c_int32),
                ("replica_cnt", ctypes.c_int), ("replicas", ctypes.c_void_p),
                ("isr_cnt", ctypes.c_int), ("isrs", ctypes.c_void_p)]


class _MdTopic(ctypes.Structure):
    _fields_ = [("topic", ctypes.c_char_p), ("partition_cnt", ctypes.c_int),
                ("partitions", ctypes.POINTER(_MdPartition)), ("err", ctypes.c_int)]


class _Metadata(ctypes.Structure):
    _fields_ = [("broker_cnt", ctypes.c_int), ("brokers", ctypes.c_void_p),
                ("topic_cnt", ctypes.c_int), ("topics", ctypes.POINTER(_MdTopic)),
                ("orig_broker_id", ctypes.c_int32), ("orig_broker_name", ctypes.c_char_p)]


#: glibc's own ceilings for its dynamic thresholds on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX and
#: twice it) and a cap on its per-thread arenas: see :func:`tune_malloc`.
_MMAP_THRESHOLD = 32 << 20
_TRIM_THRESHOLD = 64 << 20
_ARENA_MAX = 2
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_MALLOC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES")
_tuned_pid = 0


def tune_malloc() -> bool:
    """Keep glibc from handing librdkafka's freed buffers back to the kernel (once per process).

    librdkafka's threads allocate every fetched record and its decompressed batch, each thread
    in an arena of its own; the reader frees them. With glibc's defaults, memory freed at the top
    of a heap is returned to the kernel (``M_TRIM_THRESHOLD``) and batches of a few MB are
    ``mmap``-ed and unmapped one by one (``M_MMAP_THRESHOLD``), so the next fetch page-faults it
    all back in: about 100,000 page faults and half of the consume step's CPU per million records
    (measured: 1M order records, lz4, process CPU 0.44 -> 0.26 s, of which kernel 0.20 -> 0.04 s).
    The thresholds are set to the ceilings glibc's dynamic tuning may reach by itself (32 MB,
    64 MB), at once and for good, and new threads share at most two arenas (``M_ARENA_MAX``),
    so what is kept is one working set, not one per consumer thread: a worker that read 200k
    records four times held 277 MB, as much as its peak with the defaults (276 MB; 331 MB with
    the thresholds alone). A process whose environment tunes malloc itself (``MALLOC_*`` or
    ``GLIBC_TUNABLES``) is left alone, as is any libc other than glibc. Returns whether it tuned.
    """
    global _tuned_pid
    import os
    import platform
    import sys

    if _tuned_pid == os.getpid():
        return False
    _tuned_pid = os.getpid()
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    if any(k in os.environ for k in _MALLOC_ENV):
        return False
    try:
        libc = ctypes.CDLL(None)
        return all([libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) == 1,
                    libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1,
                    libc.mallopt(_M_ARENA_MAX, _ARENA_MAX) == 1])
    except (OSError, AttributeError):
        return False


def _raise(code: int, what: str) -> None:
    raise KafkaException(KafkaError(code, f"{what}: {err_text(code)}"))


class NativeConsumer:
    """A consumer handle, its consumer queue and its log queue.

    Parameters
    ----------
    conf : mapping of str to str
        librdkafka settings (``log.queue`` is set here).
    logger : logging.Logger
        Where librdkafka's logs go.
    capacity : int
        Most messages one :meth:`consume` window holds (the batch size).

    Raises
    ------
    ConfigError
        librdkafka refused a setting.
    """

    def __init__(self, conf: Mapping[str, str], logger: logging.Logger, capacity: int):
        self._lib = lib = api()
        self._log = logger
        tune_malloc()
        self._rk = new_handle(RD_KAFKA_CONSUMER, {**conf, "log.queue": "true"}, events=_EVENT_LOG)
        self._name = (lib.name(self._rk) or b"").decode("utf-8", "replace")
        self._logq = lib.queue_new(self._rk)
        lib.set_log_queue(self._rk, self._logq)
        lib.poll_set_consumer(self._rk)  # client errors come with the messages
        self._cq = lib.queue_get_consumer(self._rk)
        self._q = self._cq  # the queue read: the current partition's
        self._parts: dict[tuple[str, int], int] = {}  # partition -> its queue
        self.ptrs = np.zeros(max(capacity, 1), np.int64)
        self.lo = self.hi = 0

    # ------------------------------------------------------------------ set-up and look-ups

    def assign(self, topic: str, partition: int, offset: int) -> None:
        """Assign ``topic``/``partition`` from ``offset`` (re-positioning it when it is assigned
        already; the other partitions are left as they are) and read it from now on."""
        if (topic, partition) in self._parts:
            self.remove(topic, partition)
        q = self._lib.queue_get_partition(self._rk, topic.encode(), partition)
        if not q:
            _raise(KafkaError._UNKNOWN_PARTITION, f"no queue for {topic} [{partition}]")
        # before the partition is assigned: librdkafka then never forwards it to the consumer
        # queue (RD_KAFKA_Q_F_FWD_APP); asked again on every assignment, in case the partition's
        # state was replaced (a topic recreated)
        self._lib.queue_forward(q, None)
        self._parts[(topic, partition)] = q
        self._change("incremental_assign", topic, partition, offset, f"assigning at offset {offset}")
        self.use(topic, partition)

    def know(self, topics: list[str], timeout_s: float) -> None:
        """Ask the metadata of ``topics`` now, so partitions assigned later start fetching at
        once. Only a warm-up: it stops at the first failure (an unreachable broker is reported
        by the read itself, classified and within its own timeout)."""
        for t in topics:
            try:
                self.partitions(t, timeout_s)
            except KafkaException:
                return

    def add(self, topic: str, partition: int, offset: int) -> None:
        """Assign a partition that is read later (it fetches ahead meanwhile)."""
        q = self._q
        self.assign(topic, partition, offset)
        self._q = q

    def use(self, topic: str, partition: int) -> None:
        """Read ``topic``/``partition`` (assigned) from now on; the window must be empty."""
        self._q = self._parts[(topic, partition)]

    def remove(self, topic: str, partition: int) -> None:
        """Unassign a partition: its fetching stops and what it queued is dropped."""
        q = self._parts.pop((topic, partition), None)
        if q is None:
            return
        if self._q == q:
            self._q = self._cq
        try:
            self._change("incremental_unassign", topic, partition, -1001, "unassigning")
        finally:
            self._lib.queue_destroy(q)

    def _change(self, call: str, topic: str, partition: int, offset: int, what: str) -> None:
        lib = self._lib
        tpl = lib.topic_partition_list_new(1)
        try:
            tp = lib.topic_partition_list_add(tpl, topic.encode(), partition)
            ctypes.c_int64.from_address(tp + TP.offset).value = offset
            err = getattr(lib, call)(self._rk, tpl)
        finally:
            lib.topic_partition_list_destroy(tpl)
        self.drain_logs()
        if err:
            try:
                code = lib.error_code(err)
                text = (lib.error_string(err) or b"").decode("utf-8", "replace")
            finally:
                lib.error_destroy(err)
            raise KafkaException(KafkaError(code, f"{what} {topic} [{partition}]: {text}"))

    def watermarks(self, topic: str, partition: int, timeout_s: float) -> tuple[int, int]:
        """``(low, high)`` asked from the partition's leader; :class:`KafkaException` on error."""
        lo, hi = ctypes.c_int64(), ctypes.c_int64()
        err = self._lib.query_watermark_offsets(self._rk, topic.encode(), partition, ctypes.byref(lo),
                                                ctypes.byref(hi), max(int(timeout_s * 1000), 1))
        self.drain_logs()
        if err:
            _raise(err, f"listing offsets of {topic} [{partition}]")
        return lo.value, hi.value

    def partitions(self, topic: str, timeout_s: float) -> tuple[int, list[int]]:
        """A fresh metadata answer for ``topic``: its error code (0 for none) and partition ids.
        :class:`KafkaException` when no answer came."""
        lib = self._lib
        rkt = lib.topic_new(self._rk, topic.encode(), None)
        md = ctypes.c_void_p()
        try:
            err = lib.metadata(self._rk, 0, rkt, ctypes.byref(md), max(int(timeout_s * 1000), 1))
        finally:
            lib.topic_destroy(rkt)
        self.drain_logs()
        if err:
            _raise(err, f"metadata of topic {topic}")
        try:
            m = _Metadata.from_address(md.value or 0)
            for i in range(m.topic_cnt):
                t = m.topics[i]
                if (t.topic or b"").decode("utf-8", "replace") == topic:
                    return t.err, sorted(t.partitions[j].id for j in range(t.partition_cnt))
            return KafkaError.UNKNOWN_TOPIC_OR_PART, []
        finally:
            lib.metadata_destroy(md)

    # ------------------------------------------------------------------ the window

    def consume(self, want: int, timeout_s: float) -> int:
        """Append up to ``want`` messages to the window within ``timeout_s``; how many came."""
        want = min(want, len(self.ptrs) - self.hi)
        got = 0
        if self._q != self._cq:  # client-level errors, without waiting
            got = self._batch(self._cq, 0, want)
        if got < want:
            got += self._batch(self._q, max(int(timeout_s * 1000), 0), want - got)
        self.drain_logs()
        return got

    def _batch(self, q: int, timeout_ms: int, want: int) -> int:
        got = self._lib.consume_batch_queue(q, timeout_ms, self.ptrs.ctypes.data + 8 * self.hi, want)
        if got < 0:
            _raise(KafkaError._FAIL, "rd_kafka_consume_batch_queue failed")
        self.hi += got
        return got

    def count(self) -> int:
        return self.hi - self.lo

    def first_error(self, start: int | None = None) -> int:
        """Index of the first error message in the window (from ``start``), else ``hi``."""
        return kernel.first_error(self.ptrs, self.lo if start is None else start, self.hi)

    def last_offset(self) -> int:
        return ctypes.c_int64.from_address(int(self.ptrs[self.hi - 1]) + MSG.offset).value

    def take_records(self, upto: int, end: int, topic: str, partition: int,
                     schema: pa.Schema) -> tuple[list[pa.RecordBatch], int]:
        """Batches of the records ``ptrs[lo:upto]`` below offset ``end`` (see
        :func:`~connector.kafka._batch_kernel.take_records`); they leave the window."""
        lo = self.lo
        self.lo = upto  # taken even if building fails: take_records destroys them
        try:
            return kernel.take_records(self.ptrs, lo, upto, end, topic, partition, schema)
        finally:
            self._settle()

    def take_error(self) -> ErrorEvent:
        """The error message at ``lo``, read and destroyed."""
        p = int(self.ptrs[self.lo])
        try:
            code = ctypes.c_int32.from_address(p + MSG.err).value
            rkt = ctypes.c_void_p.from_address(p + MSG.rkt).value
            topic = (self._lib.topic_name(rkt) or b"").decode("utf-8", "replace") if rkt else None
            offset = ctypes.c_int64.from_address(p + MSG.offset).value
            text = (self._lib.message_errstr(p) or b"").decode("utf-8", "replace")
        finally:
            kernel.destroy(self.ptrs, self.lo, self.lo + 1)
            self.lo += 1
            self._settle()
        return ErrorEvent(KafkaError(code, text), offset if offset >= 0 else None, topic)

    def discard(self) -> None:
        """Destroy every message still in the window."""
        if self.hi > self.lo:
            kernel.destroy(self.ptrs, self.lo, self.hi)
        self.lo = self.hi = 0

    def _settle(self) -> None:
        if self.lo >= self.hi:
            self.lo = self.hi = 0

    # ------------------------------------------------------------------ logs and closing

    def drain_logs(self) -> None:
        """Re-log what librdkafka queued on the caller's logger."""
        lib = self._lib
        while True:
            ev = lib.queue_poll(self._logq, 0)
            if not ev:
                return
            try:
                fac, text, level = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
                if lib.event_log(ev, ctypes.byref(fac), ctypes.byref(text), ctypes.byref(level)) == 0:
                    self._log.log(_LEVELS[min(max(level.value, 0), 7)], "%s [%s] %s",
                                  (fac.value or b"").decode("utf-8", "replace"), self._name,
                                  (text.value or b"").decode("utf-8", "replace"))
            finally:
                lib.event_destroy(ev)

    def close(self) -> None:
        """Destroy held messages, close the consumer and free the handle (idempotent)."""
        if not self._rk:
            return
        lib = self._lib
        try:
            self.discard()
            for q in self._parts.values():
                lib.queue_destroy(q)
            self._parts.clear()
            lib.consumer_close(self._rk)
            self.drain_logs()
        finally:
            lib.queue_destroy(self._cq)
            lib.set_log_queue(self._rk, None)
            lib.queue_destroy(self._logq)
            lib.destroy(self._rk)
            self._rk = 0
