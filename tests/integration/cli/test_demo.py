"""The README's main job, `asyncapi-kafka demo`, run as a user runs it (a child process), with
its row counts checked: it must not rot."""
import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.jvm]


def test_demo_runs_and_reads_back_every_record():
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run([sys.executable, "-m", "connector", "demo", "--records", "120"],
                          capture_output=True, text=True, timeout=420, env=env)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "demo OK" in out
    rows = dict(re.findall(r"^\s+(orders \(stream\)|orders|payments|shipments|stock)\s+.*?\s(\d+)\s+\d+\s+ok$",
                           out, flags=re.M))
    assert rows == {"orders": "120", "payments": "120", "shipments": "120", "stock": "240",
                    "orders (stream)": "120"}, out
    # progress is visible while it runs, and typed tables are printed
    assert "[" in out.splitlines()[0] and "starting embedded Kafka" in out
    assert "value schema: struct<id:bigint" in out
