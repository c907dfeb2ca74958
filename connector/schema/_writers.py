"""The schema a write encodes with and the id it frames with, resolved once on the driver — for
the sink and ``to_registry`` alike.

Registration modes use confluent-kafka's serializer names:

=========================  =====================================================================
mode                       schema encoded with / id framed with
=========================  =====================================================================
``use.schema.id=N``        the registered schema N (Glue, GUID framings: a UUID; Apicurio
                           framings: a global or content id, as the framing carries) / N
``use.latest.version``     the subject's latest (``to_registry``: or given) version / its id
``use.latest.with.``       the subject's latest version whose metadata properties hold the given
``metadata``               ones / its id
``auto.register.schemas``  the given schema / the id the registry gives it when registered
                           under the subject (idempotent: an existing identical version is reused;
                           an incompatible one fails here, with the registry's 409)
(default)                  the given schema / the id of the subject's version the registry finds
                           equal to it (its look-up, with ``normalize.schemas``); not registered
                           is an error (production registries are usually managed by CI, as
                           confluent-kafka's ``auto.register.schemas=false``)
=========================  =====================================================================

The given schema is the inline one, else the channel's message payload (its key schema for
keys). The subject is the request's, else the strategy's (:mod:`connector.schema._subjects`).
The registered schema whose id frames the records brings its data-contract rules
(:attr:`WriterSchema.rules`, :mod:`connector.schema._contracts`).
"""
from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import TYPE_CHECKING, Any

from registry import SchemaNotFound, Vendor, client_for
from wireformat import Framing

from connector.errors import ConfigError
from connector.formats import Encoder, build_encoder, payload_format, schema_format
from connector.schema._contracts import log_disabled, write_rules
from connector.schema._readers import check_routable
from connector.schema._request import Registration, SchemaRequest
from connector.schema._subjects import strategy_for, subject_for

if TYPE_CHECKING:
    from registry import RegistryConfig

    from connector.asyncapi import ReadPlan

__all__ = ["WriterSchema", "value_writer", "key_writer", "document_value_schema", "message_writers"]

log = logging.getLogger("asyncapi_kafka")

@dataclasses.dataclass(frozen=True)
class WriterSchema:
    """What one side (value or key) of a write encodes with and frames with.

    Attributes
    ----------
    encoder : Encoder or None
        None: no schema, the bytes are written as given.
    framing : wireformat.Framing
    wire_id : int, str or None
        The id to frame with: an int, or UUID text for GUID framings and Glue; None for ``none``.
    message_indexes : tuple of int or None
        Protobuf: the Confluent message-index path, for the framings that carry one.
    subject, how : str
        Where the id came from (logs, errors).
    rules : connector.schema.rules.WriteRules or None
        The data-contract rules of the registered schema framed with (None: it has none, or rules
        are off).
    headers : tuple of (str, bytes)
        The type header every record of this message carries (``__TypeId__``, ``ce_type``... as the
        document names it: :meth:`connector.formats.Routing.header_for`); empty when it names none.
    message : str or None
        The channel message written (None: an inline schema).
    """

    encoder: Encoder | None
    framing: Framing
    wire_id: int | str | None = None
    message_indexes: tuple[int, ...] | None = None
    subject: str | None = None
    how: str = "document"
    rules: Any = None
    headers: tuple[tuple[str, bytes], ...] = ()
    message: str | None = None

    def describe(self) -> str:
        where = f" under subject {self.subject!r}" if self.subject else ""
        return f"schema id {self.wire_id}{where} ({self.how})"


def document_value_schema(plan: ReadPlan) -> Any:
    """The channel's message payload a write encodes (one message: choose with ``message``)."""
    spec = _document_message(plan)
    return spec.payload if spec is not None else None


def _document_message(plan: ReadPlan) -> Any:
    specs = [m for m in plan.value_messages if m.payload is not None]
    if len(specs) > 1:
        raise ConfigError(f"channel {plan.channel!r} carries {len(specs)} messages "
                          f"({', '.join(m.name for m in specs)}): choose the one to write with 'message', or "
                          "give 'value' as a struct with one field per message, as a read gives it (each row "
                          "sets the field of its message)")
    return specs[0] if specs else None


def value_writer(request: SchemaRequest, *, plan: ReadPlan | None, registry: RegistryConfig | None,
                 framing: Framing, topic: str | None) -> WriterSchema:
    """The value side of a write (``topic`` None: rows choose their topics): the inline schema, else
    the channel's one message, with the type header the document names for it."""
    if request.inline is not None or plan is None:
        return _writer(request, plan, registry, framing, request.inline, topic, is_key=False)
    spec = _document_message(plan)
    writer = _writer(request, plan, registry, framing, spec.payload if spec is not None else None, topic,
                     is_key=False)
    return _typed(writer, plan, spec.name) if spec is not None else writer


