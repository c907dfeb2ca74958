"""Every Python and shell example of README.md and the docs site runs, as a reader would run it.

The markers above each example (``tests/docs/snippets.py``) say what it needs. Examples that need
Kafka run against the embedded Kafka and registry (``asyncapi-kafka sandbox``'s, loaded with
``examples/shop.yaml``'s channels), with the document's addresses replaced by theirs; examples
that need Spark are ``jvm`` tests and run in one child process with its own ``local[2]`` session
(``tests/docs/spark_runner.py``: Spark resolves relative paths against the JVM's working
directory, so the JVM must start in the examples' directory); the others run in a fresh
directory each. Every directory holds a copy of ``examples/`` with the embedded peers' addresses.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.docs.snippets import ROOT, Snippet, collect, localize

SNIPPETS = collect()
#: What each page's last Python example left, for the examples marked ``continue``.
_NAMESPACES: dict[str, dict] = {}


_FIRST: dict[tuple, str] = {}  # (code, needs) -> the first example that runs it


def _param(s: Snippet):
    marks = []
    first = _FIRST.setdefault((s.code, s.needs), s.id) if not (s.skip or s.cont) else s.id
    if s.skip:
        marks.append(pytest.mark.skip(reason=f"{s.id}: {s.skip}"))
    elif first != s.id:
        marks.append(pytest.mark.skip(reason=f"{s.id}: the same example as {first}, which runs it"))
    if "spark" in s.needs:
        marks.append(pytest.mark.jvm)
    if "kafka" in s.needs:
        marks.append(pytest.mark.kafka)
    return pytest.param(s, id=s.id, marks=marks)


@pytest.fixture(scope="module")
def shop():
    """The sandbox of examples/shop.yaml: embedded Kafka + registry, every channel produced."""
    from connector.cli._sandbox import Sandbox

    with Sandbox(str(ROOT / "examples" / "shop.yaml"), messages=20) as box:
        assert [c["channel"] for c in box.channels if c["messages"]] == ["orders", "payments", "shipments", "stock"]
        yield box


def _workdir(path, peers) -> str:
    """``path`` with a copy of examples/, its addresses made the embedded peers'."""
    shutil.copytree(ROOT / "examples", path / "examples")
    if peers is not None:
        doc = path / "examples" / "shop.yaml"
        doc.write_text(localize(doc.read_text(encoding="utf-8"), *peers), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def spark_examples(shop, tmp_path_factory):
    """Runs one Spark example at a time in the child process; returns (ok, error text)."""
    cwd = _workdir(tmp_path_factory.mktemp("docs-spark"), (shop.kafka.bootstrap_servers, shop.registry.url))
    log_path = os.path.join(cwd, "spark-runner.log")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    with open(log_path, "w") as log:
        child = subprocess.Popen([sys.executable, str(ROOT / "tests" / "docs" / "spark_runner.py")], cwd=cwd,
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)

    def _log_tail() -> str:
        with open(log_path, errors="replace") as f:
            return f.read()[-6000:]

    def run(snippet: Snippet, code: str) -> None:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps({"id": snippet.id, "page": snippet.page, "code": code,
                                      "cont": snippet.cont}) + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        assert line, f"the Spark examples' process ended (exit {child.poll()}):\n{_log_tail()}"
        reply = json.loads(line)
        assert reply["ok"], f"{snippet.id} failed:\n{reply['error']}\n--- the process's log\n{_log_tail()}"

    assert child.stdout is not None
    ready = child.stdout.readline()
    assert ready, f"the Spark examples' process did not start:\n{_log_tail()}"
    yield run
    assert child.stdin is not None
    child.stdin.close()
    try:
        child.wait(timeout=120)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


@pytest.mark.parametrize("snippet", [_param(s) for s in SNIPPETS])
def test_example_runs(snippet: Snippet, request, tmp_path, monkeypatch):
    peers = None
    if "kafka" in snippet.needs:
        box = request.getfixturevalue("shop")
        peers = (box.kafka.bootstrap_servers, box.registry.url)
    code = localize(snippet.code, *peers) if peers else snippet.code
    if "spark" in snippet.needs:
        request.getfixturevalue("spark_examples")(snippet, code)
        return
    cwd = _workdir(tmp_path, peers)
    if not snippet.is_python:
        env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=240)
        assert done.returncode == snippet.exit, (
            f"{snippet.id} exited {done.returncode}, expected {snippet.exit}\n--- stdout\n{done.stdout[-4000:]}"
            f"\n--- stderr\n{done.stderr[-4000:]}")
        return
    if snippet.cont:
        assert snippet.page in _NAMESPACES, f"{snippet.id}: the page's previous example did not run"
        namespace = _NAMESPACES[snippet.page]
    else:
        namespace = {"__name__": "__main__"}
    monkeypatch.chdir(cwd)
    exec(compile(code, snippet.id, "exec"), namespace)  # running the docs is the test
    _NAMESPACES[snippet.page] = namespace
