"""Driver-side offset discovery, like Spark's ``KafkaOffsetReader``."""
from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from registry import redact_servers, redact_text

from connector.errors import ConfigError, KafkaReadError

from ._conf import bootstrap_without_credentials, redact_conf
from ._offsets import EARLIEST, LATEST, STRATEGY_LATEST, OffsetKind, OffsetSpec
from ._transient import GONE_CODES, error_text, is_transient

__all__ = ["KafkaOffsetReader", "apply_timestamp_results"]

_log = logging.getLogger(__name__)

TP = tuple[str, int]
T = TypeVar("T")

#: Spark's ``fetchOffset.numRetries`` and ``fetchOffset.retryIntervalMs`` defaults.
DEFAULT_NUM_RETRIES = 3
DEFAULT_RETRY_INTERVAL_S = 1.0


class _Retry(Exception):
    """One attempt of a look-up failed with a transient error (internal to this module)."""

    def __init__(self, err: KafkaError, where: str = ""):
        super().__init__(err.str())
        self.err, self.where = err, where


class _Stop(_Retry):
    """One attempt of a look-up failed with an error no retry can fix (internal)."""

#: An attempt that lasted this share of its time budget waited it out (it counts as one of
#: ``fetchOffset.numRetries``); one that failed sooner was refused at once and does not.
_WAITED = 0.9

#: Default isolation level: only committed transactional records are read (and the "latest"
#: offset is the last stable offset, since ListOffsets honours the consumer's isolation level).
DEFAULT_ISOLATION_LEVEL = "read_committed"
#: ListOffsets timestamp asking for the record with the largest timestamp (KIP-734, Kafka 3.0).
MAX_TIMESTAMP = -3


def apply_timestamp_results(requested: Mapping[TP, int], found: Mapping[TP, int], *,
                            is_ending: bool, strategy: str,
                            latest: Mapping[TP, int] | None = None) -> dict[TP, int]:
    """Turn ``offsets_for_times`` answers into offsets, Spark's way.

    Parameters
    ----------
    requested : mapping of (topic, partition) to int
        Timestamps asked for.
    found : mapping of (topic, partition) to int
        Offsets the broker returned; a negative value means no record has a timestamp at or
        after the requested one.
    is_ending : bool
        Unmatched ending timestamps resolve to latest (Spark).
    strategy : str
        For starting timestamps: ``error`` raises, ``latest`` uses the latest offset.
    latest : mapping, optional
        Latest offsets, needed when an unmatched partition resolves to latest; when absent,
        :data:`LATEST` (-1) is returned for such partitions.

    Raises
    ------
    KafkaReadError
        A starting timestamp matches no record and the strategy is ``error``.
    """
    out: dict[TP, int] = {}
    for tp, ts in requested.items():
        off = found.get(tp, -1)
        if off is None or off < 0:
            if not is_ending and strategy != STRATEGY_LATEST:
                raise KafkaReadError(
                    f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and "
                    f"timestamp {ts}. Set the option 'startingOffsetsByTimestampStrategy' to "
                    "'latest' to start from the latest offset in that case.")
            off = latest[tp] if latest is not None else LATEST
        out[tp] = off
    return out


