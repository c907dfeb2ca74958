"""AsyncAPI 2.x/3.x documents → a reading plan for Kafka topics.

>>> from connector.asyncapi import load_document, plan_read
>>> doc = load_document("streetlights-kafka-3.1.yml")            # doctest: +SKIP
>>> plan = plan_read(doc, channel="lightingMeasured", server="scram-connections")  # doctest: +SKIP
>>> plan.topic_pattern, dict(plan.kafka_config)["sasl.mechanism"]  # doctest: +SKIP
('^smartylighting\\\\.streetlights\\\\.1\\\\.0\\\\.event\\\\.(?P<streetlightId>[A-Za-z0-9_-]+)\\\\.lighting\\\\.measured$', 'SCRAM-SHA-256')

Imports no pyspark: usable outside Spark.
"""
from connector.asyncapi._bindings import (
    KafkaChannelBinding,
    KafkaMessageBinding,
    KafkaOperationBinding,
    KafkaServerBinding,
    PulsarChannelBinding,
    PulsarServerBinding,
)
from connector.asyncapi._document import describe, list_channels, load_document
from connector.asyncapi._loader import DEFAULT_MAX_BYTES
from connector.asyncapi._model import (
    AsyncApiDocument,
    Channel,
    Message,
    Operation,
    Parameter,
    SecurityScheme,
    Server,
)
from connector.asyncapi._plan import plan_read
from connector.asyncapi._readplan import ReadPlan
from connector.asyncapi._refs import DEFAULT_MAX_REF_DEPTH
from connector.asyncapi._schema import MessageSpec, SchemaSpec, classify_schema_format

__all__ = [
    "load_document",
    "plan_read",
    "describe",
    "list_channels",
    "AsyncApiDocument",
    "ReadPlan",
    "MessageSpec",
    "SchemaSpec",
    "Server",
    "Channel",
    "Message",
    "Operation",
    "Parameter",
    "SecurityScheme",
    "KafkaServerBinding",
    "KafkaChannelBinding",
    "KafkaOperationBinding",
    "KafkaMessageBinding",
    "PulsarServerBinding",
    "PulsarChannelBinding",
    "classify_schema_format",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_REF_DEPTH",
]
