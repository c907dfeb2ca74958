"""The reader schema of a read, and the decoders built from it — for the source, ``from_registry``,
``peek`` and the CLI alike.

================================  =============================================================
reader schema (first that applies) when
================================  =============================================================
the inline schema                  ``from_registry(schema=...)``
the subject's latest version with  ``use.latest.with.metadata`` (subject: ``schema.subject`` or the
these metadata properties          strategy's subject of the topic)
a registry schema by id            ``schema.id`` / ``schema_id=``
a registry subject's version       ``schema.subject`` (+ ``schema.version``) / ``subject=``
the document's payload schemas     the channel's messages (several: one struct field each)
the subject's latest version       a registry framing, one topic, the subject strategy's subject
(none: the value stays binary)
================================  =============================================================

Protobuf message (a ``.proto`` may declare several): ``schema.message`` / ``message=``, else the
one the document names, else the only top-level message, else the one every sampled record's
message-index path names; otherwise ``load()`` fails and lists the names.

Data contracts (:mod:`connector.schema._contracts`): :func:`value_reading` also gives the rules
the read applies — a registry reader's own (as confluent-kafka's deserializer with
``use.latest.version`` / ``use.latest.with.metadata`` / ``use.schema.id``), else each writer's.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from wireformat import Framing, parse_frames

from connector.errors import ConfigError, SchemaMappingError
from connector.formats import (
    Decoder,
    KeptMessageDecoder,
    MultiDecoder,
    build_decoder,
    build_multi_decoder,
    payload_format,
    refs_of,
    schema_format,
)
from connector.schema._contracts import log_disabled, read_rules
from connector.schema._request import SchemaRequest
from connector.schema._subjects import strategy_for, subject_for

if TYPE_CHECKING:
    from registry import RegistryConfig

    from connector.asyncapi import ReadPlan

__all__ = ["reader_schemas", "value_decoder", "value_reading", "ValueReading", "key_reading", "KeyReading",
           "is_string_schema", "Sample", "decoder_for", "check_routable"]

log = logging.getLogger("asyncapi_kafka")

#: Batches of ``(values, headers or None)`` of recent records, read when a choice needs data.
Sample = Callable[[], Iterable[tuple[pa.Array, "pa.Array | None"]]]


def reader_schemas(request: SchemaRequest, *, plan: ReadPlan | None, registry: RegistryConfig | None,
                   framing: Framing) -> dict[str | None, Any]:
    """The reader schema(s), by output field name (``None``: one reader, no field). See the module
    table; an empty dict means no schema at all (the value stays binary)."""
    if request.inline is not None:
        return {None: request.inline}
    if request.use_latest_with_metadata:
        if registry is None:
            raise ConfigError("'use.latest.with.metadata' chooses the reader from a schema registry: set "
                              "'schema.registry.url'")
        from registry import client_for

        return {None: client_for(registry).get_latest_with_metadata(_reader_subject(request, plan),
                                                                    request.use_latest_with_metadata)}
    if request.pinned:
        if registry is None:
            raise ConfigError("a reader schema pinned by id or subject ('schema.id'/'schema.subject', "
                              "schema_id=/subject=) needs a schema registry ('schema.registry.url' or the "
                              "document's schemaRegistryUrl)")
        from registry import client_for

        client = client_for(registry)
        if request.schema_id is not None:
            return {None: client.get_schema_by_id(request.schema_id)}
        assert request.subject is not None
        return {None: client.get_latest(request.subject) if request.version is None
                else client.get_version(request.subject, request.version)}
    if plan is None:
        raise ConfigError("no reader schema: pass schema=, schema_id= or subject=")
    documented: dict[str | None, Any] = {m.name: m.payload for m in plan.value_messages if m.payload is not None}
    if documented:
        return documented
    if registry is not None and framing is not Framing.NONE:
        if not plan.topics or len(plan.topics) != 1:
            raise ConfigError(
                f"channel '{plan.channel}' has no payload schema in the document and reads a topic "
                "pattern, so no single registry subject applies: pin one with 'schema.subject'")
        from registry import client_for

        return {None: client_for(registry).get_latest(subject_for(request, plan, None, plan.topics[0]))}
    return {}


def _reader_subject(request: SchemaRequest, plan: ReadPlan | None) -> str:
    """The subject a registry reader comes from: the pinned one, else the strategy's of the topic."""
    if request.subject:
        return request.subject
    if plan is None or not plan.topics or len(plan.topics) != 1:
        raise ConfigError("'use.latest.with.metadata' needs one subject: pin it with 'schema.subject' "
                          "(subject=), or read a channel of one topic")
    return subject_for(request, plan, None, plan.topics[0])


@dataclasses.dataclass(frozen=True)
class ValueReading:
    """How a read turns record values into the ``value`` column: the decoder and the rules."""

    decoder: Decoder | MultiDecoder | None
    rules: Any = None   # connector.schema.rules.ReadRules


