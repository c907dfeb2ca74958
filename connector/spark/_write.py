"""The ``asyncapi-kafka`` sink: ``df.write`` / ``df.writeStream`` to a channel of an AsyncAPI document.

Driver (``DataSource.writer()``, once per job or query): options, document, channel, the schema
to encode with and the id to frame with (registry look-up or registration), the input layout
checked against the DataFrame's schema, topics created when asked. Everything lands in a frozen
:class:`WriteSetup` that travels to executors inside the writer.

Executors (:mod:`connector.spark._write_task`): Arrow batches → encode → frame → produce, every
delivery checked before ``write()`` returns its commit message. The writer objects Spark ships
(:mod:`connector.spark._sink`) carry the setup pickled, so the driver's commit does not import
the connector.

Input columns follow Spark's Kafka sink:

============  ===========================================================================
column        meaning
============  ===========================================================================
``value``     the message (a struct of the schema's fields, or the schema's type); without
              it, every column not listed here is a field of the message. On a channel of
              several messages, a struct with one field per message (the shape a read gives):
              each row sets the field of its message, and carries its type header
``key``       optional: binary, string, or a value of the document's key schema
``headers``   optional: ``array<struct<key: string, value: binary>>``
``partition`` optional: int; null or absent lets the producer's partitioner choose
``topic``     optional: the topic of each row (a templated channel); it must be an address of
              the channel. The ``topic`` option overrides it, as in Spark.
<param>       for a templated address ``orders.{region}``: a ``region`` column fills the topic
============  ===========================================================================
"""
from __future__ import annotations

import dataclasses
import logging
import re

import pyarrow as pa
from wireformat import Framing

from connector.errors import ConfigError
from connector.options import SourceOptions
from connector.read import document_kafka, load_plan
from connector.read import registry_config as registry_config_of
from connector.spark._sink import BatchWriter, StreamWriter
from connector.spark._write_types import Encoding, EncodingMode, WriteCommit, WriteSetup

__all__ = ["BatchWriter", "StreamWriter", "WriteCommit", "WriteSetup", "build_write_setup"]

log = logging.getLogger("asyncapi_kafka")

RESERVED = ("key", "headers", "partition", "topic")
_PARAM = re.compile(r"\{([^{}]+)\}")


def _address_parts(plan) -> tuple[tuple[str, str], ...]:
    address = plan.address or ""
    fixed = dict(plan.param_values)
    parts: list[tuple[str, str]] = []
    pos = 0
    for m in _PARAM.finditer(address):
        if m.start() > pos:
            parts.append(("lit", address[pos:m.start()]))
        name = m.group(1)
        parts.append(("fixed", fixed[name]) if name in fixed else ("param", name))
        pos = m.end()
    if pos < len(address):
        parts.append(("lit", address[pos:]))
    return tuple(parts)


def _check_topic(plan, topic: str, origin: str) -> str:
    if not plan.matches(topic):
        raise ConfigError(f"{origin} {topic!r} is not an address of channel {plan.channel!r} "
                          f"({plan.address}); the document describes no such topic")
    return topic


def _arrow_type(spark_type):
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type, timezone="UTC")


def _check_coerce(encoder, spark_type, column: str) -> None:
    """Fail on the driver when the DataFrame cannot be written with the schema (missing/extra fields)."""
    encoder.coerce(pa.array([], _arrow_type(spark_type)), column)


