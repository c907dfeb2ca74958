"""The Spark source's setup: :func:`connector.read.build_setup` (document, plan, schemas, pipeline,
no pyspark) plus the one thing only Spark needs, the ``StructType`` of the read and the exact
Arrow form of it that every batch ``read()`` yields must match."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from connector.read import ReadSetup
from connector.read import build_setup as build_read_setup

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from connector.options import SourceOptions

__all__ = ["ReadSetup", "build_setup", "spark_schema"]


def spark_schema(setup: ReadSetup) -> StructType:
    """The read's Spark schema: the output schema's Arrow types as Spark types."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(setup.output_schema)


def build_setup(opts: SourceOptions) -> ReadSetup:
    """:func:`connector.read.build_setup`, with the pipeline casting to the exact Arrow schema
    Spark checks yielded batches against (``to_arrow_schema`` of :func:`spark_schema`)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    setup = build_read_setup(opts)
    exact = to_arrow_schema(spark_schema(setup), timezone="UTC")
    return dataclasses.replace(setup, pipeline=dataclasses.replace(setup.pipeline, arrow_schema=exact))
