"""Column functions: decode raw Kafka bytes held in any DataFrame, e.g. Spark's ``format("kafka")``.

The same vectorized path as the ``asyncapi-kafka`` source (``wireformat.parse_frames`` then
``connector.formats``) runs inside Arrow UDFs (``pyspark.sql.functions.arrow_udf``): Spark
hands each Python worker a ``pyarrow.BinaryArray`` and gets a ``StructArray`` back, so
binary columns are never converted to pandas or Python objects.

The output type is fixed on the driver when the column is built (from ``schema`` or from
the registry); decoders and registry clients are created lazily in each Python worker and
cached there (keyed by configuration and process id), so the registry is asked once per
distinct schema id per worker process, however many rows and tasks.

Arguments are options: each keyword argument is an option of the function's scope in the option
table (``wire_format`` is ``wireFormat``), and ``options=`` takes the same options by the source's
names; :func:`connector.options.parse_arguments` parses them all once, with the source's parsers,
defaults and messages, and :meth:`connector.schema.SchemaRequest.from_options` makes the schema
request from them as it does for a job.

Examples
--------
>>> from connector.spark.functions import from_registry, strip_header
>>> df = spark.read.format("kafka").option("subscribe", "orders").load()  # doctest: +SKIP
>>> df.select(from_registry("value", subject="orders-value",
...                         registry_url="http://registry:8081").alias("order"))  # doctest: +SKIP
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Mapping

import pyarrow as pa

from wireformat import Framing

from connector.errors import ConfigError
from connector.formats import Mode, payload_format
from connector.spark._column_jobs import DecodeJob, EncodeJob, HeaderJob

if TYPE_CHECKING:
    from connector.asyncapi import ReadPlan
    from connector.options import SourceOptions
    from connector.schema import SchemaRequest

__all__ = ["from_registry", "to_registry", "schema_id", "strip_header"]


def _channel_plan(opts: SourceOptions) -> ReadPlan | None:
    """The plan of the document's channel whose messages ``from_registry`` decodes (None: no document).
    The records' ``topic`` names their data-contract subject; it does not choose the channel's topic."""
    if opts.asyncapi is None:
        return None
    from connector.read import load_plan

    return load_plan(dataclasses.replace(opts, topic=None))


def _request(opts: SourceOptions) -> SchemaRequest:
    """The schema layer's request of a column function: the one the source's options make, with
    the ``kafka.*`` settings of a dead-letter producer."""
    from connector.schema import SchemaRequest

    request = SchemaRequest.from_options(opts)
    conf = opts.kafka_settings()
    if conf:
        request = dataclasses.replace(request, contract=request.contract.with_producer(conf))
    return request


def _needs_headers(function: str, framing: Framing, headers) -> None:
    """A header framing reads the schema id from the records' Kafka headers: the column must be given."""
    if framing.in_header and headers is None:
        raise ConfigError(f"{function}: wire_format {framing.value!r} reads the schema id from Kafka headers: "
                          "pass headers=")


def _udf(fn: Callable[..., pa.Array], spark_type: Any) -> Any:
    """A scalar Arrow UDF typed by ``fn``'s hints (saying the eval type instead makes PySpark warn)."""
    from pyspark.sql.functions import arrow_udf

    # pyspark's stubs lack the (function, returnType) form that arrow_udf accepts at run time
    return arrow_udf(fn, spark_type)  # type: ignore[call-overload]


def _apply(job, col, headers, topics=None):
    from pyspark.sql.pandas.types import from_arrow_type

    spark_type = from_arrow_type(job.out_type)
    if topics is not None:
        if headers is None:
            def run_t(values: pa.Array, tops: pa.Array) -> pa.Array:
                return job.run(values, topics=tops)
            return _udf(run_t, spark_type)(_col(col), _col(topics))

        def run_ht(values: pa.Array, hdrs: pa.Array, tops: pa.Array) -> pa.Array:
            return job.run(values, hdrs, topics=tops)
        return _udf(run_ht, spark_type)(_col(col), _col(headers), _col(topics))
    if headers is None:
        def run(values: pa.Array) -> pa.Array:
            return job.run(values)
        return _udf(run, spark_type)(_col(col))

    def run_h(values: pa.Array, hdrs: pa.Array) -> pa.Array:
        return job.run(values, hdrs)
    return _udf(run_h, spark_type)(_col(col), _col(headers))


def _col(c):
    from pyspark.sql.functions import col as _c

    return _c(c) if isinstance(c, str) else c


