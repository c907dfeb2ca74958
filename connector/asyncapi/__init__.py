"""AsyncAPI 2.x/3.x documents → a reading plan for Kafka topics.

>>> from connector.asyncapi import load_document, plan_read
>>> doc = load_document("streetlights-kafka-3.1.yml")            # doctest: +SKIP
>>> plan = plan_read(doc, channel="lightingMeasured", server="scram-connections")  # doctest: +SKIP
>>> plan.topic_pattern, dict(plan.kafka_config)["sasl.mechanism"]  # doctest: +SKIP
('^smartylighting\\\\.streetlights\\\\.1\\\\.0\\\\.event\\\\.(?P<streetlightId>[A-Za-z0-9_-]+)\\\\.lighting\\\\.measured$', 'SCRAM-SHA-256')

Imports no pyspark: usable outside Spark.
"""
from connector.asyncapi._document import describe, load_document
from connector.asyncapi._model import AsyncApiDocument
from connector.asyncapi._plan import plan_read
from connector.asyncapi._readplan import ReadPlan

__all__ = ["load_document", "plan_read", "describe", "AsyncApiDocument", "ReadPlan"]
