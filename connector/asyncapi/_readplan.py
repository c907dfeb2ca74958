"""The :class:`ReadPlan`: everything the reader needs from a document, as primitives."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from registry import Vendor
from wireformat import Framing

from connector.errors import ConfigError

from connector.asyncapi._schema import MessageSpec, SchemaSpec

if TYPE_CHECKING:
    from connector.formats import Routing

@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


@dataclass(frozen=True)
class ReadPlan:
    """How to read one channel: topics, connection, registry and schemas (picklable primitives).

    Attributes
    ----------
    channel : str
        Channel key in the document.
    topics : tuple of str
        The concrete topic (empty when ``topic_pattern`` is set).
    topic_pattern : str or None
        Anchored Python regex matching every topic of a templated address; its named
        groups are the address parameters (see ``param_groups``).
    param_names : tuple of str
        Address parameters in order (they become columns; see :meth:`topic_params`).
    bootstrap_servers : str or None
        From the chosen server (None when the document has no servers).
    kafka_config : tuple of (str, str)
        Non-secret librdkafka settings derived from the server and its security scheme.
    required_secrets : tuple of str
        librdkafka settings the user must supply (never read from the document).
    registry_url : str or None
        From the server's Kafka binding.
    registry_vendor : registry.Vendor or None
        The vendor the binding names (``registry_vendor_raw`` keeps the document's spelling);
        None when unset or unknown to this connector.
    schema_id_location, schema_id_payload_encoding, schema_lookup_strategy : str or None
        From the messages' Kafka bindings (the lookup strategy falls back to the channel's
        ``confluent.value.subject.name.strategy``).
    value_messages : tuple of MessageSpec
        Every message that may appear on the topic (a decoder tells them apart by the
        writer schema id and gives each its own field); one when ``message=`` was given.
    key_schema : SchemaSpec or None
        The Kafka message binding ``key`` schema.
    group_id, client_id : str or None
        From the chosen operation's Kafka binding.
    unresolved_schemas : tuple of (str, str)
        (document path, reason) of schemas left out with ``require_schemas=False``.
    warnings : tuple of (str, str)
        (document path, text) of binding rules the document breaks without harm to this
        read (e.g. registry-only message fields while the registry comes from options).
    routing : connector.formats.Routing or None
        The header → message table of every message the channel (or operation) carries, also
        when ``message=`` keeps one: how records without a schema id are told apart, and the
        type header a write puts on each message's records (``docs/multi-type-channels.md``).
    registry_name, registry_region : str or None
        AWS Glue registry name (server binding extension ``x-registryName``, or the
        ``registryName`` query of ``schemaRegistryUrl``) and region (from a
        ``glue.<region>.amazonaws.com`` URL).
    """

    channel: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    param_names: tuple[str, ...]
    bootstrap_servers: str | None
    kafka_config: tuple[tuple[str, str], ...]
    registry_url: str | None
    registry_vendor: Vendor | None
    schema_id_location: str | None
    schema_id_payload_encoding: str | None
    schema_lookup_strategy: str | None
    value_messages: tuple[MessageSpec, ...]
    key_schema: SchemaSpec | None
    group_id: str | None
    client_id: str | None
    server: str | None = None
    server_protocol: str | None = None
    operation: str | None = None
    address: str | None = None
    required_secrets: tuple[str, ...] = ()
    ignored_settings: tuple[tuple[str, str], ...] = ()
    security_scheme: str | None = None
    param_groups: tuple[tuple[str, str], ...] = ()
    param_values: tuple[tuple[str, str], ...] = ()
    registry_vendor_raw: str | None = None
    key_schema_lookup_strategy: str | None = None
    partitions: int | None = None
    replicas: int | None = None
    topic_configuration: tuple[tuple[str, str], ...] = ()
    unresolved_schemas: tuple[tuple[str, str], ...] = ()
    warnings: tuple[tuple[str, str], ...] = ()
    registry_name: str | None = None
    registry_region: str | None = None
    routing: Routing | None = None

    def framing(self) -> Framing:
        """The :class:`wireformat.Framing` the document implies.

        ==================================  ===========================  ==========================
        registry vendor (normalised)        ``schemaIdLocation``          framing
        ==================================  ===========================  ==========================
        no ``schemaRegistryUrl`` and no id  –                            ``none``
        ``aws-glue``                        any                          ``glue``
        ``confluent`` (or unset)            ``payload``/unset            by encoding: unset,
                                                                         ``confluent``, ``4`` →
                                                                         ``confluent``; ``16``/
                                                                         ``guid`` → ``confluent-guid``
        ``confluent`` (or unset)            ``header``                   ``header-confluent``
        ``apicurio``                        ``payload``                  ``apicurio-new`` (encoding
                                                                         ``apicurio-new``/``4``),
                                                                         else ``apicurio-legacy``
        ``apicurio``                        ``header``/unset             ``header-apicurio-content``
                                                                         (encoding ``apicurio-new``),
                                                                         else ``header-apicurio-global``
        any                                 ``payload``                  ``apicurio-legacy``/
                                                                         ``apicurio-new`` when the
                                                                         encoding says so
        ==================================  ===========================  ==========================

        Raises
        ------
        ConfigError
            For an encoding this library does not know; set the framing option explicitly.
        """
        loc, enc = self.schema_id_location, (self.schema_id_payload_encoding or "").strip().lower() or None
        family = self.registry_vendor
        if self.registry_url is None and loc is None and enc is None:
            return Framing("none")
        if family is Vendor.AWS_GLUE or enc == "glue":
            return Framing("glue")
        if loc is None:
            loc = "header" if family is Vendor.APICURIO and enc is None else "payload"
        if loc == "header":
            if family is Vendor.APICURIO or (enc or "").startswith("apicurio"):
                return Framing("header-apicurio-content" if enc == "apicurio-new"
                                      else "header-apicurio-global")
            return Framing("header-confluent")
        if enc == "apicurio-legacy" or (family is Vendor.APICURIO and enc in (None, "8")):
            return Framing("apicurio-legacy")
        if enc == "apicurio-new" or (family is Vendor.APICURIO and enc == "4"):
            return Framing("apicurio-new")
        if enc in (None, "confluent", "4"):
            return Framing("confluent")
        if enc in ("16", "guid", "confluent-guid"):
            return Framing("confluent-guid")
        if enc == "8":
            return Framing("apicurio-legacy")
        raise ConfigError(f"schemaIdPayloadEncoding {self.schema_id_payload_encoding!r} is not supported "
                          "(confluent, 4, apicurio-legacy, apicurio-new); set the framing option explicitly")

    def topic_params(self, topic: str) -> dict[str, str]:
        """Address parameter values of ``topic`` (given ones included), by parameter name.

        Raises
        ------
        ConfigError
            When ``topic`` is not a topic of this plan.

        Examples
        --------
        >>> import importlib.resources
        >>> from connector.asyncapi import load_document, plan_read
        >>> doc = load_document(str(importlib.resources.files("connector") / "examples" / "shop.yaml"))
        >>> plan_read(doc, channel="stock").topic_params("shop.stock.berlin")
        {'warehouse': 'berlin'}
        """
        values = dict(self.param_values)
        if self.topic_pattern is None:
            if topic not in self.topics:
                raise ConfigError(f"topic {topic!r} is not read by this plan (topics: {', '.join(self.topics)})")
            return {n: values[n] for n in self.param_names if n in values}
        m = _compiled(self.topic_pattern).match(topic)
        if m is None:
            raise ConfigError(f"topic {topic!r} does not match {self.topic_pattern!r}")
        for group, name in self.param_groups:
            values[name] = m.group(group)
        return {n: values[n] for n in self.param_names if n in values}

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is one of this plan's topics."""
        if self.topic_pattern is None:
            return topic in self.topics
        return _compiled(self.topic_pattern).match(topic) is not None
