"""Driver-side setup of a read: document → plan → reader schemas → output schema → pipeline.

Built once per ``DataSource`` instance on the driver, before any task starts, so every bad
option, unknown channel or unreachable registry fails at ``load()`` with a clear message.
The result is picklable and travels inside the reader to executors.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Callable

import pyarrow as pa

from connector.errors import ConfigError
from connector.spark._options import SourceOptions
from connector.spark._pipeline import ERROR_COLUMN, RAW_VALUE_COLUMN, RESCUED_COLUMN, SCHEMA_ID_COLUMN, Pipeline

__all__ = ["ReadSetup", "build_setup"]

log = logging.getLogger("asyncapi_kafka")


@dataclasses.dataclass(frozen=True)
class ReadSetup:
    """What a reader needs on the driver and on executors. Secrets stay inside ``options``."""

    options: SourceOptions
    plan: object                      # connector.asyncapi.ReadPlan
    registry_config: object | None    # registry.RegistryConfig
    pipeline: Pipeline
    spark_schema_json: str
    base_kafka: tuple[tuple[str, str], ...]   # from the document, no secrets

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(self.plan.topics)

    @property
    def topic_pattern(self) -> str | None:
        return None if self.plan.topics else self.plan.topic_pattern

    def kafka_conf(self, *, warn: bool = True) -> dict[str, str]:
        """librdkafka configuration, secrets included: build clients with it, never print it.

        ``warn=False`` on executors: the driver already logged the TLS warnings for this read."""
        from connector.kafka import kafka_conf_from_options

        # kafka.security.protocol=PLAINTEXT (say) drops the document's sasl.*/ssl.* settings:
        # one option to point a read at a local cluster (issue 17).
        return kafka_conf_from_options(
            self.options.kafka_settings(), plan_config=self.base_kafka, warn=warn,
            where=f"the document's server for channel '{self.plan.channel}' gives none")

    def lookup(self) -> Callable:
        """Schema lookup by wire-format key, through the per-process cached registry client."""
        if self.registry_config is None:
            def no_registry(key):
                raise ConfigError(
                    f"record carries schema id {key[1]!r} ({key[0]}) but no schema registry is configured: "
                    "set 'schema.registry.url' or the server binding's schemaRegistryUrl")
            return no_registry
        from registry import client_for

        return client_for(self.registry_config).lookup

    def spark_schema(self):
        from pyspark.sql.types import StructType
        import json

        return StructType.fromJson(json.loads(self.spark_schema_json))


def _registry_config(opts: SourceOptions, plan) -> object | None:
    from connector.options import registry_config_for

    return registry_config_for(opts.registry_options(), plan)


def _reader_for_value(opts: SourceOptions, plan, registry_config, framing: str):
    """The fixed reader schema(s): pinned id/subject > document payload(s) > registry latest."""
    from registry import client_for, subject_name

    if opts.schema_id is not None or opts.schema_subject:
        if registry_config is None:
            raise ConfigError("options 'schema.id'/'schema.subject' need a schema registry "
                              "('schema.registry.url' or the document's schemaRegistryUrl)")
        client = client_for(registry_config)
        if opts.schema_id is not None:
            return {None: client.get_schema_by_id(opts.schema_id)}
        if opts.schema_version == "latest":
            return {None: client.get_latest(opts.schema_subject)}
        return {None: client.get_version(opts.schema_subject, int(opts.schema_version))}

    documented = {m.name: m.payload for m in plan.value_messages if m.payload is not None}
    if documented:
        return documented
    if registry_config is not None and framing != "none":
        if not plan.topics or len(plan.topics) != 1:
            raise ConfigError(
                f"channel '{plan.channel}' has no payload schema in the document and reads a topic "
                "pattern, so no single registry subject applies: pin one with 'schema.subject'")
        strategy = opts.subject_strategy or plan.schema_lookup_strategy or "TopicNameStrategy"
        subject = subject_name(strategy, plan.topics[0], None, False)
        return {None: client_for(registry_config).get_latest(subject)}
    return {}


def build_setup(opts: SourceOptions) -> ReadSetup:
    """Resolve document, plan and schemas; compute the exact output schema."""
    from connector.asyncapi import load_document, plan_read
    from connector.decode import DecodeOptions, build_decoder, build_multi_decoder
    from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
    from pyspark.sql.types import StructField, StructType
    from wireformat import Framing, Limits

    source = opts.asyncapi
    base_dir = None
    if "\n" not in source and os.path.exists(source):
        base_dir = os.path.dirname(os.path.abspath(source))
    doc = load_document(source, base_dir=base_dir, allow_remote_refs=opts.allow_remote_refs,
                        ref_root=opts.ref_root)
    plan = plan_read(doc, channel=opts.channel, operation=opts.operation, message=opts.message,
                     server=opts.server, params=_param_names_as_documented(doc, dict(opts.channel_params)) or None,
                     topic=opts.topic)
    framing = opts.wire_format or str(getattr(plan.framing(), "value", plan.framing()))
    registry_config = _registry_config(opts, plan)
    for path, text in plan.warnings:
        if registry_config is None:
            raise ConfigError(f"{text}, but no schema registry is configured: set 'schema.registry.url' "
                              f"(document path {path})")
        log.warning("document path %s: %s", path, text)
    if framing == "none" and registry_config is not None and not opts.wire_format:
        # A registry alone does not say how ids travel (issue 17); rows that start with a
        # magic byte get a hint in their error, this says it once per read up front.
        log.warning("channel %s: a schema registry is configured but the document gives no schema-id "
                    "framing, so values are read unframed; set the option wireFormat (e.g. confluent) "
                    "if producers used a registry serializer", plan.channel)
    if framing not in ("none",) and registry_config is None and framing != "auto":
        log.info("no schema registry configured for channel %s; framing %s", plan.channel, framing)

    limits = Limits(max_record_bytes=opts.max_record_bytes, max_decompressed_bytes=opts.max_decompressed_bytes)
    dopts = DecodeOptions(enum_as="int" if opts.enums_as_ints else "string",
                          max_recursion_depth=opts.recursion_depth, max_record_bytes=opts.max_record_bytes,
                          evolution=opts.evolution_mode, protobuf_message=opts.schema_message)
    if opts.evolution_mode != "none" and framing == "none":
        raise ConfigError(f"schemaEvolutionMode={opts.evolution_mode} compares each record's writer schema with "
                          "the reader's, so it needs schema ids in the records (a registry framing); this "
                          "channel's framing is none")

    readers = _reader_for_value(opts, plan, registry_config, framing)
    if len(readers) > 1:
        value_decoder = build_multi_decoder(readers, options=dopts)
    elif readers:
        value_decoder = build_decoder(next(iter(readers.values())), options=dopts)
    else:
        value_decoder = None
        log.warning("channel %s: no schema in the document or the registry; 'value' stays binary",
                    plan.channel)

    key_decoder = None
    key_as_string = False
    key_framing = "none"
    key_spec = getattr(plan, "key_schema", None)
    if opts.decode_key and key_spec is not None:
        if _is_string_schema(key_spec):
            key_as_string = True
        else:
            key_framing = framing if registry_config is not None else "none"
            # schema.message names the value's message, never the key's
            key_decoder = build_decoder(key_spec, options=dataclasses.replace(dopts, protobuf_message=None))

    value_type = value_decoder.arrow_type if value_decoder is not None else pa.binary()
    key_type = key_decoder.arrow_type if key_decoder is not None else (pa.string() if key_as_string else pa.binary())
    fields = [StructField("key", from_arrow_type(key_type), True)]
    if opts.value_shape == "flatten" and pa.types.is_struct(value_type):
        fields += [StructField(f.name, from_arrow_type(f.type), True) for f in value_type]
    else:
        fields.append(StructField("value", from_arrow_type(value_type), True))
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, TimestampType

    fields += [StructField("topic", StringType(), True), StructField("partition", IntegerType(), True),
               StructField("offset", LongType(), True), StructField("timestamp", TimestampType(), True),
               StructField("timestampType", IntegerType(), True)]
    if opts.include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType(), True), StructField("value", BinaryType(), True)]), True), True))
    schema_id_kind = "none" if Framing(framing) is Framing.NONE else ("string" if Framing(framing).id_text else "long")
    if schema_id_kind != "none":
        fields.append(StructField(SCHEMA_ID_COLUMN, StringType() if schema_id_kind == "string" else LongType(), True))
    # Address parameters are columns whether or not the read pins them (channel.param.*): the
    # output schema must not depend on which topics an option happens to select.
    param_names = tuple(getattr(plan, "param_names", ()) or ())
    param_values = ()
    if param_names and plan.topics:
        param_values = tuple((t, tuple(plan.topic_params(t).get(n) for n in param_names)) for t in plan.topics)
    for name in param_names:
        fields.append(StructField(name, StringType(), True))
    if opts.mode == "PERMISSIVE":
        fields += [StructField(ERROR_COLUMN, StringType(), True), StructField(RAW_VALUE_COLUMN, BinaryType(), True)]
    if opts.evolution_mode == "rescue":
        fields.append(StructField(RESCUED_COLUMN, StringType(), True))
    names = [f.name for f in fields]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ConfigError(f"output columns collide: {sorted(dupes)}; use valueShape=struct")
    spark_schema = StructType(fields)
    arrow_schema = to_arrow_schema(spark_schema, timezone="UTC")

    is_proto = _is_protobuf(readers)
    pipeline = Pipeline(
        arrow_schema=arrow_schema, value_decoder=value_decoder, key_decoder=key_decoder,
        framing=Framing(framing), key_framing=Framing(key_framing), key_as_string=key_as_string,
        mode=opts.mode, include_headers=opts.include_headers, value_shape=opts.value_shape,
        schema_id_kind=schema_id_kind,
        param_pattern=plan.topic_pattern if param_names and not plan.topics else None,
        param_names=param_names, param_values=param_values,
        param_groups=tuple(getattr(plan, "param_groups", ()) or ()) if param_names else (),
        param_given=tuple(getattr(plan, "param_values", ()) or ()) if param_names else (), limits=limits,
        protobuf_indexes=is_proto and Framing(framing).carries_protobuf_indexes,
        key_protobuf_indexes=key_decoder is not None and _is_protobuf({None: key_spec})
        and Framing(key_framing).carries_protobuf_indexes,
        rescue=opts.evolution_mode == "rescue",
    )
    base_kafka = dict(getattr(plan, "kafka_config", ()) or ())
    if getattr(plan, "bootstrap_servers", None):
        base_kafka["bootstrap.servers"] = plan.bootstrap_servers
    return ReadSetup(options=opts, plan=plan, registry_config=registry_config, pipeline=pipeline,
                     spark_schema_json=spark_schema.json(), base_kafka=tuple(sorted(base_kafka.items())))


def _param_names_as_documented(doc, params: dict) -> dict:
    """Spark lowercases option keys, so ``channel.param.streetlightId`` arrives as
    ``streetlightid``: give each the document's spelling when exactly one parameter matches."""
    if not params:
        return params
    import re

    known: dict[str, set] = {}
    for ch in doc.channels.values():
        names = set(ch.parameters or {}) | set(re.findall(r"{([^}]+)}", ch.address or ""))
        for n in names:
            known.setdefault(n.lower(), set()).add(n)
    out = {}
    for k, v in params.items():
        spellings = known.get(k.lower(), set())
        out[next(iter(spellings)) if k not in spellings and len(spellings) == 1 else k] = v
    return out


def _format_of(reader) -> str:
    fmt = getattr(reader, "format", None)
    if fmt is None:
        fmt = str(getattr(getattr(reader, "schema_type", ""), "value", getattr(reader, "schema_type", "")))
    return str(fmt).lower()


def _is_protobuf(readers: dict) -> bool:
    return any(_format_of(r) == "protobuf" for r in readers.values() if r is not None)


def _is_string_schema(spec) -> bool:
    import json

    text = (getattr(spec, "text", "") or "").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    if parsed == "string" or parsed == {"type": "string"}:
        return True
    return isinstance(parsed, dict) and parsed.get("type") == "string" and "format" not in parsed
