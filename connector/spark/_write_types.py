"""The picklable records of a write: its setup (driver → executors) and each task's commit
message (executors → driver). A module of their own so the task code and the driver code both
import them without importing each other."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pyspark.sql.datasource import WriterCommitMessage

from connector.spark._options import SourceOptions

if TYPE_CHECKING:
    from connector.asyncapi import ReadPlan
    from connector.encode import Encoder

__all__ = ["Encoding", "WriteSetup", "WriteCommit"]


@dataclasses.dataclass(frozen=True)
class Encoding:
    """How one side (value or key) of the records is turned into bytes."""

    mode: str                     # "encode", "bytes" (binary/string passthrough), "none" (absent)
    encoder: Encoder | None = None
    framing: str = "none"
    schema_id: int | str | None = None  # integer id, or GUID text for the GUID framings
    message_indexes: tuple | None = None
    compression: str | None = None


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
        return f"WriteSetup(channel={self.plan.channel!r}, topic={self.topic!r}, framing={self.value.framing!r})"


@dataclasses.dataclass
class WriteCommit(WriterCommitMessage):
    """What one write task delivered (every record acknowledged by the brokers)."""

    rows: int
    topics: tuple[str, ...]
    pid: int
