"""``plan_read``: choose channel, operation, messages and server, and build a :class:`ReadPlan`."""
from __future__ import annotations

import difflib
import logging
import re

from registry import Vendor, split_userinfo, strip_userinfo

from connector.errors import AsyncApiDocumentError, ConfigError

from connector.asyncapi._model import KAFKA_PROTOCOLS, AsyncApiDocument
from connector.asyncapi._params import check_topic, expand_address
from connector.asyncapi._readplan import ReadPlan
from connector.asyncapi._refs import join_path
from connector.asyncapi._routing import derive_routing
from connector.asyncapi._schema import build_key_schema, message_spec, with_chain
from connector.asyncapi._security import kafka_security


log = logging.getLogger("asyncapi_kafka")
_WARNED: set[tuple[str, str]] = set()  # (document path, redacted value): warn once per process

_CREDENTIALS_HOW = ("credentials never come from the document: pass them as the options "
                    "'kafka.sasl.username' and 'kafka.sasl.password' (with the server's SASL security "
                    "scheme or 'kafka.security.protocol'/'kafka.sasl.mechanism')")
_REGISTRY_CREDENTIALS_HOW = ("credentials never come from the document: pass them as the options "
                             "'schema.registry.basic.auth.username' and 'schema.registry.basic.auth.password'")


def _without_credentials(value: str | None, path: str, how: str, ignored: list, servers: bool) -> str | None:
    """``value`` without ``user:password@``; a document's userinfo is ignored with one warning."""
    if not value:
        return value
    clean, had = strip_userinfo(value) if servers else split_userinfo(value)
    if had:
        ignored.append((path, "credentials in the address were ignored: " + how))
        if (path, clean) not in _WARNED:
            _WARNED.add((path, clean))
            log.warning("the AsyncAPI document's %s carries credentials (user:password@); they were "
                        "ignored and removed from the address: %s", path, how)
    return clean


def _config_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(_config_text(x) for x in v)
    return str(v)


