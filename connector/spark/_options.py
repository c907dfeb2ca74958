"""Every option the ``asyncapi-kafka`` source accepts, parsed once on the driver.

Names follow Spark's own Kafka source where the meaning is the same (``startingOffsets``,
``endingOffsets``, ``failOnDataLoss``, ``minPartitions``, ``maxOffsetsPerTrigger``,
``includeHeaders``, ``kafka.*`` ...). Spark hands options to Python data sources as a
case-insensitive dict with lowercased keys, so all lookups here are lowercase.

Secrets (registry passwords and tokens, SASL passwords, AWS keys) are kept only in
:class:`SourceOptions.secrets`, whose ``repr`` is redacted, and the option names that carry
them contain ``password``, ``secret`` or ``token`` so that Spark's own redaction
(``spark.redaction.regex``) also hides them from plans and the UI.
"""
from __future__ import annotations

import dataclasses
import difflib
import logging
from typing import Any, Mapping

from connector.errors import ConfigError

__all__ = ["SourceOptions", "parse_options", "OPTION_DOCS", "MODES", "READ_ONLY_OPTIONS", "WRITE_ONLY_OPTIONS"]

log = logging.getLogger("asyncapi_kafka")

MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
EVOLUTION_MODES = {"none": "none", "rescue": "rescue", "failonnewfields": "failOnNewFields"}
SHAPES = ("struct", "flatten")

