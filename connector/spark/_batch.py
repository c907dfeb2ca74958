"""Batch reads: offset ranges planned on the driver, partitions read on executors."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from connector.read import plan_offsets
from connector.spark._setup import ReadSetup

if TYPE_CHECKING:
    from connector.kafka import Pushdown

__all__ = ["BatchReader", "PushdownBatchReader", "KafkaInputPartition", "read_partition", "read_ranges"]

log = logging.getLogger("asyncapi_kafka")


class KafkaInputPartition(InputPartition):
    """One Spark task: one or more offset ranges ``(topic, partition, start, end)``, end exclusive,
    read one after another (:func:`connector.kafka.pack_ranges` groups small ones). Primitives
    only: no options, no secrets (those travel in the reader)."""

    def __init__(self, ranges):
        ranges = tuple((str(t), int(p), int(s), int(e)) for t, p, s, e in ranges)
        super().__init__(ranges)
        self.ranges = ranges

    @classmethod
    def packed(cls, ranges, options) -> list[KafkaInputPartition]:
        """Tasks for the planned ``ranges`` (:class:`connector.kafka.OffsetRange`): small ranges
        share a task up to ``minRecordsPerPartition`` records (never above
        ``maxRecordsPerPartition``; not at all when ``minPartitions`` asks for more tasks)."""
        from connector.kafka import pack_ranges

        target = options.min_records_per_partition
        if options.min_partitions is not None:
            target = 0
        elif options.max_records_per_partition is not None:
            target = min(target, options.max_records_per_partition)
        return [cls([(r.topic, r.partition, r.start, r.end) for r in group])
                for group in pack_ranges([r for r in ranges if r.end > r.start], target)]

    def __repr__(self) -> str:
        shown = ", ".join(f"{t}-{p} [{s}, {e})" for t, p, s, e in self.ranges)
        return f"KafkaInputPartition({shown})"


def read_partition(setup: ReadSetup, topic: str, partition: int, start: int, end: int,
                   pushdown=None) -> Iterator[pa.RecordBatch]:
    """Executor side: consume ``[start, end)`` and yield output batches of the exact Spark schema.

    ``pushdown`` (a :class:`connector.kafka.Pushdown`): its offset and timestamp predicates
    drop rows before they are decoded (the range only bounds where they can be)."""
    from connector.kafka import OffsetRange

    yield from _outputs(setup, [OffsetRange(topic, partition, start, end)], pushdown)


def _outputs(setup: ReadSetup, ranges, pushdown) -> Iterator[pa.RecordBatch]:
    from connector.kafka import read_ranges as consume

    opts = setup.options
    pipeline = setup.pipeline
    lookup = setup.lookup()
    for _, raw in consume(setup.kafka_conf(warn=False), ranges,
                          batch_size=opts.max_batch_rows, include_headers=pipeline.needs_headers(),
                          fail_on_data_loss=opts.fail_on_data_loss,
                          poll_timeout_s=opts.poll_timeout_ms / 1000.0,
                          group_prefix=opts.group_id_prefix):
        mask = pushdown.row_mask(raw) if pushdown else None
        if mask is not None:
            raw = raw.filter(mask)
            if not raw.num_rows:
                continue
        out = pipeline.process(raw, lookup)
        if out is not None and out.num_rows:
            yield out


def read_ranges(setup: ReadSetup, partition: KafkaInputPartition, pushdown=None) -> Iterator[pa.RecordBatch]:
    """Executor side: every range of one task, one after another, each with its own consumer
    (the next ones opened ahead: :func:`connector.kafka.read_ranges`)."""
    from connector.kafka import OffsetRange

    yield from _outputs(setup, [OffsetRange(*r) for r in partition.ranges], pushdown)


class BatchReader(DataSourceReader):
    """Plans offset ranges like Spark's Kafka source and reads them as Arrow batches.

    ``pushdown`` holds the filters a :class:`PushdownBatchReader` took over (none here)."""

    pushdown: Pushdown | None = None

    def __init__(self, setup: ReadSetup):
        self.setup = setup

    def partitions(self):
        from connector.kafka import plan_ranges

        setup = self.setup
        opts = setup.options
        pushdown = self.pushdown
        tps, start, end = plan_offsets(setup, select=(lambda every: _selected(setup, pushdown, every)) if pushdown else None,
                                       since_ms=pushdown.timestamp_start_ms() if pushdown else None)
        ranges = plan_ranges(start, end, min_partitions=opts.min_partitions,
                             max_records_per_partition=opts.max_records_per_partition,
                             offsets=pushdown.offset_intervals() if pushdown else None)
        parts = KafkaInputPartition.packed(ranges, opts)
        planned = [r for p in parts for r in p.ranges]
        log.info("asyncapi-kafka batch: %d offset range(s) in %d task(s), %d record(s) at most", len(planned),
                 len(parts), sum(e - s for _, _, s, e in planned))
        if pushdown:
            log.info("asyncapi-kafka pushdown: %s -> %d of %d partition(s) planned: %s", pushdown,
                     len({(t, p) for t, p, _, _ in planned}), len(tps), _show_ranges(planned))
        return parts

    def read(self, partition):
        # Spark turns an empty plan into one InputPartition(None): nothing to read.
        if not isinstance(partition, KafkaInputPartition):
            return
        yield from read_ranges(self.setup, partition, self.pushdown)


class PushdownBatchReader(BatchReader):
    """A :class:`BatchReader` that takes over the filters on ``topic``, the address parameters,
    ``partition``, ``offset`` and ``timestamp`` (see :mod:`connector.kafka._pushdown`) and
    leaves the others to Spark. Each one it takes is exact: Spark does not evaluate it again.

    Only Spark's filter-pushdown planner gets this reader (:func:`in_pushdown_planner`):
    PySpark refuses any reader that overrides ``pushFilters`` while
    ``spark.sql.python.filterPushdown.enabled`` is false."""

    def pushFilters(self, filters):
        from connector.kafka import Pushdown
        from connector.spark._pushdown import translate

        pushed, kept = translate(filters, self.setup.plan.param_names)
        self.pushdown = Pushdown(tuple(p for _, p in pushed))
        if pushed:
            log.info("asyncapi-kafka pushdown: taking %s; Spark keeps %d filter(s)", self.pushdown, len(kept))
        return kept


def _selected(setup: ReadSetup, pushdown, tps):
    """The partitions of the topics and partition numbers the pushed filters select."""
    plan = setup.plan
    keep = {t for t in {t for t, _ in tps} if pushdown.selects_topic(t, plan.topic_params(t))}
    return [(t, p) for t, p in tps if t in keep and pushdown.selects_partition(p)]


def _show_ranges(ranges, limit: int = 20) -> str:
    shown = ", ".join(f"{t}-{p} [{s}, {e})" for t, p, s, e in ranges[:limit])
    return shown + (f" and {len(ranges) - limit} more" if len(ranges) > limit else "") if ranges else "nothing to read"
