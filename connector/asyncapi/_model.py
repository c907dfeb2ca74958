"""The document model shared by AsyncAPI 2.x and 3.x.

2.x and 3.x are normalised into one shape: servers, channels (with their address,
parameters and messages), operations (``action`` ``receive``/``send`` and the channel
they use). In 2.x the channel key is the address, and the operations sit on the channel:
``publish`` means *other applications publish to this channel*, i.e. the described
application **receives** (3.x ``action: receive``); ``subscribe`` means it **sends**.

Structural parts are resolved and validated when the document is loaded; payload and
header schemas stay raw (with their ``$ref``\\s) until a plan needs them, so a remote
schema only matters to the channels that use it.
"""
from __future__ import annotations

import re
from typing import Literal, overload

from connector.errors import AsyncApiDocumentError

from connector.asyncapi._bindings import (
    KafkaOperationBinding,
    check_empty_pulsar,
    parse_kafka_channel,
    parse_kafka_message,
    parse_kafka_operation,
    parse_kafka_server,
    parse_pulsar_channel,
    parse_pulsar_server,
)
from connector.asyncapi._refs import RefResolver, Source, is_ref, join_path
from connector.asyncapi._types import (
    KAFKA_PROTOCOLS,
    Channel,
    Message,
    Operation,
    Parameter,
    SecurityScheme,
    Server,
    rekey,
    with_locations,
)

__all__ = ["AsyncApiDocument", "KAFKA_PROTOCOLS", "Channel", "Message", "Operation", "Parameter",
           "SecurityScheme", "Server"]


