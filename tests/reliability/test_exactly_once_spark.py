"""Exactly-once through Spark (issue 38): a stream from topic ``in`` to topic ``out`` on noida-db
(which honours ``isolation.level``), with task attempts that fail after and before their commit,
then the Spark driver killed with SIGKILL after one task of a micro-batch committed and while the
other one holds its transaction open, then restarted from the checkpoint. Every input id is in
``out`` exactly once for a read_committed consumer (the broker's own, and computed from the log).

The first driver runs in a process of its own (``eos_driver``), on ``local[2,4]`` so that a failed
task is retried; the faults are planted by a worker daemon of its own (``eos_daemon``), so the
product code runs unchanged. The restart runs the same query in the test's shared session. The
driver's own Spark start-up makes it the slowest case of the suite: 104 s at load 5-6 (the
restart's session is the suite's shared one).
"""
from __future__ import annotations

import collections
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest
from confluent_kafka import Producer

from connector.testing import NoidaBroker

from tests.reliability.kafka_log import read_log
from tests.reliability.eos_driver import start_query
from tests.reliability.mock_cluster import wait_for
from tests.reliability.test_exactly_once import consumer_committed, exactly_once, uid

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAULTS = [
    {"at": "fail-after-commit", "batch": 0, "partition": 0},
    {"at": "fail-before-commit", "batch": 0, "partition": 1},
    {"at": "signal-after-commit", "batch": 1, "partition": 1},
    {"at": "hang-before-commit", "batch": 1, "partition": 0},
]


def _produce(bootstrap: str, ids) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in ids:
        p.produce("in", uid(i), partition=i % 2)
    assert p.flush(30) == 0


def _driver(cfg: dict, signals: pathlib.Path, faults: list) -> subprocess.Popen:
    env = {**os.environ, "EOS_FAULTS": json.dumps(faults), "EOS_SIGNALS": str(signals),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    return subprocess.Popen([sys.executable, "-m", "tests.reliability.eos_driver", json.dumps(cfg)], cwd=ROOT, env=env,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and the Python workers
    except ProcessLookupError:
        pass
    proc.wait(30)


def _alive(proc: subprocess.Popen) -> bool:
    if proc.poll() is None:
        return True
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    raise AssertionError(f"the Spark driver exited with {proc.returncode}:\n{out[-4000:]}")


@pytest.mark.timeout(420)
def _running(q) -> bool:
    assert q.exception() is None, q.exception()
    return True


def test_failed_tasks_and_a_driver_killed_mid_batch_write_every_id_once(spark, tmp_path):
    if not NoidaBroker.available():
        pytest.skip("noida-db not installed")
    n1, n2 = 400, 700
    signals = tmp_path / "signals"
    signals.mkdir()
    with NoidaBroker() as broker:
        bs = broker.bootstrap_servers
        for t in ("in", "out"):
            broker.create_topic(t, partitions=2)
        doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
               "servers": {"k": {"host": bs, "protocol": "kafka"}},
               "channels": {c: {"address": c, "messages": {"m": {"name": "M"}}} for c in ("in", "out")}}
        (tmp_path / "doc.json").write_text(json.dumps(doc))
        ck = tmp_path / "ck"
        cfg = {"doc": str(tmp_path / "doc.json"), "checkpoint": str(ck), "stop": str(tmp_path / "stop")}
        _produce(bs, range(n1))
        first = _driver(cfg, signals, FAULTS)
        try:
            # batch 0: one task fails after its commit, the other before; both are retried
            wait_for(lambda: _alive(first) and (ck / "commits" / "0").exists(), 180, "micro-batch 0 committed")
            _produce(bs, range(n1, n2))
            # batch 1: partition 1 commits, partition 0 holds its transaction open; then SIGKILL
            wait_for(lambda: _alive(first) and (signals / "committed-1-1").exists(), 120,
                     "partition 1 of micro-batch 1 committed")
            wait_for(lambda: (signals / "fired-hang-before-commit-1-0").exists(), 60,
                     "partition 0 of micro-batch 1 holding its transaction open")
        finally:
            _kill(first)
        assert sorted(p.name for p in signals.iterdir() if p.name.startswith("fired-")) == sorted(
            f"fired-{f['at']}-{f['batch']}-{f['partition']}" for f in FAULTS)
        assert not (ck / "commits" / "1").exists()  # the batch never completed
        assert any(lg.open_from is not None for lg in read_log(bs, "out").values())  # the dead task's transaction

        # restarted from the checkpoint, in this process's session: batch 1 is replayed
        q = start_query(spark, cfg)
        try:
            wait_for(lambda: _running(q) and len(consumer_committed(bs, "out")) >= n2, 180,
                     "every id committed in 'out'", every_s=0.5)
        finally:
            q.stop()
        exactly_once(consumer_committed(bs, "out"), range(n2))
        logs = read_log(bs, "out")
        exactly_once(collections.Counter(v for lg in logs.values() for _, _, v in lg.visible), range(n2))
        assert all(lg.open_from is None for lg in logs.values())
        assert sum(len(lg.aborted) for lg in logs.values()) > 0  # the killed and the failed attempts' records
