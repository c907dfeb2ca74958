"""The Arrow schema of raw Kafka records as the executors read them (Spark's Kafka source
columns), shared by the read loop and the compiled batch builder."""
from __future__ import annotations

import pyarrow as pa

__all__ = ["HEADERS_TYPE", "RAW_ARROW_SCHEMA", "RAW_ARROW_SCHEMA_NO_HEADERS"]

HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

#: Schema of the batches :func:`~connector.kafka.read_range` yields (Spark's Kafka source columns).
RAW_ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADERS_TYPE),
])
#: Same without the ``headers`` column (``include_headers=False``).
RAW_ARROW_SCHEMA_NO_HEADERS = pa.schema([f for f in RAW_ARROW_SCHEMA if f.name != "headers"])
