"""The option table: every option of the source, the sink and the column functions, declared once.

Each :class:`Option` names its documented spelling, the parser that types its value, the scopes
that accept it — the kinds of job (batch read, stream read, write) and the column functions
(``from_registry``, ``to_registry``, ``strip_header``/``schema_id``) —, whether it holds a secret,
the default shown in the docs and its meaning. A column function's keyword argument is the
:attr:`Option.keyword` of an option in its scope, parsed by the same table
(:func:`connector.options.parse_arguments`), with the defaults and refusals the option declares
for that function. :func:`connector.options.parse_options` is a loop over this table; the docs'
option tables are generated from it when the site is built (``docs/options.md``,
``docs/column-functions.md``; ``python -m connector.options --markdown`` prints them).
"""
from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from registry import REGISTRY_OPTIONS, RegistryOption
from wireformat import DEFAULT_LIMITS, Framing

from connector.errors import ConfigError
from connector.formats import FORMATS, EnumRepr, EvolutionMode, Mode, payload_format
from connector.formats.core import OptionEnum
from connector.kafka import OffsetSpec, parse_offsets_option

__all__ = ["Option", "OPTIONS", "BATCH", "STREAM", "WRITE", "READ", "ALL", "JOBS", "FROM_REGISTRY", "TO_REGISTRY",
           "STRIP_HEADER", "FUNCTIONS", "WRITES", "ValueShape", "lookup", "default_of", "scope_default", "keyword_option",
           "KEYWORDS",
           "COLLECTED", "BATCH_START", "STREAM_START", "BATCH_END", "AT_LEAST_ONCE", "EXACTLY_ONCE",
           "OPTION_DOCS", "READ_ONLY_OPTIONS", "WRITE_ONLY_OPTIONS"]

BATCH, STREAM, WRITE = "batch", "stream", "write"
READ = frozenset({BATCH, STREAM})
ALL = JOBS = frozenset({BATCH, STREAM, WRITE})
#: The column functions, each a scope of its own (``schema_id`` is ``strip_header``'s).
FROM_REGISTRY, TO_REGISTRY, STRIP_HEADER = "from_registry", "to_registry", "strip_header"
FUNCTIONS = frozenset({FROM_REGISTRY, TO_REGISTRY, STRIP_HEADER})
_CODECS = frozenset({FROM_REGISTRY, TO_REGISTRY})  # the functions that decode or encode with a schema
#: The scopes that write records: the ones whose registration options choose the writer schema.
WRITES = frozenset({WRITE, TO_REGISTRY})
_WRITE = frozenset({WRITE})

#: Where reads start and end when no offset option is given (as Spark's Kafka source).
BATCH_START, STREAM_START, BATCH_END = "earliest", "latest", "latest"
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}

Parser = Callable[["Option", str], Any]
E = TypeVar("E", bound=OptionEnum)


@dataclasses.dataclass(frozen=True)
class Option:
    """One option: how it is spelled, typed, scoped and documented.

    Attributes
    ----------
    name : str
        Documented spelling (Spark hands options over lowercased; :attr:`key` is that).
        A name ending in ``<...>`` is a family: every option starting with :attr:`prefix`.
    parse : callable
        ``parse(option, raw_value) -> typed value``; raises :class:`ConfigError`.
    scope : frozenset of str
        Which of ``batch``, ``stream``, ``write`` accept it (the others refuse it at ``load()``),
        and which column functions (``from_registry``, ``to_registry``, ``strip_header``).
    field : str or None
        The :class:`~connector.options.SourceOptions` attribute it fills; ``kafka``,
        ``registry``, ``channel_params``, ``starting``/``ending`` collect several options.
    secret : bool
        The value is a secret (kept in ``SourceOptions.secrets``, never printed). The ``kafka.*``
        family decides per setting with :func:`connector.kafka.is_secret_setting`.
    default : str
        The default as option text: :attr:`SourceOptions` takes its field default from parsing it
        (:func:`default_of`), so the docs and the value cannot drift. Empty: no default value.
    shown : str or None
        What the docs say instead, for a default that is not one value ("from the document").
    doc : str
        The meaning, as the docs show it.
    hidden : bool
        Accepted but not documented (Spark's own ``checkpointLocation`` on stream writes).
    keyword : str
        The column functions' keyword argument for it (``wire_format``); empty: a column function
        in its scope takes it in ``options=`` only. Unique within each function's scope.
    defaults : tuple of (scope, str)
        Defaults of some scopes, where they differ from :attr:`default` (``strip_header``'s
        ``wireFormat`` is ``auto``).
    refused : tuple of (scope, predicate, str)
        Values a scope refuses (a predicate on the parsed value) and why: ``to_registry`` cannot
        write a header framing, no column function drops rows.
    """

    name: str
    parse: Parser
    scope: frozenset[str]
    field: str | None
    secret: bool = False
    default: str = ""
    doc: str = ""
    hidden: bool = False
    shown: str | None = None
    keyword: str = ""
    defaults: tuple[tuple[str, str], ...] = ()
    refused: tuple[tuple[str, Callable[[Any], bool], str], ...] = ()

    @property
    def key(self) -> str:
        return self.name.lower()

    @property
    def documented_default(self) -> str:
        return self.default if self.shown is None else self.shown

    @property
    def prefix(self) -> str | None:
        """``"kafka."`` for ``kafka.<librdkafka setting>``; None for a plain option."""
        return self.key[: self.key.index("<")] if "<" in self.key else None


