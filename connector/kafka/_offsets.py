"""Offset options with the names, JSON format and rules of Spark's Kafka source.

=====================================  ==============================================
option                                 value
=====================================  ==============================================
``startingOffsets`` / ``endingOffsets``  ``earliest``, ``latest`` or JSON
                                       ``{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}``
                                       (-2 = earliest, -1 = latest)
``startingTimestamp`` / ``endingTimestamp``  one timestamp (ms since epoch) for every partition
``startingOffsetsByTimestamp`` /       JSON ``{"topicA":{"0":1700000000000}}``
``endingOffsetsByTimestamp``
``startingOffsetsByTimestampStrategy``   ``error`` (default) or ``latest``: what to do when no
                                       record has a timestamp at or after the one asked for
=====================================  ==============================================

Which option wins when several are set (Spark's precedence: global timestamp > by-timestamp JSON >
offsets) is the option parser's rule (:mod:`connector.options`); this module parses one option.
"""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass

from connector.errors import ConfigError

__all__ = ["OffsetSpec", "OffsetKind", "parse_offsets_option", "check_batch_start",
           "EARLIEST", "LATEST", "STRATEGY_ERROR", "STRATEGY_LATEST"]

#: Sentinels in per-partition offset JSON (Kafka's ListOffsets values).
EARLIEST = -2
LATEST = -1
STRATEGY_ERROR = "error"
STRATEGY_LATEST = "latest"

_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TS_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000}}'


class OffsetKind(str, enum.Enum):
    """The closed set of offset specs (Spark's Kafka source options)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSETS = "offsets"          # per partition, -2/-1 allowed
    TIMESTAMP = "timestamp"      # one timestamp for every partition
    TIMESTAMPS = "timestamps"    # per partition


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends, before it is resolved against the brokers: a sealed type,
    each :class:`OffsetKind` carrying exactly its data (checked at construction).

    Attributes
    ----------
    kind : OffsetKind
    values : tuple of (str, int, int)
        ``(topic, partition, offset_or_timestamp)`` for ``offsets``/``timestamps``, sorted.
    timestamp : int or None
        The global timestamp (ms) for ``timestamp``.
    strategy : str
        ``"error"`` or ``"latest"``: starting offsets when no record matches a timestamp.
    is_ending : bool
        Whether this is an ending spec (unmatched ending timestamps resolve to latest).
    """

    kind: OffsetKind
    values: tuple[tuple[str, int, int], ...] = ()
    timestamp: int | None = None
    strategy: str = STRATEGY_ERROR
    is_ending: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.kind, OffsetKind):
            raise TypeError(f"OffsetSpec.kind must be an OffsetKind, got {self.kind!r}")
        per_partition = self.kind in (OffsetKind.OFFSETS, OffsetKind.TIMESTAMPS)
        if bool(self.values) != per_partition or (self.timestamp is not None) != (self.kind is OffsetKind.TIMESTAMP):
            raise ValueError(f"an OffsetSpec of kind {self.kind.value} carries "
                             f"{'per-partition values' if per_partition else 'a timestamp' if self.kind is OffsetKind.TIMESTAMP else 'nothing'}")

    def as_dict(self) -> dict[tuple[str, int], int]:
        """``values`` as a ``{(topic, partition): value}`` dict."""
        return {(t, p): v for t, p, v in self.values}


def _short(value: str) -> str:
    return value if len(value) <= 200 else value[:200] + "..."


def _parse_partition_json(name: str, value: str, example: str) -> tuple[tuple[str, int, int], ...]:
    bad = ConfigError(f"Invalid value for option '{name}': expected e.g. {example}, "
                      f"got {_short(value)}")
    try:
        data = json.loads(value)
    except ValueError as e:
        raise bad from e
    if not isinstance(data, dict) or not data:
        raise bad
    out = []
    for topic, parts in data.items():
        if not isinstance(parts, dict) or not topic:
            raise bad
        for part, num in parts.items():
            try:
                p = int(part)
            except (TypeError, ValueError) as e:
                raise bad from e
            if p < 0 or isinstance(num, bool) or not isinstance(num, int):
                raise bad
            out.append((topic, p, num))
    return tuple(sorted(out))


def _parse_long(name: str, value: str) -> int:
    try:
        ts = int(str(value).strip())
    except ValueError as e:
        raise ConfigError(f"Invalid value for option '{name}': expected a timestamp in "
                          f"milliseconds since the epoch, got {_short(str(value))}") from e
    if ts < 0:
        raise ConfigError(f"Invalid value for option '{name}': timestamp must be >= 0, got {ts}")
    return ts


