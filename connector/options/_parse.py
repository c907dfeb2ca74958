"""Options parsed once, at ``load()``: a loop over the option table into one typed object.

Spark hands options to Python data sources as a case-insensitive dict with lowercased keys,
so every lookup here is lowercase. :func:`parse_any` types every option without knowing the
kind of job; :meth:`SourceOptions.for_scope` then refuses the options that kind does not
accept and resolves the offset defaults (earliest for batch reads, latest for streams) —
without parsing anything again. The column functions' arguments go through the same loop
(:func:`parse_arguments`, scoped by the function), so a value means and fails the same there.

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
    COLLECTED,
    BATCH_END,
    BATCH_START,
    FUNCTIONS,
    JOBS,
    OPTIONS,
    STREAM,
    STREAM_START,
    WRITE,
    WRITES,
    Option,
    ValueShape,
    default_of,
    keyword_option,
    lookup,
    scope_default,
)

__all__ = ["SourceOptions", "Secrets", "parse_any", "parse_options", "parse_arguments", "is_secret_option",
           "spelled", "glue_compression", "framing_of"]

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
    None: not yet, or either read); a column function's arguments have its name as
    ``direction``. ``starting``/``ending`` are the parsed offset specs; for a batch read both are
    resolved (defaults earliest/latest), for a stream ``starting`` is (default latest) and
    ``ending`` is None. ``asyncapi`` is None only for a column function given no document.
    """

    asyncapi: str | None = None
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
    # column functions
    inline_schema: str | None = None
    schema_format: str | None = None
    with_errors: bool = default_of("with_errors")
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


def _option(key: str, scope: str | None = None) -> Option:
    opt = lookup(key)
    if opt is None:
        raise _unknown(key, scope)
    return opt


def _check_scope(opt: Option, direction: str, streaming: bool | None) -> None:
    key = opt.key
    if direction in FUNCTIONS:
        if direction not in opt.scope:
            valid = sorted(o.key for o in OPTIONS if direction in o.scope and not o.hidden)
            raise ConfigError(f"{direction} takes no option '{key}'; its options are {', '.join(valid)} (and their "
                              "keyword arguments)")
        return
    if not opt.scope & JOBS:
        raise ConfigError(f"option '{key}' is an argument of the column functions "
                          f"({', '.join(sorted(opt.scope))}); jobs do not accept it")
    if direction == WRITE:
        if WRITE not in opt.scope:
            raise ConfigError(f"option '{key}' applies to reads only; writes do not accept it")
        return
    if opt.scope & JOBS == frozenset({WRITE}):
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


def _unknown(name: str, scope: str | None = None) -> ConfigError:
    if name.startswith("schema.registry."):
        valid = sorted(o.key for o in OPTIONS if o.key.startswith("schema.registry."))
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        return ConfigError(f"unknown option '{name}'.{hint} Valid registry options: {', '.join(valid)}")
    # a column function lists its own options; a job, the jobs' (neither lists the other's)
    mine = (lambda o: scope in o.scope) if scope in FUNCTIONS else (lambda o: bool(o.scope & JOBS))
    valid = sorted(o.key for o in OPTIONS if not o.hidden and mine(o))
    if scope in FUNCTIONS:
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        return ConfigError(f"{scope}: unknown option '{name}'.{hint} Its options: {', '.join(valid)} (or the "
                           "keyword arguments that set them)")
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return ConfigError(f"unknown option '{name}'.{hint} Valid options: {', '.join(valid)}")


