"""The Spark layer: the ``asyncapi-kafka`` DataSource (batch + streaming) and column functions."""
from connector.spark._source import AsyncApiKafkaDataSource

__all__ = ["AsyncApiKafkaDataSource"]
