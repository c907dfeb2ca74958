"""An in-process Kafka cluster (librdkafka's mock cluster) for tests and the demo.

``Producer({"test.mock.num.brokers": n})`` starts a Kafka-protocol cluster inside librdkafka
that listens on real loopback ports, so any client (Spark executors included) can connect.
Limits: topics are auto-created with 4 partitions on first use (librdkafka 2.16 has no
setting for the count and the mock cluster has no admin APIs); each partition keeps about
5 MB of recent record batches (older ones are dropped and the low watermark moves);
ListOffsets by timestamp answers "no match" (-1) for every timestamp; fetch runs at about
90k records/s. Use :class:`connector.testing.TansuBroker` for admin-API scenarios.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from connector.errors import KafkaReadError

__all__ = ["EmbeddedKafka", "MOCK_PARTITIONS"]

#: Partitions the mock cluster gives every auto-created topic.
MOCK_PARTITIONS = 4


class EmbeddedKafka:
    """A librdkafka mock cluster that lives as long as this object.

    Parameters
    ----------
    num_brokers : int
        Brokers in the cluster (partition leaders are spread across them).
    producer_config : dict, optional
        Extra producer settings (e.g. ``{"compression.type": "lz4"}``).
    bootstrap_servers : str, optional
        Use this existing cluster instead of starting a mock one (``KAFKA_BOOTSTRAP_SERVERS``
        in the test suite); the same helper methods then work against a real Kafka.

    Examples
    --------
    >>> from connector.testing import EmbeddedKafka
    >>> with EmbeddedKafka() as kafka:
    ...     kafka.produce("events", b"hello", key=b"k", partition=1)
    ...     kafka.flush()
    ...     kafka.watermarks("events", 1)
    (0, 1)
    """

    def __init__(self, num_brokers: int = 1, producer_config: dict | None = None, *,
                 bootstrap_servers: str | None = None):
        conf: dict = {"linger.ms": 5, "log_level": 3}
        if bootstrap_servers:
            conf["bootstrap.servers"] = bootstrap_servers
        else:
            conf["test.mock.num.brokers"] = int(num_brokers)
        conf.update(producer_config or {})
        self.external = bool(bootstrap_servers)
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self._producer = Producer(conf)
        md = self._producer.list_topics(timeout=10)
        self.bootstrap_servers = bootstrap_servers or ",".join(
            f"{b.host}:{b.port}" for b in sorted(md.brokers.values(), key=lambda b: b.id))
        self.num_brokers = len(md.brokers)
        self._consumer: Consumer | None = None

    def __repr__(self) -> str:
        return f"EmbeddedKafka(bootstrap_servers={self.bootstrap_servers!r})"

    def __enter__(self) -> EmbeddedKafka:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def conf(self) -> dict[str, str]:
        """Client settings to reach this cluster."""
        return {"bootstrap.servers": self.bootstrap_servers}

    def _on_delivery(self, err, msg) -> None:
        if err is not None:
            with self._lock:
                self._errors.append(f"{msg.topic()}-{msg.partition()}: {err.str()}")

    def create_topic(self, topic: str, partitions: int | None = None) -> list[int]:
        """Make sure ``topic`` exists; returns its partition ids.

        With ``partitions`` on the mock cluster, the topic is created with that many partitions
        through librdkafka's C API ``rd_kafka_mock_topic_create`` (the mock cluster has no admin
        API); where that is not reachable (another Python implementation, an existing topic) the
        topic keeps what the cluster gives it (:data:`MOCK_PARTITIONS` when auto-created).
        """
        if partitions and not self.external:
            _mock_topic_create(self._producer, topic, int(partitions))
        md = self._producer.list_topics(topic, timeout=10)
        return sorted(md.topics[topic].partitions)

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None,
                partition: int | None = None, headers: Sequence[tuple[str, bytes | None]] |
                None = None, timestamp: int | None = None) -> None:
        """Queue one record (call :meth:`flush` to wait for delivery)."""
        kwargs: dict[str, Any] = {"value": value, "key": key, "on_delivery": self._on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if headers:
            kwargs["headers"] = list(headers)
        if timestamp is not None:
            kwargs["timestamp"] = int(timestamp)
        while True:
            try:
                self._producer.produce(topic, **kwargs)
                break
            except BufferError:
                self._producer.poll(0.1)  # queue full: serve delivery reports, then retry

    def produce_many(self, topic: str, values: Iterable[bytes | None], *,
                     keys: Iterable[bytes | None] | None = None, partition: int | None = None,
                     headers: Iterable | None = None, timestamps: Iterable[int] | None = None,
                     flush: bool = True) -> int:
        """Produce many records quickly; returns how many were queued."""
        values = list(values)
        n = len(values)
        keys = list(keys) if keys is not None else [None] * n
        hdrs = list(headers) if headers is not None else [None] * n
        tss = list(timestamps) if timestamps is not None else [None] * n
        if not len(keys) == len(hdrs) == len(tss) == n:
            raise ValueError("values, keys, headers and timestamps must have the same length")
        for i in range(n):
            self.produce(topic, values[i], keys[i], partition, hdrs[i], tss[i])
            if i % 10000 == 9999:
                self._producer.poll(0)
        if flush:
            self.flush()
        return n

    def flush(self, timeout: float = 60.0) -> None:
        """Wait until every queued record is delivered.

        Raises
        ------
        KafkaReadError
            A record could not be delivered or the queue did not drain in time.
        """
        left = self._producer.flush(timeout)
        with self._lock:
            errors, self._errors = self._errors, []
        if left:
            raise KafkaReadError(f"{left} records not delivered within {timeout}s")
        if errors:
            raise KafkaReadError(f"delivery failed: {errors[:5]}")

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """``(low, high)`` watermarks of a partition."""
        if self._consumer is None:
            self._consumer = Consumer({"bootstrap.servers": self.bootstrap_servers,
                                       "group.id": "asyncapi-kafka-embedded",
                                       "enable.auto.commit": False, "log_level": 3})
        try:
            return self._consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                        timeout=10, cached=False)
        except KafkaException as e:
            err = e.args[0]
            raise KafkaReadError(f"watermarks of {topic}-{partition}: "
                                 f"{err.str() if isinstance(err, KafkaError) else err}") from e

    def close(self) -> None:
        """Stop the cluster (idempotent). Clients still connected see it disappear."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._producer is not None:
            try:
                self._producer.flush(5)
            finally:
                # dropping the last reference stops the mock cluster (tests rely on it)
                self._producer = None  # type: ignore[assignment]


