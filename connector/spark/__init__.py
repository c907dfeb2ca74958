"""The Spark layer: the ``asyncapi-kafka`` DataSource (batch + streaming) and column functions."""
from connector.spark._source import AsyncApiKafkaDataSource
from connector.spark._threads import install as _install_thread_fix

_install_thread_fix()  # df.write.format("asyncapi-kafka") from any thread (see _threads.py)

__all__ = ["AsyncApiKafkaDataSource"]