# -- parsers ---------------------------------------------------------------------------------
def text(opt: Option, value: str) -> str:
    return value.strip()


def raw(opt: Option, value: str) -> str:
    """Kept exactly as given (librdkafka and registry settings, address parameters)."""
    return value


def path(opt: Option, value: str) -> str:
    return os.path.abspath(os.path.expanduser(value.strip()))


def boolean(opt: Option, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ConfigError(f"option '{opt.key}' must be true or false, got {value!r}")


def integer(minimum: int = 1) -> Parser:
    def parse(opt: Option, value: str) -> int:
        try:
            n = int(value.strip())
        except ValueError:
            raise ConfigError(f"option '{opt.key}' must be an integer, got {value!r}") from None
        if n < minimum:
            raise ConfigError(f"option '{opt.key}' must be >= {minimum}, got {n}")
        return n
    return parse


def duration_ms(opt: Option, value: str) -> int:
    v = value.strip().lower()
    units = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
    for suffix in sorted(units, key=len, reverse=True):
        if v.endswith(suffix) and v[: -len(suffix)].strip().isdigit():
            return int(v[: -len(suffix)]) * units[suffix]
    if v.isdigit():
        return int(v)
    raise ConfigError(f"option '{opt.name}' must be a duration like '30s', '5m' or milliseconds, got {value!r}")


def choice(values: dict[str, str], message: str | None = None) -> Parser:
    """One of ``values`` (matched case-insensitively, returned in its canonical spelling)."""
    def parse(opt: Option, value: str) -> str:
        v = value.strip().lower()
        if v not in values:
            raise ConfigError(message.format(name=opt.name, value=value) if message else
                              f"option '{opt.name}' must be one of {', '.join(values.values())}, got {value!r}")
        return values[v]
    return parse


def framing(opt: Option, value: str) -> Framing:
    try:
        return Framing(value.strip().lower())
    except ValueError:
        raise ConfigError(f"option '{opt.name}' must be one of {', '.join(f.value for f in Framing)}, "
                          f"got {value!r}") from None


def enum_of(cls: type[E]) -> Callable[[Option, str], E]:
    """One member of an :class:`~connector.formats.core.OptionEnum` (any case)."""
    def parse(opt: Option, value: str) -> E:
        v = value.strip().lower()
        for member in cls:
            if member.value.lower() == v:
                return member
        raise ConfigError(f"option '{opt.name}' must be one of {', '.join(m.value for m in cls)}, got {value!r}")
    return parse


def enum_repr(opt: Option, value: str) -> EnumRepr:
    """``enumsAsInts``: a boolean that chooses how Protobuf enums come out."""
    return EnumRepr.INT if boolean(opt, value) else EnumRepr.STRING


class ValueShape(OptionEnum):
    """``valueShape``: the decoded value as one ``value`` struct column, or its fields as columns."""

    STRUCT = "struct"
    FLATTEN = "flatten"


def version(opt: Option, value: str) -> str:
    v = value.strip().lower()
    if v != "latest":
        integer(1)(opt, v)
    return v


def schema_id_or_uuid(opt: Option, value: str) -> str:
    sid = value.strip()
    if sid.isdigit():
        return sid
    try:  # Glue and GUID framings name schemas by UUID
        return str(uuid.UUID(sid))
    except ValueError:
        raise ConfigError(f"option '{opt.key}' must be a schema id (integer) or a schema version UUID, "
                          f"got {sid!r}") from None


def metadata_pairs(opt: Option, value: str) -> tuple[tuple[str, str], ...]:
    """``use.latest.with.metadata``: a JSON object or ``key=value,key=value`` → sorted pairs."""
    import json

    v = value.strip()
    try:
        doc = json.loads(v) if v.startswith("{") else dict(p.split("=", 1) for p in v.split(",") if p.strip())
    except ValueError:
        raise ConfigError(f"option '{opt.key}' must be a JSON object or key=value pairs separated by commas, "
                          f"got {value!r}") from None
    if not isinstance(doc, dict) or not doc:
        raise ConfigError(f"option '{opt.key}' must name at least one metadata property")
    return tuple(sorted((str(k).strip(), str(val).strip()) for k, val in doc.items()))


def offsets(is_ending: bool) -> Parser:
    """An offset option of Spark's Kafka source, parsed for any kind of read; the batch-only
    rules (no ``latest`` start) are applied when the scope is known (``for_scope``)."""
    def parse(opt: Option, value: str) -> OffsetSpec:
        return parse_offsets_option(opt.key, value, is_ending=is_ending)
    return parse


_STRATEGY = {"error": "error", "latest": "latest"}
AT_LEAST_ONCE, EXACTLY_ONCE = "at-least-once", "exactly-once"
_GUARANTEE = {AT_LEAST_ONCE: AT_LEAST_ONCE, EXACTLY_ONCE: EXACTLY_ONCE}
_COMPRESSION = {"none": "none", "zlib": "zlib"}


def _o(name: str, parse: Parser, scope: frozenset[str], field: str | None, default: str, doc: str = "",
       **kw: Any) -> Option:
    return Option(name, parse, scope, field, default=default, doc=doc, **kw)


def _compression(opt: Option, value: str) -> str | None:
    """``glue.compression``: ``zlib``, or None for ``none``."""
    v = choice(_COMPRESSION, "option '{name}' must be none or zlib, got {value!r}")(opt, value)
    return None if v == "none" else v


def _reg(o: RegistryOption) -> Option:
    """A ``schema.registry.*`` row: the registry declares it (name, default, meaning, secret)."""
    return Option(o.name, raw, ALL | _CODECS, "registry", secret=o.secret, default=o.default or "", doc=o.doc,
                  shown=o.shown, keyword="registry_url" if o.field == "urls" else "")


def payload_format_name(opt: Option, value: str) -> str:
    """A payload format, in any spelling the formats know (``avro``, ``PROTOBUF``, ``JSONSCHEMA``)."""
    try:
        return payload_format(value).name
    except ConfigError:
        raise ConfigError(f"option '{opt.name}' must be one of {', '.join(FORMATS)}, got {value!r}") from None


#: What no column function does with a bad row: drop it (a column expression cannot drop its row).
_NO_DROP = "DROPMALFORMED: a column function cannot drop its row (FAILFAST raises, PERMISSIVE gives null)"
_ROWS_KEPT = tuple((f, lambda mode: mode is Mode.DROPMALFORMED, _NO_DROP) for f in sorted(_CODECS))


def _header_or_auto(framing: Framing) -> bool:
    return framing is Framing.AUTO or framing.in_header


#: Every option, in the docs' order.
OPTIONS: tuple[Option, ...] = (
    _o("asyncapi", text, ALL | {FROM_REGISTRY}, "asyncapi", "", shown="(required)", keyword="asyncapi", doc=
       "AsyncAPI document: a file path, or the YAML/JSON text itself. `from_registry`: decode with the payloads "
       "of a channel of this document."),
    _o("asyncapi.allowRemoteRefs", boolean, ALL, "allow_remote_refs", "false",
       "Fetch remote (http/https) `$ref`s in the document."),
    _o("asyncapi.refRoot", path, ALL, "ref_root", "", shown="the document's directory", doc=
       "Directory relative file `$ref`s may reach; widen it to an ancestor for documents that share files "
       "through `../`."),
    _o("channel", text, ALL | {FROM_REGISTRY}, "channel", "", keyword="channel", doc=
       "Channel to read (2.x: channel key; 3.x: channel id). One of channel/operation/message."),
    _o("operation", text, ALL, "operation", "", "Operation id whose channel is read."),
    _o("message", text, ALL, "message", "", "Message name: read only this message of the channel."),
    _o("server", text, ALL | {FROM_REGISTRY}, "server", "", keyword="server", doc=
       "Server name from the document (needed when several Kafka servers match)."),
    _o("channel.param.<name>", raw, ALL, "channel_params", "",
       "Value of an address parameter; unset parameters match any topic."),
    _o("topic", text, ALL | _CODECS, "topic", "", keyword="topic", doc=
       "Topic to read for a channel without a usable address (`address: null`, or not a legal topic name); on a "
       "templated address it must match the template and fills its parameters. Writes: the topic of every row "
       "(overrides a `topic` column). Column functions: the records' topic, whose subject holds the "
       "data-contract keys when no subject is given."),
    _o("kafka.bootstrap.servers", raw, ALL | _CODECS, "kafka", "", shown="from the document",
       doc="Overrides the server's bootstrap list (column functions: the cluster of a dead-letter topic)."),
    _o("kafka.<librdkafka setting>", raw, ALL | _CODECS, "kafka", "",
       "Passed to librdkafka, except settings the source owns."),
    _o("startingOffsets", offsets(False), READ, "starting", "", shown=f"{BATCH_START} (batch), {STREAM_START} (stream)",
       doc=
       "earliest, latest (streams only), or JSON `{\"topic\":{\"0\":23,\"1\":-2}}`."),
    _o("endingOffsets", offsets(True), frozenset({BATCH}), "ending", "", shown=BATCH_END, doc=
       "Batch only: latest or JSON `{\"topic\":{\"0\":50,\"1\":-1}}`."),
    _o("startingTimestamp", offsets(False), READ, "starting", "",
       "Start all partitions at the first offset with timestamp >= this (ms)."),
    _o("endingTimestamp", offsets(True), frozenset({BATCH}), "ending", "",
       "Batch only: end all partitions at this timestamp (ms)."),
    _o("startingOffsetsByTimestamp", offsets(False), READ, "starting", "",
       "JSON `{\"topic\":{\"0\":1700000000000}}` per partition."),
    _o("endingOffsetsByTimestamp", offsets(True), frozenset({BATCH}), "ending", "", "Batch only: JSON per partition."),
    _o("startingOffsetsByTimestampStrategy",
       choice(_STRATEGY, "option '{name}' must be 'error' or 'latest'"), READ, "timestamp_strategy", "error",
       "error or latest: when no offset matches a timestamp."),
    _o("failOnDataLoss", boolean, READ, "fail_on_data_loss", "true",
       "Fail when records are gone (aged out, partitions deleted); false warns."),
    _o("minPartitions", integer(1), READ, "min_partitions", "",
       "Split large offset ranges so that about this many Spark tasks read."),
    _o("maxRecordsPerPartition", integer(1), READ, "max_records_per_partition", "",
       "Split offset ranges so no task reads more records than this."),
    _o("minRecordsPerPartition", integer(0), READ, "min_records_per_partition", "50000",
       "Read offset ranges smaller than this several to a Spark task, up to this many records a task (fewer "
       "tasks for small reads and micro-batches); 0 gives every range its own task. Off with minPartitions."),
    _o("maxOffsetsPerTrigger", integer(1), frozenset({STREAM}), "max_offsets_per_trigger", "",
       "Streaming: at most this many records per micro-batch, prorated by partition."),
    _o("minOffsetsPerTrigger", integer(1), frozenset({STREAM}), "min_offsets_per_trigger", "",
       "Streaming: wait for this many new records (up to maxTriggerDelay)."),
    _o("maxTriggerDelay", duration_ms, frozenset({STREAM}), "max_trigger_delay_ms", "15m",
       "Streaming: longest wait for minOffsetsPerTrigger."),
    _o("includeHeaders", boolean, READ, "include_headers", "false",
       "Add the Kafka headers column `array<struct<key,value>>`."),
    _o("groupIdPrefix", text, READ, "group_id_prefix", "asyncapi-kafka",
       "Prefix of the throwaway consumer group ids the source uses."),
    _o("commitOffsetsToGroup", boolean, frozenset({STREAM}), "commit_offsets_to_group", "false",
       "Streaming: commit processed offsets to the operation's groupId (monitoring only)."),
    _o("kafkaConsumer.pollTimeoutMs", integer(1), READ, "poll_timeout_ms", "120000",
       "How long an executor reads on without progress (no new record) before the task fails; transient broker "
       "errors are ridden out meanwhile."),
    _o("fetchOffset.timeoutMs", integer(1), ALL, "fetch_timeout_ms", "30000",
       "Driver timeout for metadata and offset look-ups, retries included: a leader unavailable for less than "
       "this is waited out."),
    _o("fetchOffset.numRetries", integer(0), READ, "fetch_num_retries", "3",
       "Retries of a driver look-up whose attempt waited out its time and failed with a transient error (Spark's "
       "meaning); attempts refused at once (a leader down, a stale leader) do not count. Metadata is refreshed "
       "before each retry."),
    _o("fetchOffset.retryIntervalMs", integer(0), READ, "fetch_retry_interval_ms", "1000",
       "Wait before each retry of a driver look-up."),
    _o("maxBatchRows", integer(1), READ, "max_batch_rows", "10000",
       "Rows per Arrow batch handed to Spark (bounds worker memory)."),
    _o("mode", enum_of(Mode), READ | _CODECS, "mode", "FAILFAST", keyword="mode", refused=_ROWS_KEPT, doc=
       "FAILFAST, PERMISSIVE (null value + `_error` + `_raw_value`) or DROPMALFORMED."),
    _o("wireFormat", framing, ALL | FUNCTIONS, "wire_format", "", shown="from the document", keyword="wire_format",
       defaults=((FROM_REGISTRY, "confluent"), (TO_REGISTRY, "confluent"), (STRIP_HEADER, "auto")),
       refused=((TO_REGISTRY, _header_or_auto, "auto and the header framings: 'auto' is for reading, and the "
                 "column holds the bytes only, so the schema id cannot travel in Kafka headers (write with the "
                 "asyncapi-kafka sink); pick confluent, confluent-guid, glue, apicurio-new, apicurio-legacy or "
                 "none"),), doc=
       "confluent, confluent-guid, glue, apicurio-legacy, apicurio-new, header-confluent, header-apicurio-global, "
       "header-apicurio-content, auto, none. `from_registry`: the document's framing with `asyncapi=`."),
    _o("key.decode", boolean, READ, "decode_key", "true",
       "Decode the key with the document's key schema; false keeps it binary."),
    _o("valueShape", enum_of(ValueShape), READ, "value_shape",
       "struct", "struct (one `value` column) or flatten (the value's fields as top-level columns)."),
    _o("enumsAsInts", enum_repr, READ, "enum_repr", "false", "Protobuf enums as their numbers instead of names."),
    _o("recursionDepth", integer(0), READ, "recursion_depth", "0",
       "Cut recursive schemas at this depth (0 refuses them)."),
    _o("jsonSchemaValidation", boolean, READ | {FROM_REGISTRY}, "json_validation", "true",
       "JSON payloads: a record its JSON Schema refuses (python-jsonschema's verdict; `format` is not asserted) "
       "is a malformed record (see `mode`). `false` gives that check up: every record the Arrow type can hold is "
       "read, valid or not."),
    _o("schemaEvolutionMode", enum_of(EvolutionMode), READ, "evolution_mode", "none",
       "Fields a writer has and the reader lacks: `none` (dropped), `rescue` (JSON in `_rescued_data`) or "
       "`failOnNewFields` (the query stops, naming the writer schema id)."),
    _o("schema.subject", text, READ | _CODECS, "schema_subject", "", keyword="subject", doc=
       "Pin the reader schema to this registry subject (latest or schema.version). `to_registry`: the subject "
       "to register under or to take the latest version of."),
    _o("schema.version", version, READ | _CODECS, "schema_version", "latest", keyword="version", doc=
       "Version of schema.subject."),
    _o("schema.id", integer(0), READ | {FROM_REGISTRY}, "schema_id", "", keyword="schema_id", doc=
       "Pin the reader schema to this registry schema id."),
    _o("schema.subject.strategy", text, ALL, "subject_strategy", "",
       shown="the binding's `schemaLookupStrategy`, else TopicNameStrategy", doc=
       "Subject name strategy used to find the latest schema."),
    _o("schema.message", text, ALL | _CODECS, "schema_message", "", keyword="message", doc=
       "Protobuf reader message (full name, e.g. `shop.Refund`) when the reader schema declares several top-level "
       "messages; without it such a schema fails at `load()` with the list of names. Records written as another "
       "message are row errors."),
    *(_reg(o) for o in REGISTRY_OPTIONS),
    # -- column functions only (connector.spark.functions) --
    _o("schema", text, _CODECS, "inline_schema", "", keyword="schema", doc=
       "The schema given inline: Avro schema JSON, JSON Schema text or `.proto` source (a dict is written as "
       "JSON). It wins over the registry's: the reader of every row, or the schema written with."),
    _o("schema.format", payload_format_name, _CODECS, "schema_format", "", shown="guessed from its text",
       keyword="format", doc="The payload format of the inline `schema`: avro, json or protobuf."),
    _o("withErrors", boolean, _CODECS, "with_errors", "false", keyword="with_errors", doc=
       "Return `struct<value, error>`: the reason a row is null in `error` (implies PERMISSIVE)."),
    # -- data contracts (connector.schema.rules) --
    _o("rules.enabled", boolean, ALL | _CODECS, "rules_enabled", "true",
       "Apply the data-contract rules of registered schemas (field and payload encryption, CEL conditions and "
       "transforms, migrations); `false` reads and writes the bytes as they are, and says so in the log."),
    _o("use.latest.with.metadata", metadata_pairs, ALL | _CODECS, "use_latest_with_metadata", "", doc=
       "Reads: the reader is the subject's latest version whose metadata properties hold these "
       "(`major_version=2` or JSON); writes: encode with, and frame with the id of, that version."),
    _o("rules.dlq.topic", text, ALL | _CODECS, "dlq_topic", "",
       "Dead-letter topic of rules whose `onFailure` is DLQ (else the rule's `dlq.topic` parameter)."),
    _o("rules.<kms setting>", raw, ALL | _CODECS, "rules", "",
       "KMS settings and credentials for encryption rules, under confluent-kafka's rule-config names: "
       "`rules.secret` (local KMS), `rules.access.key.id`/`rules.secret.access.key`/`rules.profile`/`rules.role.arn` "
       "(AWS), `rules.tenant.id`/`rules.client.id`/`rules.client.secret` (Azure), `rules.account.type`/"
       "`rules.client.email`/`rules.private.key.id`/`rules.private.key` (GCP), `rules.token`/`rules.namespace` "
       "(Vault). Unset: each cloud's default credential chain. Names holding `secret`, `token`, `password` or "
       "`private.key` are secrets."),
    _o("limits.maxRecordBytes", integer(1), READ, "max_record_bytes", str(DEFAULT_LIMITS.max_record_bytes),
       "Records larger than this are errors."),
    _o("limits.maxDecompressedBytes", integer(1), READ, "max_decompressed_bytes",
       str(DEFAULT_LIMITS.max_decompressed_bytes),
       "Cap on one decompressed (Glue zlib) payload."),
    _o("limits.maxCollectionItems", integer(1), READ, "max_collection_items",
       str(DEFAULT_LIMITS.max_collection_items),
       "Records holding more array/map items (or JSON object members) than this are errors."),
    # -- writes only (df.write / writeStream) --
    _o("createTopics", boolean, _WRITE, "create_topics", "false",
       "Create missing topics from the channel binding (partitions, replicas, topicConfiguration)."),
    _o("auto.register.schemas", boolean, WRITES, "auto_register", "false", keyword="auto_register", doc=
       "Register the document's schema under the subject if absent."),
    _o("use.latest.version", boolean, WRITES, "use_latest_version", "false", keyword="use_latest_version", doc=
       "Encode with, and frame with the id of, the subject's latest registered schema."),
    _o("use.schema.id", schema_id_or_uuid, WRITES, "use_schema_id", "", keyword="schema_id", doc=
       "Encode with, and frame with, this registered schema (Glue and GUID framings: a UUID)."),
    _o("normalize.schemas", boolean, WRITES, "normalize_schemas", "false", keyword="normalize", doc=
       "Ask the registry to normalize the schema when registering."),
    _o("glue.compression", _compression, WRITES, "glue_compression", "none", keyword="compression", doc=
       "none or zlib, for the glue framing."),
    _o("deliveryGuarantee", choice(_GUARANTEE), _WRITE, "delivery_guarantee", AT_LEAST_ONCE,
       "`at-least-once` (a retried task or a replayed micro-batch may write records again) or `exactly-once`: each "
       "task writes in one Kafka transaction, fenced per (query, partition) and committed with a marker of its "
       "(batch, partition), so a retry or replay writes nothing twice for readers with `isolation.level="
       "read_committed` (see docs/exactly-once.md). Needs one topic (not per-row topics)."),
    _o("transactionalIdPrefix", text, _WRITE, "transactional_id_prefix", "asyncapi-kafka",
       "Exactly-once: transactional ids are `<prefix>-<query id>-<partition>` (streams: the checkpoint's query id) "
       "or `<prefix>-<writeId>-<partition>` (batch writes); the same names the consumer groups holding the "
       "markers. Needs the Kafka ACLs for them."),
    _o("writeId", text, _WRITE, "write_id", "",
       "Exactly-once batch writes (required there): the identity of this write. Running it again with the same "
       "writeId writes only the DataFrame partitions that did not commit; a new write needs a new writeId."),
    # Spark hands a stream writer its own checkpointLocation among the options.
    _o("checkpointLocation", raw, _WRITE, None, "", "", hidden=True),
    # Spark Declarative Pipelines hand a sink's writer its flow's query name among the options
    # (docs/pipelines.md).
    _o("queryName", raw, _WRITE, None, "", "", hidden=True),
)

_BY_KEY = {o.key: o for o in OPTIONS if o.prefix is None}
#: Fields several options fill together (their defaults are the empty collection / None).
COLLECTED = frozenset({"kafka", "registry", "channel_params", "starting", "ending", "rules"})
_BY_FIELD = {o.field: o for o in OPTIONS if o.field is not None and o.field not in COLLECTED}
_FAMILIES = tuple(o for o in OPTIONS if o.prefix is not None)


def lookup(key: str) -> Option | None:
    """The option a (lowercase) name is, exactly or as a member of a family; None if unknown."""
    found = _BY_KEY.get(key)
    if found is not None:
        return found
    if key.startswith("schema.registry."):
        return None  # the registry's names are all listed: no family catches a typo
    return next((o for o in _FAMILIES if key.startswith(o.prefix or "\0") and len(key) > len(o.prefix or "")), None)


#: (scope, keyword) -> the option a column function's keyword argument sets.
KEYWORDS: dict[tuple[str, str], Option] = {(f, o.keyword): o for o in OPTIONS if o.keyword for f in sorted(o.scope & FUNCTIONS)}


def keyword_option(scope: str, keyword: str) -> Option:
    """The option ``keyword`` sets in the column function ``scope``."""
    try:
        return KEYWORDS[(scope, keyword)]
    except KeyError:
        raise TypeError(f"{scope}() got an unexpected keyword argument {keyword!r}") from None


def scope_default(opt: Option, scope: str | None) -> str:
    """The option's default text in ``scope`` (its own default unless the scope declares another)."""
    return dict(opt.defaults).get(scope or "", opt.default)


#: name -> (default shown in docs, meaning), lowercase names: the jobs' options (the table, as a dict).
OPTION_DOCS: dict[str, tuple[str, str]] = {
    o.key: (o.documented_default, ("Write only: " + o.doc) if o.scope & JOBS == frozenset({WRITE}) else o.doc)
    for o in OPTIONS if not o.hidden and o.scope & JOBS}
#: Options refused on writes, and options refused on reads.
READ_ONLY_OPTIONS = frozenset(o.key for o in OPTIONS if o.scope & JOBS and WRITE not in o.scope)
WRITE_ONLY_OPTIONS = frozenset(o.key for o in OPTIONS if o.scope & JOBS == frozenset({WRITE}) and not o.hidden)


def default_of(field: str) -> Any:
    """The default of a :class:`SourceOptions` field: its option's default text, parsed (None
    when the option has no default value). The table is the one owner of every default."""
    opt = _BY_FIELD[field]
    return opt.parse(opt, opt.default) if opt.default else None