def parse_any(raw: Mapping[Any, Any], *, direction: str | None = None, streaming: bool | None = None,
              named: Mapping[str, str] | None = None) -> SourceOptions:
    """Type every option once, for any kind of job (see :meth:`SourceOptions.for_scope`).

    Raises :class:`ConfigError` for an unknown option, a bad value, or options that conflict
    whatever the job (``schema.id`` with ``schema.subject`` ...). A ``direction`` (and
    ``streaming``) known already refuses an option of the other kind before its value is
    parsed, so ``startingOffsets=x`` on a write says "reads only", not "invalid offsets".
    A column function's name as ``direction`` parses its arguments (:func:`parse_arguments`):
    its defaults and refusals apply, and ``named`` (option key -> how the caller gave it,
    ``from_registry(wire_format='x')``) starts the message of a value that fails.

    Examples
    --------
    >>> parse_any({"asyncapi": "doc.yaml", "channel": "orders", "mode": "permissive"}).mode
    <Mode.PERMISSIVE: 'PERMISSIVE'>
    """
    opts = {str(k).lower(): str(v) for k, v in raw.items() if k is not None and v is not None}
    named = named or {}
    fields: dict[str, Any] = {}
    collected: dict[str, dict[str, Any]] = {"kafka": {}, "registry": {}, "channel_params": {}, "starting": {},
                                            "ending": {}, "rules": {}}
    secrets: dict[str, str] = {}
    given: set[str] = set()
    for key, value in opts.items():
        opt = _option(key, direction)
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
            fields[opt.field] = _value(opt, value, direction, named.get(opt.key))
    if direction in FUNCTIONS:
        _function_defaults(direction, fields)
        if (fields.get("channel") or fields.get("server")) and not fields.get("asyncapi"):
            raise ConfigError(f"{direction}: channel= and server= name a channel of the document given with "
                              "asyncapi=")
        if fields.get("asyncapi") and not fields.get("channel"):
            raise ConfigError(f"{direction}: asyncapi= needs channel=, the channel whose messages to decode")
    else:
        if fields.get("asyncapi") is None:
            raise ConfigError("option 'asyncapi' is required: a path to an AsyncAPI document or its text")
        if not any(fields.get(k) for k in ("channel", "operation", "message")):
            raise ConfigError("one of the options 'channel', 'operation' or 'message' is required")
    if fields.get("schema_id") is not None and fields.get("schema_subject"):
        raise ConfigError(f"{_both(('schema.id', 'schema.subject'), direction)} pin the schema twice; give one")
    chosen = [n for n, on in (("auto.register.schemas", fields.get("auto_register")),
                              ("use.latest.version", fields.get("use_latest_version")),
                              ("use.schema.id", fields.get("use_schema_id") is not None),
                              ("use.latest.with.metadata", direction in WRITES and
                               bool(fields.get("use_latest_with_metadata")))) if on]
    if len(chosen) > 1:
        raise ConfigError(f"{_both(chosen, direction)} each choose the schema to write with; give one")
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


def _value(opt: Option, value: str, scope: str | None, where: str | None) -> Any:
    """``value`` typed by the option's parser, then refused if ``scope`` refuses it."""
    try:
        parsed = opt.parse(opt, value)
    except ConfigError as e:
        if where is None:
            raise
        raise ConfigError(f"{where}: {e}") from e
    for refusing, refuses, why in opt.refused:
        if refusing == scope and refuses(parsed):
            raise ConfigError(f"{where or spelled(opt.key, scope) + ' ' + repr(value)}: {why}")
    return parsed


def _function_defaults(scope: str, fields: dict[str, Any]) -> None:
    """The defaults a column function declares where they differ from the table's (``wireFormat``)."""
    for o in OPTIONS:
        if o.field is not None and o.field not in fields and scope in o.scope and dict(o.defaults).get(scope):
            fields[o.field] = o.parse(o, scope_default(o, scope))


def spelled(key: str, scope: str | None) -> str:
    """How a caller names the option ``key`` in ``scope``, for messages: ``option 'glue.compression'``
    in a job; the keyword argument ``compression=`` (or ``options={'name': ...}``) in a column function.

    Examples
    --------
    >>> spelled("glue.compression", "write"), spelled("glue.compression", "to_registry")
    ("option 'glue.compression'", 'to_registry(compression=...)')
    """
    opt = _option(key)
    if scope in FUNCTIONS:
        return f"{scope}({opt.keyword}=...)" if opt.keyword else f"{scope}(options={{'{opt.name}': ...}})"
    return f"option '{opt.name}'"


