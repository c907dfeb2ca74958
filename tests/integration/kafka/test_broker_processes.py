"""The subprocess brokers (tansu, noida-db) leave no process behind when stopped.

noida-db found on ``PATH`` is its wheel's console script, which forks the broker binary:
stopping only the script used to leave the broker running after every test module that used it.
"""
from __future__ import annotations

import os
import time

import pytest

from connector.testing import NoidaBroker, TansuBroker


def _processes_with(text: str) -> list[int]:
    """Pids of this machine's processes whose command line holds ``text``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(int(pid))
    return found


@pytest.mark.parametrize("kind", [TansuBroker, NoidaBroker], ids=["tansu", "noida-db"])
def test_stop_ends_every_process_of_the_broker(kind):
    if not kind.available():
        pytest.skip(f"{kind.label} is not installed")
    broker = kind()
    broker.start()
    try:
        data_dir = broker._dir
        assert broker.port is not None and data_dir is not None
        args = " ".join(broker.command("", broker.port, data_dir)[1:])  # what the launcher and broker share
        assert _processes_with(args), "the broker runs with these arguments"
    finally:
        broker.stop()
    deadline = time.monotonic() + 10
    while _processes_with(args) and time.monotonic() < deadline:
        time.sleep(0.05)  # the kernel reaps the group's last members after the signal
    assert _processes_with(args) == []
    assert not os.path.exists(data_dir)
    broker.stop()  # idempotent
