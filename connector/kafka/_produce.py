"""Producing whole Arrow batches to Kafka with every delivery checked (the sink's executor side).

Delivery contract (what :meth:`BatchProducer.produce` / :meth:`BatchProducer.finish` guarantee):

* the producer is idempotent (``enable.idempotence=true``, hence ``acks=all``): librdkafka's
  internal retries never duplicate or reorder a partition's records;
* every record's delivery report is counted (:mod:`connector.kafka._delivery`, a compiled loop
  over each event's reports): :meth:`BatchProducer.finish` flushes until the queue is empty and
  raises :class:`~connector.errors.DeliveryError` if any record failed (naming topic, partition
  and the broker's error), a fatal producer error was seen, or a record got no report at all.
  A record acknowledged *without* an offset (librdkafka's implicit acknowledgement, which a
  broker that skips sequence checks turns into a silent loss) is sent again;
* a record larger than ``message.max.bytes`` is refused before anything of its batch is queued.

A task that fails after some of its records were delivered is retried by Spark and writes them
again: at-least-once, as Spark's own Kafka sink.

The producer is a librdkafka handle of its own (:mod:`connector.kafka._librdkafka`, the very
library confluent-kafka loaded), not a confluent-kafka ``Producer``: a batch is handed over by
one compiled loop (:mod:`connector.kafka._produce_kernel`) reading the Arrow buffers, with no
Python call per record. Delivery failures, errors and librdkafka's logs arrive as events on the
handle's main queue, read by the task's own thread between batches (no callback from
librdkafka's threads); logs go to the ``asyncapi_kafka`` logger.
"""
from __future__ import annotations

import ctypes
import dataclasses
import logging
import os
import threading
import time
import weakref
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.errors import DeliveryError, MessageTooLargeError

__all__ = [
    "DEFAULT_MESSAGE_MAX_BYTES",
    "HEADER_TYPE",
    "OWNED_PRODUCER_SETTINGS",
    "BatchProducer",
    "Headers",
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
    "delivery.report.only.error": "the sink counts every record's delivery report",
    "transactional.id": "set by the sink for each task with deliveryGuarantee=exactly-once "
                        "(transactionalIdPrefix names them)",
    "key.serializer": "keys are written from the 'key' column (bytes, string, or encoded with "
                      "the document's key schema)",
    "value.serializer": "values are encoded and framed by the sink from the document's schema",
    "interceptor.classes": "interceptors are not supported by the sink",
    "log.queue": "the sink reads librdkafka's logs from the producer's queue and sends them to "
                 "the 'asyncapi_kafka' logger",
}

_OWNED_VALUES = {"enable.idempotence": True, "acks": "all", "delivery.report.only.error": False,
                 "log.queue": True}

#: The ``headers`` column's type: one list of (name, value) per record.
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

# One header costs its name, its value and about 2 varints; a record batch adds ~70 bytes.
_RECORD_OVERHEAD = 100

# librdkafka constants (rd_kafka.h)
_EV_DR, _EV_LOG, _EV_ERROR = 0x1, 0x4, 0x8
_ERR_FATAL, _ERR_QUEUE_FULL = -150, -184
# rd_kafka_vu_t types and a record's flags (rd_kafka.h), for records sent again one by one
_VT_RKT, _VT_PARTITION, _VT_VALUE, _VT_KEY, _VT_OPAQUE, _VT_MSGFLAGS, _VT_TIMESTAMP, _VT_HEADER = 2, 3, 4, 5, 6, 7, 8, 9
_MSG_F_COPY = 2
VU_WORDS_RESEND = 9  # int64 words per rd_kafka_vu_t (as _produce_kernel.VU_WORDS)
_PURGE_QUEUE, _PURGE_INFLIGHT, _PURGE_NON_BLOCKING = 0x1, 0x2, 0x4
_FLUSH_SLICE_MS = 100   # finish() looks at the queue at least this often
_ROOM_WAIT_MS = 10      # queue full: wait this long for an event before trying again
_BATCH_WINDOW = 10_000  # records per rd_kafka_produce_batch call

_EMPTY_U8 = np.zeros(0, np.uint8)
_EMPTY_I32 = np.zeros(0, np.int32)
_EMPTY_I64 = np.zeros(0, np.int64)
_ONE_BYTE = np.zeros(1, np.uint8)  # a non-NULL address for empty keys and values


