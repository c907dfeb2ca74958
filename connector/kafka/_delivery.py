"""Every record's delivery report, counted: the sink's proof that nothing was lost silently.

librdkafka reports each produced record once (``rd_kafka_event_message_array`` on the
producer's main queue). A report is one of:

=============================  ==============================================================
report                         what the producer does
=============================  ==============================================================
acknowledged, with an offset   counted; nothing else (read by a compiled loop, no Python
                               object per record)
failed (``err`` set)           counted and kept (the first few, for the error message): the
                               task fails with :class:`~connector.errors.DeliveryError`
acknowledged *without* an      an *implicit* acknowledgement: the idempotent producer saw a
offset                         later batch of the partition succeed while this one was being
                               retried, and took that as proof this one was written (a broker
                               that checks sequence numbers refuses a batch whose predecessor
                               is missing, with ``OUT_OF_ORDER_SEQUENCE_NUMBER``). A broker
                               that does not check them (the librdkafka mock cluster for
                               non-transactional producers) appends the later batch and the
                               earlier record is lost with a successful report. At-least-once
                               writes send such records again (a duplicate, never a loss);
                               transactional writes trust the broker, which checks sequences
                               for transactional producers (the mock cluster too)
=============================  ==============================================================

When librdkafka holds nothing more, ``queued == acknowledged + failed + unconfirmed``: a
record that never got a report fails the task instead of passing unnoticed.
"""
from __future__ import annotations

import ctypes
import dataclasses

import numpy as np

__all__ = ["Deliveries", "Unconfirmed", "MAX_RESENDS"]

_ERR_MSG_TIMED_OUT = -192
#: Times one record is sent again after acknowledgements without an offset before the task fails.
MAX_RESENDS = 5
#: The opaque of a record is its row; a resend adds its attempt count above this bit.
ATTEMPT_SHIFT = 48


@dataclasses.dataclass(frozen=True)
class Unconfirmed:
    """A record acknowledged without an offset, copied out of its report to be sent again."""

    topic: str
    partition: int
    value: bytes | None
    key: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int          # ms, CreateTime
    opaque: int             # row | attempt << ATTEMPT_SHIFT

    @property
    def attempt(self) -> int:
        return self.opaque >> ATTEMPT_SHIFT


class Deliveries:
    """Counts of one task's delivery reports (see the module docstring).

    Parameters
    ----------
    lib
        :func:`connector.kafka._librdkafka.api`.
    resend : bool
        Keep records acknowledged without an offset for sending again (at-least-once); False
        accepts them (transactional producers, whose sequence numbers every broker checks).
    """

    def __init__(self, lib, resend: bool):
        self._lib = lib
        self.resend = resend
        self._ptrs = np.zeros(1024, np.int64)
        self._odd = np.zeros(1024, np.int64)
        self.reset()

    def reset(self) -> None:
        self.queued = 0          # records handed to librdkafka (resends included)
        self.acked = 0           # acknowledged with an offset
        self.unconfirmed = 0     # acknowledged without one (resent, or accepted)
        self.resent = 0
        self.failed_count = 0
        self.failures: list[tuple[str, int | None, str]] = []
        self.codes: set[int] = set()  # librdkafka's error codes of the failed reports
        self.pending: list[Unconfirmed] = []
        self.gave_up = 0         # records acknowledged without an offset MAX_RESENDS times

    @property
    def reported(self) -> int:
        return self.acked + self.failed_count + self.unconfirmed

    def on_event(self, ev: int) -> None:
        """Count the reports of one delivery-report event (before it is destroyed)."""
        from connector.kafka._produce_kernel import scan_reports

        lib = self._lib
        n = int(lib.event_message_count(ev))
        if n > len(self._ptrs):
            self._ptrs = np.zeros(n, np.int64)
            self._odd = np.zeros(n, np.int64)
        n = int(lib.event_message_array(ev, self._ptrs.ctypes.data, n))
        ok = scan_reports(self._ptrs, n, self._odd)
        self.acked += ok
        for i in self._odd[:n - ok]:
            self._odd_report(int(self._ptrs[i]))

    def _odd_report(self, m: int) -> None:
        from connector.kafka._librdkafka import MSG, err_text

        err = ctypes.c_int32.from_address(m + MSG.err).value
        if err == 0:
            self.unconfirmed += 1
            if self.resend:
                rec = _copy(self._lib, m)
                if rec.attempt >= MAX_RESENDS:
                    self.gave_up += 1
                    self._fail(rec.topic, rec.partition, f"acknowledged without an offset {MAX_RESENDS + 1} "
                               "times (the broker may not check idempotent sequence numbers)")
                else:
                    self.pending.append(rec)
            return
        self.failed_count += 1
        self.codes.add(err)
        if len(self.failures) < 10:
            rkt = ctypes.c_void_p.from_address(m + MSG.rkt).value
            topic = (self._lib.topic_name(rkt) or b"?").decode("utf-8", "replace") if rkt else "?"
            part = ctypes.c_int32.from_address(m + MSG.partition).value
            text = err_text(err)
            if err == _ERR_MSG_TIMED_OUT:
                text += " (not delivered within delivery.timeout.ms, retries included)"
            self.failures.append((topic, part if part >= 0 else None, text))

    def _fail(self, topic: str, partition: int | None, text: str) -> None:
        self.failed_count += 1
        if len(self.failures) < 10:
            self.failures.append((topic, partition, text))

    def take_pending(self) -> list[Unconfirmed]:
        out, self.pending = self.pending, []
        return out


def _copy(lib, m: int) -> Unconfirmed:
    """The record of report ``m`` as Python values (the report is destroyed with its event)."""
    from connector.kafka._librdkafka import MSG

    rkt = ctypes.c_void_p.from_address(m + MSG.rkt).value
    topic = (lib.topic_name(rkt) or b"").decode("utf-8", "replace") if rkt else ""
    part = ctypes.c_int32.from_address(m + MSG.partition).value
    value = _bytes(m + MSG.payload, m + MSG.len)
    key = _bytes(m + MSG.key, m + MSG.key_len)
    hdrs = ctypes.c_void_p()
    headers: list[tuple[str, bytes | None]] = []
    if lib.message_headers(m, ctypes.byref(hdrs)) == 0 and hdrs.value:
        name, val, size = ctypes.c_char_p(), ctypes.c_void_p(), ctypes.c_size_t()
        for i in range(int(lib.header_cnt(hdrs.value))):
            if lib.header_get_all(hdrs.value, i, ctypes.byref(name), ctypes.byref(val), ctypes.byref(size)) == 0:
                headers.append(((name.value or b"").decode("utf-8", "replace"),
                                ctypes.string_at(val.value, size.value) if val.value else None))
    tstype = ctypes.c_int()
    ts = int(lib.message_timestamp(m, ctypes.byref(tstype)))
    opaque = ctypes.c_int64.from_address(m + MSG.private).value
    return Unconfirmed(topic, part, value, key, tuple(headers), ts if ts >= 0 else 0, opaque)


def _bytes(ptr_at: int, len_at: int) -> bytes | None:
    ptr = ctypes.c_void_p.from_address(ptr_at).value
    if not ptr:
        return None
    return ctypes.string_at(ptr, ctypes.c_size_t.from_address(len_at).value)
