"""Karapace, a real Confluent-compatible schema registry, as a subprocess for tests.

Karapace (Aiven, Apache-2.0) keeps its schemas in a Kafka topic (``_schemas``) and elects its
primary through a consumer group, so it needs a broker that creates topics and runs groups: a
:class:`~connector.testing.TansuBroker` started alongside (the librdkafka mock cluster has no
admin API). Karapace's pins clash with this project's (confluent-kafka, protobuf), so it lives in
a virtual environment of its own, outside the package: ``.ci/run`` builds it as
``.karapace-venv`` at the repository root from ``../shared/karapace/`` (or
``$ASYNCAPI_KAFKA_KARAPACE_DIR``), and :func:`find_karapace` finds its ``karapace`` script there
or at ``$KARAPACE_BIN``.

What Karapace 3.16 does differently from Confluent's registry (and what the stand-in
:class:`~connector.testing.RegistryServer` now imitates) is listed in
:mod:`connector.testing._registry_rules`.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from connector.errors import ConfigError

from ._tansu import TansuBroker

__all__ = ["KarapaceServer", "find_karapace", "KARAPACE_VENV"]

#: The Karapace virtual environment's folder name at the repository root.
KARAPACE_VENV = ".karapace-venv"


def find_karapace() -> str | None:
    """Path of the ``karapace`` script: ``$KARAPACE_BIN``, else ``.karapace-venv/bin/karapace`` at
    the repository root (or the current directory); None when there is none."""
    env = os.environ.get("KARAPACE_BIN")
    if env:
        return env if os.access(env, os.X_OK) else None
    roots = [Path(__file__).resolve().parents[2], Path.cwd()]
    for root in roots:
        cand = root / KARAPACE_VENV / "bin" / "karapace"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KarapaceServer:
    """Karapace on a free loopback port, its storage on a tansu broker it starts too.

    Parameters
    ----------
    compatibility : str
        The global compatibility level (Karapace's default, BACKWARD).
    start_timeout_s : float
        How long to wait for ``GET /_health`` to report a ready primary.

    Examples
    --------
    >>> from connector.testing import KarapaceServer
    >>> if KarapaceServer.available():                                        # doctest: +SKIP
    ...     with KarapaceServer() as karapace:
    ...         print(karapace.url)
    """

    def __init__(self, *, compatibility: str = "BACKWARD", start_timeout_s: float = 60.0):
        self.compatibility = compatibility
        self.start_timeout_s = start_timeout_s
        self.broker: TansuBroker | None = None
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._dir: str | None = None

    @staticmethod
    def available() -> bool:
        """Whether both Karapace and tansu can be found."""
        return find_karapace() is not None and TansuBroker.available()

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("Karapace is not started")
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> KarapaceServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Start tansu, then Karapace, and wait until Karapace is the ready primary.

        Raises
        ------
        ConfigError
            Karapace or tansu cannot be found, or Karapace did not become ready (its log's tail).
        """
        binary = find_karapace()
        if binary is None:
            raise ConfigError(f"karapace not found: run .ci/run (it builds {KARAPACE_VENV}) or set KARAPACE_BIN")
        self.broker = TansuBroker()
        try:
            self.broker.start()
            last = ""
            for _ in range(3):  # the free port can be taken between probe and bind
                last = self._start_once(binary)
                if not last:
                    return
                self._stop_karapace()
            raise ConfigError(f"karapace did not start: {last}")
        except BaseException:
            self.stop()
            raise

    def _start_once(self, binary: str) -> str:
        self.port = _free_port()
        self._dir = tempfile.mkdtemp(prefix="karapace-")
        config = {"advertised_hostname": "127.0.0.1", "host": "127.0.0.1", "port": self.port,
                  "bootstrap_uri": self.broker.bootstrap_servers if self.broker else "",
                  "client_id": "sr-1", "group_id": "schema-registry", "compatibility": self.compatibility,
                  "master_eligibility": True, "replication_factor": 1, "karapace_rest": False,
                  "karapace_registry": True, "topic_name": "_schemas", "session_timeout_ms": 10000}
        path = os.path.join(self._dir, "karapace.json")
        with open(path, "w") as f:
            json.dump(config, f)
        log = open(os.path.join(self._dir, "karapace.log"), "wb")  # the process writes it; closed here after
        try:
            self._proc = subprocess.Popen([binary, path], stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True, cwd=self._dir)
        finally:
            log.close()
        return self._wait_ready()

    def _wait_ready(self) -> str:
        import requests

        deadline = time.monotonic() + self.start_timeout_s
        last = "timed out"
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                return f"exited: {self.log_tail()}"
            try:
                health = requests.get(f"{self.url}/_health", timeout=2).json()
                if health.get("schema_registry_ready") and health.get("schema_registry_is_primary") and \
                        requests.get(f"{self.url}/subjects", timeout=2).status_code == 200:
                    return ""
                last = f"not ready yet: {health}"
            except (requests.RequestException, ValueError) as e:
                last = type(e).__name__
            time.sleep(0.2)  # polling a subprocess's readiness; no event to wait on
        return f"{last}; log: {self.log_tail()}"

    def log_tail(self, n: int = 1500) -> str:
        """The end of Karapace's log (for failure messages)."""
        if self._dir is None:
            return ""
        try:
            return Path(self._dir, "karapace.log").read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def _stop_karapace(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._dir is not None:
            import shutil

            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def stop(self) -> None:
        """Stop Karapace and its broker (idempotent)."""
        self._stop_karapace()
        broker, self.broker = self.broker, None
        if broker is not None:
            broker.stop()
