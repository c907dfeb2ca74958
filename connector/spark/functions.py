"""Column functions: decode raw Kafka bytes held in any DataFrame, e.g. Spark's ``format("kafka")``.

The same vectorized path as the ``asyncapi-kafka`` source (``wireformat.parse_frames`` then
``connector.decode``) runs inside Arrow UDFs (``pyspark.sql.functions.arrow_udf``): Spark
hands each Python worker a ``pyarrow.BinaryArray`` and gets a ``StructArray`` back, so
binary columns are never converted to pandas or Python objects.

The output type is fixed on the driver when the column is built (from ``schema`` or from
the registry); decoders and registry clients are created lazily in each Python worker and
cached there (keyed by configuration and process id), so the registry is asked once per
distinct schema id per worker process, however many rows and tasks.

Examples
--------
>>> from connector.spark.functions import from_registry, strip_header
>>> df = spark.read.format("kafka").option("subscribe", "orders").load()  # doctest: +SKIP
>>> df.select(from_registry("value", subject="orders-value",
...                         registry_url="http://registry:8081").alias("order"))  # doctest: +SKIP
"""
from __future__ import annotations

import dataclasses
import json
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from connector.decode import Mode
from connector.errors import ConfigError, DecodeError
from wireformat import Framing, uuid_strings

if TYPE_CHECKING:
    from registry import RegistryConfig

    from connector.decode import Decoder

__all__ = ["from_registry", "to_registry", "schema_id", "strip_header"]

# The column functions have no DROPMALFORMED: a column expression cannot drop its row.
_MODES = (Mode.FAILFAST, Mode.PERMISSIVE)
_HEADER_TYPE = pa.struct([("framing", pa.string()), ("schema_id", pa.int64()), ("schema_guid", pa.string()),
                          ("payload", pa.binary()), ("error", pa.string())])


@dataclasses.dataclass(frozen=True)
class _Spec:
    """A reader schema given inline (the shape ``build_decoder`` accepts)."""

    format: str
    text: str
    message_name: str | None = None


# -- executor side ------------------------------------------------------------------------
_LOOKUPS: dict[tuple, Any] = {}
_LOOKUPS_LOCK = threading.Lock()


def _lookup_for(config: "RegistryConfig | None") -> Callable[[Any], Any] | None:
    """Per-worker-process schema lookup; ``None`` config means writer = reader schema."""
    if config is None:
        return None  # decode_column then reads each payload with the reader schema
    key = (config, os.getpid())
    fn = _LOOKUPS.get(key)
    if fn is None:
        from registry import client_for

        with _LOOKUPS_LOCK:
            fn = _LOOKUPS.setdefault(key, client_for(config).lookup)
    return fn


@dataclasses.dataclass(frozen=True)
class _DecodeJob:
    """Everything a worker needs to decode one batch (picklable primitives + a Decoder)."""

    decoder: "Decoder"
    framing: Framing
    registry_config: "RegistryConfig | None"  # None: every row is read with the reader schema
    mode: Mode
    with_errors: bool
    protobuf_indexes: bool
    out_type: pa.DataType  # the Arrow type Spark expects back

    def run(self, values: pa.Array, headers: pa.Array | None = None) -> pa.Array:
        from connector.decode import decode_column, first_error_row

        res = decode_column(values, framing=self.framing, decoder=self.decoder,
                            lookup=_lookup_for(self.registry_config), headers=headers,
                            protobuf_indexes=self.protobuf_indexes)
        if self.mode is Mode.FAILFAST:
            i = first_error_row(res.errors)
            if i is not None:
                raise DecodeError(
                    f"from_registry: malformed record at row {i} of the batch: {res.errors[i].as_py()}. "
                    "Use mode='PERMISSIVE' (null on bad rows) or with_errors=True (error text per row)",
                    schema_id=res.parsed.schema_id_at(i))
        if self.with_errors:
            value_type = self.out_type.field(0).type
            return pa.StructArray.from_arrays([_cast(res.values, value_type), res.errors],
                                              fields=list(self.out_type))
        return _cast(res.values, self.out_type)


