"""Streaming offset arithmetic, as pure functions of ``{(topic, partition): offset}`` dicts.

Kept free of Spark and of any broker so the logic that no test peer here can exercise
(partitions added, offsets going backwards) is tested directly.

Offsets in the checkpoint are ``{"<topic>": {"<partition>": next_offset}}`` with keys in sorted
order (topics by name, partitions by number) because Spark compares their JSON as strings.
Two symbolic values may appear in a start offset, as in Spark's own JSON: ``-1`` (latest) and
``-2`` (earliest). A ``-1`` start resolves to the batch's own end, i.e. an empty first range,
so a ``latest`` start is deterministic across a restart before the first batch completes.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

from connector.kafka import EARLIEST, LATEST

__all__ = ["LATEST", "EARLIEST", "to_json", "from_json", "rate_limit", "resolve_start", "hold_back", "TP"]

TP = tuple  # (topic, partition)


def to_json(offsets: Mapping[TP, int]) -> dict:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition) in sorted(offsets, key=lambda tp: (tp[0], int(tp[1]))):
        out.setdefault(topic, {})[str(int(partition))] = int(offsets[(topic, partition)])
    return out


def from_json(offsets: Mapping) -> dict[TP, int]:
    return {(topic, int(p)): int(o) for topic, parts in (offsets or {}).items() for p, o in parts.items()}


def rate_limit(start: Mapping[TP, int], until: Mapping[TP, int], limit: int) -> dict[TP, int]:
    """Spark's ``KafkaMicroBatchStream.rateLimit``: spread ``limit`` records over partitions in
    proportion to their backlog; a share below one record rounds up so small partitions are
    never starved, larger shares round down."""
    sizes = {tp: end - start[tp] for tp, end in until.items() if tp in start}
    total = sum(s for s in sizes.values() if s > 0)
    if total < 1:
        return dict(until)
    out = {}
    for tp, end in until.items():
        if tp not in sizes:
            out[tp] = end
            continue
        size = max(sizes[tp], 0)
        prorate = limit * (size / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, start[tp] + share)
    return out


def hold_back(start: Mapping[TP, int], begin: Mapping[TP, int], latest: Mapping[TP, int], *,
              min_rows: int, waited_ms: float, max_delay_ms: float) -> bool:
    """Whether ``minOffsetsPerTrigger`` holds the next batch back (Spark's ``delayBatch``).

    ``start`` is the batch's start as checkpointed (possibly symbolic), ``begin`` its resolved
    form. A symbolic ``latest`` start is never held back: it re-resolves to "now" on every
    call, so waiting would skip whatever arrives meanwhile; the (empty) batch that pins it runs
    at once. Otherwise the batch waits while fewer than ``min_rows`` records are new and less
    than ``max_delay_ms`` has passed since the last batch.
    """
    if LATEST in start.values() or waited_ms >= max_delay_ms:
        return False
    backlog = sum(max(0, hi - begin.get(tp, hi)) for tp, hi in latest.items())
    return backlog < min_rows


def resolve_start(start: Mapping[TP, int], *, latest: Mapping[TP, int], earliest: Mapping[TP, int],
                  report: Callable[[str, str], None]) -> dict[TP, int]:
    """Concrete start offsets for every partition that exists now.

    Symbolic ``-1``/``-2`` resolve to latest/earliest; everything else (new, deleted and
    recreated partitions) is decided by the one data-loss detector shared with batch reads,
    :func:`connector.kafka.reconcile_offsets` (streaming rules). ``report(condition, message)``
    gets Spark's full condition name.
    """
    from connector.kafka import reconcile_offsets

    concrete = {}
    for tp, s in start.items():
        if tp in latest and s == LATEST:
            concrete[tp] = latest[tp]
        elif tp in latest and s == EARLIEST:
            concrete[tp] = earliest.get(tp, 0)
        else:
            concrete[tp] = s
    begin, _ = reconcile_offsets(concrete, latest, earliest, report, streaming=True)
    return begin
