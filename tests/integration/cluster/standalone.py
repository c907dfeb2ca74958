"""A Spark standalone cluster started from the pyspark wheel: one master and N workers, each its
own JVM, executors in their own processes (what ``spark-class`` starts on real machines).

The wheel has ``bin/spark-class`` but no ``sbin/start-master.sh``/``start-worker.sh``, so the
daemons are started in the foreground with ``spark-class`` and stopped by their pid. Readiness
is the master's JSON status page reporting every worker ALIVE (polled, with a deadline)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
    env.update(extra)
    return env


class StandaloneCluster:
    """``with StandaloneCluster(tmp, workers=2) as c: c.master_url`` — a master and workers."""

    def __init__(self, root: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g",
                 timeout: float = 180.0):
        self.root, self.workers, self.cores, self.memory, self.timeout = root, workers, cores, memory, timeout
        self.procs: list[tuple[subprocess.Popen, Path]] = []
        self.port, self.ui_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.work_dir = root / "work"

    def _start(self, name: str, *args: str) -> None:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=out,
                                    stderr=subprocess.STDOUT, env=spark_env(), cwd=self.root)
        self.procs.append((proc, log))

    def logs(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-2500:]}" for _, log in self.procs)

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
            return json.load(resp)

    def __enter__(self) -> StandaloneCluster:
        """Start the daemons without waiting (call :meth:`wait_ready` before submitting)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(exist_ok=True)
        try:
            self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(self.port), "--webui-port", str(self.ui_port))
            for i in range(self.workers):
                self._start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", self.master_url,
                            "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                            "--webui-port", str(free_port()), "--work-dir", str(self.work_dir))
        except BaseException:
            self.__exit__()
            raise
        return self

    def wait_ready(self) -> None:
        """Block until every worker is ALIVE on the master's status page (or raise)."""
        deadline = time.monotonic() + self.timeout
        last: object = None
        while time.monotonic() < deadline:
            dead = [log.name for proc, log in self.procs if proc.poll() is not None]
            if dead:
                raise RuntimeError(f"{dead} exited while starting:\n{self.logs()}")
            try:
                last = self.status()
                if sum(w.get("state") == "ALIVE" for w in last.get("workers", [])) >= self.workers:
                    return
            except OSError as e:  # master UI not listening yet
                last = e
            # Polling the master's own status page: each probe is a real readiness check.
            time.sleep(0.5)
        raise TimeoutError(f"cluster not ready after {self.timeout}s (last status {last!r}):\n{self.logs()}")

    def __exit__(self, *exc) -> None:
        for proc, _ in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
