"""Offset ranges: Spark's ``KafkaOffsetRangeCalculator`` and the data-loss checks.

Pure functions of ``{(topic, partition): offset}`` dicts so the batch planner and the
streaming reader share them and they can be tested without a broker.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from connector.errors import DataLossError

__all__ = ["OffsetRange", "plan_ranges", "pack_ranges", "validate_ranges", "reconcile_offsets", "report_data_loss",
           "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO", "COULD_NOT_READ_OFFSET_RANGE",
           "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS", "PARTITIONS_DELETED",
           "PARTITION_OFFSET_CHANGED", "START_OFFSET_RESET"]

_log = logging.getLogger(__name__)

TP = tuple[str, int]

# Spark's error conditions (error-conditions.json, KAFKA_DATA_LOSS.*).
ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO = \
    "KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO"
COULD_NOT_READ_OFFSET_RANGE = "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"
INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS = "KAFKA_DATA_LOSS.INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS"
PARTITIONS_DELETED = "KAFKA_DATA_LOSS.PARTITIONS_DELETED"
PARTITION_OFFSET_CHANGED = "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED"
START_OFFSET_RESET = "KAFKA_DATA_LOSS.START_OFFSET_RESET"


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Records ``[start, end)`` of one topic partition: the unit of work of one read task.

    Examples
    --------
    >>> OffsetRange("t", 0, 10, 25).size
    15
    """

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Estimated record count (compaction and transaction markers make it an upper bound)."""
        return self.end - self.start

    @property
    def topic_partition(self) -> TP:
        return (self.topic, self.partition)


def report_data_loss(condition: str, message: str, fail_on_data_loss: bool,
                     logger: logging.Logger | None = None) -> None:
    """Raise :class:`DataLossError` when ``fail_on_data_loss``, else log a warning.

    Parameters
    ----------
    condition : str
        Spark condition name, e.g. ``KAFKA_DATA_LOSS.PARTITIONS_DELETED``.
    message : str
        What was lost (partitions and offsets; never configuration values).
    fail_on_data_loss : bool
        The ``failOnDataLoss`` option.
    logger : logging.Logger, optional
        Where the warning goes (default: this module's logger).
    """
    if fail_on_data_loss:
        raise DataLossError(condition, message)
    (logger or _log).warning("[%s] %s Some data may have been lost because they are not "
                             "available in Kafka any more; continuing because "
                             "'failOnDataLoss' is false.", condition, message)


def _tp(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


def reconcile_offsets(start: Mapping[TP, int], end: Mapping[TP, int], earliest: Mapping[TP, int] | None,
                      report, *, streaming: bool) -> tuple[dict[TP, int], dict[TP, int]]:
    """The one data-loss detector for batch and stream planning (Spark's
    ``getOffsetRangesFromResolvedOffsets``).

    Parameters
    ----------
    start, end : mapping of (topic, partition) to int
        Resolved (non-negative) offsets. Partitions only in ``end`` are new partitions.
    earliest : mapping of (topic, partition) to int, optional
        Current earliest (log start) offsets.
    report : callable
        ``report(condition, message)``: raises or warns (see :func:`report_data_loss`).
    streaming : bool
        The two plans differ where Spark's do. A stream resumes a partition whose offsets
        went backwards (topic recreated) from its earliest offset, and leaves aged-out records
        to the executor's fetch (``COULD_NOT_READ_OFFSET_RANGE``), as Spark's micro-batch
        stream does; a batch read skips such a partition and clamps an aged-out start here.

    Returns
    -------
    (dict, dict)
        Start and end offsets over the same partitions, safe to pass to :func:`plan_ranges`.

    Notes
    -----
    Detected: partitions gone from ``end`` (``PARTITIONS_DELETED``), new partitions whose log
    does not start at 0 (``ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO``), ``end < start``
    (``PARTITION_OFFSET_CHANGED``: the topic was recreated or truncated) and, in batch,
    ``start < earliest`` (``START_OFFSET_RESET``: records aged out).
    """
    earliest = earliest or {}
    deleted = sorted(set(start) - set(end))
    if deleted:
        report(PARTITIONS_DELETED, f"Partitions {', '.join(map(_tp, deleted))} have been deleted.")
    s_out: dict[TP, int] = {}
    e_out: dict[TP, int] = {}
    for tp in sorted(end):
        until = end[tp]
        low = earliest.get(tp)
        if tp in start:
            frm = start[tp]
        else:
            frm = earliest.get(tp, 0)
            if frm != 0:
                report(ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO,
                       f"Added partition {_tp(tp)} starts from {frm} instead of 0.")
        if until < frm:
            report(PARTITION_OFFSET_CHANGED, f"Partition {_tp(tp)}'s offset was changed from {frm} to {until}.")
            if not streaming:
                continue
            frm = low if low is not None else 0
        elif not streaming and low is not None and frm < low:
            report(START_OFFSET_RESET,
                   f"Starting offset for {_tp(tp)} was {frm} but it is now reset "
                   f"to {low} (records [{frm}, {min(low, until)}) aged out).")
            frm = min(low, until)
        s_out[tp] = frm
        e_out[tp] = until
    return s_out, e_out


def validate_ranges(start: Mapping[TP, int], end: Mapping[TP, int],
                    earliest: Mapping[TP, int] | None, fail_on_data_loss: bool, *,
                    logger: logging.Logger | None = None
                    ) -> tuple[dict[TP, int], dict[TP, int]]:
    """:func:`reconcile_offsets` for a batch read, raising or warning per ``failOnDataLoss``."""
    return reconcile_offsets(start, end, earliest,
                             lambda c, m: report_data_loss(c, m, fail_on_data_loss, logger), streaming=False)


def _divide(rng: OffsetRange, parts: int) -> list[OffsetRange]:
    # Integer division; the last part takes the rounding remainder (as Spark).
    remaining = rng.size
    frm = rng.start
    out = []
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        until = min(frm + this, rng.end)
        out.append(OffsetRange(rng.topic, rng.partition, frm, until))
        frm = until
    return out


def _part_count(size: int, total: int, min_parts: int) -> int:
    # Scala's math.round(Double): floor(x + 0.5), not Python's banker's rounding.
    return max(int(math.floor(size / total * min_parts + 0.5)), 1)


def plan_ranges(start: Mapping[TP, int], end: Mapping[TP, int], *,
                min_partitions: int | None = None,
                max_records_per_partition: int | None = None,
                offsets: Sequence[tuple[int, int]] | None = None) -> list[OffsetRange]:
    """Split ``[start, end)`` per partition into read tasks like Spark's calculator.

    Parameters
    ----------
    start, end : mapping of (topic, partition) to int
        Resolved offsets; partitions missing from either side are skipped, empty or negative
        ranges dropped.
    min_partitions : int, optional
        Spark's ``minPartitions``: when there are fewer ranges, large ranges are split in
        proportion to their size (small ranges that would get one part stay whole and are
        left out of the proportional maths).
    max_records_per_partition : int, optional
        Spark's ``maxRecordsPerPartition``: each range is first split into
        ``ceil(size / max)`` equal parts; ``min_partitions`` then applies to the result.
    offsets : sequence of (int, int), optional
        Half-open offset intervals (pushed ``offset`` filters): each partition's
        ``[start, end)`` is cut to its overlap with them, possibly into several ranges.

    Returns
    -------
    list of OffsetRange
        In (topic, partition, start) order.

    Examples
    --------
    >>> plan_ranges({("t", 0): 0, ("t", 1): 0}, {("t", 0): 100, ("t", 1): 10}, min_partitions=3)
    ... # doctest: +NORMALIZE_WHITESPACE
    [OffsetRange(topic='t', partition=0, start=0, end=50),
     OffsetRange(topic='t', partition=0, start=50, end=100),
     OffsetRange(topic='t', partition=1, start=0, end=10)]
    """
    if min_partitions is not None and min_partitions <= 0:
        raise ValueError("min_partitions must be positive")
    if max_records_per_partition is not None and max_records_per_partition <= 0:
        raise ValueError("max_records_per_partition must be positive")
    ranges = [OffsetRange(t, p, max(a, start[(t, p)]), min(b, end[(t, p)]))
              for (t, p) in sorted(set(start) & set(end))
              for a, b in (offsets if offsets is not None else [(start[(t, p)], end[(t, p)])])]
    ranges = [r for r in ranges if r.size > 0]
    if max_records_per_partition is not None:
        mx = max_records_per_partition
        ranges = [x for r in ranges for x in _divide(r, -(-r.size // mx)) if x.size > 0]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    unsplit = [r for r in ranges if _part_count(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in unsplit)
    unsplit_tps = {r.topic_partition for r in unsplit}
    split_min = max(min_partitions - len(unsplit), 1)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = 1 if r.topic_partition in unsplit_tps else \
            _part_count(r.size, split_total, split_min)
        out.extend(x for x in _divide(r, parts) if x.size > 0)
    return out


def pack_ranges(ranges: Sequence[OffsetRange], target: int | None) -> list[tuple[OffsetRange, ...]]:
    """Group small ranges so that one read task takes several, up to ``target`` records.

    Every Spark task costs a fixed amount (scheduling, a Python worker round trip, a consumer)
    whatever it reads, and ``local[2]`` runs them in waves of two: a read of many small ranges
    (a pushed-down filter, a micro-batch, a topic of many small partitions) spent most of its
    time there. Each range is still read exactly once, in order, with its own data-loss checks;
    only the number of tasks changes.

    Parameters
    ----------
    ranges : sequence of OffsetRange
        The planned ranges (:func:`plan_ranges` order).
    target : int or None
        Records per task to pack up to; a range of this size or more stays alone. ``None`` or
        ``0``: one range per task.

    Returns
    -------
    list of tuple of OffsetRange
        Deterministic: consecutive ranges in the given order, each group closed before it
        would exceed ``target``.

    Examples
    --------
    >>> rs = [OffsetRange("t", p, 0, n) for p, n in enumerate([10, 30, 100, 5, 5])]
    >>> [[r.partition for r in g] for g in pack_ranges(rs, 50)]
    [[0, 1], [2], [3, 4]]
    >>> [len(g) for g in pack_ranges(rs, None)]
    [1, 1, 1, 1, 1]
    """
    if not target or target <= 0:
        return [(r,) for r in ranges]
    out: list[tuple[OffsetRange, ...]] = []
    group: list[OffsetRange] = []
    size = 0
    for r in ranges:
        if group and size + r.size > target:
            out.append(tuple(group))
            group, size = [], 0
        group.append(r)
        size += r.size
    if group:
        out.append(tuple(group))
    return out