def build_write_setup(opts: SourceOptions, schema) -> WriteSetup:
    """Resolve a write on the driver: channel, encoders, schema ids, input layout, topics.

    Raises
    ------
    ConfigError, AsyncApiDocumentError, EncodeError, RegistryError
        Before any task starts.
    """
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        ShortType,
        StringType,
        StructType,
    )

    from connector.schema import SchemaRequest, is_string_schema, key_writer

    request = SchemaRequest.from_options(opts)
    plan = load_plan(opts, sending=True)
    if request.contract.enabled:  # a rule's dead-letter records go to the job's own cluster
        from connector.kafka import OWNED_PRODUCER_SETTINGS, kafka_conf_from_options

        conf = kafka_conf_from_options(opts.kafka_settings(), plan_config=document_kafka(plan, client_id=True),
                                       owned=OWNED_PRODUCER_SETTINGS, warn=False, require_bootstrap=False)
        request = dataclasses.replace(request, contract=request.contract.with_producer(conf))
    framing = opts.wire_format or plan.framing()
    registry_config = registry_config_of(opts, plan)
    names = [f.name for f in schema.fields]
    fields = {f.name: f for f in schema.fields}

    # -- topics ------------------------------------------------------------------------------------
    parts = _address_parts(plan)
    params = [p for kind, p in parts if kind == "param"]
    topic = None
    topic_column = False
    if opts.topic:
        topic = _check_topic(plan, opts.topic, "option 'topic'")
    elif plan.topics:
        topic = plan.topics[0]
        topic_column = "topic" in names  # checked against the channel's topic on the executors
    elif "topic" in names:
        topic_column = True
    elif params:
        missing = [p for p in params if p not in names]
        if missing:
            raise ConfigError(f"channel {plan.channel!r} has the templated address {plan.address!r}: give each "
                              f"row's topic with a 'topic' column, columns named after the parameters "
                              f"(missing: {', '.join(missing)}), 'channel.param.<name>' options, or the 'topic' "
                              "option")
    else:
        raise ConfigError(f"channel {plan.channel!r} has no address: set the 'topic' option or a 'topic' column")
    for col, allowed in (("topic", (StringType,)), ("partition", (IntegerType, LongType, ShortType))):
        if col in fields and not isinstance(fields[col].dataType, allowed):
            raise ConfigError(f"column '{col}' must be {'a string' if col == 'topic' else 'an integer'}, got "
                              f"{fields[col].dataType.simpleString()}")
    param_cols = set(params) if topic is None and not topic_column else set()
    for p in param_cols:
        if not isinstance(fields[p].dataType, StringType):
            raise ConfigError(f"address parameter column '{p}' must be a string")

    # -- value ---------------------------------------------------------------------------------------
    reserved = set(RESERVED) | param_cols
    value_column = "value" if "value" in names else None
    value_fields = () if value_column else tuple(n for n in names if n not in reserved)
    if _message_fields(plan, request, fields.get("value") if value_column else None):
        value = _several_messages(request, plan, registry_config, framing, topic, fields["value"].dataType, opts)
    else:
        value = _one_message(request, plan, registry_config, framing, topic, fields, value_column, value_fields, opts)

    # -- key -----------------------------------------------------------------------------------------
    key = Encoding(EncodingMode.ABSENT)
    if "key" in names:
        ktype = fields["key"].dataType
        key_spec = plan.key_schema
        if isinstance(ktype, (BinaryType, StringType)) and (key_spec is None or is_string_schema(key_spec)
                                                             or isinstance(ktype, BinaryType)):
            key = Encoding(EncodingMode.BYTES)
        elif key_spec is None:
            raise ConfigError(f"column 'key' is {ktype.simpleString()}, but the channel's messages declare no key "
                              "schema (Kafka message binding 'key'): give the key as binary or string")
        else:
            kwriter = key_writer(request, plan=plan, registry=registry_config, framing=framing, topic=topic)
            assert kwriter.encoder is not None  # the key schema is given
            _check_coerce(kwriter.encoder, ktype, "key")
            key = Encoding(EncodingMode.ENCODE, kwriter)
    if "headers" in names:
        htype = fields["headers"].dataType
        ok = (isinstance(htype, ArrayType) and isinstance(htype.elementType, StructType)
              and [f.name for f in htype.elementType.fields] == ["key", "value"]
              and isinstance(htype.elementType.fields[0].dataType, StringType)
              and isinstance(htype.elementType.fields[1].dataType, (BinaryType, StringType)))
        if not ok:
            raise ConfigError("column 'headers' must be array<struct<key: string, value: binary>>, got "
                              f"{htype.simpleString()}")

    setup = WriteSetup(
        options=opts, plan=plan, value=value, key=key, value_column=value_column, value_fields=value_fields,
        has_headers="headers" in names, has_partition="partition" in names, topic=topic,
        topic_column=topic_column, address_parts=parts,
        # the user's kafka.client.id wins over the document's (kafka_conf_from_options applies it last)
        base_kafka=document_kafka(plan, client_id=True))
    # Built once on the driver: a missing bootstrap list fails the write here, and TLS warnings
    # are logged once per job (tasks build it again with warn=False).
    setup.kafka_conf()
    _check_exactly_once(setup)
    if opts.create_topics:
        _create_topics(setup)
    return setup


