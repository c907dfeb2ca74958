"""librdkafka's mock cluster driven through its C fault API (``rdkafka_mock.h``) with ctypes.

The cluster is created here with ``rd_kafka_mock_cluster_new`` on an ``rd_kafka_t`` this module
makes itself, so every fault call goes to a handle we own (no reading of confluent-kafka's
object layout). The library is the librdkafka bundled inside the confluent-kafka wheel (the one
the Python client already loaded), else a system ``librdkafka.so.1``. The brokers listen on
real loopback ports, so Spark executors in other processes reach them too.

What the mock can and cannot do (librdkafka 2.16): a fault call now and then takes a second
(the mock thread can miss the wake-up of a command and serves it at its next 1 s poll);
partitions keep their records when the
leader moves (the log is per partition, not per broker); a broker set down closes its
connections and refuses new ones but does not move leadership; errors pushed with
:meth:`MockCluster.push_errors` are answered to the next requests of that API from *any*
client; there is no CreatePartitions (nor any admin API), so partitions cannot be added to a
live topic.
"""
from __future__ import annotations

import ctypes
import glob
import os
import time
from collections.abc import Callable

import confluent_kafka

__all__ = ["MockCluster", "ApiKey", "Err", "wait_for"]


class ApiKey:
    """Kafka protocol API keys."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    FIND_COORDINATOR = 10


class Err:
    """Kafka protocol error codes (``rd_kafka_resp_err_t``)."""

    OFFSET_OUT_OF_RANGE = 1
    UNKNOWN_TOPIC_OR_PART = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    NETWORK_EXCEPTION = 13
    NOT_COORDINATOR = 16
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    TOPIC_AUTHORIZATION_FAILED = 29
    KAFKA_STORAGE_ERROR = 56


def _library() -> ctypes.CDLL:
    here = os.path.dirname(confluent_kafka.__file__)
    bundled = sorted(glob.glob(os.path.join(here, os.pardir, "confluent_kafka.libs", "librdkafka*.so*")))
    lib = ctypes.CDLL(bundled[0] if bundled else "librdkafka.so.1")
    vp, i32, i16, sz = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int16, ctypes.c_size_t
    sigs = {
        "rd_kafka_conf_new": (vp, []),
        "rd_kafka_conf_set": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, sz]),
        "rd_kafka_new": (vp, [ctypes.c_int, vp, ctypes.c_char_p, sz]),
        "rd_kafka_destroy": (None, [vp]),
        "rd_kafka_mock_cluster_new": (vp, [vp, ctypes.c_int]),
        "rd_kafka_mock_cluster_destroy": (None, [vp]),
        "rd_kafka_mock_cluster_bootstraps": (ctypes.c_char_p, [vp]),
        "rd_kafka_mock_topic_create": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
        "rd_kafka_mock_partition_set_leader": (ctypes.c_int, [vp, ctypes.c_char_p, i32, i32]),
        "rd_kafka_mock_broker_set_down": (ctypes.c_int, [vp, i32]),
        "rd_kafka_mock_broker_set_up": (ctypes.c_int, [vp, i32]),
        "rd_kafka_mock_push_request_errors_array": (None, [vp, i16, sz, ctypes.POINTER(ctypes.c_int)]),
        "rd_kafka_mock_clear_request_errors": (None, [vp, i16]),
        "rd_kafka_mock_broker_error_stack_cnt": (ctypes.c_int, [vp, i32, i16, ctypes.POINTER(sz)]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    # Variadic (err, rtt_ms) pairs: no argtypes, every argument passed as an explicit C type.
    lib.rd_kafka_mock_broker_push_request_error_rtts.restype = ctypes.c_int
    return lib


class MockCluster:
    """A mock Kafka cluster of ``brokers`` brokers (ids 1..n) with its fault API.

    Examples
    --------
    >>> with MockCluster(3) as mc:                                          # doctest: +SKIP
    ...     mc.create_topic("t", partitions=4)
    ...     mc.set_leader("t", 0, 2)
    ...     mc.push_errors(ApiKey.FETCH, Err.NOT_LEADER_OR_FOLLOWER)
    """

    def __init__(self, brokers: int = 3):
        self._lib = lib = _library()
        conf = lib.rd_kafka_conf_new()
        errstr = ctypes.create_string_buffer(512)
        # The handle only hosts the cluster; keep its own log quiet.
        if lib.rd_kafka_conf_set(conf, b"log_level", b"0", errstr, 512) != 0:
            raise RuntimeError(errstr.value.decode())
        self._rk = lib.rd_kafka_new(0, conf, errstr, 512)  # RD_KAFKA_PRODUCER; takes conf
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new: {errstr.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, int(brokers))
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.brokers = list(range(1, int(brokers) + 1))
        self._meta: confluent_kafka.Producer | None = None
        self.bootstrap_servers = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the cluster (idempotent); clients still connected see every broker vanish."""
        self._meta = None
        if self._mc:
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    @staticmethod
    def _ok(err: int, what: str) -> None:
        if err:
            raise RuntimeError(f"{what}: librdkafka error {err}")

    def create_topic(self, topic: str, partitions: int, replication: int | None = None) -> None:
        """Create ``topic``; leaders are spread over the brokers."""
        rf = replication or len(self.brokers)
        self._ok(self._lib.rd_kafka_mock_topic_create(self._mc, topic.encode(), partitions, rf),
                 f"create topic {topic}")

    def leaders(self, topic: str) -> dict[int, int]:
        """``{partition: leader broker id}`` from a fresh metadata answer."""
        if self._meta is None:
            self._meta = confluent_kafka.Producer({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        md = self._meta.list_topics(topic, timeout=10).topics[topic]
        return {p: m.leader for p, m in sorted(md.partitions.items())}

    def set_leader(self, topic: str, partition: int, broker: int) -> None:
        """Move the partition's leadership to ``broker`` (the leader epoch goes up)."""
        self._ok(self._lib.rd_kafka_mock_partition_set_leader(self._mc, topic.encode(), partition, broker),
                 f"set leader of {topic}-{partition}")

    def broker_down(self, broker: int) -> None:
        """Close the broker's connections and refuse new ones (leadership stays)."""
        self._ok(self._lib.rd_kafka_mock_broker_set_down(self._mc, broker), f"broker {broker} down")

    def broker_up(self, broker: int) -> None:
        self._ok(self._lib.rd_kafka_mock_broker_set_up(self._mc, broker), f"broker {broker} up")

    def push_errors(self, api_key: int, *errors: int) -> None:
        """Answer the next ``len(errors)`` requests of ``api_key`` (to any broker, from any
        client) with these error codes, in order."""
        arr = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(self._mc, api_key, len(errors), arr)

    def clear_errors(self, api_key: int) -> None:
        self._lib.rd_kafka_mock_clear_request_errors(self._mc, api_key)

    def push_broker_errors(self, broker: int, api_key: int, *errors: int, rtt_ms: int = 0) -> None:
        """Answer the next requests of ``api_key`` to ``broker`` with these errors, each after
        ``rtt_ms``."""
        args: list = []
        for e in errors:
            args += [ctypes.c_int(e), ctypes.c_int(rtt_ms)]
        self._ok(self._lib.rd_kafka_mock_broker_push_request_error_rtts(
            ctypes.c_void_p(self._mc), ctypes.c_int32(broker), ctypes.c_int16(api_key),
            ctypes.c_size_t(len(errors)), *args), f"push errors to broker {broker}")

    def pending_broker_errors(self, broker: int, api_key: int) -> int:
        """Errors pushed with :meth:`push_broker_errors` not yet answered."""
        cnt = ctypes.c_size_t(0)
        self._ok(self._lib.rd_kafka_mock_broker_error_stack_cnt(self._mc, broker, api_key, ctypes.byref(cnt)),
                 "error stack count")
        return cnt.value


def wait_for(cond: Callable[[], object], timeout_s: float, what: str, every_s: float = 0.02):
    """Poll ``cond`` until it returns something truthy (returned) or fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(every_s)
