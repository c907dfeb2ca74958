"""A short, bounded, coverage-guided fuzz run (atheris = libFuzzer for Python) per parser.

Mirrors OSS-Fuzz's Python projects (e.g. ``pyyaml``, ``protobuf-python`` fuzzers): a fixed
seed and a fixed run count keep it deterministic and bounded; any exception other than our
own error types is a libFuzzer crash (non-zero exit, the input printed). Skipped when atheris
is not installed (``pip install atheris``).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("atheris")

pytestmark = pytest.mark.slow

HARNESS = os.path.join(os.path.dirname(__file__), "fuzz_targets.py")
RUNS = 600


@pytest.mark.timeout(120)
@pytest.mark.parametrize("target", ["wireformat", "avro", "protobuf", "json", "loader"])
def test_fuzz_target_runs_clean(target, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, HARNESS, target, f"-runs={RUNS}", "-seed=1", "-max_len=512", "-len_control=0",
         f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, timeout=110, env=env, cwd=os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, f"fuzz target {target} crashed:\n{tail}"
    assert f"Done {RUNS} runs" in proc.stderr, tail