# name -> (default shown in docs, meaning). Lowercase keys; documented spelling in the README.
OPTION_DOCS: dict[str, tuple[str, str]] = {
    "asyncapi": ("(required)", "AsyncAPI document: a file path, or the YAML/JSON text itself."),
    "asyncapi.allowremoterefs": ("false", "Fetch remote (http/https) `$ref`s in the document."),
    "asyncapi.refroot": ("the document's directory", "Directory relative file `$ref`s may reach; widen it to an ancestor for documents that share files through `../`."),
    "channel": ("", "Channel to read (2.x: channel key; 3.x: channel id). One of channel/operation/message."),
    "operation": ("", "Operation id whose channel is read."),
    "message": ("", "Message name: read only this message of the channel."),
    "server": ("", "Server name from the document (needed when several Kafka servers match)."),
    "channel.param.<name>": ("", "Value of an address parameter; unset parameters match any topic."),
    "topic": ("", "Topic to read for a channel without a usable address (`address: null`); on a templated address it must match the template and fills its parameters. Writes: the topic of every row (overrides a `topic` column)."),
    "kafka.bootstrap.servers": ("from the document", "Overrides the server's bootstrap list."),
    "kafka.<librdkafka setting>": ("", "Passed to librdkafka, except settings the source owns."),
    "startingoffsets": ("earliest (batch), latest (stream)", "earliest, latest, or JSON {\"topic\":{\"0\":23,\"1\":-2}}."),
    "endingoffsets": ("latest", "Batch only: latest or JSON {\"topic\":{\"0\":50,\"1\":-1}}."),
    "startingtimestamp": ("", "Start all partitions at the first offset with timestamp >= this (ms)."),
    "endingtimestamp": ("", "Batch only: end all partitions at this timestamp (ms)."),
    "startingoffsetsbytimestamp": ("", "JSON {\"topic\":{\"0\":1700000000000}} per partition."),
    "endingoffsetsbytimestamp": ("", "Batch only: JSON per partition."),
    "startingoffsetsbytimestampstrategy": ("error", "error or latest: when no offset matches a timestamp."),
    "failondataloss": ("true", "Fail when records are gone (aged out, partitions deleted); false warns."),
    "minpartitions": ("", "Split large offset ranges so that at least this many Spark tasks read."),
    "maxrecordsperpartition": ("", "Split offset ranges so no task reads more records than this."),
    "maxoffsetspertrigger": ("", "Streaming: at most this many records per micro-batch, prorated by partition."),
    "minoffsetspertrigger": ("", "Streaming: wait for this many new records (up to maxTriggerDelay)."),
    "maxtriggerdelay": ("15m", "Streaming: longest wait for minOffsetsPerTrigger."),
    "includeheaders": ("false", "Add the Kafka headers column array<struct<key,value>>."),
    "groupidprefix": ("asyncapi-kafka", "Prefix of the throwaway consumer group ids the source uses."),
    "commitoffsetstogroup": ("false", "Streaming: commit processed offsets to the operation's groupId (monitoring only)."),
    "kafkaconsumer.polltimeoutms": ("120000", "How long an executor waits for records it knows exist."),
    "fetchoffset.timeoutms": ("30000", "Driver timeout for metadata and offset look-ups."),
    "maxbatchrows": ("10000", "Rows per Arrow batch handed to Spark (bounds worker memory)."),
    "mode": ("FAILFAST", "FAILFAST, PERMISSIVE (null value + _error + _raw_value) or DROPMALFORMED."),
    "wireformat": ("from the document", "confluent, confluent-guid, glue, apicurio-legacy, apicurio-new, header-confluent, header-apicurio-global, header-apicurio-content, auto, none."),
    "key.decode": ("true", "Decode the key with the document's key schema; false keeps it binary."),
    "valueshape": ("struct", "struct (one `value` column) or flatten (the value's fields as top-level columns)."),
    "enumsasints": ("false", "Protobuf enums as their numbers instead of names."),
    "recursiondepth": ("0", "Cut recursive schemas at this depth (0 refuses them)."),
    "schemaevolutionmode": ("none", "Fields a writer has and the reader lacks: none (dropped), rescue (kept as JSON in `_rescued_data`) or failOnNewFields (the query fails, naming the writer schema id)."),
    "schema.subject": ("", "Pin the reader schema to this registry subject (latest or schema.version)."),
    "schema.version": ("latest", "Version of schema.subject."),
    "schema.id": ("", "Pin the reader schema to this registry schema id."),
    "schema.subject.strategy": ("TopicNameStrategy", "Subject name strategy used to find the latest schema."),
    "schema.message": ("", "Protobuf reader message (full name) when the reader schema declares several top-level messages."),
    "schema.registry.<setting>": ("", "Registry URL, vendor, auth, TLS, timeouts, cache: see the registry options."),
    "schema.registry.basic.auth.username": ("", "Registry basic-auth user (with ...basic.auth.password)."),
    "schema.registry.basic.auth.password": ("", "Registry basic-auth password; Spark's redaction hides it."),
    "limits.maxrecordbytes": ("67108864", "Records larger than this are errors."),
    "limits.maxdecompressedbytes": ("134217728", "Cap on one decompressed (Glue zlib) payload."),
    # -- writes only (df.write / writeStream) --
    "createtopics": ("false", "Write only: create missing topics from the channel binding (partitions, replicas, topicConfiguration)."),
    "auto.register.schemas": ("false", "Write only: register the document's schema under the subject if absent."),
    "use.latest.version": ("false", "Write only: frame with the subject's latest registered schema (and encode with it)."),
    "use.schema.id": ("", "Write only: frame with this registered schema id (Glue: schema version UUID) and encode with it."),
    "normalize.schemas": ("false", "Write only: ask the registry to normalize the schema when registering."),
    "glue.compression": ("none", "Write only: none or zlib, for the glue framing."),
}

#: Options that only make sense for reads (refused on writes) and only for writes (refused on reads).
READ_ONLY_OPTIONS = frozenset({
    "startingoffsets", "endingoffsets", "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy", "failondataloss", "minpartitions",
    "maxrecordsperpartition", "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
    "includeheaders", "groupidprefix", "commitoffsetstogroup", "kafkaconsumer.polltimeoutms", "maxbatchrows",
    "mode", "key.decode", "valueshape", "enumsasints", "recursiondepth", "schema.subject", "schema.version",
    "schema.id", "limits.maxrecordbytes", "limits.maxdecompressedbytes"})
