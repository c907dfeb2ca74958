"""Driver-side setup of a read: document → plan → reader schemas → output schema → pipeline.

No pyspark: the Spark source (``connector.spark._setup``) and :func:`connector.read.peek` build
the same setup here. The output schema is an Arrow schema; the Spark source derives its
``StructType`` from it and casts to that type's exact Arrow form.

Built once per ``DataSource`` instance on the driver, before any task starts, so every bad
option, unknown channel or unreachable registry fails at ``load()`` with a clear message.
The result is picklable and travels inside the reader to executors.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Callable, Literal

import pyarrow as pa

from wireformat import Framing

from connector.formats import RESCUED_COLUMN, Decoder, EvolutionMode, Mode, MultiDecoder, payload_format
from connector.errors import ConfigError
from connector.options import SourceOptions, ValueShape, framing_of
from connector.read._pipeline import ERROR_COLUMN, META_COLUMNS, RAW_VALUE_COLUMN, SCHEMA_ID_COLUMN, Pipeline
from connector.read._plan import document_kafka, load_plan, registry_config

if TYPE_CHECKING:
    from registry import RegistryConfig

    from connector.asyncapi import ReadPlan
    from connector.schema import KeyReading, SchemaRequest

__all__ = ["ReadSetup", "build_setup"]

log = logging.getLogger("asyncapi_kafka")


@dataclasses.dataclass(frozen=True)
class ReadSetup:
    """What a reader needs on the driver and on executors. Secrets stay inside ``options``.

    ``output_schema`` is the read's columns with the types the decoders give; the pipeline
    casts every batch to ``pipeline.arrow_schema`` (the same, or the exact form Spark expects).
    """

    options: SourceOptions
    plan: ReadPlan
    registry_config: RegistryConfig | None
    pipeline: Pipeline
    output_schema: pa.Schema
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
        return _kafka_conf(self.options, self.plan, self.base_kafka, warn=warn)

    def lookup(self) -> Callable[[Any], Any]:
        """Schema lookup by wire-format key, through the per-process cached registry client."""
        if self.registry_config is None:
            def no_registry(key):
                raise ConfigError(
                    f"record carries schema id {key[1]!r} ({key[0]}) but no schema registry is configured: "
                    "set 'schema.registry.url' or the server binding's schemaRegistryUrl")
            return no_registry
        from registry import client_for

        return client_for(self.registry_config).lookup


def _check_framing(opts: SourceOptions, plan: ReadPlan, framing: Framing, config: RegistryConfig | None) -> None:
    """Refuse or warn about a framing that cannot work with the registry (or its absence)."""
    for path, text in plan.warnings:
        if config is None:
            raise ConfigError(f"{text}, but no schema registry is configured: set 'schema.registry.url' "
                              f"(document path {path})")
        log.warning("document path %s: %s", path, text)
    if framing is Framing.NONE and config is not None and not opts.wire_format:
        # A registry alone does not say how ids travel (issue 17); rows that start with a
        # magic byte get a hint in their error, this says it once per read up front.
        log.warning("channel %s: a schema registry is configured but the document gives no schema-id "
                    "framing, so values are read unframed; set the option wireFormat (e.g. confluent) "
                    "if producers used a registry serializer", plan.channel)
    if framing not in (Framing.NONE, Framing.AUTO) and config is None:
        log.info("no schema registry configured for channel %s; framing %s", plan.channel, framing)
    if opts.evolution_mode is not EvolutionMode.NONE and framing is Framing.NONE:
        raise ConfigError(f"schemaEvolutionMode={opts.evolution_mode} compares each record's writer schema with "
                          "the reader's, so it needs schema ids in the records (a registry framing); this "
                          "channel's framing is none")


@dataclasses.dataclass(frozen=True)
class _Decoders:
    value: Decoder | MultiDecoder | None
    key: KeyReading
    key_framing: Framing
    value_rules: Any = None


def _kafka_conf(opts: SourceOptions, plan: ReadPlan, base_kafka: tuple[tuple[str, str], ...], *,
                warn: bool, require_bootstrap: bool = True) -> dict[str, str]:
    from connector.kafka import kafka_conf_from_options

    # kafka.security.protocol=PLAINTEXT (say) drops the document's sasl.*/ssl.* settings:
    # one option to point a read at a local cluster (issue 17).
    return kafka_conf_from_options(opts.kafka_settings(), plan_config=base_kafka, warn=warn,
                                   require_bootstrap=require_bootstrap,
                                   where=f"the document's server for channel '{plan.channel}' gives none")


def _decoders(request: SchemaRequest, opts: SourceOptions, plan: ReadPlan, framing: Framing,
              config: RegistryConfig | None, base_kafka: tuple[tuple[str, str], ...]) -> _Decoders:
    """Value and key decoders from the schema layer (the one place reads resolve schemas)."""
    from connector.schema import key_reading, value_reading

    def sample():  # only called when a multi-message .proto needs records to choose its message
        from connector.kafka import sample_tail

        for batch in sample_tail(_kafka_conf(opts, plan, base_kafka, warn=False), topics=plan.topics,
                                 pattern=None if plan.topics else plan.topic_pattern,
                                 timeout_s=opts.fetch_timeout_ms / 1000, group_prefix=opts.group_id_prefix):
            yield batch.column("value"), batch.column("headers")

    if request.contract.enabled:
        # a rule's dead-letter records go to the job's own cluster
        conf = _kafka_conf(opts, plan, base_kafka, warn=False, require_bootstrap=False)
        request = dataclasses.replace(request, contract=request.contract.with_producer(conf))
    value = value_reading(request, plan=plan, registry=config, framing=framing, sample=sample)
    key_framing = framing if plan.key_schema is not None and config is not None else Framing.NONE
    key = key_reading(request, plan=plan, enabled=opts.decode_key, registry=config, framing=key_framing)
    key_framing = framing if key.decoder is not None and config is not None else Framing.NONE
    return _Decoders(value=value.decoder, key=key, key_framing=key_framing, value_rules=value.rules)


def _output_schema(opts: SourceOptions, plan: ReadPlan, dec: _Decoders,
                   schema_id_kind: Literal["long", "string", "none"]) -> pa.Schema:
    """The read's columns, in order, with the decoders' Arrow types (every field nullable)."""
    from connector.kafka import RAW_ARROW_SCHEMA

    value_type = dec.value.arrow_type if dec.value is not None else pa.binary()
    key = dec.key
    key_type = key.decoder.arrow_type if key.decoder is not None else (pa.string() if key.as_string else pa.binary())
    fields = [pa.field("key", key_type)]
    if opts.value_shape is ValueShape.FLATTEN and pa.types.is_struct(value_type):
        fields += [pa.field(f.name, f.type) for f in value_type]
    else:
        fields.append(pa.field("value", value_type))
    fields += [pa.field(name, RAW_ARROW_SCHEMA.field(name).type) for name in META_COLUMNS]
    if opts.include_headers:
        fields.append(pa.field("headers", RAW_ARROW_SCHEMA.field("headers").type))
    if schema_id_kind != "none":
        fields.append(pa.field(SCHEMA_ID_COLUMN, pa.string() if schema_id_kind == "string" else pa.int64()))
    # Address parameters are columns whether or not the read pins them (channel.param.*): the
    # output schema must not depend on which topics an option happens to select.
    fields += [pa.field(name, pa.string()) for name in plan.param_names]
    if opts.mode is Mode.PERMISSIVE:
        fields += [pa.field(ERROR_COLUMN, pa.string()), pa.field(RAW_VALUE_COLUMN, pa.binary())]
    if opts.evolution_mode is EvolutionMode.RESCUE:
        fields.append(pa.field(RESCUED_COLUMN, pa.string()))
    names = [f.name for f in fields]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ConfigError(f"output columns collide: {sorted(dupes)}; use valueShape=struct")
    return pa.schema(fields)


def build_setup(opts: SourceOptions) -> ReadSetup:
    """Resolve document, plan and schemas; compute the output schema.

    Examples
    --------
    >>> from connector.options._parse import parse_options
    >>> setup = build_setup(parse_options({"asyncapi": "examples/shop.yaml", "channel": "orders"}))  # doctest: +SKIP
    >>> setup.output_schema.names[:3]                                                          # doctest: +SKIP
    ['key', 'value', 'topic']
    """
    from connector.schema import SchemaRequest

    request = SchemaRequest.from_options(opts)
    plan = load_plan(opts)
    framing = framing_of(opts, plan)
    config = registry_config(opts, plan)
    _check_framing(opts, plan, framing, config)
    base_kafka = document_kafka(plan)
    # Checked now, so a setting the source owns fails at load() (and the driver logs its TLS
    # warnings once); planning builds it again, with the bootstrap list required.
    _kafka_conf(opts, plan, base_kafka, warn=True, require_bootstrap=False)
    dec = _decoders(request, opts, plan, framing, config, base_kafka)
    schema_id_kind: Literal["long", "string", "none"] = (
        "none" if framing is Framing.NONE else "string" if framing.id_text else "long")
    schema = _output_schema(opts, plan, dec, schema_id_kind)

    names = plan.param_names
    pipeline = Pipeline(
        arrow_schema=schema, value_decoder=dec.value,
        key_decoder=dec.key.decoder, framing=framing, key_framing=dec.key_framing, key_as_string=dec.key.as_string,
        mode=opts.mode, include_headers=opts.include_headers, value_shape=opts.value_shape,
        schema_id_kind=schema_id_kind,
        param_pattern=plan.topic_pattern if names and not plan.topics else None, param_names=names,
        param_values=tuple((t, tuple(plan.topic_params(t).get(n) for n in names)) for t in plan.topics)
        if names else (),
        param_groups=plan.param_groups if names else (), param_given=plan.param_values if names else (),
        limits=request.limits,
        protobuf_indexes=_indexed(dec.value) and framing.carries_protobuf_indexes,
        key_protobuf_indexes=_indexed(dec.key.decoder) and dec.key_framing.carries_protobuf_indexes,
        rescue=opts.evolution_mode is EvolutionMode.RESCUE,
        value_rules=dec.value_rules, key_rules=dec.key.rules,
    )
    return ReadSetup(options=opts, plan=plan, registry_config=config, pipeline=pipeline,
                     output_schema=schema, base_kafka=base_kafka)


def _indexed(decoder: Decoder | MultiDecoder | None) -> bool:
    """Records of this decoder's format carry message-index paths (Protobuf)."""
    return decoder is not None and payload_format(decoder.fmt).indexed_messages