class KafkaOffsetReader:
    """Discover partitions and resolve offsets on the driver.

    Parameters
    ----------
    conf : dict
        librdkafka settings (from :func:`kafka_conf_from_options`). ``group.id`` defaults to a
        throwaway ``asyncapi-kafka-<uuid>-driver``; no group is ever joined.
    timeout_s : float
        Bound on each look-up (metadata, ListOffsets), its retries included
        (``fetchOffset.timeoutMs``).
    num_retries : int
        Retries of a look-up that failed with a transient error (a leader moved, a broker
        restarting, a request timed out), like Spark's ``fetchOffset.numRetries``. Metadata is
        refreshed before each retry.
    retry_interval_s : float
        Wait before each retry (Spark's ``fetchOffset.retryIntervalMs``).
    isolation_level : str
        ``read_committed`` (default) or ``read_uncommitted``.

    Examples
    --------
    >>> from connector.kafka import KafkaOffsetReader
    >>> from connector.testing import EmbeddedKafka
    >>> with EmbeddedKafka() as kafka:                                  # doctest: +SKIP
    ...     kafka.produce("events", b"v", partition=0); kafka.flush()
    ...     with KafkaOffsetReader({"bootstrap.servers": kafka.bootstrap_servers}) as r:
    ...         tps = r.partitions_for(["events"])
    ...         r.latest(tps)[("events", 0)]
    1
    """

    def __init__(self, conf: Mapping[str, str], *, timeout_s: float = 30.0,
                 isolation_level: str | None = None, group_prefix: str = "asyncapi-kafka",
                 num_retries: int = DEFAULT_NUM_RETRIES,
                 retry_interval_s: float = DEFAULT_RETRY_INTERVAL_S):
        c = dict(conf)
        if c.get("bootstrap.servers"):
            c["bootstrap.servers"] = bootstrap_without_credentials(str(c["bootstrap.servers"]),
                                                                   "the Kafka bootstrap servers")
        self._bootstrap = str(c.get("bootstrap.servers", ""))
        c.setdefault("group.id", f"{group_prefix}-{uuid.uuid4()}-driver")
        c["enable.auto.commit"] = "false"
        c["enable.partition.eof"] = "false"
        iso = isolation_level or c.get("isolation.level") or DEFAULT_ISOLATION_LEVEL
        if iso not in ("read_committed", "read_uncommitted"):
            raise ConfigError(f"isolation level must be read_committed or read_uncommitted, "
                              f"got {iso!r}")
        c["isolation.level"] = iso
        # A missing topic must stay missing: never let a metadata request create it.
        c.setdefault("allow.auto.create.topics", "false")
        self.timeout_s = float(timeout_s)
        if num_retries < 0 or retry_interval_s < 0:
            raise ConfigError("num_retries and retry_interval_s must not be negative")
        self.num_retries = int(num_retries)
        self.retry_interval_s = float(retry_interval_s)
        self.isolation_level = iso
        self.group_id = c["group.id"]  # throwaway (never committed to) unless the user set one
        try:
            self._consumer = Consumer(c, logger=_log)
        except KafkaException as e:
            raise ConfigError(f"invalid Kafka configuration: {redact_text(e.args[0].str())}") from e
        self._closed = False

    def __repr__(self) -> str:
        return f"KafkaOffsetReader(bootstrap.servers={redact_servers(self._bootstrap)!r})"

    def __enter__(self) -> KafkaOffsetReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the consumer (idempotent)."""
        if not self._closed:
            self._closed = True
            try:
                self._consumer.close()
            except (KafkaException, RuntimeError):
                _log.debug("ignoring error while closing the driver consumer", exc_info=True)

    def _fail(self, what: str, err: object, *, tries: int, began: float, why: str,
              where: str = "") -> KafkaReadError:
        elapsed = time.monotonic() - began
        attempts = f"{tries} attempt{'' if tries == 1 else 's'} in {elapsed:.1f}s"
        limits = (f"fetchOffset.numRetries={self.num_retries}, "
                  f"fetchOffset.retryIntervalMs={round(self.retry_interval_s * 1000)}, "
                  f"fetchOffset.timeoutMs={round(self.timeout_s * 1000)}")
        # Both the list and librdkafka's text may echo ``user:password@`` from the address.
        return KafkaReadError(f"{what} failed against Kafka bootstrap servers "
                              f"{redact_servers(self._bootstrap)}: {why} after {attempts} ({limits}); "
                              f"last error{' on ' + where if where else ''}: {redact_text(error_text(err))}")

    def _retrying(self, what: str, attempt: Callable[[float], T], topics: Callable[[], Iterable[str]]) -> T:
        """Run ``attempt(timeout_s)`` until it returns, retrying transient errors.

        Between tries the metadata of ``topics()`` is refreshed (a moved leader is learnt from
        it) and the reader waits ``retry_interval_s``. Everything happens within ``timeout_s``
        of the first attempt (``fetchOffset.timeoutMs``). ``num_retries`` keeps Spark's meaning:
        it bounds the attempts that *waited out their time* and still failed (each of Spark's
        attempts blocks up to the consumer's timeout, so an outage shorter than that fits in
        one). An attempt librdkafka fails at once (a refused connection to a leader that is
        down, a stale leader) does not count: the look-up keeps trying until the broker is back
        or the time is up, so a 10 s outage is ridden out wherever in it the look-up starts.
        Each attempt gets its share of the time left (:meth:`_attempt_timeout`).
        """
        began = time.monotonic()
        deadline = began + self.timeout_s
        tries = waited = 0
        while True:
            tries += 1
            budget = self._attempt_timeout(deadline, waited + 1)
            started = time.monotonic()
            try:
                return attempt(budget)
            except KafkaException as e:
                err = e.args[0] if e.args else e
                if not (isinstance(err, KafkaError) and is_transient(err)):
                    raise self._fail(what, err, tries=tries, began=began, why="not retriable") from e
                last, where = err, ""
            except _Stop as s:
                raise self._fail(what, s.err, tries=tries, began=began, where=s.where,
                                 why="not retriable") from None
            except _Retry as r:
                last, where = r.err, r.where
            now = time.monotonic()
            if now - started >= _WAITED * budget:
                waited += 1
            if waited > self.num_retries:
                raise self._fail(what, last, tries=tries, began=began, where=where,
                                 why=f"still failing with retriable errors ({waited} attempts timed out)")
            if now + self.retry_interval_s >= deadline:
                raise self._fail(what, last, tries=tries, began=began, where=where,
                                 why="out of time (fetchOffset.timeoutMs)")
            _log.info("%s: %s%s (attempt %d, %d of %d allowed timed out); refreshing metadata and retrying "
                      "in %gs", what, last.str(), f" on {where}" if where else "", tries, waited,
                      self.num_retries + 1, self.retry_interval_s)
            time.sleep(self.retry_interval_s)
            self._refresh(topics(), deadline)

    def _attempt_timeout(self, deadline: float, tries: int) -> float:
        """The time one attempt may take: an even share of what is left after the waits between
        the attempts still allowed (at least 1 s), so a request stuck on a broker that just went
        down cannot use up ``fetchOffset.timeoutMs`` before a retry asks the partition's new
        leader. When no retry would fit after this attempt (a wait and 1 s more), it takes all."""
        remaining = max(deadline - time.monotonic(), 0.001)
        left = self.num_retries + 2 - tries  # this attempt and the ones after it
        room = remaining - self.retry_interval_s - 1.0  # what this attempt may take and still leave a retry
        if left <= 1 or room < 1.0:
            return remaining
        share = (remaining - (left - 1) * self.retry_interval_s) / left
        return min(max(share, 1.0), room)

    def _refresh(self, topics: Iterable[str], deadline: float) -> None:
        # A metadata answer updates librdkafka's leader cache; failures here show up in the
        # next attempt, which is what gets reported.
        for topic in sorted(set(topics)):
            try:
                self._consumer.list_topics(topic, timeout=max(deadline - time.monotonic(), 0.001))
            except KafkaException as e:
                _log.debug("metadata refresh of %s failed: %s", topic, e)

    def _metadata(self, topic: str | None = None):
        def attempt(timeout: float):
            if topic is None:
                return self._consumer.list_topics(timeout=timeout)
            md = self._consumer.list_topics(topic, timeout=timeout)
            tmeta = md.topics.get(topic)
            if tmeta is not None and tmeta.error is not None and not tmeta.partitions \
                    and is_transient(tmeta.error):
                raise _Retry(tmeta.error, topic)  # e.g. LEADER_NOT_AVAILABLE while it is created
            return md

        return self._retrying("fetching topic metadata", attempt, lambda: [topic] if topic else [])

    def partitions_for(self, topics: Sequence[str] | str | None = (), pattern: str | None = None
                       ) -> list[TP]:
        """Sorted ``(topic, partition)`` pairs of the named topics or of the topics matching
        ``pattern`` (a full-match regex, like Spark's ``subscribePattern``).

        Raises
        ------
        KafkaReadError
            A named topic does not exist (the message lists existing topics), or the brokers
            cannot be reached within the timeout.
        """
        topics = [topics] if isinstance(topics, str) else list(topics or ())
        if not topics and pattern is None:
            raise ConfigError("name topics or a topic pattern to read")
        md = self._metadata()
        existing = md.topics
        names: list[str] = []
        if pattern is not None:
            try:
                rx = re.compile(pattern)
            except re.error as e:
                raise ConfigError(f"invalid topic pattern {pattern!r}: {e}") from e
            names.extend(t for t in existing if not t.startswith("__") and rx.fullmatch(t))
        missing = [t for t in topics if t not in existing]
        if missing:
            shown = sorted(t for t in existing if not t.startswith("__"))
            more = f" and {len(shown) - 50} more" if len(shown) > 50 else ""
            raise KafkaReadError(f"Topics not found: {missing}. Existing topics at "
                                 f"{self._bootstrap}: {shown[:50]}{more}")
        names.extend(topics)
        out: set[TP] = set()
        for name in sorted(set(names)):
            tmeta = existing[name]
            if tmeta.error is not None or not tmeta.partitions:
                # The full listing may be stale or partial; ask for this topic alone. Safe:
                # the topic is known to exist, so no auto-creation can happen.
                tmeta = self._metadata(name).topics.get(name)
                if tmeta is None or tmeta.error is not None and not tmeta.partitions:
                    err = tmeta.error.str() if tmeta is not None else "no metadata"
                    raise KafkaReadError(f"Cannot read metadata of topic {name}: {err}")
            out.update((name, p) for p in tmeta.partitions)
        return sorted(out)

    def _missing(self, tps: Iterable[TP], timeout: float) -> list[TP]:
        """Partitions of ``tps`` a fresh metadata answer does not list (deleted topics or
        partitions); an unanswered request lists none, so the caller retries."""
        gone: list[TP] = []
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        for topic, parts in sorted(by_topic.items()):
            try:
                tmeta = self._consumer.list_topics(topic, timeout=timeout).topics.get(topic)
            except KafkaException:
                continue
            known = set(tmeta.partitions) if tmeta is not None else set()
            if tmeta is not None and tmeta.error is not None and not known \
                    and tmeta.error.code() not in GONE_CODES:
                continue  # no answer about this topic's partitions
            gone.extend((topic, p) for p in parts if p not in known)
        return sorted(gone)

    def _list_offsets(self, tps: Iterable[TP], values: Mapping[TP, int] | int,
                      what: str) -> dict[TP, int]:
        """One ListOffsets look-up over ``tps``: transient errors are retried for the
        partitions that hit them (see :meth:`_retrying`); a partition a fresh metadata answer
        no longer lists fails at once."""
        tps = list(tps)
        if not tps:
            return {}
        out: dict[TP, int] = {}
        todo = list(tps)

        def attempt(timeout: float) -> dict[TP, int]:
            req = [TopicPartition(t, p, values if isinstance(values, int) else values[(t, p)])
                   for t, p in todo]
            try:
                res = self._consumer.offsets_for_times(req, timeout=timeout)
            except KafkaException as e:
                err = e.args[0] if e.args else None
                if isinstance(err, KafkaError) and err.code() in GONE_CODES:
                    self._fail_if_gone(what, todo, timeout, err)
                    raise _Retry(err) from e
                raise
            retry: list[tuple[TP, KafkaError]] = []
            for r in res:
                tp = (r.topic, r.partition)
                if r.error is None:
                    out[tp] = r.offset
                elif is_transient(r.error) or r.error.code() in GONE_CODES:
                    retry.append((tp, r.error))
                else:
                    raise _Stop(r.error, f"{r.topic}-{r.partition}")
            gone_codes = [e for _, e in retry if e.code() in GONE_CODES]
            if gone_codes:
                self._fail_if_gone(what, [tp for tp, e in retry if e.code() in GONE_CODES], timeout,
                                   gone_codes[0])
            todo[:] = [tp for tp, _ in retry]
            if retry:
                (t, p), err = retry[0]
                raise _Retry(err, f"{t}-{p}" + (f" and {len(retry) - 1} more partition(s)"
                                                if len(retry) > 1 else ""))
            return out

        return self._retrying(what, attempt, lambda: [t for t, _ in todo])

    def _fail_if_gone(self, what: str, tps: Sequence[TP], timeout: float, err: KafkaError) -> None:
        gone = self._missing(tps, timeout)
        if gone:
            raise KafkaReadError(f"{what} failed: topic partition(s) "
                                 f"{', '.join(f'{t}-{p}' for t, p in gone)} do not exist any more "
                                 f"(a fresh metadata answer does not list them): {err.str()}")

    def earliest(self, tps: Iterable[TP]) -> dict[TP, int]:
        """Log start offset of each partition."""
        return self._list_offsets(tps, EARLIEST, "listing earliest offsets")

    def latest(self, tps: Iterable[TP]) -> dict[TP, int]:
        """End offset of each partition: the high watermark with ``read_uncommitted``, the last
        stable offset with ``read_committed`` (ListOffsets honours the isolation level)."""
        return self._list_offsets(tps, LATEST, "listing latest offsets")

    def by_timestamp(self, tps: Iterable[TP], timestamps: Mapping[TP, int] | int, *,
                     is_ending: bool = False, strategy: str = "error",
                     symbolic_latest: bool = False) -> dict[TP, int]:
        """Earliest offset whose timestamp is >= the one given, per partition.

        Partitions with no such record resolve per :func:`apply_timestamp_results`; with
        ``symbolic_latest`` those that resolve to latest are returned as :data:`LATEST` (-1)
        instead of today's latest offset (a streaming start must stay restart-safe).
        """
        tps = list(tps)
        req = {tp: (timestamps if isinstance(timestamps, int) else timestamps[tp]) for tp in tps}
        found = self._list_offsets(tps, req, "looking up offsets by timestamp")
        need_latest = [tp for tp in tps if found.get(tp, -1) < 0]
        latest = None if symbolic_latest else (self.latest(need_latest) if need_latest else {})
        return apply_timestamp_results(req, found, is_ending=is_ending, strategy=strategy,
                                       latest=latest)

    def first_offsets_at(self, tps: Iterable[TP], timestamp_ms: int) -> dict[TP, int | None]:
        """Where a read of the records at or after ``timestamp_ms`` may start, per partition.

        ``startingOffsetsByTimestamp`` with strategy ``latest`` (:meth:`by_timestamp`): the
        broker's earliest offset whose timestamp is >= the one given, else the latest offset
        (nothing to read). Every record before that offset is earlier, timestamps in order or
        not, so a read from there misses none. A broker that cannot look timestamps up (the
        librdkafka mock cluster answers "no match" for every time) is caught where it also
        finds no largest timestamp (ListOffsets ``MAX_TIMESTAMP``) in a non-empty partition:
        such partitions get None (start where the read would start anyway).
        """
        tps = sorted(tps)
        found = self._list_offsets(tps, timestamp_ms, "looking up offsets by timestamp")
        unmatched = [tp for tp in tps if found.get(tp, -1) < 0]
        out: dict[TP, int | None] = dict(apply_timestamp_results(
            {tp: timestamp_ms for tp in tps}, found, is_ending=False, strategy=STRATEGY_LATEST,
            latest=self.latest(unmatched) if unmatched else {}))
        if unmatched:
            low = self.earliest(unmatched)
            try:
                largest = self._list_offsets(unmatched, MAX_TIMESTAMP, "looking up the largest timestamp")
            except KafkaReadError:  # a broker before Kafka 3.0: its "no match" cannot be checked
                largest = {}
            for tp in unmatched:
                latest = out[tp]
                if largest.get(tp, -1) < 0 and latest is not None and latest > low[tp]:
                    out[tp] = None
        return out

    def resolve(self, spec: OffsetSpec, tps: Sequence[TP]) -> dict[TP, int]:
        """Concrete offsets for ``spec`` over ``tps`` (all partitions to read).

        Raises
        ------
        ConfigError
            Per-partition JSON does not name exactly the partitions being read (Spark's rule).
        """
        tps = sorted(tps)
        if spec.kind is OffsetKind.EARLIEST:
            return self.earliest(tps)
        if spec.kind is OffsetKind.LATEST:
            return self.latest(tps)
        if spec.kind is OffsetKind.TIMESTAMP:
            return self.by_timestamp(tps, int(spec.timestamp or 0), is_ending=spec.is_ending,
                                     strategy=spec.strategy)
        given = spec.as_dict()
        if set(given) != set(tps):
            opt = ("ending" if spec.is_ending else "starting") + (
                "Offsets" if spec.kind is OffsetKind.OFFSETS else "OffsetsByTimestamp")
            raise ConfigError(
                f"If {opt} contains specific offsets, you must specify all TopicPartitions. "
                "Use -1 for latest, -2 for earliest.\n"
                f"Specified: {sorted(given)} Assigned: {tps}")
        if spec.kind is OffsetKind.TIMESTAMPS:
            return self.by_timestamp(tps, given, is_ending=spec.is_ending,
                                     strategy=spec.strategy)
        early = self.earliest([tp for tp in tps if given[tp] == EARLIEST])
        late = self.latest([tp for tp in tps if given[tp] == LATEST])
        return {tp: early.get(tp, late.get(tp, given[tp])) for tp in tps}

    def describe(self) -> dict[str, object]:
        """Redacted view of the configuration (for logs)."""
        return redact_conf({"bootstrap.servers": self._bootstrap,
                            "isolation.level": self.isolation_level})