def _both(keys, scope: str | None) -> str:
    """Options that conflict, as the caller named them."""
    if scope in FUNCTIONS:
        return f"{scope}: " + " and ".join(f"{_option(k).keyword}=" if _option(k).keyword else repr(k) for k in keys)
    return "options " + " and ".join(repr(k) for k in keys)


def parse_arguments(function: str, arguments: Mapping[str, Any], options: Mapping[Any, Any] | None = None
                    ) -> SourceOptions:
    """A column function's arguments typed by the option table, in the function's scope.

    Each keyword argument sets the option whose :attr:`~connector.options.Option.keyword` it is
    in ``function``'s scope (``wire_format`` → ``wireFormat``); ``options`` takes option names as
    the source does (``schema.registry.*``, ``rules.*`` ...). A keyword argument wins over the
    same option in ``options``. None is unset; booleans, numbers and dicts (a schema) are written
    as option text. Then :func:`parse_any` with ``direction=function``: the same parsers, scope
    checks and conflicts as a job's options, plus the function's defaults and refusals.

    Parameters
    ----------
    function : str
        ``from_registry``, ``to_registry`` or ``strip_header``.
    arguments : mapping of str to object
        The keyword arguments (a function passes its own parameters; names that are no option
        of its scope, like its columns, must not be among them).

    Raises
    ------
    ConfigError
        A bad value (naming the keyword), an option the function does not take, a conflict.

    Examples
    --------
    >>> opts = parse_arguments("to_registry", {"wire_format": "glue", "compression": "zlib", "mode": None})
    >>> opts.wire_format.value, opts.glue_compression, str(opts.mode)
    ('glue', 'zlib', 'FAILFAST')
    """
    if function not in FUNCTIONS:
        raise ValueError(f"no column function {function!r}: they are {sorted(FUNCTIONS)}")
    raw: dict[str, str] = {str(k).lower(): v for k, v in (options or {}).items()}
    named: dict[str, str] = {}
    for keyword, value in arguments.items():
        opt = keyword_option(function, keyword)
        if value is None:
            continue
        raw[opt.key] = _as_text(function, keyword, value)
        if opt.field not in COLLECTED and not opt.secret:  # a URL may hold credentials: never echoed
            named[opt.key] = f"{function}({keyword}={value!r})"
    return parse_any(raw, direction=function, named=named)


def _as_text(function: str, keyword: str, value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    if isinstance(value, dict):
        return json.dumps(value)
    raise ConfigError(f"{function}({keyword}=...) takes a string, number or boolean, got {type(value).__name__}")


def framing_of(opts: SourceOptions, plan: Any = None) -> Framing:
    """The framing of a job or a column function: ``wireFormat`` (``wire_format=``) when given, else
    the document's (the channel's server bindings), else the function's default.

    Examples
    --------
    >>> framing_of(parse_arguments("strip_header", {})).value
    'auto'
    """
    if plan is not None and ("wireformat" not in opts.given or opts.wire_format is None):
        return plan.framing()
    if opts.wire_format is None:
        raise ConfigError("no framing: set the option 'wireFormat' or give the document's channel")
    return opts.wire_format


def glue_compression(opts: SourceOptions, framing: Framing) -> str | None:
    """The Glue compression of a write (``glue.compression``), which applies to the glue framing
    only: the one check of it, for the sink and ``to_registry`` alike."""
    comp = opts.glue_compression
    if comp is not None and framing is not Framing.GLUE:
        raise ConfigError(f"{spelled('glue.compression', opts.direction)} applies to the glue framing only; this "
                          f"write's framing is {framing.value}")
    return comp


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