def message_writers(request: SchemaRequest, *, plan: ReadPlan, registry: RegistryConfig | None, framing: Framing,
                    topic: str | None) -> dict[str, WriterSchema]:
    """One writer per message of the channel that has a payload schema (a write whose rows each say
    their message: ``value`` is ``struct<message1, message2, ...>``, the shape a read gives), each with
    the type header the document names for it.

    Raises
    ------
    AsyncApiDocumentError
        Records of these messages could not be told apart on read: no schema id (framing ``none``),
        binary payloads and no header the document names per message.
    """
    from connector.formats import build_multi_decoder

    specs = [(m.name, m.payload) for m in plan.value_messages if m.payload is not None]
    if request.inline is not None or len(specs) < 2:
        raise ConfigError("a write of several messages needs a channel of several messages with payload schemas "
                          "(and no inline schema)")
    # the read's own check: a write must not produce records no read can tell apart
    check_routable(build_multi_decoder(dict(specs), options=request.decode_options(),
                                       messages={name: p.message_name for name, p in specs},
                                       routing=plan.routing), plan, framing)
    return {name: _typed(_writer(dataclasses.replace(request, message=p.message_name or request.message),
                                 plan, registry, framing, p, topic, is_key=False), plan, name)
            for name, p in specs}


def _typed(writer: WriterSchema, plan: ReadPlan, message: str) -> WriterSchema:
    typed = plan.routing.header_for(message) if plan.routing is not None else None
    headers = ((typed[0], typed[1].encode()),) if typed is not None else ()
    return dataclasses.replace(writer, headers=headers, message=message)


def key_writer(request: SchemaRequest, *, plan: ReadPlan, registry: RegistryConfig | None,
               framing: Framing, topic: str | None) -> WriterSchema:
    """The key side: the channel's key schema, framed like the value when a registry is there."""
    return _writer(dataclasses.replace(request, message=None, registration=_key_mode(request)), plan, registry,
                   framing if registry is not None else Framing.NONE, plan.key_schema, topic, is_key=True)


def _key_mode(request: SchemaRequest) -> Registration:
    # a pinned use.schema.id names the value's schema, never the key's
    return Registration.REGISTERED if request.registration is Registration.SCHEMA_ID else request.registration


def _writer(request: SchemaRequest, plan: ReadPlan | None, registry: RegistryConfig | None, framing: Framing,
            given: Any, topic: str | None, *, is_key: bool) -> WriterSchema:
    schema, wire_id, subject, how, target = _resolve(request, plan, registry, framing, given, topic, is_key)
    if schema is None:
        return WriterSchema(None, framing)
    encoder = build_encoder(schema, fmt=request.fmt, message=request.message, options=request.encode_options())
    indexes = encoder.message_indexes if framing.carries_protobuf_indexes else None
    log_disabled(request.contract, "this write")
    rules = write_rules(request.contract, registry=registry, framing=framing, fmt=encoder.fmt, target=target,
                        subject=subject if topic is not None or request.subject else None,
                        strategy=strategy_for(request, plan, is_key), message=encoder.message, is_key=is_key)
    return WriterSchema(encoder, framing, wire_id, tuple(indexes) if indexes is not None else None, subject, how,
                        rules)