@dataclasses.dataclass(frozen=True)
class _HeaderJob:
    framing: Framing
    out_type: pa.DataType = _HEADER_TYPE

    def run(self, values: pa.Array, headers: pa.Array | None = None) -> pa.Array:
        from connector.decode import decode_column

        res = decode_column(values, framing=self.framing, decoder=None, headers=headers)
        parsed = res.parsed
        cols = [parsed.framing_names(), parsed.int_id, uuid_strings(parsed.guid), res.values, res.errors]
        return pa.StructArray.from_arrays(cols, fields=list(self.out_type), mask=pc.is_null(res.raw))


def _cast(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr if arr.type.equals(typ) else arr.cast(typ)


# -- driver side --------------------------------------------------------------------------
def _registry_config(options: Mapping[str, str] | None, registry_url: str | None):
    from connector.options import registry_config_for

    merged: dict[str, str] = {}
    for k, v in (options or {}).items():
        key = str(k).strip().lower()
        if not key.startswith("schema.registry."):
            raise ConfigError(f"unknown option {k!r}: from_registry options are the source's "
                              "'schema.registry.*' settings")
        merged[key] = v
    if registry_url:
        merged["schema.registry.url"] = registry_url
    return registry_config_for(merged)


def _guess_format(text: str) -> str:
    try:
        doc = json.loads(text)
    except ValueError:
        return "protobuf"  # .proto source is not JSON
    if isinstance(doc, (str, list)) or (isinstance(doc, dict) and doc.get("type") in
                                        ("record", "enum", "fixed", "array", "map")
                                        and "properties" not in doc and "items" not in doc):
        return "avro"
    return "json"


def _inline(schema, fmt, message) -> _Spec:
    """A schema given inline (text or a parsed dict) and its format (guessed when not given)."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return _Spec((fmt or _guess_format(text)).lower(), text, message)


def _subject_version(client, subject: str, version):
    """The subject's given version, or its latest when ``version`` is None or "latest"."""
    if version is None or str(version).lower() == "latest":
        return client.get_latest(subject)
    return client.get_version(subject, int(version))


def _reader(schema, fmt, message, subject, sid, version, config):
    if schema is not None:
        return _inline(schema, fmt, message)
    if config is None:
        raise ConfigError("from_registry needs a reader schema: pass schema=..., or schema_id=/subject= "
                          "together with registry_url= (or options={'schema.registry.url': ...})")
    from registry import client_for

    client = client_for(config)
    if sid is not None:
        return client.get_schema_by_id(int(sid))
    if subject:
        return _subject_version(client, subject, version)
    raise ConfigError("from_registry needs schema=, schema_id= or subject=")


def _apply(job, col, headers):
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.pandas.types import from_arrow_type

    spark_type = from_arrow_type(job.out_type)
    if headers is None:
        def run(values: pa.Array) -> pa.Array:
            return job.run(values)
        return arrow_udf(run, spark_type)(_col(col))

    def run_h(values: pa.Array, hdrs: pa.Array) -> pa.Array:
        return job.run(values, hdrs)
    return arrow_udf(run_h, spark_type)(_col(col), _col(headers))


def _framing_of(wire_format: str, headers) -> Framing:
    """Validated framing; header framings need the headers column."""
    try:
        framing = Framing(wire_format)
    except ValueError as e:
        raise ConfigError(f"unknown wire_format {wire_format!r}; valid: "
                          + ", ".join(f.value for f in Framing)) from e
    if framing.in_header and headers is None:
        raise ConfigError(f"wire_format {framing.value!r} reads the schema id from Kafka headers: pass headers=")
    return framing


def _col(c):
    from pyspark.sql.functions import col as _c

    return _c(c) if isinstance(c, str) else c


def from_registry(col, *, schema: str | dict | None = None, subject: str | None = None,
                  schema_id: int | None = None, version: int | str | None = None,
                  registry_url: str | None = None, options: Mapping[str, str] | None = None,
                  format: str | None = None, wire_format: str = "confluent",
                  mode: str = "FAILFAST", with_errors: bool = False, message: str | None = None,
                  headers=None):
    """Decode a column of schema-registry framed Kafka bytes into a typed struct column.

    Each row's writer schema comes from its frame (looked up in the registry once per
    distinct id per worker process) and is resolved to the reader schema, so one column may
    mix records of several schema versions.

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
        The source's ``schema.registry.*`` settings (auth, TLS, vendor, timeouts...).
        Without any registry setting, every row is read with the inline ``schema`` as writer.
    format : {"avro", "json", "protobuf"}, optional
        Payload format of an inline ``schema`` (guessed from its text when omitted).
    wire_format : str
        A ``wireformat.Framing`` value: ``"confluent"`` (default), ``"confluent-guid"``,
        ``"glue"``, ``"apicurio-legacy"``, ``"apicurio-new"``, ``"auto"``, ``"none"``, or a
        header framing (then pass ``headers``).
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
    from connector.decode import DecodeOptions, build_decoder

    mode = Mode.parse(mode, allowed=_MODES)
    framing = _framing_of(wire_format, headers)
    config = _registry_config(options, registry_url)
    reader = _reader(schema, format, message, subject, schema_id, version, config)
    decoder = build_decoder(reader, options=DecodeOptions(format=format, protobuf_message=message))
    if with_errors:
        mode = Mode.PERMISSIVE
        out_type = pa.struct([pa.field("value", decoder.arrow_type), pa.field("error", pa.string())])
    else:
        out_type = decoder.arrow_type
    job = _DecodeJob(decoder=decoder, framing=framing, registry_config=config, mode=mode,
                     with_errors=with_errors,
                     protobuf_indexes=decoder.fmt == "protobuf" and framing.carries_protobuf_indexes,
                     out_type=_spark_arrow(out_type))
    return _apply(job, col, headers)


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
    return _apply(_HeaderJob(_framing_of(wire_format, headers)), col, headers)


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


# -- to_registry: the encoding dual of from_registry ----------------------------------------
@dataclasses.dataclass(frozen=True)
class _EncodeJob:
    """Everything a worker needs to encode and frame one batch (picklable)."""

    encoder: Any
    framing: str
    schema_id: Any  # int id, or GUID text for GUID framings
    message_indexes: tuple | None
    compression: str | None
    mode: Mode
    with_errors: bool

    def run(self, values: pa.Array) -> pa.Array:
        from wireformat import frame_payloads

        from connector.decode import first_error_row
        from connector.encode import EncodeError

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        res = self.encoder.encode(values)
        errors = res.errors
        i = first_error_row(errors) if self.mode == Mode.FAILFAST and res.error_count else None
        if i is not None:
            raise EncodeError(f"to_registry: row {i} of the batch cannot be encoded: {errors[i].as_py()}. "
                              "Use mode='PERMISSIVE' (null on bad rows) or with_errors=True "
                              "(error text per row)")
        framed = frame_payloads(res.payloads, self.framing, self.schema_id,
                                message_indexes=list(self.message_indexes) if self.message_indexes else None,
                                compression=self.compression).values
        if self.with_errors:
            return pa.StructArray.from_arrays([framed, errors.cast(pa.string())],
                                              fields=[pa.field("value", pa.binary()),
                                                      pa.field("error", pa.string())])
        return framed




def _writer_schema(schema, fmt, message, subject, sid, version, config, auto_register, use_latest,
                   normalize):
    """(schema used to encode, registry Schema or None, id to frame with)."""
    inline = _inline(schema, fmt, message) if schema is not None else None
    modes = [m for m, on in (("schema_id", sid is not None), ("use_latest_version", use_latest),
                             ("auto_register", auto_register)) if on]
    if len(modes) > 1:
        raise ConfigError(f"to_registry: pick one registration mode, got {modes}")
    if not modes:
        raise ConfigError("to_registry needs a registration mode: schema_id=<pinned id>, "
                          "use_latest_version=True with subject=, or auto_register=True with "
                          "schema= and subject=")
    if config is None:
        raise ConfigError("to_registry needs the registry: pass registry_url= or "
                          "options={'schema.registry.url': ...}")
    from registry import client_for

    client = client_for(config)
    if sid is not None:
        reg = client.get_schema_by_id(int(sid))
    elif use_latest:
        if not subject:
            raise ConfigError("use_latest_version=True needs subject=")
        reg = _subject_version(client, subject, version)
    else:
        if inline is None or not subject:
            raise ConfigError("auto_register=True needs schema= (the schema to register) and subject=")
        new_id = client.register_schema(subject, inline, normalize=normalize)
        reg = client.get_schema_by_id(new_id)
    return (inline if inline is not None else reg), reg


def to_registry(col, *, schema: str | dict | None = None, subject: str | None = None,
                schema_id: int | None = None, version: int | str | None = None,
                use_latest_version: bool = False, auto_register: bool = False,
                normalize: bool = False, registry_url: str | None = None,
                options: Mapping[str, str] | None = None, format: str | None = None,
                wire_format: str = "confluent", compression: str | None = None,
                message: str | None = None, mode: str = "FAILFAST", with_errors: bool = False):
    """Encode a struct column into schema-registry framed bytes (the dual of :func:`from_registry`).

    The result is a binary column ready for Spark's own ``format("kafka")`` sink (as
    ``value`` or ``key``) or for files. Encoding is vectorized per Arrow batch
    (:mod:`connector.encode`), framing is :func:`wireformat.frame_payloads`; the schema and
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
        The registry (``schema.registry.*`` settings), as for :func:`from_registry`.
    format : {"avro", "json", "protobuf"}, optional
        Format of an inline ``schema`` (guessed from its text when omitted).
    wire_format : str
        ``"confluent"`` (default), ``"confluent-guid"``, ``"glue"``, ``"apicurio-new"``
        (content id = the Confluent-API id), ``"apicurio-legacy"`` (with ``schema_id`` the
        global id to write) or ``"none"``. Header framings are not available here: the id
        would travel in Kafka headers (use the ``asyncapi-kafka`` sink).
    compression : {None, "zlib"}
        Glue only.
    message : str, optional
        Protobuf: the message to write when the ``.proto`` holds several.
    mode : {"FAILFAST", "PERMISSIVE"}
        FAILFAST raises :class:`connector.encode.EncodeError` naming the row and the cause
        (a value the schema cannot hold); PERMISSIVE gives null for such rows.
    with_errors : bool
        Return ``struct<value: binary, error: string>`` (implies PERMISSIVE).

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
    from connector.encode import EncodeOptions, build_encoder

    mode = Mode.parse(mode, allowed=_MODES)
    framing = _framing_of(wire_format, None)
    if framing is Framing.AUTO or framing.in_header:
        raise ConfigError(f"to_registry cannot write wire_format {framing.value!r}: pick confluent, "
                          "confluent-guid, glue, apicurio-new, apicurio-legacy or none")
    if compression not in (None, "none") and framing != "glue":
        raise ConfigError("compression applies only to wire_format='glue'")
    config = _registry_config(options, registry_url)
    used, reg = _writer_schema(schema, format, message, subject, schema_id, version, config,
                               auto_register, use_latest_version, normalize)
    encoder = build_encoder(used, fmt=format, options=EncodeOptions(format=format, protobuf_message=message))
    if framing.has_guid:
        if not reg.guid:
            raise ConfigError(f"wire_format {framing!r} needs the schema's GUID, which this registry "
                              "does not give")
        frame_id = reg.guid
    elif framing.id_kind == "global":
        frame_id = int(schema_id) if schema_id is not None else int(reg.id)
    else:
        frame_id = int(reg.id)
    # Apicurio's Protobuf serde writes no Confluent message indexes (Framing says which do).
    indexes = tuple(encoder.message_indexes) if encoder.message_indexes and \
        framing.carries_protobuf_indexes else None
    if with_errors:
        mode = Mode.PERMISSIVE
    job = _EncodeJob(encoder=encoder, framing=framing, schema_id=frame_id, message_indexes=indexes,
                     compression=compression if framing == "glue" else None, mode=mode,
                     with_errors=with_errors)
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import BinaryType, DataType, StringType, StructField, StructType

    spark_type: DataType = StructType([StructField("value", BinaryType()), StructField("error", StringType())]) \
        if with_errors else BinaryType()

    def run(values: pa.Array) -> pa.Array:
        return job.run(values)
    # pyspark's stubs lack the (function, returnType) form that arrow_udf accepts at run time
    return arrow_udf(run, spark_type)(_col(col))  # type: ignore[call-overload]