def from_registry(col, *, schema: str | dict | None = None, subject: str | None = None,
                  schema_id: int | None = None, version: int | str | None = None,
                  registry_url: str | None = None, options: Mapping[str, str] | None = None,
                  format: str | None = None, wire_format: str | None = None,
                  mode: str = "FAILFAST", with_errors: bool = False, message: str | None = None,
                  headers=None, topic=None, asyncapi: str | None = None, channel: str | None = None,
                  server: str | None = None):
    """Decode a column of schema-registry framed Kafka bytes into a typed struct column.

    Each row's writer schema comes from its frame (looked up in the registry once per
    distinct id per worker process) and is resolved to the reader schema, so one column may
    mix records of several schema versions.

    With ``asyncapi`` and ``channel`` the reader schemas are the channel's message payloads, as
    ``spark.read.format("asyncapi-kafka")`` reads them: several messages give
    ``struct<message1, message2, ...>``, each row filling the field of its type, told by its
    schema id, else by its type header (pass ``headers``), else by the one schema that accepts it
    (``docs/multi-type-channels.md``).

    Parameters
    ----------
    col : Column or str
        The binary column (e.g. ``value`` of ``spark.read.format("kafka")``).
    schema : str or dict, optional
        Reader schema given inline: Avro schema JSON, JSON Schema text or ``.proto`` source.
    subject, version : str, int or "latest", optional
        Reader schema = this registry subject's version (latest when omitted).
    schema_id : int, optional
        Reader schema = this registry id.
    registry_url : str, optional
        Shorthand for ``options={"schema.registry.url": ...}``.
    options : dict, optional
        Options by the source's names, parsed by the same option table (``docs/column-functions.md``
        lists the ones each function takes): the ``schema.registry.*`` settings (auth, TLS,
        vendor, timeouts...); without any registry setting, every row is read with the inline
        ``schema`` as writer. Data contracts: ``rules.enabled``, ``rules.<kms setting>`` (e.g.
        ``rules.secret`` for the local KMS), ``use.latest.with.metadata``, ``rules.dlq.topic`` with
        ``kafka.bootstrap.servers``. A keyword argument wins over the same option here.
    format : {"avro", "json", "protobuf"}, optional
        Payload format of an inline ``schema`` (guessed from its text when omitted).
    wire_format : str, optional
        A ``wireformat.Framing`` value: ``"confluent"`` (the default without ``asyncapi``; with
        it, the document's framing), ``"confluent-guid"``, ``"glue"``, ``"apicurio-legacy"``,
        ``"apicurio-new"``, ``"auto"``, ``"none"``, or a header framing (then pass ``headers``).
    mode : {"FAILFAST", "PERMISSIVE"}
        FAILFAST raises :class:`connector.errors.DecodeError` (surfacing in Spark as a
        ``PythonException``) naming the row's schema id and the cause; PERMISSIVE gives null.
    with_errors : bool
        Return ``struct<value: ..., error: string>``: ``error`` holds the reason text for
        bad rows (null otherwise). Implies PERMISSIVE. This is how to see *why* rows are null.
    message : str, optional
        Protobuf: the message to read when the ``.proto`` holds several.
    headers : Column or str, optional
        The Kafka ``headers`` column, required by the ``header-*`` framings.
    topic : str or Column, optional
        The records' topic (a name, or a column such as ``topic`` of ``format("kafka")``): the
        subject of data-contract keys (``<topic>-value``) when ``subject`` is not given.
    asyncapi, channel, server : str, optional
        An AsyncAPI document (path or text) and its channel (and server, when several Kafka
        servers serve it): decode with the channel's message payloads and its registry.

    Returns
    -------
    Column
        A struct column of the decoded value (null for null input).

    Examples
    --------
    >>> import json
    >>> from wireformat import encode_frame
    >>> from connector.spark.functions import from_registry
    >>> schema = '{"type": "object", "properties": {"n": {"type": "integer"}}}'
    >>> df = spark.createDataFrame([(encode_frame("confluent", 1, b'{"n": 5}'),)], "value binary")
    >>> df.select(from_registry("value", schema=schema, format="json").alias("v")).first().v.n
    5
    >>> bad = spark.createDataFrame([(b"junk",)], "value binary")
    >>> row = bad.select(from_registry("value", schema=schema, format="json", with_errors=True)
    ...                  .alias("r")).first().r
    >>> row.value is None, row.error.startswith("unknown magic byte")
    (True, True)
    """
    from connector.options import FROM_REGISTRY, framing_of, parse_arguments, registry_config_for
    from connector.schema import value_reading

    opts = parse_arguments(FROM_REGISTRY, dict(
        schema=schema, subject=subject, schema_id=schema_id, version=version, registry_url=registry_url,
        format=format, wire_format=wire_format, mode=mode, with_errors=with_errors, message=message,
        topic=topic if isinstance(topic, str) else None, asyncapi=asyncapi, channel=channel, server=server), options)
    plan = _channel_plan(opts)
    framing = framing_of(opts, plan)  # wire_format=, else the document's, else confluent
    _needs_headers(FROM_REGISTRY, framing, headers)
    config = registry_config_for(opts.registry_options(), plan)
    if opts.inline_schema is None and config is None and plan is None:
        raise ConfigError("from_registry needs a reader schema: pass schema=, or schema_id=/subject= "
                          "together with registry_url= (or options={'schema.registry.url': ...}), or the "
                          "channel of a document (asyncapi=, channel=)")
    request = _request(opts)
    reading = value_reading(request, plan=plan, registry=config, framing=framing, topic=opts.topic)
    decoder = reading.decoder
    if decoder is None:
        raise ConfigError(f"from_registry: channel {opts.channel!r} has no payload schema to decode with")
    routing = getattr(decoder, "routing", None)
    if headers is None and framing is Framing.NONE and routing is not None and routing.documented:
        names = ", ".join(h.name for h in routing.documented)
        raise ConfigError(f"from_registry: the records of channel {plan.channel if plan else ''!r} carry no schema id "
                          f"and say their message type in the Kafka header {names}: pass headers= (the "
                          "'headers' column of format(\"kafka\") with includeHeaders=true)")
    if opts.with_errors:
        out_type = pa.struct([pa.field("value", decoder.arrow_type), pa.field("error", pa.string())])
    else:
        out_type = decoder.arrow_type
    job = DecodeJob(decoder=decoder, framing=framing, registry_config=config,
                    mode=Mode.PERMISSIVE if opts.with_errors else opts.mode, with_errors=opts.with_errors,
                    protobuf_indexes=payload_format(decoder.fmt).indexed_messages and framing.carries_protobuf_indexes,
                    out_type=_spark_arrow(out_type), limits=request.limits, rules=reading.rules, topic=opts.topic)
    return _apply(job, col, headers, topic if topic is not None and not isinstance(topic, str) else None)