@dataclasses.dataclass(frozen=True)
class Headers:
    """Record headers of a batch: ``rows`` (:data:`HEADER_TYPE`, one list per record, null or
    empty for none) followed, on every record, by the ``common`` (name, value) pairs (the
    framing's schema-id headers)."""

    rows: pa.Array | None = None
    common: tuple[tuple[str, bytes], ...] = ()

    @classmethod
    def of(cls, headers) -> Headers | None:
        """Headers from this class, an Arrow list array, or per-record lists of (name, value)."""
        if headers is None or isinstance(headers, Headers):
            return headers
        if isinstance(headers, pa.ChunkedArray):
            headers = headers.combine_chunks()
        if isinstance(headers, pa.Array):
            return cls(rows=headers)
        rows = [None if not r else [{"key": k, "value": v.encode() if isinstance(v, str) else v} for k, v in r]
                for r in headers]
        return cls(rows=pa.array(rows, HEADER_TYPE))

    def check_names(self, topic_of) -> None:
        """Refuse a header name holding NUL: librdkafka takes names NUL-terminated and would cut
        it (:class:`HeaderNameError` naming the record and its topic)."""
        from connector.errors import HeaderNameError

        for name, _ in self.common:
            if "\x00" in name:
                raise HeaderNameError(f"header name {name!r} holds a NUL character, which Kafka clients "
                                      "built on librdkafka cannot send")
        if self.rows is None:
            return
        flat = self.rows.flatten()
        if not len(flat):
            return
        bad = pc.fill_null(pc.match_substring(flat.field("key"), "\x00"), False)
        if not pc.any(bad).as_py():
            return
        entry = pc.index(bad, True).as_py()
        counts = pc.fill_null(pc.list_value_length(self.rows), 0).to_numpy(zero_copy_only=False)
        row = int(np.searchsorted(np.cumsum(counts), entry, side="right"))
        raise HeaderNameError(
            f"record {row} of the batch for topic {topic_of(row)!r} has header name "
            f"{flat.field('key')[entry].as_py()!r}, which holds a NUL character: librdkafka takes header "
            "names NUL-terminated and would cut it, so nothing of the batch was sent")

    def sizes(self, n: int) -> pa.Array | int | None:
        """Each record's header bytes (name, value and ~4 bytes of lengths per header)."""
        size = sum(len(k) + len(v) + 4 for k, v in self.common)
        if self.rows is None:
            return size or None
        flat = self.rows.flatten()
        if not len(flat):
            return size or None
        k, v = flat.flatten()
        per = pc.add(pc.fill_null(pc.binary_length(k), 0), pc.fill_null(pc.binary_length(v), 0))
        counts = pc.fill_null(pc.list_value_length(self.rows), 0).to_numpy(zero_copy_only=False)
        ends = np.cumsum(counts)
        cums = np.concatenate([[0], np.cumsum(per.to_numpy(zero_copy_only=False) + 4)])
        return pa.array(cums[ends] - cums[ends - counts] + size)


