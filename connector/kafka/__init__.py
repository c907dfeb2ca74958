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
from ._conf import (
    OWNED_KAFKA_SETTINGS,
    SECRET_KAFKA_SETTINGS,
    bootstrap_without_credentials,
    drop_document_security,
    is_secret_setting,
    kafka_conf_from_options,
    redact_conf,
    warn_insecure_tls,
)
from ._admin import TopicReport, TopicSpec, ensure_topics, kafka_error, norm_config
from ._consume import (
    RAW_ARROW_SCHEMA,
    RAW_ARROW_SCHEMA_NO_HEADERS,
    commit_offsets,
    consumer_stats,
    read_range,
    read_ranges,
)
from ._offsets import (
    EARLIEST,
    LATEST,
    OffsetKind,
    OffsetSpec,
    check_batch_start,
    parse_offsets_option,
    parse_strategy,
)
from ._ranges import (
    ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO,
    COULD_NOT_READ_OFFSET_RANGE,
    INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS,
    PARTITION_OFFSET_CHANGED,
    PARTITIONS_DELETED,
    START_OFFSET_RESET,
    OffsetRange,
    pack_ranges,
    plan_ranges,
    reconcile_offsets,
    report_data_loss,
    validate_ranges,
)
from ._header_rows import concat_header_rows, header_rows, split_header
from ._produce import (
    DEFAULT_MESSAGE_MAX_BYTES,
    HEADER_TYPE,
    OWNED_PRODUCER_SETTINGS,
    BatchProducer,
    Headers,
    producer_for,
)
from ._txn import MARKER_PARTITION, Digest, Marker, Opening, TaskTransaction, transactional_id
from ._reader import DEFAULT_ISOLATION_LEVEL, MAX_TIMESTAMP, KafkaOffsetReader, apply_timestamp_results
from ._pushdown import Predicate, Pushdown
from ._sample import sample_tail

__all__ = [
    "OffsetSpec", "OffsetKind", "parse_offsets_option", "parse_strategy",
    "check_batch_start",
    "EARLIEST", "LATEST",
    "KafkaOffsetReader", "apply_timestamp_results", "DEFAULT_ISOLATION_LEVEL", "MAX_TIMESTAMP",
    "Predicate", "Pushdown",
    "OffsetRange", "plan_ranges", "pack_ranges", "validate_ranges", "reconcile_offsets", "report_data_loss",
    "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO", "COULD_NOT_READ_OFFSET_RANGE",
    "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS", "PARTITIONS_DELETED", "PARTITION_OFFSET_CHANGED",
    "START_OFFSET_RESET",
    "read_range", "read_ranges", "sample_tail", "RAW_ARROW_SCHEMA", "RAW_ARROW_SCHEMA_NO_HEADERS", "commit_offsets",
    "consumer_stats",
    "kafka_conf_from_options", "OWNED_KAFKA_SETTINGS", "SECRET_KAFKA_SETTINGS",
    "is_secret_setting", "redact_conf", "warn_insecure_tls", "bootstrap_without_credentials", "drop_document_security",
    "kafka_error", "norm_config",
    "OWNED_PRODUCER_SETTINGS", "BatchProducer", "Headers", "HEADER_TYPE", "producer_for",
    "header_rows", "concat_header_rows", "split_header",
    "DEFAULT_MESSAGE_MAX_BYTES", "TopicSpec", "TopicReport", "ensure_topics",
    "TaskTransaction", "Opening", "Marker", "Digest", "MARKER_PARTITION", "transactional_id",
]
