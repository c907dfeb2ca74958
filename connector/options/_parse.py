"""Options parsed once, at ``load()``: a loop over the option table into one typed object.

Spark hands options to Python data sources as a case-insensitive dict with lowercased keys,
so every lookup here is lowercase. :func:`parse_any` types every option without knowing the
kind of job; :meth:`SourceOptions.for_scope` then refuses the options that kind does not
accept and resolves the offset defaults (earliest for batch reads, latest for streams) —
without parsing anything again.

Secrets (registry passwords and tokens, SASL passwords, AWS keys) are kept only in
:class:`SourceOptions.secrets`, whose ``repr`` is redacted; the option names that carry them
contain ``password``, ``secret`` or ``token`` so Spark's own redaction also hides them.
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

from wireformat import Framing

from connector.formats import EnumRepr, EvolutionMode, Mode
from connector.errors import ConfigError
from connector.kafka import (
    OffsetSpec,
    bootstrap_without_credentials,
    check_batch_start,
    is_secret_setting,
    parse_offsets_option,
)
from connector.options._table import (
    BATCH,
    BATCH_END,
    BATCH_START,
    OPTIONS,
    STREAM,
    STREAM_START,
    WRITE,
    Option,
    ValueShape,
    default_of,
    lookup,
)

__all__ = ["SourceOptions", "Secrets", "parse_any", "parse_options", "is_secret_option"]

# Spark's precedence among the offset options: global timestamp > per-partition timestamps > offsets.
_PRECEDENCE = ("timestamp", "offsetsbytimestamp", "offsets")


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
    """Options of one read or write, validated and typed. Picklable; secrets are held apart.

    ``direction``/``streaming`` say which kind of job they were checked for (``streaming``
    None: not yet, or either read). ``starting``/``ending`` are the parsed offset specs; for a
    batch read both are resolved (defaults earliest/latest), for a stream ``starting`` is
    (default latest) and ``ending`` is None.
    """

    asyncapi: str
    allow_remote_refs: bool = default_of("allow_remote_refs")
    ref_root: str | None = None
    topic: str | None = None
    evolution_mode: EvolutionMode = default_of("evolution_mode")
    channel: str | None = None
    operation: str | None = None
    message: str | None = None
    server: str | None = None
    channel_params: tuple[tuple[str, str], ...] = ()
    kafka: tuple[tuple[str, str], ...] = ()          # librdkafka settings, no secrets
    starting: OffsetSpec | None = None
    ending: OffsetSpec | None = None
    timestamp_strategy: str = default_of("timestamp_strategy")
    fail_on_data_loss: bool = default_of("fail_on_data_loss")
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    min_records_per_partition: int = default_of("min_records_per_partition")
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = default_of("max_trigger_delay_ms")
    include_headers: bool = default_of("include_headers")
    group_id_prefix: str = default_of("group_id_prefix")
    commit_offsets_to_group: bool = default_of("commit_offsets_to_group")
    poll_timeout_ms: int = default_of("poll_timeout_ms")
    fetch_timeout_ms: int = default_of("fetch_timeout_ms")
    fetch_num_retries: int = default_of("fetch_num_retries")
    fetch_retry_interval_ms: int = default_of("fetch_retry_interval_ms")
    max_batch_rows: int = default_of("max_batch_rows")
    mode: Mode = default_of("mode")
    wire_format: Framing | None = None
    decode_key: bool = default_of("decode_key")
    value_shape: ValueShape = default_of("value_shape")
    enum_repr: EnumRepr = default_of("enum_repr")
    recursion_depth: int = default_of("recursion_depth")
    json_validation: bool = default_of("json_validation")
    schema_subject: str | None = None
    schema_version: str = default_of("schema_version")
    schema_id: int | None = None
    subject_strategy: str | None = None
    schema_message: str | None = None
    registry: tuple[tuple[str, str], ...] = ()       # schema.registry.* without secrets
    rules_enabled: bool = default_of("rules_enabled")
    rules: tuple[tuple[str, str], ...] = ()          # rules.<kms setting> without secrets
    dlq_topic: str | None = None
    use_latest_with_metadata: tuple[tuple[str, str], ...] = ()
    max_record_bytes: int = default_of("max_record_bytes")
    max_decompressed_bytes: int = default_of("max_decompressed_bytes")
    max_collection_items: int = default_of("max_collection_items")
    # writes
    direction: str = "read"
    streaming: bool | None = None
    create_topics: bool = default_of("create_topics")
    auto_register: bool = default_of("auto_register")
    use_latest_version: bool = default_of("use_latest_version")
    use_schema_id: str | None = None
    normalize_schemas: bool = default_of("normalize_schemas")
    glue_compression: str | None = default_of("glue_compression")
    delivery_guarantee: str = default_of("delivery_guarantee")
    transactional_id_prefix: str = default_of("transactional_id_prefix")
    write_id: str | None = None
    given: tuple[str, ...] = ()                      # table keys of the options set (names only)
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

    def rule_settings(self) -> dict[str, str]:
        """``rules.<kms setting>`` options including secrets (names without ``rules.``): only for
        building a KMS client, never for printing."""
        out = dict(self.rules)
        out.update({k[len("rules."):]: v for k, v in self.secrets.items if k.startswith("rules.")})
        return out

    def for_scope(self, *, streaming: bool | None = None, direction: str = "read") -> SourceOptions:
        """These options checked for one kind of job, offset defaults resolved.

        Parameters
        ----------
        streaming : bool or None
            True: a stream (refuses ``endingOffsets`` ...); False: a batch (refuses
            ``maxOffsetsPerTrigger`` ... and a ``latest`` start); None: either.
        direction : {"read", "write"}
            ``"write"`` refuses read-only options and checks ``kafka.*`` against the
            settings the sink's producer owns instead of the reader's.

        Examples
        --------
        >>> opts = parse_any({"asyncapi": "doc.yaml", "channel": "orders"})
        >>> opts.for_scope(streaming=True).starting.kind.value
        'latest'
        """
        if direction not in ("read", "write"):
            raise ValueError(f"direction must be 'read' or 'write', got {direction!r}")
        if self.streaming is not None and streaming != self.streaming:
            # The offset defaults of the first scope are filled in: scope the unscoped parse instead.
            raise ValueError(f"options already scoped for streaming={self.streaming}")
        for key in self.given:
            _check_scope(_option(key), direction, streaming)
        starting, ending = self.starting, self.ending
        if direction == "read" and streaming is False:
            starting = check_batch_start(starting or _default(False, BATCH_START, self.timestamp_strategy))
            ending = ending or _default(True, BATCH_END, self.timestamp_strategy)
        elif direction == "read" and streaming:
            starting = starting or _default(False, STREAM_START, self.timestamp_strategy)
        return dataclasses.replace(self, direction=direction, streaming=streaming, starting=starting,
                                   ending=ending)


def _default(is_ending: bool, value: str, strategy: str) -> OffsetSpec:
    name = "endingoffsets" if is_ending else "startingoffsets"
    return parse_offsets_option(name, value, is_ending=is_ending, strategy=strategy)


def _option(key: str) -> Option:
    opt = lookup(key)
    if opt is None:
        raise _unknown(key)
    return opt


def _check_scope(opt: Option, direction: str, streaming: bool | None) -> None:
    key = opt.key
    if direction == WRITE:
        if WRITE not in opt.scope:
            raise ConfigError(f"option '{key}' applies to reads only; writes do not accept it")
        return
    if opt.scope == frozenset({WRITE}):
        raise ConfigError(f"option '{key}' applies to writes only (df.write / writeStream)")
    if streaming is True and STREAM not in opt.scope:
        raise ConfigError(f"option '{key}' is for batch reads; a stream has no end")
    if streaming is False and BATCH not in opt.scope:
        raise ConfigError(f"option '{key}' applies to streaming reads only")


_SECRET_WORDS = ("secret", "token", "password", "private.key")


def is_secret_rule_option(name: str) -> bool:
    """Whether a ``rules.<name>`` option (a KMS setting of the data-contract rules) holds a secret:
    kept apart, never printed."""
    low = name.lower()
    return any(w in low for w in _SECRET_WORDS)


def is_secret_option(key: str) -> bool:
    """Whether the option ``key`` (lowercase) holds a secret: the table says so for named options;
    for ``kafka.*``, :func:`connector.kafka.is_secret_setting` (the one librdkafka classifier)."""
    if key.startswith("kafka."):
        return is_secret_setting(key[len("kafka."):])
    opt = lookup(key)
    if opt is not None and opt.field == "rules":
        return is_secret_rule_option(key[len("rules."):])
    return opt is not None and opt.secret


def _unknown(name: str) -> ConfigError:
    if name.startswith("schema.registry."):
        valid = sorted(o.key for o in OPTIONS if o.key.startswith("schema.registry."))
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        return ConfigError(f"unknown option '{name}'.{hint} Valid registry options: {', '.join(valid)}")
    valid = sorted(o.key for o in OPTIONS if not o.hidden)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return ConfigError(f"unknown option '{name}'.{hint} Valid options: {', '.join(valid)}")


def parse_any(raw: Mapping[Any, Any], *, direction: str | None = None,
              streaming: bool | None = None) -> SourceOptions:
    """Type every option once, for any kind of job (see :meth:`SourceOptions.for_scope`).

    Raises :class:`ConfigError` for an unknown option, a bad value, or options that conflict
    whatever the job (``schema.id`` with ``schema.subject`` ...). A ``direction`` (and
    ``streaming``) known already refuses an option of the other kind before its value is
    parsed, so ``startingOffsets=x`` on a write says "reads only", not "invalid offsets".

    Examples
    --------
    >>> parse_any({"asyncapi": "doc.yaml", "channel": "orders", "mode": "permissive"}).mode
    <Mode.PERMISSIVE: 'PERMISSIVE'>
    """
    opts = {str(k).lower(): str(v) for k, v in raw.items() if k is not None and v is not None}
    fields: dict[str, Any] = {}
    collected: dict[str, dict[str, Any]] = {"kafka": {}, "registry": {}, "channel_params": {}, "starting": {},
                                            "ending": {}, "rules": {}}
    secrets: dict[str, str] = {}
    given: set[str] = set()
    for key, value in opts.items():
        opt = _option(key)
        if direction is not None:
            _check_scope(opt, direction, streaming)
        given.add(opt.key)
        if opt.field is None:
            continue
        if opt.field == "kafka":
            setting = key[len("kafka."):]
            if setting == "bootstrap.servers":
                value = bootstrap_without_credentials(value, "the option 'kafka.bootstrap.servers'")
            if is_secret_option(key):
                secrets[key] = value
            else:
                collected["kafka"][setting] = value
        elif opt.field == "channel_params":
            collected["channel_params"][key[len(opt.prefix or ""):]] = value
        elif opt.field == "registry":
            (secrets if opt.secret else collected["registry"])[key] = value
        elif opt.field == "rules":
            if is_secret_option(key):
                secrets[key] = value
            else:
                collected["rules"][key[len("rules."):]] = value
        elif not value.strip():
            continue  # an empty option is an unset one
        elif opt.field in ("starting", "ending"):
            collected[opt.field][key] = opt.parse(opt, value)
        else:
            fields[opt.field] = opt.parse(opt, value)

    if fields.get("asyncapi") is None:
        raise ConfigError("option 'asyncapi' is required: a path to an AsyncAPI document or its text")
    if not any(fields.get(k) for k in ("channel", "operation", "message")):
        raise ConfigError("one of the options 'channel', 'operation' or 'message' is required")
    if fields.get("schema_id") is not None and fields.get("schema_subject"):
        raise ConfigError("options 'schema.id' and 'schema.subject' pin the schema twice; give one")
    chosen = [n for n, on in (("auto.register.schemas", fields.get("auto_register")),
                              ("use.latest.version", fields.get("use_latest_version")),
                              ("use.schema.id", fields.get("use_schema_id") is not None),
                              ("use.latest.with.metadata", direction == "write" and
                               bool(fields.get("use_latest_with_metadata")))) if on]
    if len(chosen) > 1:
        raise ConfigError(f"options {' and '.join(repr(c) for c in chosen)} each choose the schema to write "
                          "with; give one")
    strategy = fields.get("timestamp_strategy", "error")
    for side in ("starting", "ending"):
        specs = collected.pop(side)
        winner = next((specs[side + s] for s in _PRECEDENCE if side + s in specs), None)
        if winner is not None:
            fields[side] = dataclasses.replace(winner, strategy=strategy)
    return SourceOptions(
        **fields,
        channel_params=tuple(sorted(collected["channel_params"].items())),
        kafka=tuple(sorted(collected["kafka"].items())),
        registry=tuple(sorted(collected["registry"].items())),
        rules=tuple(sorted(collected["rules"].items())),
        given=tuple(sorted(given)),
        direction=direction or "read",
        secrets=Secrets(tuple(sorted(secrets.items()))),
    )


def parse_options(raw: Mapping[Any, Any], *, streaming: bool | None = False,
                  direction: str = "read") -> SourceOptions:
    """Validate and type the options of a read or write: :func:`parse_any`, then
    :meth:`SourceOptions.for_scope`. Raises :class:`ConfigError` before any task runs.

    ``streaming`` True/False also refuses the options of the other kind of read; ``None``
    accepts both (used to compute the schema, which does not depend on it).

    Examples
    --------
    >>> opts = parse_options({"asyncapi": "doc.yaml", "channel": "orders", "mode": "permissive"})
    >>> str(opts.mode), opts.starting.kind.value, opts.ending.kind.value
    ('PERMISSIVE', 'earliest', 'latest')
    """
    if direction not in ("read", "write"):
        raise ValueError(f"direction must be 'read' or 'write', got {direction!r}")
    return parse_any(raw, direction=direction, streaming=streaming).for_scope(streaming=streaming,
                                                                              direction=direction)
