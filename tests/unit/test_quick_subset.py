"""The quick subset (``-m "not jvm"``) fails when a test it runs starts a JVM, naming the test
(tests/conftest.py stubs ``java`` for such a session)."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBE = "ASYNCAPI_KAFKA_JVM_PROBE"


def test_probe_starts_a_jvm_without_the_marker():
    if os.environ.get(PROBE) != "1":
        pytest.skip("run inside test_a_jvm_started_in_the_quick_subset_fails_the_session")
    subprocess.run(["java", "-version"], capture_output=True, check=False)


def test_a_jvm_started_in_the_quick_subset_fails_the_session():
    probe = f"{pathlib.Path(__file__).relative_to(ROOT)}::test_probe_starts_a_jvm_without_the_marker"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not jvm", probe],
                          cwd=ROOT, env=dict(os.environ, **{PROBE: "1"}), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "no-JVM subset: 1 JVM start(s) attempted" in done.stdout
    assert "test_probe_starts_a_jvm_without_the_marker (call)\t-version" in done.stdout


def test_the_marker_is_given_to_tests_that_use_the_spark_fixture(request):
    items = [i for i in request.session.items if "spark" in getattr(i, "fixturenames", ())]
    assert all(i.get_closest_marker("jvm") for i in items)