def _one_message(request, plan, registry_config, framing: Framing, topic, fields, value_column, value_fields,
                 opts) -> Encoding:
    """The value written with one schema: the inline one, else the channel's one message."""
    from pyspark.sql.types import BinaryType, StringType, StructType

    from connector.schema import value_writer

    writer = value_writer(request, plan=plan, registry=registry_config, framing=framing, topic=topic)
    if writer.encoder is None:
        if value_column is None or not isinstance(fields["value"].dataType, (BinaryType, StringType)):
            raise ConfigError(f"channel {plan.channel!r} has no payload schema, so a 'value' column of binary or "
                              "string type is written as is; set 'use.latest.version'/'use.schema.id' to "
                              "encode with a registered schema")
        return Encoding(EncodingMode.BYTES)
    if value_column is not None:
        vtype = fields["value"].dataType
        if isinstance(vtype, BinaryType):
            raise ConfigError("column 'value' is binary, but the channel's message has a schema: give the "
                              "message as a struct 'value' (or its fields as columns) to be encoded, or "
                              "write the bytes with wireFormat=none and no payload schema")
        _check_coerce(writer.encoder, vtype, "value")
    else:
        if not value_fields:
            raise ConfigError("no 'value' column and no other columns to build the message from")
        _check_coerce(writer.encoder, StructType([fields[n] for n in value_fields]), "value")
    log.info("asyncapi-kafka write to channel %s: %s, framing %s%s", plan.channel, writer.describe(), framing,
             f", header {writer.headers[0][0]}" if writer.headers else "")
    return Encoding(EncodingMode.ENCODE, writer, opts_compression(opts, framing))


def _message_fields(plan, request, value_field) -> bool:
    """Whether ``value`` is the shape a read of several messages gives: a struct whose fields are
    messages of the channel (each row sets the one it is)."""
    from pyspark.sql.types import StructType

    specs = {m.name for m in plan.value_messages if m.payload is not None}
    if request.inline is not None or len(specs) < 2 or value_field is None:
        return False
    vtype = value_field.dataType
    return isinstance(vtype, StructType) and bool(vtype.fields) and all(f.name in specs for f in vtype.fields)


def _several_messages(request, plan, registry_config, framing: Framing, topic, vtype, opts) -> Encoding:
    """The writers of the messages ``value``'s fields name, each checked against its field's type."""
    from connector.schema import message_writers

    writers = message_writers(request, plan=plan, registry=registry_config, framing=framing, topic=topic)
    chosen = []
    for f in vtype.fields:
        w = writers[f.name]
        assert w.encoder is not None  # messages with a payload schema only
        _check_coerce(w.encoder, f.dataType, f"value.{f.name}")
        chosen.append((f.name, w))
        log.info("asyncapi-kafka write to channel %s, message %s: %s, framing %s%s", plan.channel, f.name,
                 w.describe(), framing, f", header {w.headers[0][0]}" if w.headers else "")
    return Encoding(EncodingMode.MESSAGES, None, opts_compression(opts, framing), tuple(chosen))


def _check_exactly_once(setup: WriteSetup) -> None:
    """What ``deliveryGuarantee=exactly-once`` needs, checked before any task starts."""
    from connector.options import EXACTLY_ONCE

    opts = setup.options
    if opts.delivery_guarantee != EXACTLY_ONCE:
        if opts.write_id is not None:
            raise ConfigError("option 'writeId' applies to deliveryGuarantee=exactly-once only")
        return
    if setup.topic is None:
        raise ConfigError(f"deliveryGuarantee=exactly-once needs one topic for the write (its marker lives in the "
                          f"consumer offsets of that topic's partition 0), but channel {setup.plan.channel!r} has "
                          "the templated address and rows choose their topics: set option 'topic' or "
                          "'channel.param.*'")
    if opts.streaming and opts.write_id is not None:
        raise ConfigError("option 'writeId' is for batch writes: a stream's exactly-once identity is its query id, "
                          "kept in its checkpoint")
    if not opts.streaming and not opts.write_id:
        raise ConfigError("a batch write with deliveryGuarantee=exactly-once needs option 'writeId', the identity "
                          "of this write (a re-run with the same writeId writes only the partitions that did not "
                          "commit; e.g. in foreachBatch: '<query name>-<batchId>')")
    log.info("asyncapi-kafka write to channel %s: exactly-once, transactional ids %s-%s-<partition>",
             setup.plan.channel, opts.transactional_id_prefix, opts.write_id or "<query id>")


def opts_compression(opts: SourceOptions, framing: Framing) -> str | None:
    comp = opts.glue_compression
    if comp is not None and framing is not Framing.GLUE:
        raise ConfigError("option 'glue.compression' applies to the glue framing only")
    return comp


def _create_topics(setup: WriteSetup) -> None:
    from connector.kafka import TopicSpec, ensure_topics

    plan = setup.plan
    if setup.topic is None:
        log.warning("createTopics: channel %s has a templated address and rows choose their topics, so no "
                    "topic is created in advance (set 'topic' or 'channel.param.*' to name one)", plan.channel)
        return
    spec = TopicSpec(setup.topic, plan.partitions, plan.replicas, tuple(plan.topic_configuration))
    ensure_topics(setup.kafka_conf(), [spec], timeout_s=setup.options.fetch_timeout_ms / 1000)
