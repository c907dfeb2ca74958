"""The ``asyncapi-kafka`` sink's driver side: the DataFrame's schema as Arrow, then
:func:`connector.write.build_write_setup` (options, document, channel, writer schemas and wire
ids, the input layout, topics created — no pyspark there).

The resulting :class:`connector.write.WriteSetup` travels to executors inside the writer objects
of :mod:`connector.spark._sink`, whose ``write()`` runs :func:`connector.write.write_batches` (or
:func:`connector.write.write_exactly_once`) over the task's Arrow batches.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from connector.write import WriteSetup
from connector.write import build_write_setup as build_arrow_write_setup

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from connector.options import SourceOptions

__all__ = ["build_write_setup"]


def build_write_setup(opts: SourceOptions, schema: StructType) -> WriteSetup:
    """:func:`connector.write.build_write_setup` for a DataFrame of ``schema``: its columns as the
    Arrow types Spark hands the sink's tasks (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return build_arrow_write_setup(opts, to_arrow_schema(schema, timezone="UTC"))
