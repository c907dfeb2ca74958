"""Which registry subject a schema is registered under: the strategy, the record name, the subject.

==========================  =============================================================
strategy (first that is set) from
==========================  =============================================================
``schema.subject.strategy``  the job's option (``SchemaRequest.subject_strategy``)
``schemaLookupStrategy``     the channel's Kafka message bindings (key: the key's)
``TopicNameStrategy``        the default, as Confluent's serializers
==========================  =============================================================

Record names come from each format's schema model (Avro ``namespace.name``, Protobuf
``package.Message`` of the chosen message, JSON Schema ``title``). AWS Glue names schemas,
not subjects: its default name is the topic, as the AWS serializer names them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from registry import Vendor, subject_name

from connector.errors import ConfigError
from connector.formats import payload_format, refs_of, schema_format

if TYPE_CHECKING:
    from connector.asyncapi import ReadPlan

    from connector.schema._request import SchemaRequest

__all__ = ["record_name", "subject_for", "strategy_for"]

DEFAULT_STRATEGY = "TopicNameStrategy"


def record_name(schema: Any, message: str | None = None) -> str | None:
    """Full name of the record ``schema`` describes (what the record strategies name subjects by).

    Examples
    --------
    >>> from connector.schema._request import InlineSchema
    >>> from connector.schema._subjects import record_name
    >>> record_name(InlineSchema("avro", '{"type": "record", "name": "Order", "namespace": "shop", "fields": []}'))
    'shop.Order'
    """
    if schema is None:
        return None
    message = message or getattr(schema, "message_name", None)
    return payload_format(schema_format(schema)).record_name(schema.text, refs_of(schema), message)


def strategy_for(request: SchemaRequest, plan: ReadPlan | None, is_key: bool = False) -> str:
    """The subject name strategy of a job (see the module table)."""
    if request.subject_strategy:
        return request.subject_strategy
    documented = None if plan is None else (plan.key_schema_lookup_strategy if is_key else plan.schema_lookup_strategy)
    return documented or DEFAULT_STRATEGY


def subject_for(request: SchemaRequest, plan: ReadPlan | None, schema: Any, topic: str | None, *,
                is_key: bool = False, vendor: Vendor | None = None) -> str:
    """The subject of ``schema`` on ``topic`` (``topic`` None: rows choose their topics).

    Raises
    ------
    ConfigError
        The strategy needs what is missing (a topic, a record name), or is unknown.

    Examples
    --------
    >>> from connector.schema import SchemaRequest, subject_for
    >>> subject_for(SchemaRequest(), None, None, "shop.orders")
    'shop.orders-value'
    """
    if vendor is Vendor.AWS_GLUE and not request.subject_strategy:
        if topic is None:
            raise ConfigError("the Glue schema name defaults to the topic, and this write's topic varies by "
                              "row: set 'use.schema.id' or 'schema.subject.strategy'")
        return topic
    strategy = strategy_for(request, plan, is_key)
    message = None if is_key else request.message
    try:
        return subject_name(strategy, topic or "", record_name(schema, message), is_key)
    except Exception as e:
        raise ConfigError(f"cannot name the registry subject ({strategy}): {e}") from e
