"""connector.read: the source's read without Spark (no pyspark imports).

:func:`build_setup` turns a read's options into a :class:`ReadSetup` on the driver (document →
plan → reader schemas from :mod:`connector.schema` → output schema → :class:`Pipeline`); the
:class:`Pipeline` turns each raw Kafka Arrow batch into an output batch. The Spark source
(:mod:`connector.spark`) and :func:`peek` share both, so a record decodes the same with or
without Spark. :func:`load_plan`, :func:`registry_config` and :func:`document_kafka` are what
reads and writes take from the document. :func:`plan_offsets` is where a batch read starts and
ends per partition, for both.
"""
from connector.read._plan import document_kafka, load_plan, registry_config
from connector.read._setup import ReadSetup, build_setup
from connector.read._offsets import offset_reader, offset_specs, plan_offsets
from connector.read._peek import parse_time, peek

__all__ = ["ReadSetup", "build_setup", "load_plan", "registry_config", "document_kafka",
           "peek", "parse_time", "plan_offsets", "offset_reader", "offset_specs"]