def _suggest(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _listing(choices) -> str:
    return ", ".join(repr(c) for c in choices) or "none"


def _pick_channel(doc: AsyncApiDocument, channel: str | None, operation: str | None):
    op = None
    if operation is not None:
        op = doc.operations.get(operation) or next(
            (o for o in doc.operations.values() if o.operation_id == operation), None)
        if op is None:
            raise AsyncApiDocumentError(f"no operation {operation!r} in the document (operations: "
                                        f"{_listing(doc.operations)}){_suggest(operation, doc.operations)}",
                                        path="operations")
        if channel is not None and channel not in (op.channel, doc.channels[op.channel].address):
            raise ConfigError(f"operation {operation!r} uses channel {op.channel!r}, not {channel!r}")
        return doc.channels[op.channel], op
    if channel is None:
        if len(doc.channels) == 1:
            return next(iter(doc.channels.values())), None
        raise ConfigError(f"the document has {len(doc.channels)} channels; choose one with channel= "
                          f"(channels: {_listing(doc.channels)})")
    ch = doc.channels.get(channel)
    if ch is None:  # accept the address too: users often know the topic, not the key
        ch = next((c for c in doc.channels.values() if c.address == channel
                   or (c.kafka is not None and c.kafka.topic == channel)), None)
    if ch is None:
        raise AsyncApiDocumentError(f"no channel {channel!r} in the document (channels: "
                                    f"{_listing(doc.channels)}){_suggest(channel, doc.channels)}",
                                    path="channels")
    return ch, None


def _pick_server(doc: AsyncApiDocument, ch, server: str | None):
    def describe(names):
        return ", ".join(f"{n!r} ({doc.servers[n].protocol})" for n in names) or "none"

    if server is not None:
        srv = doc.servers.get(server)
        if srv is None:
            raise AsyncApiDocumentError(f"no server {server!r} in the document (servers: "
                                        f"{describe(doc.servers)}){_suggest(server, doc.servers)}",
                                        path="servers")
        if not srv.is_kafka:
            raise AsyncApiDocumentError(f"server {server!r} uses protocol {srv.protocol!r}: not a Kafka server "
                                        f"(expected {' or '.join(KAFKA_PROTOCOLS)})",
                                        path=join_path(srv.path, "protocol"))
        if ch.servers is not None and server not in ch.servers:
            raise ConfigError(f"channel {ch.name!r} is only available on servers {_listing(ch.servers)}, "
                              f"not {server!r}")
        return srv
    candidates = list(ch.servers) if ch.servers is not None else list(doc.servers)
    if not candidates:
        return None
    kafka = [n for n in candidates if doc.servers[n].is_kafka]
    if not kafka:
        raise AsyncApiDocumentError(f"channel {ch.name!r} has no Kafka server: {describe(candidates)} "
                                    f"(expected protocol {' or '.join(KAFKA_PROTOCOLS)})", path="servers")
    if len(kafka) > 1:
        raise ConfigError(f"several Kafka servers can serve channel {ch.name!r}; choose one with server= "
                          f"(servers: {describe(kafka)})")
    return doc.servers[kafka[0]]


def _pick_operation(doc: AsyncApiDocument, ch, op):
    """The operation whose Kafka binding gives the group/client ids.

    An explicitly named operation wins. Otherwise the first operation on the channel in
    which the described application *receives* (3.x ``action: receive``, 2.x ``publish``)
    is preferred, since its binding describes a consumer; failing that, the first *send*
    operation (whose binding may still carry a ``clientId``).
    """
    if op is not None:
        return op
    ops = [o for o in doc.operations.values() if o.channel == ch.name]
    return next((o for o in ops if o.action == "receive"), None) or (ops[0] if ops else None)


def _pick_messages(ch, op, message: str | None, explicit_op: bool):
    keys = list(ch.messages)
    if explicit_op and op is not None and op.messages is not None:
        keys = list(op.messages)
    if message is None:
        return [ch.messages[k] for k in keys]
    for k in keys:
        m = ch.messages[k]
        if message in (k, m.name, m.title):
            return [m]
    raise AsyncApiDocumentError(f"no message {message!r} on channel {ch.name!r} (messages: {_listing(keys)})"
                                f"{_suggest(message, keys)}", path=join_path(ch.path, "messages"))


def _agree(messages, attr: str, what: str):
    values = {getattr(m.kafka, attr) for m in messages if m.kafka is not None and getattr(m.kafka, attr)}
    if len(values) > 1:
        raise AsyncApiDocumentError(f"the channel's messages disagree on {what} ({', '.join(sorted(values))}); "
                                    "choose one with message=", path=messages[0].path)
    return values.pop() if values else None


def _topics(ch, address, addr_path: str, params: dict | None, topic: str | None):
    """``expand_address`` of the channel, with the ``topic`` option applied.

    ``topic`` names the topic of a channel whose address is unknown (``address: null``)
    or not a legal topic name (``user/signedup``). On a usable address it must be one of
    the address's topics (a templated address then fills its parameters from it, as
    ``channel.param.*`` would); it never silently reads another channel's topic.
    """
    if topic is None:
        if address is None:
            raise AsyncApiDocumentError(
                f"channel {ch.name!r} has no address: its topic is only known at run time; "
                "give it with the option topic=", path=join_path(ch.path, "address"))
        try:
            return expand_address(address, ch.parameters, params, addr_path)
        except AsyncApiDocumentError as e:
            if "not a valid Kafka topic name" not in str(e):
                raise
            raise AsyncApiDocumentError(f"{e}; give the topic to read with the option topic=",
                                        path=e.path) from e
    topic = topic.strip()
    try:
        check_topic(topic, "topic")
    except AsyncApiDocumentError as e:
        raise ConfigError(f"option topic: {e}") from None
    usable = None
    if address is not None:
        try:
            usable = expand_address(address, ch.parameters, params, addr_path)
        except AsyncApiDocumentError:
            usable = None  # not a legal topic name: the option replaces it
    if usable is None:
        if params:
            raise ConfigError(f"channel {ch.name!r} has no usable address, so channel.param.* options "
                              f"do not apply; the option topic={topic!r} names the topic")
        return (topic,), None, (), (), {}
    topics, pattern, names, groups, fixed = usable
    if pattern is None:
        if topic not in topics:
            raise ConfigError(f"option topic={topic!r} is not the address {address!r} of channel {ch.name!r} "
                              f"(topic {topics[0]!r}); leave the option out")
        return usable
    m = re.match(pattern, topic)
    if m is None:
        raise ConfigError(f"option topic={topic!r} does not match the address {address!r} of channel "
                          f"{ch.name!r}")
    values = dict(fixed)
    values.update({name: m.group(group) for group, name in groups})
    return (topic,), None, names, (), values


def plan_read(doc: AsyncApiDocument, *, channel: str | None = None, operation: str | None = None,
              message: str | None = None, server: str | None = None, params: dict | None = None,
              topic: str | None = None, require_schemas: bool = True) -> ReadPlan:
    """Plan reading one channel of a loaded document.

    Parameters
    ----------
    doc : AsyncApiDocument
        From :func:`load_document`.
    channel : str, optional
        Channel key (or its address / binding topic). Optional when the document has one
        channel or ``operation`` is given.
    operation : str, optional
        Operation name (3.x key or 2.x ``operationId``): picks the channel, the messages
        it lists and the Kafka operation binding (group/client id).
    message : str, optional
        Keep only this message (key, ``name`` or ``title``).
    server : str, optional
        Server name; optional when one Kafka server (after the channel's ``servers``
        restriction) remains.
    params : dict, optional
        Address parameter values; all given gives one concrete topic, otherwise a regex.
    topic : str, optional
        Topic to read for a channel whose address is unknown (``address: null``) or not a
        legal Kafka topic name; on a templated address it must match the template and
        gives the parameter values (as ``params`` would).
    require_schemas : bool, default True
        When False, a payload/headers/key schema that cannot be resolved (typically a
        remote ``$ref`` without ``allow_remote_refs``) is left out (``None``) and listed in
        ``ReadPlan.unresolved_schemas``, so a registry-backed channel can still be read
        with writer schemas from the registry.

    Returns
    -------
    ReadPlan

    Raises
    ------
    AsyncApiDocumentError
        Unknown channel/operation/message/server (with the names that exist), a server
        that is not Kafka, a registry-only message binding field without a registry,
        an unresolvable schema (e.g. a remote ``$ref`` without opt-in).
    ConfigError
        Ambiguous choices or parameter values that cannot match.

    Notes
    -----
    The Kafka message binding fields that need a registry (``schemaIdLocation``,
    ``schemaIdPayloadEncoding``, ``schemaLookupStrategy``) are refused when the chosen
    server has no ``schemaRegistryUrl``; a document without servers is not checked (the
    registry then comes from the reader options).

    Examples
    --------
    >>> import importlib.resources
    >>> from connector.asyncapi import load_document
    >>> doc = load_document(str(importlib.resources.files("connector") / "examples" / "shop.yaml"))
    >>> plan = plan_read(doc, channel="stock")
    >>> plan.topic_pattern, plan.param_names, plan.registry_vendor
    ('^shop\\\\.stock\\\\.(?P<warehouse>[A-Za-z0-9_-]+)$', ('warehouse',), <Vendor.AWS_GLUE: 'aws-glue'>)
    """
    if not isinstance(doc, AsyncApiDocument):
        raise TypeError("plan_read expects an AsyncApiDocument from load_document()")
    ch, explicit = _pick_channel(doc, channel, operation)
    srv = _pick_server(doc, ch, server)
    op = _pick_operation(doc, ch, explicit)
    address = ch.kafka.topic if ch.kafka is not None and ch.kafka.topic else ch.address
    addr_path = join_path(ch.path, "bindings.kafka.topic" if ch.kafka is not None and ch.kafka.topic
                          else "address")
    topics, pattern, names, groups, fixed = _topics(ch, address, addr_path, params, topic)
    if topic is not None and address is None:
        address = topic

    messages = _pick_messages(ch, explicit, message, explicit is not None)
    registry_url = srv.kafka.schema_registry_url if srv is not None and srv.kafka is not None else None
    vendor_raw = srv.kafka.schema_registry_vendor if srv is not None and srv.kafka is not None else None
    vendor = srv.kafka.vendor if srv is not None and srv.kafka is not None else None
    warnings: list[tuple[str, str]] = []
    if srv is not None and registry_url is None and vendor is not Vendor.AWS_GLUE:
        # The binding's MUST NOT protects readers from ids they cannot resolve; a registry
        # given through options resolves them, so this is a warning here and an error at
        # load() only when no registry is configured at all (see connector.read._setup).
        for m in messages:
            if m.kafka is None:
                continue
            for attr, field_name in (("schema_id_location", "schemaIdLocation"),
                                     ("schema_id_payload_encoding", "schemaIdPayloadEncoding"),
                                     ("schema_lookup_strategy", "schemaLookupStrategy")):
                if getattr(m.kafka, attr) is not None:
                    warnings.append((join_path(m.path, f"bindings.kafka.{field_name}"),
                                     f"{field_name} MUST NOT be specified when server {srv.name!r} has no "
                                     "schemaRegistryUrl; the registry must come from the options"))
    location = _agree(messages, "schema_id_location", "schemaIdLocation")
    encoding = _agree(messages, "schema_id_payload_encoding", "schemaIdPayloadEncoding")
    strategy = _agree(messages, "schema_lookup_strategy", "schemaLookupStrategy")
    tc = ch.kafka.topic_configuration if ch.kafka is not None else {}
    if strategy is None and isinstance(tc.get("confluent.value.subject.name.strategy"), str):
        strategy = tc["confluent.value.subject.name.strategy"]
    key_strategy = tc.get("confluent.key.subject.name.strategy")

    unresolved: list[tuple[str, str]] = []

    def lenient(build, *args):
        if require_schemas:
            return build(*args)
        try:
            return build(*args)
        except AsyncApiDocumentError as e:
            unresolved.append((e.path or "", str(e)))
            return None

    specs = tuple(message_spec(doc, m, lenient) for m in messages)
    routing = derive_routing(_routed_messages(doc, ch, explicit, messages, specs))
    key_schema = None
    for m in messages:
        if m.kafka is None or m.kafka.key is None:
            continue
        spec = with_chain(doc, m, lenient(build_key_schema, doc, m.kafka.key, m.source,
                                          join_path(m.path, "bindings.kafka.key")))
        if spec is None:
            continue
        if key_schema is not None and spec != key_schema:
            raise AsyncApiDocumentError("the channel's messages declare different key schemas; choose one with "
                                        "message=", path=join_path(m.path, "bindings.kafka.key"))
        key_schema = spec

    settings, secrets, ignored, scheme = ({}, (), (), None) if srv is None else kafka_security(srv)
    dropped: list[tuple[str, str]] = []
    bootstrap = None
    if srv is not None:
        where = join_path(srv.path, "url" if doc.major == 2 else "host")
        bootstrap = _without_credentials(srv.bootstrap_servers(), where, _CREDENTIALS_HOW, dropped, True)
        registry_url = _without_credentials(registry_url, join_path(srv.path, "bindings.kafka.schemaRegistryUrl"),
                                            _REGISTRY_CREDENTIALS_HOW, dropped, False)
    ignored = tuple(ignored) + tuple(dropped)
    kafka_op = op.kafka if op is not None else None
    return ReadPlan(
        channel=ch.name, topics=topics, topic_pattern=pattern, param_names=names,
        bootstrap_servers=bootstrap,
        kafka_config=tuple(sorted(settings.items())), registry_url=registry_url,
        registry_vendor=vendor, schema_id_location=location,
        schema_id_payload_encoding=encoding, schema_lookup_strategy=strategy, value_messages=specs,
        key_schema=key_schema, group_id=kafka_op.group_id if kafka_op else None,
        client_id=kafka_op.client_id if kafka_op else None,
        server=srv.name if srv is not None else None, server_protocol=srv.protocol if srv is not None else None,
        operation=op.name if op is not None else None, address=address, required_secrets=secrets,
        ignored_settings=ignored, security_scheme=scheme, param_groups=groups,
        param_values=tuple(sorted(fixed.items())), registry_vendor_raw=vendor_raw,
        key_schema_lookup_strategy=key_strategy if isinstance(key_strategy, str) else None,
        partitions=ch.kafka.partitions if ch.kafka is not None else None,
        replicas=ch.kafka.replicas if ch.kafka is not None else None,
        topic_configuration=tuple(sorted((k, _config_text(v)) for k, v in tc.items())),
        unresolved_schemas=tuple(unresolved), warnings=tuple(warnings), routing=routing,
        **_glue_settings(srv, registry_url, vendor),
    )


def _routed_messages(doc: AsyncApiDocument, ch, explicit, picked, specs) -> list:
    """(message, spec) of every message the channel (or the chosen operation) carries: the routing
    table covers them all, also when ``message=`` reads or writes one (its header value must be
    the one the table gives it). A message outside the read whose schemas cannot be resolved is
    routed by its names and headers only."""
    out = []
    by_key = {m.key: spec for m, spec in zip(picked, specs)}
    for m in _pick_messages(ch, explicit, None, explicit is not None):
        spec = by_key.get(m.key)
        if spec is None:
            spec = message_spec(doc, m, _tolerant)
        out.append((m, spec))
    return out


def _tolerant(build, *args):
    try:
        return build(*args)
    except AsyncApiDocumentError:
        return None


def _glue_settings(srv, registry_url: str | None, vendor: Vendor | None) -> dict:
    """Glue registry name and region the document gives (``x-registryName``, the URL)."""
    if vendor is not Vendor.AWS_GLUE:
        return {}
    import urllib.parse

    ext = srv.kafka.extensions if srv is not None and srv.kafka is not None else {}
    name = ext.get("x-registryName")
    region = ext.get("x-region")
    if registry_url:
        parts = urllib.parse.urlsplit(registry_url)
        query = urllib.parse.parse_qs(parts.query)
        name = name or next(iter(query.get("registryName") or ()), None)
        host = (parts.hostname or "").split(".")
        if not region and len(host) >= 4 and host[0] == "glue" and host[-2:] == ["amazonaws", "com"]:
            region = host[1]
    return {"registry_name": name if isinstance(name, str) and name else None,
            "registry_region": region if isinstance(region, str) and region else None}