class AsyncApiDocument:
    """A loaded, validated AsyncAPI 2.x/3.x document (see :func:`load_document`).

    Attributes
    ----------
    version : str
        The ``asyncapi`` field, e.g. ``"2.6.0"``.
    title : str or None
    servers, channels, operations : dict
        By name, in document order.
    source : str or None
        The file path the document came from.
    """

    def __init__(self, raw: dict, resolver: RefResolver, source: str | None):
        self.raw = raw
        self.resolver = resolver
        self.source = source
        version = raw.get("asyncapi")
        if not isinstance(version, str) or not re.match(r"^[23]\.\d+", version):
            raise AsyncApiDocumentError(f"unsupported or missing asyncapi version {version!r} "
                                        "(2.x and 3.x are supported)", path="asyncapi")
        self.version = version
        self.major = int(version[0])
        info = raw.get("info")
        if not isinstance(info, dict):
            info = {}
        self.title = info.get("title") if isinstance(info.get("title"), str) else None
        dct = raw.get("defaultContentType")
        self.default_content_type = dct if isinstance(dct, str) else None
        self.servers: dict[str, Server] = {}
        self.channels: dict[str, Channel] = {}
        self.operations: dict[str, Operation] = {}
        self._server_locs: dict[tuple, str] = {}
        self._channel_locs: dict[tuple, str] = {}
        self._build()

    def __repr__(self) -> str:
        return (f"AsyncApiDocument(version={self.version!r}, title={self.title!r}, "
                f"servers={list(self.servers)}, channels={list(self.channels)})")

    # -- helpers ------------------------------------------------------------------------------
    def _follow(self, node, path: str, src: Source | None = None):
        return self.resolver.follow(node, src or self.resolver.main, path)

    def _get(self, node, path: str, src: Source | None = None):
        return self._follow(node, path, src)[0]

    def _obj(self, node, path: str, what: str, src: Source | None = None, optional: bool = False) -> dict:
        if node is None and optional:
            return {}
        node = self._get(node, path, src)
        if node is None and optional:
            return {}
        if not isinstance(node, dict):
            raise AsyncApiDocumentError(f"{what} must be an object", path=path)
        return node

    @overload
    def _str(self, obj: dict, key: str, path: str, required: Literal[True]) -> str: ...

    @overload
    def _str(self, obj: dict, key: str, path: str, required: bool = False) -> str | None: ...

    def _str(self, obj: dict, key: str, path: str, required: bool = False) -> str | None:
        v = obj.get(key)
        if v is None:
            if required:
                raise AsyncApiDocumentError(f"{key} is required", path=join_path(path, key))
            return None
        if not isinstance(v, str):
            raise AsyncApiDocumentError(f"{key} must be a string", path=join_path(path, key))
        return v

    def _merge(self, target, patch, path: str):
        """JSON Merge Patch (RFC 7386), following ``$ref`` where two objects meet."""
        if not isinstance(patch, dict):
            return patch
        if is_ref(patch):
            patch = self._get(patch, path)
            if not isinstance(patch, dict):
                return patch
        if is_ref(target):
            target = self._get(target, path)
        out = dict(target) if isinstance(target, dict) else {}
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            elif isinstance(v, dict) and isinstance(out.get(k), dict):
                out[k] = self._merge(out[k], v, join_path(path, k))
            else:
                out[k] = v
        return out

    def _apply_traits(self, obj: dict, path: str, src: Source) -> dict:
        traits = obj.get("traits")
        if traits is None:
            return obj
        if not isinstance(traits, list):
            raise AsyncApiDocumentError("traits must be an array", path=join_path(path, "traits"))
        merged: dict = {}
        for i, trait in enumerate(traits):
            tpath = join_path(join_path(path, "traits"), i)
            t = self._get(trait, tpath, src)
            if isinstance(t, list) and t:  # 2.0 allowed [trait, options]
                t = self._get(t[0], tpath, src)
            if not isinstance(t, dict):
                raise AsyncApiDocumentError("a trait must be an object", path=tpath)
            merged = self._merge(merged, t, tpath)
        own = {k: v for k, v in obj.items() if k != "traits"}
        return self._merge(merged, own, path)  # the object's own fields win

    def _bindings(self, obj: dict, path: str, src: Source | None = None) -> tuple[dict, str]:
        bpath = join_path(path, "bindings")
        return self._obj(obj.get("bindings"), bpath, "bindings", src, optional=True), bpath

    # -- building -------------------------------------------------------------------------------
    def _build(self) -> None:
        servers = self._obj(self.raw.get("servers"), "servers", "servers", optional=True)
        for name, node in servers.items():
            self._server(name, node)
        channels = self._obj(self.raw.get("channels"), "channels", "channels", optional=True)
        for name, node in channels.items():
            if self.major == 2:
                self._channel2(name, node)
            else:
                self._channel3(name, node)
        if self.major == 3:
            ops = self._obj(self.raw.get("operations"), "operations", "operations", optional=True)
            for name, node in ops.items():
                self._operation3(name, node)

    def _security_scheme(self, node, name: str, path: str) -> SecurityScheme:
        obj = self._obj(node, path, "security scheme")
        stype = self._str(obj, "type", path, required=True)
        flows = obj.get("flows")
        if not isinstance(flows, dict):
            flows = {}
        return SecurityScheme(name, stype, obj.get("description") if isinstance(obj.get("description"), str)
                              else None, flows, self._str(obj, "openIdConnectUrl", path),
                              {k: v for k, v in obj.items() if k.startswith("x-")}, path)

    def _server(self, name: str, node) -> None:
        path = join_path("servers", name)
        obj, _, chain = self._follow(node, path)
        if not isinstance(obj, dict):
            raise AsyncApiDocumentError("server must be an object", path=path)
        protocol = self._str(obj, "protocol", path, required=True).lower()
        if self.major == 2:
            host, pathname = self._str(obj, "url", path, required=True), None
        else:
            host, pathname = self._str(obj, "host", path, required=True), self._str(obj, "pathname", path)
        variables = {}
        vars_node = self._obj(obj.get("variables"), join_path(path, "variables"), "variables", optional=True)
        for vname, vnode in vars_node.items():
            vpath = join_path(join_path(path, "variables"), vname)
            v = self._obj(vnode, vpath, "server variable")
            default = v.get("default")
            if default is None and isinstance(v.get("enum"), list) and v["enum"]:
                default = v["enum"][0]
            variables[vname] = None if default is None else str(default)
        security = self._security(obj.get("security"), join_path(path, "security"))
        kafka, pulsar = self._kafka_pulsar(obj, path, parse_kafka_server, parse_pulsar_server)
        self.servers[name] = Server(name, protocol, host, pathname, variables, security, kafka, pulsar,
                                    {k: v for k, v in obj.items() if k.startswith("x-")},
                                    obj.get("description") if isinstance(obj.get("description"), str) else None,
                                    path)
        self._server_locs[("", ("servers", name))] = name
        for loc in chain:
            self._server_locs[loc] = name

    def _security(self, node, path: str) -> tuple:
        if node is None:
            return ()
        if not isinstance(node, list):
            raise AsyncApiDocumentError("security must be an array", path=path)
        schemes_node = self._obj((self.raw.get("components") or {}).get("securitySchemes")
                                 if isinstance(self.raw.get("components"), dict) else None,
                                 "components.securitySchemes", "securitySchemes", optional=True)
        alternatives = []
        for i, item in enumerate(node):
            ipath = join_path(path, i)
            if self.major == 2 or (isinstance(item, dict) and not is_ref(item) and "type" not in item):
                if not isinstance(item, dict):
                    raise AsyncApiDocumentError("security requirement must be an object", path=ipath)
                group = []
                for sname in item:
                    if sname not in schemes_node:
                        raise AsyncApiDocumentError(
                            f"security scheme {sname!r} is not defined in components.securitySchemes", path=ipath)
                    group.append(self._security_scheme(schemes_node[sname], sname,
                                                       join_path("components.securitySchemes", sname)))
                alternatives.append(tuple(group))
            else:
                _, _, chain = self._follow(item, ipath)
                sname = chain[-1][1][-1] if chain and chain[-1][1] else f"security[{i}]"
                alternatives.append((self._security_scheme(item, sname, ipath),))
        return tuple(alternatives)

    def _parameters(self, ch: dict, path: str) -> dict:
        ppath = join_path(path, "parameters")
        params = self._obj(ch.get("parameters"), ppath, "parameters", optional=True)
        out = {}
        for pname, pnode in params.items():
            p_path = join_path(ppath, pname)
            p = self._obj(pnode, p_path, "parameter")
            schema = self._obj(p.get("schema"), join_path(p_path, "schema"), "parameter schema", optional=True)
            enum = p.get("enum", schema.get("enum"))
            if enum is not None:
                if not isinstance(enum, list) or not enum or any(isinstance(e, (dict, list)) for e in enum):
                    raise AsyncApiDocumentError("enum must be a non-empty array of values", path=p_path)
                enum = tuple("true" if e is True else "false" if e is False else str(e) for e in enum)
            pattern = schema.get("pattern")
            if pattern is not None and not isinstance(pattern, str):
                raise AsyncApiDocumentError("pattern must be a string", path=join_path(p_path, "schema"))
            default = p.get("default", schema.get("default"))
            desc = p.get("description")
            out[pname] = Parameter(pname, enum, pattern, None if default is None else str(default),
                                   desc if isinstance(desc, str) else None, p_path)
        return out

    def _channel_bindings(self, ch: dict, path: str):
        return self._kafka_pulsar(ch, path, parse_kafka_channel, parse_pulsar_channel)

    def _kafka_pulsar(self, obj: dict, path: str, parse_kafka, parse_pulsar):
        """The Kafka and Pulsar bindings of a server or channel, parsed (None where absent)."""
        bindings, bpath = self._bindings(obj, path)
        out: list = []
        for proto, parse in (("kafka", parse_kafka), ("pulsar", parse_pulsar)):
            if bindings.get(proto) is None:
                out.append(None)
                continue
            ppath = join_path(bpath, proto)
            out.append(parse(self._get(bindings[proto], ppath), ppath))
        return tuple(out)

    def _message(self, node, path: str, key: str | None, src: Source | None = None,
                 via: tuple[Source, ...] = ()) -> Message:
        """The message at ``node`` (read from ``src``; reached through the documents ``via``)."""
        msg, msrc, chain = self._follow(node, path, src)
        if not isinstance(msg, dict):
            raise AsyncApiDocumentError("message must be an object", path=path)
        msg = self._apply_traits(msg, path, msrc)
        name = self._str(msg, "name", path)
        mid = self._str(msg, "messageId", path)
        if key is None:
            key = mid or name or (chain[-1][1][-1] if chain and chain[-1][1] else None)
        bindings, bpath = self._bindings(msg, path, msrc)
        kafka = None
        if bindings.get("kafka") is not None:
            kpath = join_path(bpath, "kafka")
            kafka = parse_kafka_message(self._get(bindings["kafka"], kpath, msrc), kpath)
        if bindings.get("pulsar") is not None:
            ppath = join_path(bpath, "pulsar")
            check_empty_pulsar(self._get(bindings["pulsar"], ppath, msrc), ppath, "message")
        ctype = self._str(msg, "contentType", path) or self.default_content_type
        sources = (self.resolver.main, *via, *(self.resolver.source(k) for k, _ in chain), msrc)
        return Message(key or "message", name, self._str(msg, "title", path), ctype,
                       self._str(msg, "schemaFormat", path), msg.get("payload"), msg.get("headers"), msrc,
                       kafka, path, frozenset(chain), self._str(msg, "summary", path),
                       tuple(dict.fromkeys(sources)))

    def _operation_bindings(self, op: dict, path: str) -> KafkaOperationBinding | None:
        bindings, bpath = self._bindings(op, path)
        if bindings.get("pulsar") is not None:
            ppath = join_path(bpath, "pulsar")
            check_empty_pulsar(self._get(bindings["pulsar"], ppath), ppath, "operation")
        if bindings.get("kafka") is None:
            return None
        kpath = join_path(bpath, "kafka")
        return parse_kafka_operation(self._get(bindings["kafka"], kpath), kpath,
                                     lambda n, p: None if n is None else self._get(n, p))

    def _servers_of(self, ch: dict, path: str, borrowed: bool = False) -> tuple[str, ...] | None:
        """The channel's server names; a channel ``$ref``\\ed from another document (``borrowed``)
        names that document's servers: those that are not also servers of this document (through
        a shared file) are left out, and if none is left the channel is not restricted."""
        node = ch.get("servers")
        if node is None:
            return None
        spath = join_path(path, "servers")
        if not isinstance(node, list):
            raise AsyncApiDocumentError("servers must be an array", path=spath)
        names: list[str] = []
        for i, item in enumerate(node):
            ipath = join_path(spath, i)
            if isinstance(item, str) and self.major == 2:
                name: str | None = item
            elif is_ref(item):
                _, _, chain = self._follow(item, ipath)
                name = next((self._server_locs[loc] for loc in chain if loc in self._server_locs), None)
            else:
                name = None
            if (name is None or name not in self.servers) and borrowed and is_ref(item):
                continue
            if name is None or name not in self.servers:
                raise AsyncApiDocumentError(f"channel refers to an unknown server {item!r} "
                                            f"(servers: {', '.join(self.servers) or 'none'})", path=ipath)
            names.append(name)
        if borrowed and not names:
            return None
        return tuple(names)

    def _channel_node(self, name: str, node):
        """(path, the channel object, the document it is in, the ``$ref`` chain to it, the
        documents on that chain) of channel ``name``."""
        path = join_path("channels", name)
        ch, csrc, chain = self._follow(node, path)
        if not isinstance(ch, dict):
            raise AsyncApiDocumentError("channel must be an object", path=path)
        return path, ch, csrc, chain, tuple(self.resolver.source(k) for k, _ in chain)

    def _new_channel(self, name: str, address: str | None, ch: dict, csrc: Source, path: str,
                     messages: dict[str, Message], kafka, pulsar) -> Channel:
        """The channel of a channel object whose messages and bindings are read."""
        description = ch.get("description")
        return Channel(name, address, self._parameters(ch, path), messages,
                       self._servers_of(ch, path, csrc is not self.resolver.main), kafka, pulsar, path,
                       description if isinstance(description, str) else None)

    def _channel2(self, name: str, node) -> None:
        path, ch, csrc, _, via = self._channel_node(name, node)
        kafka, pulsar = self._channel_bindings(ch, path)
        messages: dict[str, Message] = {}
        for kind, action in (("publish", "receive"), ("subscribe", "send")):
            if ch.get(kind) is None:
                continue
            opath = join_path(path, kind)
            op_node, osrc, ochain = self._follow(ch[kind], opath, csrc)
            if not isinstance(op_node, dict):
                raise AsyncApiDocumentError("operation must be an object", path=opath)
            op = self._apply_traits(op_node, opath, osrc)
            op_via = via + tuple(self.resolver.source(k) for k, _ in ochain)
            keys = []
            mnode = op.get("message")
            if mnode is not None:
                mpath = join_path(opath, "message")
                mobj, mosrc, _ = self._follow(mnode, mpath, osrc)
                if isinstance(mobj, dict) and "oneOf" in mobj:
                    one_of = mobj["oneOf"]
                    if not isinstance(one_of, list) or not one_of:
                        raise AsyncApiDocumentError("oneOf must be a non-empty array", path=join_path(mpath, "oneOf"))
                    items = [(m, join_path(join_path(mpath, "oneOf"), i)) for i, m in enumerate(one_of)]
                else:
                    items = [(mnode, mpath)]
                for m, p in items:
                    message = self._message(m, p, None, mosrc if m is not mnode else osrc, op_via)
                    existing = messages.get(message.key)
                    if existing is not None and existing.locations & message.locations:
                        keys.append(message.key)
                        continue
                    k, i = message.key, 2
                    while k in messages:
                        k, i = f"{message.key}_{i}", i + 1
                    if k != message.key:
                        message = rekey(message, k)
                    messages[k] = message
                    keys.append(k)
            op_id = self._str(op, "operationId", opath)
            op_name = op_id or f"{name}.{kind}"
            self.operations[op_name] = Operation(op_name, action, name, tuple(keys),
                                                 self._operation_bindings(op, opath), opath, op_id)
        self.channels[name] = self._new_channel(name, name, ch, csrc, path, messages, kafka, pulsar)

    def _channel3(self, name: str, node) -> None:
        path, ch, csrc, chain, via = self._channel_node(name, node)
        address = ch.get("address")
        if address is not None and not isinstance(address, str):
            raise AsyncApiDocumentError("address must be a string or null", path=join_path(path, "address"))
        kafka, pulsar = self._channel_bindings(ch, path)
        mpath = join_path(path, "messages")
        messages = {}
        for key, mnode in self._obj(ch.get("messages"), mpath, "messages", csrc, optional=True).items():
            m = self._message(mnode, join_path(mpath, key), key, csrc, via)
            own = ("", ("channels", name, "messages", key))
            messages[key] = with_locations(m, m.locations | {own} |
                                            {(loc[0], loc[1] + ("messages", key)) for loc in chain})
        self.channels[name] = self._new_channel(name, address, ch, csrc, path, messages, kafka, pulsar)
        self._channel_locs[("", ("channels", name))] = name
        for loc in chain:
            self._channel_locs[loc] = name

    def _operation3(self, name: str, node) -> None:
        path = join_path("operations", name)
        op, osrc, _ = self._follow(node, path)
        if not isinstance(op, dict):
            raise AsyncApiDocumentError("operation must be an object", path=path)
        op = self._apply_traits(op, path, osrc)
        action = self._str(op, "action", path, required=True)
        if action not in ("send", "receive"):
            raise AsyncApiDocumentError(f"action must be 'send' or 'receive', got {action!r}",
                                        path=join_path(path, "action"))
        cpath = join_path(path, "channel")
        if not is_ref(op.get("channel")):
            raise AsyncApiDocumentError("channel must be a $ref to a channel", path=cpath)
        _, _, chain = self._follow(op["channel"], cpath)
        cname = next((self._channel_locs[loc] for loc in chain if loc in self._channel_locs), None)
        if cname is None:
            raise AsyncApiDocumentError(f"operation channel {op['channel']['$ref']!r} is not a channel "
                                        "of this document", path=cpath)
        channel = self.channels[cname]
        keys: tuple[str, ...] | None = None
        if op.get("messages") is not None:
            mpath = join_path(path, "messages")
            if not isinstance(op["messages"], list):
                raise AsyncApiDocumentError("messages must be an array", path=mpath)
            found_keys: list[str] = []
            for i, mref in enumerate(op["messages"]):
                ipath = join_path(mpath, i)
                if not is_ref(mref):
                    raise AsyncApiDocumentError("operation messages must be $refs to channel messages", path=ipath)
                _, _, mchain = self._follow(mref, ipath)
                found = sorted((k for k, m in channel.messages.items() if m.locations & set(mchain)),
                               key=lambda k: mchain[0] not in channel.messages[k].locations)
                if not found:
                    raise AsyncApiDocumentError(f"message {mref['$ref']!r} is not a message of channel "
                                                f"{cname!r}", path=ipath)
                found_keys.append(found[0])
            keys = tuple(found_keys)
        self.operations[name] = Operation(name, action, cname, keys, self._operation_bindings(op, path), path,
                                          name)