def _reader_conf(request: SchemaRequest, readers: dict, plan: ReadPlan | None) -> dict[str, Any] | None:
    """The reader choice as confluent-kafka deserializer settings; None when it is not a registry schema."""
    if request.inline is not None or len(readers) != 1:
        return None
    (reader,) = readers.values()
    if request.use_latest_with_metadata:
        return {"use.latest.with.metadata": request.use_latest_with_metadata}
    if request.pinned:
        if request.subject and request.version is None:
            return {"use.latest.version": True}
        return {"use.schema.id": reader.id} if getattr(reader, "id", None) is not None else None
    if plan is not None and any(m.payload is not None for m in plan.value_messages):
        return None
    return {"use.latest.version": True}


def value_reading(request: SchemaRequest, *, plan: ReadPlan | None, registry: RegistryConfig | None,
                  framing: Framing, sample: Sample | None = None, topic: str | None = None) -> ValueReading:
    """The value decoder of a read (None: no schema, the value stays binary) and its data-contract
    rules (None: none can apply). ``topic``: the one topic every record comes from, when known."""
    readers = reader_schemas(request, plan=plan, registry=registry, framing=framing)
    options = request.decode_options()
    decoder: Decoder | MultiDecoder | None
    if len(readers) > 1:
        # each documented message reads its own Protobuf message; schema.message fills in where
        # the document names none
        decoder = build_multi_decoder({str(k): v for k, v in readers.items()}, options=options,
                                      messages={str(k): _message(v, request, framing, sample, several=True)
                                                for k, v in readers.items()},
                                      routing=plan.routing if plan is not None else None)
        check_routable(decoder, plan, framing)
    elif readers:
        ((name, reader),) = readers.items()
        decoder = build_decoder(reader, options=options, fmt=request.fmt,
                                message=_message(reader, request, framing, sample))
        routing = plan.routing if plan is not None else None
        if framing is Framing.NONE and routing is not None and routing.documented and name in routing.messages \
                and len(routing.messages) > 1:
            # one message of several (option 'message'): records another one's type header names are not it
            decoder = KeptMessageDecoder.of(decoder, str(name), routing)
    else:
        if plan is not None:
            log.warning("channel %s: no schema in the document or the registry; 'value' stays binary", plan.channel)
        return ValueReading(None)
    log_disabled(request.contract, "this read")
    conf = _reader_conf(request, readers, plan)
    (reader,) = readers.values() if len(readers) == 1 else (None,)
    topic = topic or (plan.topics[0] if plan is not None and plan.topics and len(plan.topics) == 1 else None)
    subject = request.subject or (subject_for(request, plan, reader, topic) if topic and
                                  _strategy_is_topical(request, plan) else None)
    rules = read_rules(request.contract, registry=registry, framing=framing, fmt=decoder.fmt, reader=reader,
                       reader_conf=conf, subject=subject, strategy=strategy_for(request, plan),
                       message=getattr(decoder, "message", None))
    return ValueReading(decoder, rules)


def check_routable(decoder: MultiDecoder, plan: ReadPlan | None, framing: Framing) -> None:
    """Records of several types with no schema id (framing ``none``) are told apart by a type
    header, else by trying each schema; a binary payload cannot be tried, so such a channel
    must name a header whose values tell every message apart (refused here, at ``load()``)."""
    if framing is not Framing.NONE or plan is None:
        return
    routing = decoder.routing
    if decoder.can_try:
        how = (f"by the header {', '.join(h.name for h in routing.documented)} (else by validation)"
               if routing is not None and routing.documented else "by validation against each message's schema")
        log.info("channel %s: records carry no schema id; each is routed to its message %s", plan.channel, how)
        return
    lost = routing.unidentified() if routing is not None else list(decoder.decoders)
    lost = [m for m in lost if m in decoder.decoders]
    if lost:
        from connector.errors import AsyncApiDocumentError

        path = routing.path_of(lost[0]) if routing is not None else ""
        raise AsyncApiDocumentError(
            f"channel {plan.channel!r} carries {len(decoder.decoders)} {decoder.fmt} messages and its records carry no "
            f"schema id (framing none), so each record's type must come from a Kafka header, and no header the "
            f"document names tells {lost} apart: a {decoder.fmt} payload cannot be told apart by trying the schemas. "
            "Fix the document: give each message's headers schema a type header with its own value (e.g. "
            "__TypeId__ or ce_type with const), or use a registry framing (wireFormat), or read or write one "
            "message with the option 'message'", path=f"{path}.headers" if path else f"channels.{plan.channel}")


def _strategy_is_topical(request: SchemaRequest, plan: ReadPlan | None) -> bool:
    return strategy_for(request, plan) in ("TopicNameStrategy", "SimpleTopicNameStrategy")


