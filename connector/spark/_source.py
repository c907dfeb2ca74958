"""The ``asyncapi-kafka`` Python DataSource: batch and streaming readers and writers.

Examples
--------
>>> df = (spark.read.format("asyncapi-kafka")                      # doctest: +SKIP
...       .option("asyncapi", "examples/shop.yaml")
...       .option("channel", "orders")
...       .load())
>>> (df.select("key", "value").write.format("asyncapi-kafka")      # doctest: +SKIP
...    .option("asyncapi", "examples/shop.yaml").option("channel", "orders")
...    .mode("append").save())
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource

__all__ = ["AsyncApiKafkaDataSource"]


class AsyncApiKafkaDataSource(DataSource):
    """Reads Kafka topics described by an AsyncAPI document into typed columns, and writes
    DataFrames to them (``df.write`` / ``df.writeStream``, append only).

    Registered as ``asyncapi-kafka``: importing the top-level module ``pyspark_asyncapi_kafka``
    (which PySpark does by itself for installed ``pyspark_*`` modules) or
    ``spark.dataSource.register(AsyncApiKafkaDataSource)``.
    """

    def __init__(self, options):
        super().__init__(options)
        self._parsed = None
        self._setup = None

    @classmethod
    def name(cls) -> str:
        return "asyncapi-kafka"

    def _options(self, direction: str = "read"):
        """Every option typed once (offset specs included), for a read or a write (one instance
        serves one of them); batch vs stream is checked by ``for_scope`` without reparsing."""
        # Imported here: Spark's data source lookup imports this module in a Python worker of its
        # own just to read name(); the option table pulls in every format, the registry client
        # and librdkafka (about 0.35 s of the first load(), issue 25).
        from connector.options import parse_any

        if self._parsed is None or self._parsed.direction != direction:
            self._parsed = parse_any(dict(self.options), direction=direction)
        return self._parsed

    def _setup_for(self, streaming: bool | None):
        import dataclasses

        from connector.spark._setup import build_setup

        if self._setup is None:  # the schema does not depend on batch vs stream
            self._setup = build_setup(self._options().for_scope(streaming=None))
        if streaming is None:
            return self._setup
        # The same parsed options, checked for this kind of read (refuses batch-only options on a
        # stream and the reverse) with its offset defaults resolved.
        return dataclasses.replace(self._setup, options=self._options().for_scope(streaming=streaming))

    def schema(self):
        from connector.spark._setup import spark_schema

        return spark_schema(self._setup_for(None))

    def reader(self, schema):
        from connector.spark._batch import BatchReader, PushdownBatchReader
        from connector.spark._pushdown import in_pushdown_planner

        # Only Spark's filter-pushdown planner (spark.sql.python.filterPushdown.enabled=true) may
        # get a reader that overrides pushFilters: the plain planner refuses one while it is off.
        cls = PushdownBatchReader if in_pushdown_planner() else BatchReader
        return cls(self._setup_for(False))

    def streamReader(self, schema):
        from connector.spark._stream import StreamReader

        return StreamReader(self._setup_for(True))

    def writer(self, schema, overwrite: bool):
        from connector.errors import ConfigError
        from connector.spark._sink import BatchWriter
        from connector.spark._write import build_write_setup

        if overwrite:
            raise ConfigError("Kafka topics are append-only: write with mode('append') (overwrite would need "
                              "to delete the topic's records)")
        opts = self._options("write").for_scope(streaming=False, direction="write")
        return BatchWriter(build_write_setup(opts, schema))

    def streamWriter(self, schema, overwrite: bool):
        from connector.spark._sink import StreamWriter
        from connector.spark._write import build_write_setup

        # Complete/update output modes re-send their rows each micro-batch, as Spark's Kafka sink does.
        opts = self._options("write").for_scope(streaming=True, direction="write")
        return StreamWriter(build_write_setup(opts, schema))

    def __repr__(self) -> str:  # options may hold secrets: never show them
        return "AsyncApiKafkaDataSource(...)"
