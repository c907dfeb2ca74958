"""Auto-registration hook: PySpark imports top-level ``pyspark_*`` modules and registers their
``DefaultSource`` under ``DefaultSource.name()`` — here ``asyncapi-kafka``."""
from connector.spark import AsyncApiKafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
