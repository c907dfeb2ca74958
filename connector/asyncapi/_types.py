"""The model's value types: servers, security schemes, channels, parameters, messages, operations."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from connector.errors import AsyncApiDocumentError

from connector.asyncapi._bindings import (
    KafkaChannelBinding,
    KafkaMessageBinding,
    KafkaOperationBinding,
    KafkaServerBinding,
    PulsarChannelBinding,
    PulsarServerBinding,
)
from connector.asyncapi._refs import Source, join_path

KAFKA_PROTOCOLS = ("kafka", "kafka-secure")


@dataclass(frozen=True)
class SecurityScheme:
    """A security scheme object; ``extensions`` holds its ``x-`` keys."""

    name: str
    type: str
    description: str | None = None
    flows: dict = field(default_factory=dict, compare=False)
    open_id_connect_url: str | None = None
    extensions: dict = field(default_factory=dict, compare=False)
    path: str = ""


@dataclass(frozen=True)
class Server:
    """A server; ``security`` lists alternatives, each a tuple of schemes that all apply."""

    name: str
    protocol: str
    host: str | None
    pathname: str | None = None
    variables: dict = field(default_factory=dict, compare=False)
    security: tuple[tuple[SecurityScheme, ...], ...] = ()
    kafka: KafkaServerBinding | None = None
    pulsar: PulsarServerBinding | None = None
    extensions: dict = field(default_factory=dict, compare=False)
    description: str | None = None
    path: str = ""

    @property
    def is_kafka(self) -> bool:
        return self.protocol in KAFKA_PROTOCOLS

    def bootstrap_servers(self) -> str:
        """``host:port[,host:port]`` with server variables replaced by their defaults."""
        host = self.host or ""

        def sub(m):
            var = self.variables.get(m.group(1))
            if var is None:
                raise AsyncApiDocumentError(f"server variable {m.group(1)!r} has no default value",
                                            path=join_path(self.path, "variables"))
            return var
        host = re.sub(r"\{([^{}]+)\}", sub, host)
        items = [re.sub(r"^[A-Za-z][A-Za-z0-9+.\-_]*://", "", h.strip()).rstrip("/") for h in host.split(",")]
        items = [h for h in items if h]
        if not items:
            raise AsyncApiDocumentError(f"server {self.name!r} has no host", path=self.path)
        return ",".join(items)


@dataclass(frozen=True)
class Parameter:
    name: str
    enum: tuple[str, ...] | None = None
    pattern: str | None = None
    default: str | None = None
    description: str | None = None
    path: str = ""


@dataclass(frozen=True, eq=False)
class Message:
    """A message; ``payload``/``headers`` are raw nodes resolved against ``source`` when planned.

    ``sources``: the documents that led to it, in order (the root document, the files a
    channel ``$ref`` and the message ``$ref`` reached), for ``inspect``'s chain of files.
    """

    key: str
    name: str | None
    title: str | None
    content_type: str | None
    schema_format: str | None
    payload: object
    headers: object
    source: Source
    kafka: KafkaMessageBinding | None
    path: str
    locations: frozenset = frozenset()
    summary: str | None = None
    sources: tuple[Source, ...] = ()


@dataclass(frozen=True, eq=False)
class Operation:
    name: str
    action: str  # "receive" or "send"
    channel: str
    messages: tuple[str, ...] | None  # message keys in the channel; None = all of them
    kafka: KafkaOperationBinding | None
    path: str
    operation_id: str | None = None


@dataclass(frozen=True, eq=False)
class Channel:
    name: str
    address: str | None  # None: unknown/dynamic address (3.x ``address: null``)
    parameters: dict
    messages: dict  # key -> Message, in document order
    servers: tuple[str, ...] | None
    kafka: KafkaChannelBinding | None
    pulsar: PulsarChannelBinding | None
    path: str
    description: str | None = None


def rekey(m: Message, key: str) -> Message:
    return dataclasses.replace(m, key=key)


def with_locations(m: Message, locations) -> Message:
    return dataclasses.replace(m, locations=frozenset(locations))