class BatchProducer:
    """One librdkafka producer plus the failed deliveries it reported, reused by a worker.

    Not thread-safe: a Python worker runs one task at a time.
    """

    def __init__(self, conf: Mapping[str, object], *, resend_unconfirmed: bool = True):
        from connector.kafka import _librdkafka as rdk
        from connector.kafka._delivery import Deliveries

        full = dict(conf)
        full.update(_OWNED_VALUES)
        self._lib = lib = rdk.api()
        self._rk = rk = rdk.new_handle(rdk.RD_KAFKA_PRODUCER, full, events=_EV_DR | _EV_ERROR | _EV_LOG)
        lib.set_log_queue(rk, None)  # logs to the main queue, read as events
        self._q = lib.queue_get_main(rk)
        self._topics: dict[str, int] = {}
        self._finalizer = weakref.finalize(self, _destroy, lib, rk, self._q, self._topics, os.getpid())
        self._vus = np.zeros(0, np.int64)
        self._msgs = np.zeros(0, np.int64)  # rd_kafka_message_t scratch of produce_batch_rows
        self._failed = np.zeros(0, np.int64)
        self.max_bytes = int(str(conf.get("message.max.bytes") or DEFAULT_MESSAGE_MAX_BYTES))
        self.reports = Deliveries(lib, resend_unconfirmed)
        self.fatal: str | None = None
        self.broken = False

    # -- events ------------------------------------------------------------------------------

    def _serve(self, timeout_ms: int = 0) -> None:
        """Read every event waiting on the main queue (waiting up to ``timeout_ms`` for one)."""
        lib = self._lib
        ev = lib.queue_poll(self._q, timeout_ms)
        while ev:
            try:
                kind = lib.event_type(ev)
                if kind == _EV_DR:
                    self.reports.on_event(ev)
                elif kind == _EV_ERROR:
                    self._on_error(ev)
                elif kind == _EV_LOG:
                    self._on_log(ev)
            finally:
                lib.event_destroy(ev)
            ev = lib.queue_poll(self._q, 0)

    def _on_error(self, ev: int) -> None:
        text = (self._lib.event_error_string(ev) or b"").decode("utf-8", "replace")
        if self._lib.event_error_is_fatal(ev):
            self.fatal = self._fatal_text() or text
        else:  # transient (broker down, reconnecting): the delivery reports decide
            log.debug("kafka producer: %s", text)

    def _fatal_text(self) -> str:
        buf = ctypes.create_string_buffer(512)
        self._lib.fatal_error(self._rk, buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def _on_log(self, ev: int) -> None:
        fac, text, level = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
        if self._lib.event_log(ev, ctypes.byref(fac), ctypes.byref(text), ctypes.byref(level)) == 0:
            log.log(_log_level(level.value), "librdkafka %s: %s", (fac.value or b"").decode("utf-8", "replace"),
                    (text.value or b"").decode("utf-8", "replace"))

    # -- the contract --------------------------------------------------------------------------

    def reset(self) -> None:
        self.reports.reset()
        self.fatal = None

    @property
    def failures(self) -> list[tuple[str, int | None, str]]:
        return self.reports.failures

    @property
    def failed_count(self) -> int:
        return self.reports.failed_count

    def check(self) -> None:
        """Raise :class:`DeliveryError` if any record failed so far (called between batches)."""
        if self.reports.failed_count or self.fatal:
            self.broken = True
            where = _describe_failures(self.reports.failures)
            fatal = f"fatal producer error: {self.fatal}. " if self.fatal else ""
            then = ("The task fails so that Spark retries it (records already delivered are written again: "
                    "at-least-once)" if self.reports.resend else "The transaction is aborted and the task fails so "
                    "that Spark retries it: nothing of it is visible to read_committed readers")
            raise DeliveryError(
                f"{fatal}{self.reports.failed_count} record(s) were not delivered ({where or 'no detail'}). {then}",
                failures=tuple(self.reports.failures))

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

    def produce(self, topics, values, keys=None, partitions=None, headers=None) -> int:
        """Queue one batch of records (already encoded and framed); returns how many.

        Parameters
        ----------
        topics
            One topic name, or one per record (an Arrow string array or a list).
        values, keys
            Arrow binary (or string) arrays, or lists of bytes; a null is a null value (a
            tombstone) or a null key. ``keys`` None: no keys.
        partitions
            One partition per record (Arrow, numpy or list; null or -1: the partitioner), or None.
        headers
            :class:`Headers`, an Arrow array of :data:`HEADER_TYPE`, per-record lists of
            (name, value), or None.

        Serves failure reports as it goes and raises as soon as one record failed.
        """
        from connector.kafka._produce_kernel import FIXED_VUS, VU_WORDS, produce_rows

        self._alive()
        values = _binary(values)
        n = len(values)
        if n == 0:
            return 0
        rkts, tix, topic_of = self._topic_handles(topics, n)
        parts = _partitions(partitions, n)
        vbits, voff_bit, voff, vdata = _buffers(values)
        if keys is not None:
            keys = _binary(keys)
            kbits, koff_bit, koff, kdata = _buffers(keys)
        else:
            kbits, koff_bit, koff, kdata = _EMPTY_U8, 0, _EMPTY_I32, 0
        headers = Headers.of(headers)
        if headers is not None:
            headers.check_names(topic_of)
        if len(rkts) == 1 and (headers is None or (headers.rows is None and not headers.common)):
            self._produce_batch(int(rkts[0]), n, parts, vbits, voff_bit, voff, vdata, kbits, koff_bit, koff,
                                kdata, topic_of)
            self.reports.queued += n
            self._serve(0)
            self._resend()
            self.check()
            return n
        hrow, hname, hval, hlen, lo, hi, most, keep = _header_entries(headers)
        need = VU_WORDS * (FIXED_VUS + most)
        if len(self._vus) < need:
            self._vus = np.zeros(need, np.int64)
        # read-only views throughout: one compiled signature whatever the batch's shape
        rkts, tix, parts, vbits, voff, kbits, koff, hrow, hname, hval, hlen = (
            _ro(a) for a in (rkts, tix, parts, vbits, voff, kbits, koff, hrow, hname, hval, hlen))
        row = 0
        while True:
            row, code = produce_rows(self._rk, row, n, rkts, tix, parts, vbits, voff_bit, voff, vdata,
                                     kbits, koff_bit, koff, kdata, hrow, hname, hval, hlen, lo, hi,
                                     self._vus, _ONE_BYTE.ctypes.data)
            if code == 0:
                break
            from connector.kafka._produce_kernel import ERR_QUEUE_FULL

            if code == ERR_QUEUE_FULL:
                # The local queue is full (queue.buffering.max.messages/kbytes): serve events until
                # librdkafka has room, failing fast if deliveries are failing.
                self._serve(_ROOM_WAIT_MS)
                self.check()
                continue
            self.broken = True
            part = int(parts[row]) if len(parts) and parts[row] != -1 else "any"
            raise DeliveryError(f"producing record {row} to topic {topic_of(row)!r} partition {part} "
                                f"failed: {self._code_text(code)}")
        del keep
        self.reports.queued += n
        self._serve(0)
        self._resend()
        self.check()
        return n

    def _resend(self) -> None:
        """Queue again the records acknowledged without an offset (see
        :mod:`connector.kafka._delivery`), each with its topic, partition, key, headers and
        timestamp, and its attempt count in its opaque."""
        pending = self.reports.take_pending()
        if not pending:
            return
        from connector.kafka._delivery import ATTEMPT_SHIFT

        log.warning("kafka producer: %d record(s) were acknowledged without an offset (an implicit "
                    "acknowledgement after a retried request); sending them again", len(pending))
        lib = self._lib
        for rec in pending:
            keep = [rec.value, rec.key] + [b for _, b in rec.headers]
            names = [ctypes.create_string_buffer(k.encode()) for k, _ in rec.headers]
            vus = np.zeros(VU_WORDS_RESEND * (7 + len(rec.headers)), np.int64)
            k = 0
            for vtype, w1, w2, w3 in (
                    (_VT_RKT, self._topic(rec.topic), 0, 0), (_VT_PARTITION, rec.partition, 0, 0),
                    (_VT_VALUE, _addr(rec.value), len(rec.value or b""), 0),
                    (_VT_KEY, _addr(rec.key), len(rec.key or b""), 0),
                    (_VT_MSGFLAGS, _MSG_F_COPY, 0, 0), (_VT_TIMESTAMP, rec.timestamp, 0, 0),
                    (_VT_OPAQUE, (rec.opaque & ((1 << ATTEMPT_SHIFT) - 1)) | ((rec.attempt + 1) << ATTEMPT_SHIFT),
                     0, 0),
                    *((_VT_HEADER, ctypes.addressof(nm), _addr(v), len(v) if v is not None else 0)
                      for nm, (_, v) in zip(names, rec.headers))):
                vus[k * VU_WORDS_RESEND:k * VU_WORDS_RESEND + 4] = (vtype, w1, w2, w3)
                k += 1
            while True:
                err = lib.produceva(self._rk, vus.ctypes.data, k)
                if not err:
                    break
                code = lib.error_code(err)
                lib.error_destroy(err)
                if code != _ERR_QUEUE_FULL:
                    self.broken = True
                    raise DeliveryError(f"sending again a record of topic {rec.topic!r} partition {rec.partition} "
                                        f"failed: {self._code_text(code)}")
                self._serve(_ROOM_WAIT_MS)
            del keep, names
            self.reports.queued += 1
            self.reports.resent += 1

    def _produce_batch(self, rkt: int, n: int, parts, vbits, voff_bit, voff, vdata, kbits, koff_bit, koff,
                       kdata, topic_of) -> None:
        """One topic, no headers: windows of records per ``rd_kafka_produce_batch`` call
        (:func:`~connector.kafka._produce_kernel.produce_batch_rows`), about a third less of the
        task's CPU per record than one ``rd_kafka_produceva`` each. Records the full local queue
        refused are queued again, in their order, once events were served."""
        from connector.kafka._produce_kernel import ERR_QUEUE_FULL, MSG_WORDS, produce_batch_rows

        window = min(n, _BATCH_WINDOW)
        if len(self._failed) < window:
            self._msgs = np.zeros(MSG_WORDS * window, np.int64)
            self._failed = np.zeros(window, np.int64)
        parts, vbits, voff, kbits, koff = (_ro(a) for a in (parts, vbits, voff, kbits, koff))
        rows, j, m = _EMPTY_I64, 0, n
        while True:
            j, code, k, bad = produce_batch_rows(rkt, j, m, _ro(rows), parts, vbits, voff_bit, voff, vdata, kbits,
                                                 koff_bit, koff, kdata, self._msgs, _ONE_BYTE.ctypes.data,
                                                 self._failed)
            if code == 0:
                return
            if code != ERR_QUEUE_FULL:
                self.broken = True
                part = int(parts[bad]) if len(parts) and parts[bad] != -1 else "any"
                raise DeliveryError(f"producing record {bad} to topic {topic_of(bad)!r} partition {part} "
                                    f"failed: {self._code_text(code)}")
            # The local queue is full (queue.buffering.max.messages/kbytes): serve events until
            # librdkafka has room (failing fast if deliveries are failing), then the refused
            # records, then the rest.
            rest = rows[j:] if len(rows) else np.arange(j, m, dtype=np.int64)
            rows, j = np.concatenate([self._failed[:k], rest]), 0
            m = len(rows)
            self._serve(_ROOM_WAIT_MS)
            self.check()

    def _alive(self) -> None:
        if not self._finalizer.alive:
            raise DeliveryError("this producer was closed (after a failure, or by its pool); take a new one "
                                "from producer_for()")

    def _code_text(self, code: int) -> str:
        """A refused produce call's error; in the fatal state librdkafka answers with the fatal
        error's own code (or ``_FATAL``), so the fatal state is asked for, not inferred."""
        from connector.kafka._librdkafka import err_text

        buf = ctypes.create_string_buffer(512)
        if self._lib.fatal_error(self._rk, buf, len(buf)) or code == _ERR_FATAL:
            return f"fatal producer error: {buf.value.decode('utf-8', 'replace') or err_text(code)}"
        return err_text(code)

    def _topic_handles(self, topics, n: int):
        """(topic handles, each row's index into them or empty, row → topic name)."""
        if isinstance(topics, str):
            return np.array([self._topic(topics)], np.int64), _EMPTY_I32, lambda i: topics
        arr = topics if isinstance(topics, pa.Array) else pa.array(list(topics), pa.string())
        if len(arr) != n:
            raise ValueError(f"{len(arr)} topics for {n} records")
        enc = pc.dictionary_encode(arr)
        names = enc.dictionary.to_pylist()
        rkts = np.array([self._topic(t) for t in names], np.int64)
        tix = _EMPTY_I32 if len(names) == 1 else enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)

        def topic_of(i: int) -> str:
            return arr[i].as_py()
        return rkts, tix, topic_of

    def _topic(self, name: str) -> int:
        rkt = self._topics.get(name)
        if rkt is None:
            rkt = self._lib.topic_new(self._rk, name.encode(), None)
            if not rkt:
                raise DeliveryError(f"librdkafka refused topic {name!r} (an invalid topic name?)")
            self._topics[name] = rkt
        return rkt

    def know(self, topic: str, timeout_s: float) -> None:
        """Ask ``topic``'s metadata now (blocking). A transactional producer needs it before its
        first ``rd_kafka_produce_batch``: without it librdkafka queues the records on the
        unassigned partition and registers *that* (-1) with the transaction, which the
        coordinator refuses forever (``UNKNOWN_TOPIC_OR_PART``), so nothing is sent until the
        records time out."""
        self._alive()
        md = ctypes.c_void_p()
        err = self._lib.metadata(self._rk, 0, self._topic(topic), ctypes.byref(md), max(int(timeout_s * 1000), 1))
        if md.value:
            self._lib.metadata_destroy(md)
        if err:
            raise DeliveryError(f"no metadata for topic {topic!r} within {timeout_s:g}s: {self._code_text(err)}")

    def queued(self) -> int:
        """Records (and events) librdkafka still holds: queued, in flight or unreported."""
        self._alive()
        return int(self._lib.outq_len(self._rk))

    def finish(self, timeout_s: float | None = None) -> None:
        """Wait for every queued record's delivery report; raise if any failed.

        Without ``timeout_s`` this waits as long as librdkafka may retry
        (``delivery.timeout.ms``, default 300 s): every record then either is delivered or
        reports a failure, so nothing is silently lost.
        """
        self._alive()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        wait = 0
        while True:
            self._serve(wait)  # returns at the first report, after serving all that wait
            self._resend()
            self.check()
            left = self.queued()
            if left == 0:
                self._check_accounted()
                return
            # rd_kafka_flush(0) only makes the broker threads send now, whatever linger.ms says: a
            # blocking flush would wait for the delivery-report events this loop has to serve (in
            # event mode librdkafka counts a record until its report is destroyed)
            self._lib.flush(self._rk, 0)
            wait = _FLUSH_SLICE_MS
            if deadline is not None and time.monotonic() > deadline:
                self.broken = True
                raise DeliveryError(f"{left} record(s) still undelivered after {timeout_s:g}s")

    def _check_accounted(self) -> None:
        """Every record queued got exactly one report (librdkafka holds nothing more)."""
        r = self.reports
        if r.reported != r.queued:
            self.broken = True
            raise DeliveryError(f"{r.queued} record(s) were queued but {r.reported} delivery report(s) came "
                                f"({r.acked} acknowledged, {r.failed_count} failed, {r.unconfirmed} without an "
                                "offset): the producer cannot vouch for the others")

    def abandon(self) -> None:
        """Drop what is still queued (after a failure) so it is not sent after the task failed."""
        self.broken = True
        if not self._finalizer.alive:
            return
        try:
            self._lib.purge(self._rk, _PURGE_QUEUE)
            self._serve(0)
        except Exception:  # noqa: BLE001 - best effort: the producer is thrown away anyway
            pass

    def close(self) -> None:
        """Destroy the librdkafka handle (what is still queued or in flight is purged)."""
        self.broken = True
        self._finalizer()


