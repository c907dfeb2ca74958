"""The Spark layer: the ``asyncapi-kafka`` DataSource (batch + streaming) and column functions.

The DataSource class is imported on first use (``from connector.spark import
AsyncApiKafkaDataSource`` works as before), so the processes Spark starts only to unpickle a
writer or a commit message (see ``_sink.py``) do not import the whole connector.
"""
from connector.spark._threads import install as _install_thread_fix

_install_thread_fix()  # df.write.format("asyncapi-kafka") from any thread (see _threads.py)

__all__ = ["AsyncApiKafkaDataSource"]


def __getattr__(name: str):
    if name == "AsyncApiKafkaDataSource":
        from connector.spark._source import AsyncApiKafkaDataSource

        return AsyncApiKafkaDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