def _spark_arrow(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark round-trips for ``t`` (what the UDF must hand back)."""
    from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type

    return to_arrow_type(from_arrow_type(t), timezone="UTC")


def strip_header(col, wire_format: str = "auto", *, headers=None):
    """Parse only the schema-registry header of each row: no registry, no decoding.

    Parameters
    ----------
    col : Column or str
        The binary column.
    wire_format : str
        A ``wireformat.Framing`` value; ``"auto"`` (default) picks per row by magic byte
        (0x00 Confluent, 0x01 Confluent GUID, 0x03 Glue).
    headers : Column or str, optional
        The Kafka ``headers`` column, for the ``header-*`` framings.

    Returns
    -------
    Column
        ``struct<framing: string, schema_id: bigint, schema_guid: string, payload: binary,
        error: string>``: the framing found, the integer id or the GUID (as UUID text), the
        payload without its header, and the reason when the header could not be parsed.
        Null input gives a null struct.

    Examples
    --------
    >>> from wireformat import encode_frame
    >>> from connector.spark.functions import strip_header
    >>> df = spark.createDataFrame([(encode_frame("confluent", 7, b"abc"),)], "value binary")
    >>> r = df.select(strip_header("value").alias("h")).first().h
    >>> r.framing, r.schema_id, r.payload
    ('confluent', 7, b'abc')
    """
    from connector.options import STRIP_HEADER, framing_of, parse_arguments

    framing = framing_of(parse_arguments(STRIP_HEADER, {"wire_format": wire_format}))
    _needs_headers(STRIP_HEADER, framing, headers)
    return _apply(HeaderJob(framing), col, headers)


def schema_id(col, wire_format: str = "auto", *, headers=None):
    """Same as :func:`strip_header` (read ``.schema_id`` / ``.schema_guid`` of the result).

    Examples
    --------
    >>> from wireformat import encode_frame
    >>> from connector.spark.functions import schema_id
    >>> df = spark.createDataFrame([(encode_frame("confluent", 7, b"abc"),)], "value binary")
    >>> df.select(schema_id("value").schema_id.alias("id")).first().id
    7
    """
    return strip_header(col, wire_format, headers=headers)


def to_registry(col, *, schema: str | dict | None = None, subject: str | None = None,
                schema_id: int | None = None, version: int | str | None = None,
                use_latest_version: bool = False, auto_register: bool = False,
                normalize: bool = False, registry_url: str | None = None,
                options: Mapping[str, str] | None = None, format: str | None = None,
                wire_format: str = "confluent", compression: str | None = None,
                message: str | None = None, mode: str = "FAILFAST", with_errors: bool = False,
                topic: str | None = None):
    """Encode a struct column into schema-registry framed bytes (the dual of :func:`from_registry`).

    The result is a binary column ready for Spark's own ``format("kafka")`` sink (as
    ``value`` or ``key``) or for files. Encoding is vectorized per Arrow batch
    (:mod:`connector.formats`), framing is :func:`wireformat.frame_payloads`; the schema and
    its id are fixed on the driver, once.

    Parameters
    ----------
    col : Column or str
        The struct column to encode (field names matched to the schema; extra or missing
        fields fail the query with a message naming them). A null row gives a null value
        (a tombstone).
    schema : str or dict, optional
        The writer schema inline: Avro schema JSON, JSON Schema text or ``.proto`` source.
        Required with ``auto_register``; otherwise the registry's schema is used.
    subject, version : optional
        The subject to register under (``auto_register``) or to read the latest (or given)
        version of (``use_latest_version``).
    schema_id : int, optional
        Pinned schema id (confluent-kafka's ``use.schema.id``): encode with that schema and
        frame with that id.
    use_latest_version : bool
        Encode with the subject's latest version (confluent-kafka's ``use.latest.version``).
    auto_register : bool
        Register ``schema`` under ``subject`` if absent (``auto.register.schemas``); an
        incompatible schema fails here, on the driver
        (:class:`registry.IncompatibleSchemaError`), not per record.
    normalize : bool
        Ask the registry to normalize the schema when registering (``normalize.schemas``).
    registry_url, options :
        The registry (``schema.registry.*`` settings) and other options by the source's names, as
        for :func:`from_registry`.
    format : {"avro", "json", "protobuf"}, optional
        Format of an inline ``schema`` (guessed from its text when omitted).
    wire_format : str
        ``"confluent"`` (default), ``"confluent-guid"``, ``"glue"``, ``"apicurio-new"``
        (content id = the Confluent-API id), ``"apicurio-legacy"`` (with ``schema_id`` the
        global id to write) or ``"none"``. Header framings are not available here: the id
        would travel in Kafka headers (use the ``asyncapi-kafka`` sink).
    compression : {None, "none", "zlib"}
        Glue only (``glue.compression``).
    message : str, optional
        Protobuf: the message to write when the ``.proto`` holds several.
    mode : {"FAILFAST", "PERMISSIVE"}
        FAILFAST raises :class:`connector.formats.EncodeError` naming the row and the cause
        (a value the schema cannot hold); PERMISSIVE gives null for such rows.
    with_errors : bool
        Return ``struct<value: binary, error: string>`` (implies PERMISSIVE).
    topic : str, optional
        The topic the records are for: the subject of data-contract keys when ``subject`` is not
        given. The registered schema's rules (encryption, conditions) are applied before framing;
        ``options`` take the data-contract settings as for :func:`from_registry`.

    Returns
    -------
    Column
        Binary (or ``struct<value, error>`` with ``with_errors``).

    Examples
    --------
    >>> from connector.spark.functions import to_registry, from_registry
    >>> schema = '{"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}'
    >>> df = spark.createDataFrame([(5,)], "n long").selectExpr("struct(n) AS v")  # doctest: +SKIP
    >>> out = df.select(to_registry("v", schema=schema, subject="r-value", auto_register=True,
    ...                             registry_url=url).alias("value"))  # doctest: +SKIP
    >>> out.select(from_registry("value", schema=schema, registry_url=url).n).first()[0]  # doctest: +SKIP
    5
    """
    from connector.options import TO_REGISTRY, framing_of, glue_compression, parse_arguments, registry_config_for
    from connector.schema import value_writer

    opts = parse_arguments(TO_REGISTRY, dict(
        schema=schema, subject=subject, schema_id=schema_id, version=version, use_latest_version=use_latest_version,
        auto_register=auto_register, normalize=normalize, registry_url=registry_url, format=format,
        wire_format=wire_format, compression=compression, message=message, mode=mode, with_errors=with_errors,
        topic=topic), options)
    framing = framing_of(opts)
    compression = glue_compression(opts, framing)
    writer = value_writer(_request(opts), plan=None, registry=registry_config_for(opts.registry_options()),
                          framing=framing, topic=opts.topic)
    if writer.encoder is None:
        raise ConfigError("to_registry needs a schema to encode with: schema=, schema_id= or "
                          "use_latest_version=True with subject=")
    job = EncodeJob(writer=writer, compression=compression,
                    mode=Mode.PERMISSIVE if opts.with_errors else opts.mode, with_errors=opts.with_errors,
                    topic=opts.topic)
    from pyspark.sql.types import BinaryType, DataType, StringType, StructField, StructType

    spark_type: DataType = StructType([StructField("value", BinaryType()), StructField("error", StringType())]) \
        if opts.with_errors else BinaryType()

    def run(values: pa.Array) -> pa.Array:
        return job.run(values)
    return _udf(run, spark_type)(_col(col))