def _mock_topic_create(producer: Producer, topic: str, partitions: int) -> bool:
    """``rd_kafka_mock_topic_create`` on the mock cluster owned by ``producer``; False when the
    C API cannot be reached safely. confluent-kafka's handle object starts with the
    ``rd_kafka_t *`` right after the CPython object header; the handle's name is checked before
    it is used, and the bundled librdkafka (already loaded) is the library called."""
    import ctypes
    import glob
    import os
    import platform

    import confluent_kafka

    if platform.python_implementation() != "CPython":
        return False
    libs = glob.glob(os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir,
                                  "confluent_kafka.libs", "librdkafka*.so*"))
    try:
        lib = ctypes.CDLL(libs[0]) if libs else ctypes.CDLL("librdkafka.so.1")
        lib.rd_kafka_name.restype, lib.rd_kafka_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        lib.rd_kafka_handle_mock_cluster.restype = ctypes.c_void_p
        lib.rd_kafka_handle_mock_cluster.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
        lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return False
    rk = ctypes.c_void_p.from_address(id(producer) + 2 * ctypes.sizeof(ctypes.c_void_p)).value
    if not rk or not (lib.rd_kafka_name(rk) or b"").startswith(b"rdkafka#producer"):
        return False
    cluster = lib.rd_kafka_handle_mock_cluster(rk)
    if not cluster:
        return False
    return lib.rd_kafka_mock_topic_create(cluster, topic.encode(), partitions, 1) == 0
