"""The newest records of a set of partitions, read on the driver: for choices at ``load()`` that
need to see data (which Protobuf message the records carry) and for a quick look at a channel."""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa

from ._consume import read_range
from ._ranges import OffsetRange
from ._reader import KafkaOffsetReader

__all__ = ["sample_tail"]


def sample_tail(conf: Mapping[str, str], *, topics: Sequence[str] = (), pattern: str | None = None,
                per_partition: int = 50, limit: int = 1000, timeout_s: float = 10.0,
                include_headers: bool = True, group_prefix: str = "asyncapi-kafka") -> Iterator[pa.RecordBatch]:
    """Raw batches (:data:`connector.kafka.RAW_ARROW_SCHEMA`) of the newest records: up to
    ``per_partition`` of each partition, ``limit`` in all, partitions in sorted order.

    Records that are gone or missing (aged out, transaction markers) are skipped, never waited
    for longer than ``timeout_s``: a sample is a sample.

    Examples
    --------
    >>> from connector.testing import EmbeddedKafka
    >>> with EmbeddedKafka() as kafka:  # doctest: +SKIP
    ...     kafka.produce("t", b"x")
    ...     [b.num_rows for b in sample_tail({"bootstrap.servers": kafka.bootstrap}, topics=["t"])]
    [1]
    """
    with KafkaOffsetReader(conf, timeout_s=timeout_s, group_prefix=group_prefix) as reader:
        tps = reader.partitions_for(topics, pattern)
        low, high = reader.earliest(tps), reader.latest(tps)
    left = limit
    for tp in tps:
        if left <= 0:
            return
        start = max(low[tp], high[tp] - min(per_partition, left))
        if high[tp] <= start:
            continue
        left -= high[tp] - start
        yield from read_range(conf, OffsetRange(tp[0], tp[1], start, high[tp]), batch_size=high[tp] - start,
                              include_headers=include_headers, fail_on_data_loss=False,
                              poll_timeout_s=timeout_s, group_prefix=group_prefix)
