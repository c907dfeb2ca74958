"""Where a batch read starts and ends, per partition: one planner for the Spark source and ``peek``.

Spark's Kafka source rules, in one place: the offset options (already parsed with Spark's
precedence and defaults, :meth:`SourceOptions.for_scope`) are resolved against the broker over
the partitions the read selects, per-partition JSON still names every partition of the read,
the starts are checked against the earliest offsets (the data-loss policy), and a lower time
bound (pushed ``timestamp`` filters, ``peek --timestamp``) raises the starts to the broker's
offsets-for-times: the narrower bound wins.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from connector.read._setup import ReadSetup

if TYPE_CHECKING:
    from connector.kafka import KafkaOffsetReader

__all__ = ["offset_specs", "offset_reader", "plan_offsets"]

TP = tuple[str, int]


def offset_specs(setup: ReadSetup):
    """The starting and ending offset specs, parsed at ``load()`` and resolved for this kind of
    read (``SourceOptions.for_scope``): Spark's precedence and defaults already applied."""
    opts = setup.options
    if opts.starting is None or opts.direction != "read" or opts.streaming is None:
        raise RuntimeError("a reader needs options checked for its kind of read (SourceOptions.for_scope)")
    return opts.starting, opts.ending


def offset_reader(setup: ReadSetup) -> KafkaOffsetReader:
    """The driver's :class:`~connector.kafka.KafkaOffsetReader` for this read, with the
    ``fetchOffset.*`` retry settings."""
    from connector.kafka import KafkaOffsetReader

    opts = setup.options
    return KafkaOffsetReader(setup.kafka_conf(), timeout_s=opts.fetch_timeout_ms / 1000.0,
                             group_prefix=opts.group_id_prefix, num_retries=opts.fetch_num_retries,
                             retry_interval_s=opts.fetch_retry_interval_ms / 1000.0)


def plan_offsets(setup: ReadSetup, *, select: Callable[[list[TP]], list[TP]] | None = None,
                 since_ms: int | None = None, first_offset: int | None = None
                 ) -> tuple[list[TP], dict[TP, int], dict[TP, int]]:
    """``(partitions, start, end)`` of a batch read, ``end`` exclusive.

    Parameters
    ----------
    select : callable, optional
        Every partition of the read's topics → the ones to read (pushed ``topic``/``partition``
        filters, ``peek --partition``); all of them when omitted.
    since_ms : int, optional
        A lower time bound: each start is raised to the first offset at or after it (where the
        broker can tell; the rows are still filtered by time where it cannot).
    first_offset : int, optional
        Start every partition at this offset instead of the starting option (``peek --offset``).
    """
    from connector.kafka import validate_ranges

    start_spec, end_spec = offset_specs(setup)
    opts = setup.options
    with offset_reader(setup) as reader:
        every = reader.partitions_for(topics=setup.topics or None, pattern=setup.topic_pattern)
        tps = select(every) if select is not None else every
        end = _resolve(reader, end_spec, tps, every)
        if first_offset is not None:
            start = {tp: min(first_offset, end[tp]) for tp in tps}
        else:
            start = _resolve(reader, start_spec, tps, every)
        earliest = reader.earliest(tps)
        timed = [tp for tp in tps if end.get(tp, 0) > start.get(tp, 0)]
        from_time = reader.first_offsets_at(timed, since_ms) if since_ms is not None and timed else {}
    start, end = validate_ranges(start, end, earliest, fail_on_data_loss=opts.fail_on_data_loss)
    for tp, off in from_time.items():  # the narrower bound wins
        if tp in start and off is not None:
            start[tp] = max(start[tp], min(off, end[tp]))
    return tps, start, end


def _resolve(reader: KafkaOffsetReader, spec, tps: list[TP], every: list[TP]) -> dict[TP, int]:
    """``spec`` over ``tps``; per-partition JSON must still name every partition of the read
    (Spark's rule), whichever partitions were selected."""
    if spec.values and len(tps) != len(every):
        keep = set(tps)
        return {tp: v for tp, v in reader.resolve(spec, every).items() if tp in keep}
    return reader.resolve(spec, tps)
