"""Driver-side offset discovery, like Spark's ``KafkaOffsetReader``."""
from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from registry import redact_servers, redact_text

from connector.errors import ConfigError, KafkaReadError

from ._conf import bootstrap_without_credentials, redact_conf
from ._offsets import EARLIEST, LATEST, STRATEGY_LATEST, OffsetSpec

__all__ = ["KafkaOffsetReader", "apply_timestamp_results"]

_log = logging.getLogger(__name__)

TP = tuple[str, int]

#: Default isolation level: only committed transactional records are read (and the "latest"
#: offset is the last stable offset, since ListOffsets honours the consumer's isolation level).
DEFAULT_ISOLATION_LEVEL = "read_committed"


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
        Bound on each metadata/ListOffsets request.
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
                 isolation_level: str | None = None, group_prefix: str = "asyncapi-kafka"):
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

    def _fail(self, what: str, e: KafkaException) -> KafkaReadError:
        err = e.args[0] if e.args else e
        text = err.str() if isinstance(err, KafkaError) else str(err)
        # Both the list and librdkafka's text may echo ``user:password@`` from the address.
        return KafkaReadError(f"{what} failed against Kafka bootstrap servers "
                              f"{redact_servers(self._bootstrap)} within {self.timeout_s:g}s: "
                              f"{redact_text(text)}")

    def _metadata(self, topic: str | None = None):
        try:
            if topic is None:
                return self._consumer.list_topics(timeout=self.timeout_s)
            return self._consumer.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as e:
            raise self._fail("fetching topic metadata", e) from e

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

    def _list_offsets(self, tps: Iterable[TP], values: Mapping[TP, int] | int,
                      what: str) -> dict[TP, int]:
        tps = list(tps)
        if not tps:
            return {}
        req = [TopicPartition(t, p, values if isinstance(values, int) else values[(t, p)])
               for t, p in tps]
        try:
            res = self._consumer.offsets_for_times(req, timeout=self.timeout_s)
        except KafkaException as e:
            raise self._fail(what, e) from e
        out: dict[TP, int] = {}
        for r in res:
            if r.error is not None:
                raise KafkaReadError(f"{what} failed for {r.topic}-{r.partition}: "
                                     f"{r.error.str()}")
            out[(r.topic, r.partition)] = r.offset
        return out

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

    def resolve(self, spec: OffsetSpec, tps: Sequence[TP]) -> dict[TP, int]:
        """Concrete offsets for ``spec`` over ``tps`` (all partitions to read).

        Raises
        ------
        ConfigError
            Per-partition JSON does not name exactly the partitions being read (Spark's rule).
        """
        tps = sorted(tps)
        if spec.kind == "earliest":
            return self.earliest(tps)
        if spec.kind == "latest":
            return self.latest(tps)
        if spec.kind == "timestamp":
            return self.by_timestamp(tps, int(spec.timestamp or 0), is_ending=spec.is_ending,
                                     strategy=spec.strategy)
        given = spec.as_dict()
        if set(given) != set(tps):
            opt = ("ending" if spec.is_ending else "starting") + (
                "Offsets" if spec.kind == "offsets" else "OffsetsByTimestamp")
            raise ConfigError(
                f"If {opt} contains specific offsets, you must specify all TopicPartitions. "
                "Use -1 for latest, -2 for earliest.\n"
                f"Specified: {sorted(given)} Assigned: {tps}")
        if spec.kind == "timestamps":
            return self.by_timestamp(tps, given, is_ending=spec.is_ending,
                                     strategy=spec.strategy)
        if spec.kind != "offsets":
            raise ConfigError(f"unknown offset spec kind {spec.kind!r}")
        early = self.earliest([tp for tp in tps if given[tp] == EARLIEST])
        late = self.latest([tp for tp in tps if given[tp] == LATEST])
        return {tp: early.get(tp, late.get(tp, given[tp])) for tp in tps}

    def describe(self) -> dict[str, object]:
        """Redacted view of the configuration (for logs)."""
        return redact_conf({"bootstrap.servers": self._bootstrap,
                            "isolation.level": self.isolation_level})
