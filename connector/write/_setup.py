"""Driver-side setup of a write: options → plan → topics → writer schemas → input layout → topics created.

No pyspark: the DataFrame's columns arrive as an Arrow schema (the Spark sink converts its
``StructType`` with ``to_arrow_schema`` at the edge), and every check of the input layout is made
on Arrow types. Built once per job or query, before any task starts, so a bad option, an unknown
channel, an unregistered schema or a column the schema cannot hold fails the write here. The
result is picklable and travels to executors inside the writer.

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

from connector.errors import ConfigError
from connector.options import EXACTLY_ONCE, SourceOptions, framing_of, glue_compression
from connector.read import document_kafka, load_plan
from connector.read import registry_config as registry_config_of
from connector.write._types import Encoding, EncodingMode, WriteSetup
from connector.write._values import check_coerce, is_binary, is_text, value_encoding

__all__ = ["build_write_setup"]

log = logging.getLogger("asyncapi_kafka")

RESERVED = ("key", "headers", "partition", "topic")
_PARAM = re.compile(r"\{([^{}]+)\}")
_INTEGERS = (pa.int16(), pa.int32(), pa.int64())


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


def _topics(plan, opts: SourceOptions, names: list[str]) -> tuple[str | None, bool, tuple[str, ...]]:
    """(the one topic of every row or None, whether rows carry a ``topic`` column, the address
    parameters columns fill)."""
    params = [p for kind, p in _address_parts(plan) if kind == "param"]
    if opts.topic:
        return _check_topic(plan, opts.topic, "option 'topic'"), False, ()
    if plan.topics:
        # a topic column is checked against the channel's topic on the executors
        return plan.topics[0], "topic" in names, ()
    if "topic" in names:
        return None, True, ()
    if params:
        missing = [p for p in params if p not in names]
        if missing:
            raise ConfigError(f"channel {plan.channel!r} has the templated address {plan.address!r}: give each "
                              f"row's topic with a 'topic' column, columns named after the parameters "
                              f"(missing: {', '.join(missing)}), 'channel.param.<name>' options, or the 'topic' "
                              "option")
        return None, False, tuple(params)
    raise ConfigError(f"channel {plan.channel!r} has no address: set the 'topic' option or a 'topic' column")


def _check_columns(schema: pa.Schema, params: tuple[str, ...]) -> None:
    """The reserved columns and the address-parameter columns have the types the sink writes."""
    names = schema.names
    if "topic" in names and not is_text(schema.field("topic").type):
        raise ConfigError(f"column 'topic' must be a string, got {schema.field('topic').type}")
    if "partition" in names and schema.field("partition").type not in _INTEGERS:
        raise ConfigError(f"column 'partition' must be an integer, got {schema.field('partition').type}")
    for p in params:
        if not is_text(schema.field(p).type):
            raise ConfigError(f"address parameter column '{p}' must be a string")
    if "headers" in names:
        htype = schema.field("headers").type
        item = htype.value_type if pa.types.is_list(htype) or pa.types.is_large_list(htype) else None
        ok = (item is not None and pa.types.is_struct(item) and [f.name for f in item] == ["key", "value"]
              and is_text(item.field(0).type) and (is_binary(item.field(1).type) or is_text(item.field(1).type)))
        if not ok:
            raise ConfigError(f"column 'headers' must be array<struct<key: string, value: binary>>, got {htype}")


def _key_encoding(request, plan, registry_config, framing, topic, schema: pa.Schema) -> Encoding:
    from connector.schema import is_string_schema, key_writer

    if "key" not in schema.names:
        return Encoding(EncodingMode.ABSENT)
    ktype = schema.field("key").type
    key_spec = plan.key_schema
    if is_binary(ktype) or (is_text(ktype) and (key_spec is None or is_string_schema(key_spec))):
        return Encoding(EncodingMode.BYTES)
    if key_spec is None:
        raise ConfigError(f"column 'key' is {ktype}, but the channel's messages declare no key "
                          "schema (Kafka message binding 'key'): give the key as binary or string")
    kwriter = key_writer(request, plan=plan, registry=registry_config, framing=framing, topic=topic)
    assert kwriter.encoder is not None  # the key schema is given
    check_coerce(kwriter.encoder, ktype, "key")
    return Encoding(EncodingMode.ENCODE, kwriter)


def build_write_setup(opts: SourceOptions, schema: pa.Schema) -> WriteSetup:
    """Resolve a write on the driver: channel, encoders, schema ids, input layout, topics.

    Parameters
    ----------
    opts : SourceOptions
        The write's options, scoped with ``direction="write"``.
    schema : pyarrow.Schema
        The input's columns (the DataFrame's schema as Arrow types).

    Raises
    ------
    ConfigError, AsyncApiDocumentError, EncodeError, RegistryError
        Before any task starts.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from connector.options._parse import parse_options
    >>> opts = parse_options({"asyncapi": "examples/shop.yaml", "channel": "orders"}, direction="write")  # doctest: +SKIP
    >>> build_write_setup(opts, pa.schema([("key", pa.string()), ("value", pa.binary())]))  # doctest: +SKIP
    """
    from connector.schema import SchemaRequest

    request = SchemaRequest.from_options(opts)
    plan = load_plan(opts, sending=True)
    if request.contract.enabled:  # a rule's dead-letter records go to the job's own cluster
        from connector.kafka import OWNED_PRODUCER_SETTINGS, kafka_conf_from_options

        conf = kafka_conf_from_options(opts.kafka_settings(), plan_config=document_kafka(plan, client_id=True),
                                       owned=OWNED_PRODUCER_SETTINGS, warn=False, require_bootstrap=False)
        request = dataclasses.replace(request, contract=request.contract.with_producer(conf))
    framing = framing_of(opts, plan)
    compression = glue_compression(opts, framing)
    registry_config = registry_config_of(opts, plan)
    names = list(schema.names)

    topic, topic_column, params = _topics(plan, opts, names)
    _check_columns(schema, params)
    reserved = set(RESERVED) | set(params)
    value_column = "value" if "value" in names else None
    value_fields = () if value_column else tuple(n for n in names if n not in reserved)
    value = value_encoding(request, plan, registry_config, framing, topic, schema, value_column, value_fields,
                           compression)
    key = _key_encoding(request, plan, registry_config, framing, topic, schema)

    setup = WriteSetup(
        options=opts, plan=plan, value=value, key=key, value_column=value_column, value_fields=value_fields,
        has_headers="headers" in names, has_partition="partition" in names, topic=topic,
        topic_column=topic_column, address_parts=_address_parts(plan),
        # the user's kafka.client.id wins over the document's (kafka_conf_from_options applies it last)
        base_kafka=document_kafka(plan, client_id=True))
    # Built once on the driver: a missing bootstrap list fails the write here, and TLS warnings
    # are logged once per job (tasks build it again with warn=False).
    setup.kafka_conf()
    _check_exactly_once(setup)
    if opts.create_topics:
        _create_topics(setup)
    return setup


def _check_exactly_once(setup: WriteSetup) -> None:
    """What ``deliveryGuarantee=exactly-once`` needs, checked before any task starts."""
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


def _create_topics(setup: WriteSetup) -> None:
    from connector.kafka import TopicSpec, ensure_topics

    plan = setup.plan
    if setup.topic is None:
        log.warning("createTopics: channel %s has a templated address and rows choose their topics, so no "
                    "topic is created in advance (set 'topic' or 'channel.param.*' to name one)", plan.channel)
        return
    spec = TopicSpec(setup.topic, plan.partitions, plan.replicas, tuple(plan.topic_configuration))
    ensure_topics(setup.kafka_conf(), [spec], timeout_s=setup.options.fetch_timeout_ms / 1000)
