"""The picklable records of a write: its setup (driver → executors) and what each task delivered
(executors → driver). No pyspark: the Spark sink wraps :class:`WriteResult` in its commit message."""
from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connector.asyncapi import ReadPlan
    from connector.options import SourceOptions
    from connector.schema import WriterSchema

__all__ = ["Encoding", "EncodingMode", "WriteSetup", "WriteResult"]


class EncodingMode(enum.Enum):
    """How one side (value or key) of the records becomes bytes."""

    ENCODE = "encode"   # encoded with a schema and framed (WriterSchema)
    MESSAGES = "messages"  # a struct with one field per channel message: each row encoded as the one it sets
    BYTES = "bytes"     # a binary or string column, written as it is
    ABSENT = "none"     # no such column: no key


@dataclasses.dataclass(frozen=True)
class Encoding:
    """One side of the records: how it becomes bytes."""

    mode: EncodingMode
    writer: WriterSchema | None = None   # with ENCODE: the encoder, framing, wire id, message indexes
    compression: str | None = None       # Glue zlib
    writers: tuple[tuple[str, WriterSchema], ...] = ()  # with MESSAGES: (struct field = message, its writer)


@dataclasses.dataclass(frozen=True)
class WriteSetup:
    """Everything a write task needs. Picklable; secrets stay inside ``options``."""

    options: SourceOptions
    plan: ReadPlan
    value: Encoding
    key: Encoding
    value_column: str | None              # "value", or None: the message's fields are top-level columns
    value_fields: tuple[str, ...]         # top-level columns forming the message when value_column is None
    has_headers: bool
    has_partition: bool
    topic: str | None                     # one topic for every row
    topic_column: bool                    # rows carry their topic
    address_parts: tuple[tuple[str, str], ...]  # ("lit", text) / ("param", name) / ("fixed", value)
    base_kafka: tuple[tuple[str, str], ...]

    def kafka_conf(self, *, warn: bool = True) -> dict[str, str]:
        """Producer settings, secrets included: build clients with it, never print it."""
        from connector.kafka import OWNED_PRODUCER_SETTINGS, kafka_conf_from_options

        return kafka_conf_from_options(
            self.options.kafka_settings(), plan_config=self.base_kafka, owned=OWNED_PRODUCER_SETTINGS, warn=warn,
            where=f"the document's server for channel '{self.plan.channel}' gives none")

    def __repr__(self) -> str:
        framing = self.value.writer.framing if self.value.writer is not None else None
        return f"WriteSetup(channel={self.plan.channel!r}, topic={self.topic!r}, framing={framing})"


@dataclasses.dataclass(frozen=True)
class WriteResult:
    """What one write task delivered (every record acknowledged by the brokers).

    Exactly-once writes: ``replayed`` counts the rows of an attempt that found its (batch,
    partition) already committed and wrote nothing; ``mismatch`` says how such a replay differed
    from the attempt that committed (rows or digest), None when it did not (or could not be told).
    """

    rows: int
    topics: tuple[str, ...]
    pid: int
    replayed: int = 0
    mismatch: str | None = None