WRITE_ONLY_OPTIONS = frozenset({"createtopics", "auto.register.schemas", "use.latest.version",
                                "use.schema.id", "normalize.schemas", "glue.compression"})

_USER = "schema.registry.basic.auth.username"
_PASSWORD = "schema.registry.basic.auth.password"
_PLAIN = {k for k in OPTION_DOCS if "<" not in k and not k.startswith("schema.registry.")}
_PREFIXES = ("kafka.", "channel.param.", "schema.registry.")
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


@dataclasses.dataclass(frozen=True)
class Secrets:
    """Secret settings, never printed: ``repr`` shows only which names are set."""

    items: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        return f"Secrets({', '.join(k for k, _ in self.items) or 'none'}: ***)"

    __str__ = __repr__

    def as_dict(self) -> dict[str, str]:
        return dict(self.items)


@dataclasses.dataclass(frozen=True)
class SourceOptions:
    """Options of one read, validated and typed. Picklable; secrets are held apart."""

    asyncapi: str
    allow_remote_refs: bool = False
    ref_root: str | None = None
    topic: str | None = None
    evolution_mode: str = "none"
    channel: str | None = None
    operation: str | None = None
    message: str | None = None
    server: str | None = None
    channel_params: tuple[tuple[str, str], ...] = ()
    kafka: tuple[tuple[str, str], ...] = ()          # librdkafka settings, no secrets
    starting: tuple[tuple[str, str], ...] = ()       # offset-spec options as given (names lowercase)
    ending: tuple[tuple[str, str], ...] = ()
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    include_headers: bool = False
    group_id_prefix: str = "asyncapi-kafka"
    commit_offsets_to_group: bool = False
    poll_timeout_ms: int = 120_000
    fetch_timeout_ms: int = 30_000
    max_batch_rows: int = 10_000
    mode: str = "FAILFAST"
    wire_format: str | None = None
    decode_key: bool = True
    value_shape: str = "struct"
    enums_as_ints: bool = False
    recursion_depth: int = 0
    schema_subject: str | None = None
    schema_version: str = "latest"
    schema_id: int | None = None
    subject_strategy: str | None = None
    schema_message: str | None = None
    registry: tuple[tuple[str, str], ...] = ()       # schema.registry.* without secrets
    max_record_bytes: int = 64 * 1024 * 1024
    max_decompressed_bytes: int = 128 * 1024 * 1024
    # writes
    direction: str = "read"
    create_topics: bool = False
    auto_register: bool = False
    use_latest_version: bool = False
    use_schema_id: str | None = None
    normalize_schemas: bool = False
    glue_compression: str | None = None
    secrets: Secrets = dataclasses.field(default_factory=Secrets)

    def kafka_settings(self) -> dict[str, str]:
        """librdkafka settings including secrets: only for building a client, never for printing."""
        out = dict(self.kafka)
        out.update({k[len("kafka."):]: v for k, v in self.secrets.items if k.startswith("kafka.")})
        return out

    def registry_options(self) -> dict[str, str]:
        """``schema.registry.*`` options including secrets, for ``RegistryConfig.from_options``."""
        out = dict(self.registry)
        out.update({k: v for k, v in self.secrets.items if k.startswith("schema.registry.")})
        return out


def _is_secret(name: str) -> bool:
    lowered = name.lower()
    if lowered.startswith("schema.registry."):
        from registry import SECRET_OPTION_NAMES

        return lowered in SECRET_OPTION_NAMES
    from connector.kafka import SECRET_KAFKA_SETTINGS

    return lowered.startswith("kafka.") and lowered[len("kafka."):] in SECRET_KAFKA_SETTINGS


