"""Batch reads: offset ranges planned on the driver, partitions read on executors."""
from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from connector.spark._setup import ReadSetup

__all__ = ["BatchReader", "KafkaInputPartition", "read_partition", "offset_specs", "offset_reader"]

log = logging.getLogger("asyncapi_kafka")


class KafkaInputPartition(InputPartition):
    """One Spark task: ``(topic, partition, start, end)``, end exclusive. Primitives only: no
    options, no secrets (those travel in the reader)."""

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    def __repr__(self) -> str:
        return f"KafkaInputPartition({self.topic}-{self.partition} [{self.start}, {self.end}))"


def offset_specs(setup: ReadSetup):
    """The starting and ending offset specs, parsed at ``load()`` and resolved for this kind of
    read (``SourceOptions.for_scope``): Spark's precedence and defaults already applied."""
    opts = setup.options
    if opts.starting is None or opts.direction != "read" or opts.streaming is None:
        raise RuntimeError("a reader needs options checked for its kind of read (SourceOptions.for_scope)")
    return opts.starting, opts.ending


def offset_reader(setup: ReadSetup):
    """The driver's :class:`~connector.kafka.KafkaOffsetReader` for this read, with the
    ``fetchOffset.*`` timeout and retries (one place for batch and stream)."""
    from connector.kafka import KafkaOffsetReader

    opts = setup.options
    return KafkaOffsetReader(setup.kafka_conf(), timeout_s=opts.fetch_timeout_ms / 1000.0,
                             group_prefix=opts.group_id_prefix, num_retries=opts.fetch_num_retries,
                             retry_interval_s=opts.fetch_retry_interval_ms / 1000.0)


def read_partition(setup: ReadSetup, topic: str, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """Executor side: consume ``[start, end)`` and yield output batches of the exact Spark schema."""
    from connector.kafka import OffsetRange, read_range

    opts = setup.options
    pipeline = setup.pipeline
    lookup = setup.lookup()
    for raw in read_range(setup.kafka_conf(warn=False), OffsetRange(topic, partition, start, end),
                          batch_size=opts.max_batch_rows, include_headers=pipeline.needs_headers(),
                          fail_on_data_loss=opts.fail_on_data_loss,
                          poll_timeout_s=opts.poll_timeout_ms / 1000.0,
                          group_prefix=opts.group_id_prefix):
        out = pipeline.process(raw, lookup)
        if out is not None and out.num_rows:
            yield out


class BatchReader(DataSourceReader):
    """Plans offset ranges like Spark's Kafka source and reads them as Arrow batches."""

    def __init__(self, setup: ReadSetup):
        self.setup = setup

    def partitions(self):
        from connector.kafka import plan_ranges, validate_ranges

        setup = self.setup
        opts = setup.options
        start_spec, end_spec = offset_specs(setup)
        reader = offset_reader(setup)
        try:
            tps = reader.partitions_for(topics=setup.topics or None, pattern=setup.topic_pattern)
            start = reader.resolve(start_spec, tps)
            end = reader.resolve(end_spec, tps)
            earliest = reader.earliest(tps)
        finally:
            reader.close()
        start, end = validate_ranges(start, end, earliest, fail_on_data_loss=opts.fail_on_data_loss)
        ranges = plan_ranges(start, end, min_partitions=opts.min_partitions,
                             max_records_per_partition=opts.max_records_per_partition)
        parts = [KafkaInputPartition(r.topic, r.partition, r.start, r.end) for r in ranges if r.end > r.start]
        log.info("asyncapi-kafka batch: %d offset range(s), %d record(s) at most", len(parts),
                 sum(p.end - p.start for p in parts))
        return parts

    def read(self, partition):
        # Spark turns an empty plan into one InputPartition(None): nothing to read.
        if not isinstance(partition, KafkaInputPartition):
            return
        p = partition
        yield from read_partition(self.setup, p.topic, p.partition, p.start, p.end)
