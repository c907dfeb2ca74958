"""Writes and reads from any Python thread: the DataFrame's session made active where Spark looks.

Spark finds a Python data source by name through the *active* session of the calling thread
(``DataSource.lookupDataSource`` asks ``SparkSession.getActiveSession``), not through the
session of the DataFrame being written. A thread other than the one that built the session has
no active session on the JVM side (it is a thread-local), so ``df.write.format("asyncapi-kafka")``
there fails with ``DATA_SOURCE_NOT_FOUND`` even after ``spark.dataSource.register(...)``, though
the same DataFrame is at hand. Notebooks and orchestrators run jobs in threads.

:func:`install` (run when ``connector.spark`` is imported in the driver) wraps ``format()`` of
PySpark's classic ``DataFrameWriter``, ``DataStreamWriter``, ``DataFrameReader`` and
``DataStreamReader``: naming ``asyncapi-kafka`` makes the writer's (reader's) own session the
calling thread's active one, as PySpark's ``createDataFrame`` does. Other formats are left
alone; Spark Connect clients (which resolve names on the server) are not touched.
"""
from __future__ import annotations

import functools
import logging
import threading

__all__ = ["install", "activate"]

log = logging.getLogger("asyncapi_kafka")

NAME = "asyncapi-kafka"
_MARK = "_asyncapi_kafka_threads"
_LOCK = threading.Lock()


def activate(spark) -> None:
    """Make ``spark`` (a classic ``SparkSession``) the calling thread's active session, on the
    JVM side too. A no-op for sessions without a JVM (Spark Connect)."""
    jss = getattr(spark, "_jsparkSession", None)
    jvm = getattr(spark, "_jvm", None)
    if jss is None or jvm is None:
        return
    cls = type(spark)
    getter = getattr(cls, "_get_j_spark_session_class", None)
    jcls = getter(jvm) if getter is not None else jvm.org.apache.spark.sql.SparkSession
    jcls.setActiveSession(jss)


def _wrap(cls) -> None:
    original = cls.format
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def format(self, source, *args, **kwargs):
        if isinstance(source, str) and source.strip().lower() == NAME:
            try:
                activate(self._spark)
            except Exception as e:  # noqa: BLE001 - never break format(); Spark then says what is missing
                log.debug("could not make the session active in this thread: %r", e)
        return original(self, source, *args, **kwargs)

    setattr(format, _MARK, True)
    cls.format = format


def install() -> None:
    """Wrap the classic readers' and writers' ``format()`` once per process (idempotent)."""
    with _LOCK:
        try:
            from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
            from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter
        except ImportError:  # a PySpark without the classic API (Connect-only client)
            return
        for cls in (DataFrameWriter, DataStreamWriter, DataFrameReader, DataStreamReader):
            _wrap(cls)