def value_decoder(request: SchemaRequest, *, plan: ReadPlan | None, registry: RegistryConfig | None,
                  framing: Framing, sample: Sample | None = None) -> Decoder | MultiDecoder | None:
    """The value decoder of a read (None: no schema, the value stays binary)."""
    return value_reading(request, plan=plan, registry=registry, framing=framing, sample=sample).decoder


def decoder_for(schema: Any, request: SchemaRequest = SchemaRequest()) -> Decoder:
    """The decoder of one schema as the request would build it (the CLI's Spark types)."""
    return build_decoder(schema, options=request.decode_options(), fmt=request.fmt,
                         message=_message(schema, request, Framing.NONE, None))


@dataclasses.dataclass(frozen=True)
class KeyReading:
    """How a read turns record keys into the ``key`` column."""

    decoder: Decoder | None = None   # the document's key schema
    as_string: bool = False          # a plain-string key schema: UTF-8 text, not decoded
    rules: Any = None                # connector.schema.rules.ReadRules of keys (writers' own rules)


def key_reading(request: SchemaRequest, *, plan: ReadPlan, enabled: bool = True,
                registry: RegistryConfig | None = None, framing: Framing = Framing.NONE) -> KeyReading:
    """The key of a read: decoded with the channel's key schema (``key.decode``), text for a
    plain-string key schema, else bytes. ``schema.message`` names the value's message only.
    Framed keys apply their writers' data-contract rules."""
    spec = plan.key_schema
    if not enabled or spec is None:
        return KeyReading()
    if is_string_schema(spec):
        return KeyReading(as_string=True)
    decoder = build_decoder(spec, options=request.decode_options())
    topic = plan.topics[0] if plan.topics and len(plan.topics) == 1 else None
    subject = subject_for(request, plan, spec, topic, is_key=True) if topic and \
        strategy_for(request, plan, True) in ("TopicNameStrategy", "SimpleTopicNameStrategy") else None
    rules = read_rules(request.contract, registry=registry, framing=framing, fmt=decoder.fmt, reader=None,
                       reader_conf=None, subject=subject, strategy=strategy_for(request, plan, True), message=None,
                       is_key=True)
    return KeyReading(decoder, rules=rules)


def is_string_schema(spec: Any) -> bool:
    """A key schema that is a plain string (read and written as UTF-8 text, not encoded)."""
    text = (getattr(spec, "text", "") or "").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    if parsed == "string" or parsed == {"type": "string"}:
        return True
    return isinstance(parsed, dict) and parsed.get("type") == "string" and "format" not in parsed


# -- the Protobuf message ------------------------------------------------------------------------
def _message(schema: Any, request: SchemaRequest, framing: Framing, sample: Sample | None,
             several: bool = False) -> str | None:
    """The Protobuf message to read (see the module docstring); None for other formats or when
    the schema's only message is meant."""
    if schema is None or not payload_format(schema_format(schema, request.fmt)).indexed_messages:
        return None
    documented = getattr(schema, "message_name", None)
    if several and documented:
        return documented
    if request.message or documented:
        return request.message or documented
    from connector.formats.protobuf import compile_proto

    compiled = compile_proto(schema.text, refs_of(schema))
    names = compiled.message_names()
    if len(names) <= 1:
        return None
    if sample is not None and framing.carries_protobuf_indexes and not several:
        paths = _sampled_paths(sample, framing)
        if len(paths) == 1:
            (path,) = paths
            chosen = compiled.full_name_for_indexes(path)
            log.info("Protobuf schema declares %s; every sampled record carries message index %s, so %s is "
                     "read (set 'schema.message' to choose another)", ", ".join(names), list(path), chosen)
            return chosen
        seen = (f"; the sampled records carry the index paths {sorted(list(p) for p in paths)}" if paths
                else "; no record was found to infer it from")
    else:
        seen = "" if framing.carries_protobuf_indexes else f" (the {framing} framing carries no message index)"
    raise SchemaMappingError(f"Protobuf schema declares several messages ({', '.join(names)}){seen}: choose the "
                             "one to read with the option 'schema.message' (source) or message= "
                             f"(from_registry), e.g. {names[0]!r}")


def _sampled_paths(sample: Sample, framing: Framing) -> set[tuple[int, ...]]:
    """The distinct message-index paths of the sampled records (Confluent's ``[0]`` shorthand
    reads as ``(0,)``)."""
    paths: set[tuple[int, ...]] = set()
    for values, headers in sample():
        parsed = parse_frames(values, framing, headers=headers, protobuf_indexes=True)
        ok = parsed.ok_mask()
        if parsed.message_indexes is None or not ok.any():
            continue
        for path in parsed.message_indexes.filter(pa.array(ok)).to_pylist():
            paths.add(tuple(path) if path else (0,))
            if len(paths) > 1:
                return paths
    return paths