def _addr(b: bytes | None) -> int:
    """Address of ``b``'s bytes (0 for None; a valid address for empty bytes); ``b`` must be
    kept alive while the address is used."""
    if b is None:
        return 0
    if not b:
        return _ONE_BYTE.ctypes.data
    return ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value or 0


def _destroy(lib, rk: int, q: int, topics: dict[str, int], pid: int) -> None:
    if os.getpid() != pid:  # a forked child: the handle's threads live in the parent only
        return
    lib.purge(rk, _PURGE_QUEUE | _PURGE_INFLIGHT | _PURGE_NON_BLOCKING)
    ev = lib.queue_poll(q, 0)
    while ev:
        lib.event_destroy(ev)
        ev = lib.queue_poll(q, 0)
    lib.queue_destroy(q)
    for rkt in topics.values():
        lib.topic_destroy(rkt)
    topics.clear()
    lib.destroy(rk)


def _log_level(syslog_level: int) -> int:
    # librdkafka logs with syslog levels; its errors are mostly transient connection trouble
    # (the delivery reports decide), hence at most a warning.
    if syslog_level <= 4:
        return logging.WARNING
    return logging.INFO if syslog_level <= 6 else logging.DEBUG


def _ro(a: np.ndarray) -> np.ndarray:
    """A read-only view (numba compiles read-only and writable arrays as different types)."""
    v = a.view()
    v.flags.writeable = False
    return v


