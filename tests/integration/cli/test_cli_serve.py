"""``asyncapi-kafka serve``: a warm process that runs ``peek`` for the command line.

Everything as users run it: the server and each ``peek`` are fresh processes, the socket lives
in a runtime directory of the test's own (``XDG_RUNTIME_DIR``), the data is the peek tests'
topic on the mock cluster. A peek that went through the server never imported numba itself
(the server's child did); one that did not ran in its own process.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.peek_data import BAD, make_topic

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[3]
# The command line as its console script runs it, telling afterwards whether this process
# decoded the records itself (numba is imported by the first kernel that runs).
PROBE = ("import json, sys; sys.argv = ['asyncapi-kafka'] + sys.argv[1:]\n"
         "from connector.cli import main\n"
         "code = main()\n"
         "print('IN_PROCESS', json.dumps('numba' in sys.modules), file=sys.stderr)\n"
         "sys.exit(code)\n")


@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


@pytest.fixture(scope="module")
def topic(kafka, registry, tmp_path_factory):
    return make_topic(kafka, registry, tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    d.chmod(0o700)
    return d


def _env(runtime, **more) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "ASYNCAPI_KAFKA_NO_SERVER"}
    env.update(XDG_RUNTIME_DIR=str(runtime), **more)
    return env


def _serve(runtime):
    proc = subprocess.Popen([sys.executable, "-m", "connector", "serve", "--idle", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(runtime), cwd=ROOT)
    line = proc.stdout.readline()  # printed once the socket listens
    assert line.startswith("serving peek at "), line + proc.stderr.read()[-2000:]
    return proc, line.split(" at ", 1)[1].strip()


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


@pytest.fixture(scope="module")
def server(runtime):
    proc, path = _serve(runtime)
    yield proc, path
    _stop(proc)


def _peek(topic, runtime, *flags, cwd=ROOT, doc=None, **env) -> tuple[int, str, str, bool]:
    path, options, _ = topic
    args = ["peek", doc or path, "--channel", "events", *flags]
    for k, v in options.items():
        args += ["-o", f"{k}={v}"]
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          env=_env(runtime, **env), cwd=cwd)
    in_process = json.loads(done.stderr.rsplit("IN_PROCESS ", 1)[1])
    return done.returncode, done.stdout, done.stderr.rsplit("IN_PROCESS ", 1)[0], in_process


def test_a_served_peek_prints_what_a_peek_of_its_own_prints(topic, runtime, server):
    served = _peek(topic, runtime, "-n", "5", "--json")
    alone = _peek(topic, runtime, "-n", "5", "--json", ASYNCAPI_KAFKA_NO_SERVER="1")
    assert served[3] is False and alone[3] is True  # the first went through the server
    assert served[0] == alone[0] == 0
    assert served[1] == alone[1] and len(served[1].splitlines()) == 5
    table = _peek(topic, runtime, "-n", "1", "--from-end")
    assert table[0] == 0 and table[3] is False and f"k{BAD}" in table[1] and "ERROR: " in table[1]


def test_errors_exit_codes_and_the_working_directory_reach_the_client(topic, runtime, server, tmp_path):
    code, out, err, in_process = _peek(topic, runtime, "--partition", "9")
    assert (code, out, in_process) == (2, "", False)
    assert "no partition 9" in err
    # a relative document path is the client's, not the server's
    path = Path(topic[0])
    code, out, _, in_process = _peek(topic, runtime, "-n", "1", "--json", cwd=path.parent, doc=path.name)
    assert (code, in_process) == (0, False) and json.loads(out)["value"] == {"id": 0, "name": "n0"}


def test_another_installation_or_setting_is_not_served(topic, runtime, server):
    # NUMBA_* settings are read when numba is imported: a server imported it with others
    code, out, _, in_process = _peek(topic, runtime, "-n", "1", "--json", NUMBA_OPT="2")
    assert (code, in_process) == (0, True)


def test_the_server_stops_on_sigterm_and_peek_runs_alone_again(topic, tmp_path):
    runtime = tmp_path / "own"
    proc, path = _serve(runtime)
    try:
        assert os.path.exists(path) and os.stat(os.path.dirname(path)).st_mode & 0o077 == 0
        assert _peek(topic, runtime, "-n", "1", "--json")[3] is False
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert not os.path.exists(path)
        code, out, _, in_process = _peek(topic, runtime, "-n", "1", "--json")
        assert (code, in_process) == (0, True)
    finally:
        _stop(proc)


def test_an_idle_server_stops_by_itself(tmp_path):
    runtime = tmp_path / "idle"
    proc = subprocess.run([sys.executable, "-m", "connector", "serve", "--idle", "0.5"], capture_output=True,
                          text=True, env=_env(runtime), cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("serving peek at "), proc.stderr[-2000:]
    assert not list(runtime.glob("**/*.sock"))


def test_a_socket_directory_others_can_use_is_refused(topic, tmp_path):
    runtime = tmp_path / "open"
    (runtime / "asyncapi-kafka").mkdir(parents=True)
    (runtime / "asyncapi-kafka").chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "connector", "serve"], capture_output=True, text=True,
                          env=_env(runtime), cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "must be a directory of this user with mode 0700" in proc.stderr
    code, out, _, in_process = _peek(topic, runtime, "-n", "1", "--json")
    assert (code, in_process) == (0, True)