def _resolve(request: SchemaRequest, plan: ReadPlan | None, registry: RegistryConfig | None, framing: Framing,
             given: Any, topic: str | None, is_key: bool) -> tuple[Any, int | str | None, str | None, str, Any]:
    """(schema to encode with, wire id, subject, how, the registered schema framed with): see the
    module table."""
    mode = request.registration
    if framing is Framing.AUTO:
        raise ConfigError("wireFormat 'auto' is for reading; a write needs one framing (the document's "
                          "bindings or the 'wireFormat' option)")
    if framing is Framing.NONE:
        if mode is not Registration.REGISTERED:
            raise ConfigError(f"framing 'none' carries no schema id, so '{mode}' does not apply (set a "
                              "registry framing)")
        return given, None, None, "document", None
    if registry is None:
        raise ConfigError(f"framing {framing!r} needs a schema registry: set 'schema.registry.url' or the "
                          "server binding's schemaRegistryUrl (or wireFormat=none)")
    client = client_for(registry)
    what = "key" if is_key else "value"

    if mode is Registration.SCHEMA_ID:
        assert request.use_schema_id is not None
        pinned, pinned_id = _pinned(client, framing, request.use_schema_id)
        return pinned, pinned_id, None, "use.schema.id", pinned
    if framing.id_kind == "global":
        raise ConfigError(f"framing {framing!r} frames Apicurio global ids, which the Confluent-compatible API "
                          "this sink registers and looks up through does not return: set 'use.schema.id' to "
                          "the artifact version's global id (or use apicurio-new / header-apicurio-content)")
    if given is None and mode not in (Registration.LATEST, Registration.LATEST_WITH_METADATA):
        raise ConfigError(f"no {what} schema to write with: the channel's message has none in the document; set "
                          "'use.latest.version=true' or 'use.schema.id' to write with a registered schema")
    subject = request.subject or subject_for(request, plan, given, topic, is_key=is_key, vendor=registry.vendor)
    if topic is None and not request.subject and subject.endswith(("-key", "-value")) \
            and not request.subject_strategy:
        raise ConfigError("rows of this write choose their topics, so TopicNameStrategy gives no single "
                          "subject: name it (subject=), or set 'topic', 'channel.param.*', 'use.schema.id', "
                          "or a record 'schema.subject.strategy'")

    if mode is Registration.LATEST:
        schema = client.get_latest(subject) if request.version is None else client.get_version(subject,
                                                                                            request.version)
        return schema, _wire_id(schema, framing), subject, "use.latest.version", schema
    if mode is Registration.LATEST_WITH_METADATA:
        schema = client.get_latest_with_metadata(subject, request.use_latest_with_metadata)
        return schema, _wire_id(schema, framing), subject, "use.latest.with.metadata", schema

    if mode is Registration.AUTO_REGISTER:
        sid = client.register_schema(subject, given, normalize=request.normalize)
        wire: int | str | None = sid
        if registry.vendor is Vendor.AWS_GLUE:  # Glue answers the schema version id (a UUID) itself
            if framing is not Framing.GLUE:
                raise ConfigError(f"an AWS Glue registry names schemas by version UUID; framing {framing!r} "
                                  "cannot carry it (use the glue framing)")
        elif framing.has_guid:
            wire = client.get_schema_by_id(int(sid)).guid
        log.info("registered the %s schema under %s: id %s", what, subject, sid)
        target = client.get_schema_by_id(int(sid)) if registry.vendor is Vendor.CONFLUENT else None
        return given, wire, subject, "auto.register.schemas", target

    # Default: the given schema must already be registered under the subject. The registry says
    # whether it is (it may store it reprinted: Karapace reorders Protobuf, registries canonicalize
    # Avro); the format's canonical form only serves registries with no look-up (file snapshots).
    fmt = payload_format(schema_format(given, request.fmt))
    found = client.lookup_schema(subject, given, normalize=request.normalize,
                                 same=lambda stored, text: fmt.canonical(stored) == fmt.canonical(text))
    if found is None:
        try:
            versions = client.list_versions(subject)
        except SchemaNotFound as e:
            raise ConfigError(f"subject {subject!r} does not exist in the registry: register the {what} schema, "
                              "or set 'auto.register.schemas=true'") from e
        raise ConfigError(f"the {what} schema is not registered under subject {subject!r} (the registry finds "
                          f"none of its versions {versions[-5:]} equal to it): register it, set "
                          "'auto.register.schemas=true', or write with 'use.latest.version=true'")
    registered = client.get_version(subject, found.version) if found.version is not None else found
    return given, _wire_id(registered, framing), subject, f"registered version {found.version}", registered


def _pinned(client: Any, framing: Framing, ident: str) -> tuple[Any, int | str]:
    """``use.schema.id``: the registered schema the framing's kind of id names, and that id."""
    if "-" in ident:  # a UUID: Glue and the GUID framings
        if not framing.has_guid:
            raise ConfigError(f"'use.schema.id' {ident} is a UUID but framing {framing!r} frames integer ids")
        schema = client.lookup((framing, uuid.UUID(ident).bytes))
        return schema, schema.guid or ident
    if framing.has_guid:
        schema = client.get_schema_by_id(int(ident))
        return schema, _wire_id(schema, framing)
    return client.lookup((framing, int(ident))), int(ident)


def _wire_id(schema: Any, framing: Framing) -> int | str:
    if framing.has_guid:
        if schema.guid is None:
            raise ConfigError(f"framing {framing!r} frames with the schema's GUID, and the registry gave none "
                              f"for {schema!r}")
        return str(schema.guid)
    if schema.id is None:
        raise ConfigError(f"the registry gave no schema id for {schema!r}")
    return int(schema.id)