def _bool(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ConfigError(f"option '{name}' must be true or false, got {value!r}")


def _int(name: str, value: str, *, minimum: int = 1) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise ConfigError(f"option '{name}' must be an integer, got {value!r}") from None
    if n < minimum:
        raise ConfigError(f"option '{name}' must be >= {minimum}, got {n}")
    return n


def _duration_ms(name: str, value: str) -> int:
    v = value.strip().lower()
    units = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
    for suffix in sorted(units, key=len, reverse=True):
        if v.endswith(suffix) and v[: -len(suffix)].strip().isdigit():
            return int(v[: -len(suffix)]) * units[suffix]
    if v.isdigit():
        return int(v)
    raise ConfigError(f"option '{name}' must be a duration like '30s', '5m' or milliseconds, got {value!r}")


def _unknown(name: str) -> ConfigError:
    valid = sorted(OPTION_DOCS)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return ConfigError(f"unknown option '{name}'.{hint} Valid options: {', '.join(valid)}")


def parse_options(raw: Mapping[str, Any], *, streaming: bool | None = False,
                  direction: str = "read") -> SourceOptions:
    """Validate and type the options of a read or write. Raises :class:`ConfigError` before any task runs.

    ``streaming`` True/False also refuses the options of the other kind of read; ``None``
    accepts both (used to compute the schema, which does not depend on it). ``direction``
    ``"write"`` refuses read-only options (``startingOffsets`` ...) and the reverse, and checks
    ``kafka.*`` against the settings the sink's producer owns instead of the reader's.

    Examples
    --------
    >>> opts = parse_options({"asyncapi": "doc.yaml", "channel": "orders", "mode": "permissive"})
    >>> opts.mode
    'PERMISSIVE'
    """
    from connector.kafka import OWNED_KAFKA_SETTINGS, OWNED_PRODUCER_SETTINGS
    from registry import REGISTRY_OPTION_NAMES

    if direction not in ("read", "write"):
        raise ValueError(f"direction must be 'read' or 'write', got {direction!r}")
    owned = OWNED_PRODUCER_SETTINGS if direction == "write" else OWNED_KAFKA_SETTINGS
    opts = {str(k).lower(): str(v) for k, v in raw.items() if k is not None and v is not None}
    if direction == "write":  # Spark hands the stream writer its own options too
        opts.pop("checkpointlocation", None)
    fields: dict[str, Any] = {}
    kafka: dict[str, str] = {}
    params: dict[str, str] = {}
    registry: dict[str, str] = {}
    secrets: dict[str, str] = {}
    starting: dict[str, str] = {}
    ending: dict[str, str] = {}

    # schema.registry.basic.auth.username/password are combined by RegistryConfig.from_options
    # (one parser for the source, the column functions and the CLI); check the pair now.
    if (opts.get(_USER) is None) != (opts.get(_PASSWORD) is None):
        raise ConfigError(f"options '{_USER}' and '{_PASSWORD}' go together")

    for name, value in opts.items():
        if name.startswith("kafka."):
            setting = name[len("kafka."):]
            if setting == "bootstrap.servers":
                from connector.kafka import bootstrap_without_credentials

                value = bootstrap_without_credentials(value, "the option 'kafka.bootstrap.servers'")
            if setting in owned:
                raise ConfigError(f"option '{name}' is not supported: {owned[setting]}")
            (secrets if _is_secret(name) else kafka).__setitem__(
                name if _is_secret(name) else setting, value)
            if setting == "ssl.endpoint.identification.algorithm" and value.strip().lower() == "none":
                log.warning("kafka.ssl.endpoint.identification.algorithm=none: the broker's TLS "
                            "host name is NOT verified for this read")
        elif name.startswith("channel.param."):
            params[name[len("channel.param."):]] = value
        elif name.startswith("schema.registry."):
            if name not in REGISTRY_OPTION_NAMES:
                raise ConfigError(
                    f"unknown option '{name}'. Valid registry options: {', '.join(sorted(REGISTRY_OPTION_NAMES))}")
            (secrets if _is_secret(name) else registry)[name] = value
        elif name not in _PLAIN:
            raise _unknown(name)
        elif direction == "write" and name in READ_ONLY_OPTIONS:
            raise ConfigError(f"option '{name}' applies to reads only; writes do not accept it")
        elif direction == "read" and name in WRITE_ONLY_OPTIONS:
            raise ConfigError(f"option '{name}' applies to writes only (df.write / writeStream)")
        elif name in ("startingoffsets", "startingtimestamp", "startingoffsetsbytimestamp"):
            starting[name] = value
        elif name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if streaming is True:
                raise ConfigError(f"option '{name}' is for batch reads; a stream has no end")
            ending[name] = value

    def get(name: str) -> str | None:
        value = opts.get(name)
        return value if value is None or value.strip() else None

    asyncapi = get("asyncapi")
    if asyncapi is None:
        raise ConfigError("option 'asyncapi' is required: a path to an AsyncAPI document or its text")
    fields["asyncapi"] = asyncapi
    if get("asyncapi.allowremoterefs"):
        fields["allow_remote_refs"] = _bool("asyncapi.allowRemoteRefs", opts["asyncapi.allowremoterefs"])
    if get("asyncapi.refroot"):
        import os

        fields["ref_root"] = os.path.abspath(os.path.expanduser(opts["asyncapi.refroot"].strip()))
    for key in ("channel", "operation", "message", "server", "topic"):
        if get(key):
            fields[key] = opts[key].strip()
    if get("schemaevolutionmode"):
        raw_mode = opts["schemaevolutionmode"].strip()
        if raw_mode.lower() not in EVOLUTION_MODES:
            raise ConfigError(f"option 'schemaEvolutionMode' must be one of "
                              f"{', '.join(EVOLUTION_MODES.values())}, got {raw_mode!r}")
        fields["evolution_mode"] = EVOLUTION_MODES[raw_mode.lower()]
    if not any(fields.get(k) for k in ("channel", "operation", "message")):
        raise ConfigError("one of the options 'channel', 'operation' or 'message' is required")

    strategy = (get("startingoffsetsbytimestampstrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigError("option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest'")
    fields["timestamp_strategy"] = strategy

    for key, attr in (("failondataloss", "fail_on_data_loss"), ("includeheaders", "include_headers"),
                      ("commitoffsetstogroup", "commit_offsets_to_group"), ("key.decode", "decode_key"),
                      ("enumsasints", "enums_as_ints")):
        if get(key):
            fields[attr] = _bool(key, opts[key])
    for key, attr, minimum in (("minpartitions", "min_partitions", 1),
                               ("maxrecordsperpartition", "max_records_per_partition", 1),
                               ("maxoffsetspertrigger", "max_offsets_per_trigger", 1),
                               ("minoffsetspertrigger", "min_offsets_per_trigger", 1),
                               ("kafkaconsumer.polltimeoutms", "poll_timeout_ms", 1),
                               ("fetchoffset.timeoutms", "fetch_timeout_ms", 1),
                               ("maxbatchrows", "max_batch_rows", 1),
                               ("recursiondepth", "recursion_depth", 0),
                               ("schema.id", "schema_id", 0),
                               ("limits.maxrecordbytes", "max_record_bytes", 1),
                               ("limits.maxdecompressedbytes", "max_decompressed_bytes", 1)):
        if get(key):
            fields[attr] = _int(key, opts[key], minimum=minimum)
    if get("maxtriggerdelay"):
        fields["max_trigger_delay_ms"] = _duration_ms("maxTriggerDelay", opts["maxtriggerdelay"])
    if streaming is False:
        for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"):
            if get(key):
                raise ConfigError(f"option '{key}' applies to streaming reads only")
    if get("groupidprefix"):
        fields["group_id_prefix"] = opts["groupidprefix"].strip()

    mode = (get("mode") or "FAILFAST").strip().upper()
    if mode not in MODES:
        raise ConfigError(f"option 'mode' must be one of {', '.join(MODES)}, got {opts['mode']!r}")
    fields["mode"] = mode
    shape = (get("valueshape") or "struct").strip().lower()
    if shape not in SHAPES:
        raise ConfigError(f"option 'valueShape' must be one of {', '.join(SHAPES)}")
    fields["value_shape"] = shape
    if get("wireformat"):
        from wireformat import Framing

        try:
            fields["wire_format"] = Framing(opts["wireformat"].strip().lower()).value
        except ValueError:
            raise ConfigError(f"option 'wireFormat' must be one of "
                              f"{', '.join(f.value for f in Framing)}, got {opts['wireformat']!r}") from None
    if get("schema.subject"):
        fields["schema_subject"] = opts["schema.subject"].strip()
    if get("schema.version"):
        version = opts["schema.version"].strip().lower()
        if version != "latest":
            _int("schema.version", version)
        fields["schema_version"] = version
    if get("schema.subject.strategy"):
        fields["subject_strategy"] = opts["schema.subject.strategy"].strip()
    if get("schema.message"):
        fields["schema_message"] = opts["schema.message"].strip()
    if fields.get("schema_id") is not None and fields.get("schema_subject"):
        raise ConfigError("options 'schema.id' and 'schema.subject' pin the schema twice; give one")

    if direction == "write":
        fields.update(_write_fields(opts, get))
    if starting or ending:
        # Parse the offset options now so a bad one fails at load(), not at the first action.
        from connector.kafka import offset_spec_from_options

        given = {**starting, **ending, "startingoffsetsbytimestampstrategy": strategy}
        offset_spec_from_options(given, is_ending=False, default="earliest", batch=streaming is False)
        if ending:
            offset_spec_from_options(given, is_ending=True, default="latest", batch=streaming is False)

    fields.update(
        direction=direction,
        channel_params=tuple(sorted(params.items())),
        kafka=tuple(sorted(kafka.items())),
        registry=tuple(sorted(registry.items())),
        starting=tuple(sorted(starting.items())),
        ending=tuple(sorted(ending.items())),
        secrets=Secrets(tuple(sorted(secrets.items()))),
    )
    return SourceOptions(**fields)


def _write_fields(opts: dict[str, str], get) -> dict[str, Any]:
    """The write-only options, typed (confluent-kafka's serializer names where they exist)."""
    out: dict[str, Any] = {}
    for key, attr in (("createtopics", "create_topics"), ("auto.register.schemas", "auto_register"),
                      ("use.latest.version", "use_latest_version"), ("normalize.schemas", "normalize_schemas")):
        if get(key):
            out[attr] = _bool(key, opts[key])
    if get("glue.compression"):
        comp = opts["glue.compression"].strip().lower()
        if comp not in ("none", "zlib"):
            raise ConfigError(f"option 'glue.compression' must be none or zlib, got {comp!r}")
        out["glue_compression"] = comp
    if get("use.schema.id"):
        sid = opts["use.schema.id"].strip()
        if not sid.isdigit():
            import uuid

            try:  # Glue and GUID framings name schemas by UUID
                sid = str(uuid.UUID(sid))
            except ValueError:
                raise ConfigError(f"option 'use.schema.id' must be a schema id (integer) or a schema "
                                  f"version UUID, got {sid!r}") from None
        out["use_schema_id"] = sid
    chosen = [n for n, on in (("auto.register.schemas", out.get("auto_register")),
                              ("use.latest.version", out.get("use_latest_version")),
                              ("use.schema.id", out.get("use_schema_id") is not None)) if on]
    if len(chosen) > 1:
        raise ConfigError(f"options {' and '.join(repr(c) for c in chosen)} each choose the schema to write "
                          "with; give one")
    return out
