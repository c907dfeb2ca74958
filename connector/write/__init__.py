"""connector.write: the sink's write without Spark (no pyspark imports), the mirror of :mod:`connector.read`.

:func:`build_write_setup` turns a write's options and its input's columns (an Arrow schema) into
a :class:`WriteSetup` on the driver (document → plan → topics → writer schemas from
:mod:`connector.schema` → encoders and framing → the input layout checked → topics created);
on executors, :func:`encode_batch` turns each input Arrow batch into the records to produce, and
:func:`write_batches` / :func:`write_exactly_once` are a task's whole write, returning its
:class:`WriteResult` only when every record is acknowledged. The Spark sink
(:mod:`connector.spark`) converts the DataFrame's schema to Arrow and calls these.

Examples
--------
>>> import pyarrow as pa
>>> from connector.options import parse_any
>>> opts = parse_any({"asyncapi": "examples/shop.yaml", "channel": "orders"}, direction="write")  # doctest: +SKIP
>>> setup = build_write_setup(opts, pa.schema([("key", pa.string()), ("value", pa.struct([]))]))  # doctest: +SKIP
>>> write_batches(setup, batches).rows  # doctest: +SKIP
1000
"""
from connector.write._pipeline import EncodedBatch, encode_batch
from connector.write._produce import write_batches, write_exactly_once
from connector.write._setup import build_write_setup
from connector.write._types import WriteResult, WriteSetup

__all__ = ["build_write_setup", "WriteSetup", "EncodedBatch", "encode_batch",
           "write_batches", "write_exactly_once", "WriteResult"]
