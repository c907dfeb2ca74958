"""connector.kafka: the Kafka layer under the Spark source (no pyspark imports).

Driver: :class:`KafkaOffsetReader` (discovery, offsets), :func:`parse_offsets_option`,
:func:`plan_ranges` (Spark's ``KafkaOffsetRangeCalculator``), :func:`validate_ranges`,
:class:`Pushdown` (filters a batch read took over from Spark: topics, partitions, offsets, rows).
Executors: :func:`read_range` (one offset range to Arrow batches, one consumer per range).
Sink: :class:`BatchProducer` / :func:`producer_for` (idempotent, every delivery checked),
:class:`TaskTransaction` (exactly-once: one transaction per task attempt, fenced, committed with
its :class:`Marker`), :func:`ensure_topics` (``createTopics`` from channel bindings).
Local brokers for tests and the demo live in :mod:`connector.testing`.
"""
from ._conf import bootstrap_without_credentials, is_secret_setting, kafka_conf_from_options
from ._admin import TopicSpec, ensure_topics, kafka_error, norm_config
from ._consume import RAW_ARROW_SCHEMA, RAW_ARROW_SCHEMA_NO_HEADERS, commit_offsets, read_range, read_ranges
from ._offsets import EARLIEST, LATEST, OffsetKind, OffsetSpec, check_batch_start, parse_offsets_option
from ._ranges import OffsetRange, pack_ranges, plan_ranges, reconcile_offsets, report_data_loss, validate_ranges
from ._header_rows import concat_header_rows, header_rows, split_header
from ._produce import OWNED_PRODUCER_SETTINGS, BatchProducer, Headers, producer_for
from ._txn import Digest, Marker, Opening, TaskTransaction, transactional_id
from ._reader import KafkaOffsetReader
from ._pushdown import Predicate, Pushdown
from ._sample import sample_tail

__all__ = [
    "OffsetSpec", "OffsetKind", "parse_offsets_option", "check_batch_start", "EARLIEST", "LATEST",
    "KafkaOffsetReader", "Predicate", "Pushdown",
    "OffsetRange", "plan_ranges", "pack_ranges", "validate_ranges", "reconcile_offsets", "report_data_loss",
    "read_range", "read_ranges", "sample_tail", "RAW_ARROW_SCHEMA", "RAW_ARROW_SCHEMA_NO_HEADERS", "commit_offsets",
    "kafka_conf_from_options", "is_secret_setting", "bootstrap_without_credentials",
    "kafka_error", "norm_config",
    "OWNED_PRODUCER_SETTINGS", "BatchProducer", "Headers", "producer_for",
    "header_rows", "concat_header_rows", "split_header",
    "TopicSpec", "ensure_topics",
    "TaskTransaction", "Opening", "Marker", "Digest", "transactional_id",
]