def _binary(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not isinstance(arr, pa.Array):
        return pa.array(arr, pa.binary())
    if pa.types.is_string(arr.type):
        return arr.cast(pa.binary())
    if pa.types.is_large_string(arr.type):
        return arr.cast(pa.large_binary())
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise TypeError(f"records must be binary, got {arr.type}")
    return arr


def _buffers(arr: pa.Array):
    """(validity bitmap or empty, its bit offset, offsets of the array's rows, data address)."""
    n = len(arr)
    validity, offsets, data = arr.buffers()[:3]
    dtype = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    if offsets is None:
        offs = np.zeros(n + 1, dtype)
    else:
        offs = np.frombuffer(offsets, dtype, count=n + 1, offset=arr.offset * np.dtype(dtype).itemsize)
    bits = np.frombuffer(validity, np.uint8) if arr.null_count and validity is not None else _EMPTY_U8
    return bits, arr.offset, offs, (data.address if data is not None else 0)


def _partitions(partitions, n: int) -> np.ndarray:
    if partitions is None:
        return _EMPTY_I32
    if isinstance(partitions, np.ndarray):
        out = partitions.astype(np.int32, copy=False)
    else:
        arr = partitions if isinstance(partitions, (pa.Array, pa.ChunkedArray)) else pa.array(partitions, pa.int32())
        out = pc.fill_null(arr.cast(pa.int32()), -1).to_numpy(zero_copy_only=False)
    if len(out) != n:
        raise ValueError(f"{len(out)} partitions for {n} records")
    return np.ascontiguousarray(out, np.int32)


def _header_entries(headers: Headers | None):
    """The kernel's header arrays: (row → entries offsets or empty, name addresses, value
    addresses, value lengths, first and end index of the common entries, most entries of a
    record, buffers to keep alive while the kernel runs)."""
    if headers is None or (headers.rows is None and not headers.common):
        return _EMPTY_I64, _EMPTY_I64, _EMPTY_I64, _EMPTY_I64, 0, 0, 0, None
    from connector.kafka._produce_kernel import c_strings

    rows = headers.rows
    if rows is not None:
        flat = rows.flatten()
        names, vals = flat.flatten() if len(flat) else (pa.array([], pa.string()), pa.array([], pa.binary()))
        counts = pc.fill_null(pc.list_value_length(rows), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        hrow = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        most = int(counts.max()) if len(counts) else 0
    else:
        names, vals, hrow, most = pa.array([], pa.string()), pa.array([], pa.binary()), _EMPTY_I64, 0
    lo = len(names)
    names = pa.concat_arrays([pc.fill_null(names.cast(pa.string()), ""),
                              pa.array([k for k, _ in headers.common], pa.string())])
    vals = pa.concat_arrays([_binary(vals).cast(pa.binary()), pa.array([v for _, v in headers.common], pa.binary())])
    hi = len(names)
    nbits, noff_bit, noffs, ndata = _buffers(names.cast(pa.binary()))
    data = np.frombuffer(names.buffers()[2], np.uint8) if ndata else _EMPTY_U8
    cbuf, starts = c_strings(_ro(noffs.astype(np.int64)), _ro(data))
    hname = cbuf.ctypes.data + starts
    vbits, vbit_off, voffs, vdata = _buffers(vals)
    valid = pc.is_valid(vals).to_numpy(zero_copy_only=False)
    starts_v = voffs[:-1].astype(np.int64) + vdata if vdata else np.full(hi, _ONE_BYTE.ctypes.data, np.int64)
    hval = np.where(valid, starts_v, 0).astype(np.int64)  # 0: a null value
    hlen = np.where(valid, np.diff(voffs), 0).astype(np.int64)
    return hrow, hname.astype(np.int64), hval, hlen, lo, hi, most + len(headers.common), (cbuf, names, vals)


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


_POOL: dict[tuple, BatchProducer] = {}
_POOL_PID: list[int] = [os.getpid()]
_POOL_LOCK = threading.Lock()


def producer_for(conf: Mapping[str, object]) -> BatchProducer:
    """The worker process's producer for ``conf`` (created once, reused across tasks, as
    Spark's ``CachedKafkaProducer``); a producer that saw a failure is replaced."""
    key = tuple(sorted((str(k), str(v)) for k, v in conf.items()))
    with _POOL_LOCK:
        if _POOL_PID[0] != os.getpid():  # forked: the parent's producers are not ours (nor closed here)
            _POOL.clear()
            _POOL_PID[0] = os.getpid()
        bp = _POOL.get(key)
        if bp is not None and bp.broken:
            _POOL.pop(key, None)
            bp.close()
            bp = None
        if bp is None:
            bp = _POOL[key] = BatchProducer(conf)
        bp.reset()
        return bp