def parse_strategy(value: str | None) -> str:
    """Parse ``startingOffsetsByTimestampStrategy`` (case-insensitive)."""
    if value is None:
        return STRATEGY_ERROR
    v = str(value).strip().lower()
    if v not in (STRATEGY_ERROR, STRATEGY_LATEST):
        raise ConfigError("Invalid value for option 'startingOffsetsByTimestampStrategy': "
                          f"expected 'error' or 'latest', got {_short(str(value))}")
    return v


def check_batch_start(spec: OffsetSpec) -> OffsetSpec:
    """``spec`` if it can start a batch read; Spark's batch rule refuses a ``latest`` start
    (the option, or -1 for a partition), which would read nothing.

    Examples
    --------
    >>> check_batch_start(OffsetSpec(OffsetKind.EARLIEST)).kind.value
    'earliest'
    """
    if spec.kind is OffsetKind.LATEST:
        raise ConfigError("starting offset can't be latest for batch queries on Kafka")
    if spec.kind is OffsetKind.OFFSETS:
        for topic, part, off in spec.values:
            if off == LATEST:
                raise ConfigError(f"starting offsets for {topic}-{part} can't be latest for "
                                  "batch queries on Kafka")
    return spec


def parse_offsets_option(name: str, value: str, *, is_ending: bool, strategy: str = "error",
                         batch: bool = False) -> OffsetSpec:
    """Parse one offset option of Spark's Kafka source.

    Parameters
    ----------
    name : str
        Option name (case-insensitive): ``startingOffsets``, ``endingOffsets``,
        ``startingTimestamp``, ``endingTimestamp``, ``startingOffsetsByTimestamp`` or
        ``endingOffsetsByTimestamp``.
    value : str
        The option's value.
    is_ending : bool
        Whether the spec is an ending one (``earliest`` and -2 are then refused).
    strategy : str
        ``error`` or ``latest`` (``startingOffsetsByTimestampStrategy``).
    batch : bool
        Apply the batch-only rule that a start cannot be ``latest`` (Spark's batch validation).

    Returns
    -------
    OffsetSpec

    Raises
    ------
    ConfigError
        With a message like Spark's.

    Examples
    --------
    >>> parse_offsets_option("startingOffsets", '{"t":{"0":5,"1":-2}}', is_ending=False).values
    (('t', 0, 5), ('t', 1, -2))
    """
    key = name.strip().lower()
    strategy = parse_strategy(strategy)
    which = "ending" if is_ending else "starting"
    if key in ("startingoffsets", "endingoffsets"):
        v = str(value).strip()
        if v.lower() == "earliest":
            if is_ending:
                raise ConfigError("ending offset can't be earliest for batch queries on Kafka")
            return OffsetSpec(OffsetKind.EARLIEST, strategy=strategy, is_ending=is_ending)
        if v.lower() == "latest":
            spec = OffsetSpec(OffsetKind.LATEST, strategy=strategy, is_ending=is_ending)
            return check_batch_start(spec) if batch and not is_ending else spec
        values = _parse_partition_json(name, v, _EXAMPLE)
        for topic, part, off in values:
            if off < EARLIEST:
                raise ConfigError(f"Invalid value for option '{name}': offset {off} for "
                                  f"{topic}-{part} (use -2 for earliest, -1 for latest)")
            if is_ending and off == EARLIEST:
                raise ConfigError(f"ending offset for {topic}-{part} can't be earliest for "
                                  "batch queries on Kafka")
        spec = OffsetSpec(OffsetKind.OFFSETS, values, strategy=strategy, is_ending=is_ending)
        return check_batch_start(spec) if batch and not is_ending else spec
    if key in ("startingtimestamp", "endingtimestamp"):
        return OffsetSpec(OffsetKind.TIMESTAMP, timestamp=_parse_long(name, value), strategy=strategy,
                          is_ending=is_ending)
    if key in ("startingoffsetsbytimestamp", "endingoffsetsbytimestamp"):
        values = _parse_partition_json(name, str(value).strip(), _TS_EXAMPLE)
        for topic, part, ts in values:
            if ts < 0:
                raise ConfigError(f"Invalid value for option '{name}': timestamp {ts} for "
                                  f"{topic}-{part} must be >= 0")
        return OffsetSpec(OffsetKind.TIMESTAMPS, values, strategy=strategy, is_ending=is_ending)
    raise ConfigError(f"'{name}' is not a {which} offset option")
