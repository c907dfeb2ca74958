"""Where the compiled kernels are kept, and what the user is told when one compiles.

A package installed read-only (a system site-packages, a container image, a packed environment
on executors) keeps its kernels in the user's cache directory; with nowhere writable they compile
per process instead of failing at import. Each scenario runs a real kernel of a copy of the
package in a fresh interpreter, as a user's process would.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from connector.formats.core import njit

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# A small real kernel (the one value write of the Avro and JSON kernels): compiles in a moment.
_RUN = """
import sys
import numpy as np
from connector.formats.core import kernels
if sys.argv[1] == "where":
    print("CACHE", getattr(kernels.emit._cache, "cache_path", None))
    sys.exit(0)
if sys.argv[1] == "preload":
    from connector.formats.core import load_cached
    print("PRELOADED", load_cached(), len(kernels.emit.overloads))
vals, valid, lens = np.zeros(2, np.int64), np.zeros(2, np.uint8), np.zeros(2, np.int64)
ovc = kernels.emit(0, 1, 7, 0, np.zeros(1, np.int64), np.ones(1, np.int64), np.zeros(1, np.int64),
                   vals, valid, lens, 1, -1)
assert ovc == -1 and vals[0] == 7 and valid[0] == 1, (ovc, vals, valid)
print("HITS", sum(kernels.emit.stats.cache_hits.values()), "CACHE", getattr(kernels.emit._cache, "cache_path", None))
"""


def _twice(a):
    return a * 2


def test_with_a_writable_source_directory_the_kernel_is_cached_next_to_it():
    f = njit(nogil=True)(_twice)
    assert f(np.arange(2)).tolist() == [0, 2]
    assert f._cache.cache_path == os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")


def _read_only_copy(tmp_path) -> str:
    """The three packages copied under ``tmp_path/site`` with no writable ``__pycache__``."""
    site = tmp_path / "site"
    for pkg in ("connector", "registry", "wireformat"):
        shutil.copytree(os.path.join(_ROOT, pkg), site / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for dirpath, _, _ in os.walk(site):
        # a regular file where numba would make __pycache__: not writable even for root, who
        # ignores permission bits
        open(os.path.join(dirpath, "__pycache__"), "w").close()
    for dirpath, _, filenames in os.walk(site):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(dirpath, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return str(site)


def _run(site: str, what: str = "call", **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("NUMBA_CACHE_DIR", "ASYNCAPI_KAFKA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    clean.update(env, PYTHONPATH=site, PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", _RUN, what], cwd=site, env=clean, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def read_only_site(tmp_path_factory):
    site = _read_only_copy(tmp_path_factory.mktemp("read-only"))
    yield site
    for dirpath, _, _ in os.walk(site):
        os.chmod(dirpath, stat.S_IRWXU)


def test_a_read_only_install_keeps_its_kernels_in_the_user_cache_and_says_so_once(read_only_site, tmp_path):
    cache = tmp_path / "xdg"
    first = _run(read_only_site, XDG_CACHE_HOME=str(cache))
    where = str(cache / "asyncapi-kafka" / "numba")
    assert "HITS 0 CACHE " + where in first.stdout
    # the user is told what compiles, where it is kept, and how long it took
    assert f"compiling numba kernels on first use (once per machine and version; kept in {where}" in first.stderr
    assert "compiling formats.core.kernels.emit ..." in first.stderr
    assert "compiled formats.core.kernels.emit in " in first.stderr
    assert first.stderr.count("compiling numba kernels on first use") == 1
    assert any(name.endswith(".nbi") for _, _, files in os.walk(cache) for name in files)

    second = _run(read_only_site, XDG_CACHE_HOME=str(cache))
    assert "HITS 1 CACHE " + where in second.stdout
    assert "compil" not in second.stderr  # loading from the cache is silent

    # what a forking process does before it forks: every cached kernel in memory, nothing compiled
    third = _run(read_only_site, "preload", XDG_CACHE_HOME=str(cache))
    assert "PRELOADED 1 1" in third.stdout and "HITS 1 " in third.stdout
    assert "compil" not in third.stderr


def test_the_cache_directory_can_be_named(read_only_site, tmp_path):
    out = _run(read_only_site, "where", ASYNCAPI_KAFKA_CACHE_DIR=str(tmp_path / "mine"))
    assert "CACHE " + str(tmp_path / "mine" / "numba") in out.stdout


def test_numba_cache_dir_wins_when_set(read_only_site, tmp_path):
    out = _run(read_only_site, "where", NUMBA_CACHE_DIR=str(tmp_path / "numba-own"), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert "CACHE " + str(tmp_path / "numba-own") in out.stdout


def test_with_nowhere_writable_the_kernel_compiles_per_process(read_only_site, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    out = _run(read_only_site, XDG_CACHE_HOME=str(blocked), HOME=str(blocked))
    assert "HITS 0" in out.stdout
    assert "nowhere writable: it compiles again in each process" in out.stderr


def test_importing_the_formats_does_not_import_numba():
    """numba takes a quarter of a second to import: only the first decode that runs a kernel
    pays it (peek's and the CLI's cold start do not)."""
    code = ("import sys, connector.formats, connector.formats.avro, connector.formats.json_schema, "
            "connector.formats.protobuf; print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


def test_a_cache_index_naming_a_class_that_is_gone_is_stale_not_an_error(tmp_path, monkeypatch):
    """Kernels take NamedTuples, which numba pickles into its cache index by name; after an upgrade
    that renamed one, the old index (left next to the new source) must be recompiled over."""
    import importlib
    import pickle
    import sys
    import textwrap

    import numba

    src = textwrap.dedent('''
        from typing import NamedTuple
        import numpy as np
        from connector.formats.core import njit

        class {name}(NamedTuple):
            a: np.ndarray

        @njit(nogil=True)
        def total(s):
            return s.a.sum()
    ''')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "stale_kernel.py").write_text(src.format(name="Old"))
    mod = importlib.import_module("stale_kernel")
    assert mod.total(mod.Old(np.arange(4))) == 6  # writes the index, naming stale_kernel.Old
    index = next((tmp_path / "cache").rglob("*.nbi"))
    with open(index, "rb") as f:
        pickle.load(f)  # numba's version
        assert b"Old" in f.read()
    del sys.modules["stale_kernel"]
    (tmp_path / "stale_kernel.py").write_text(src.format(name="New") + "\n# changed\n")
    mod = importlib.import_module("stale_kernel")
    assert mod.total(mod.New(np.arange(5))) == 10


def test_a_long_compile_says_it_is_still_going(monkeypatch):
    """Between a kernel's first and last line, a line every TICK_S seconds (a compile can take a
    minute on a busy machine: the user must not wonder whether anything happens)."""
    import threading

    from connector.formats.core import _jit

    said = []
    done = threading.Event()

    def say(text):
        said.append(text)
        done.set()  # one line is enough

    monkeypatch.setattr(_jit, "_say", say)
    monkeypatch.setattr(_jit, "TICK_S", 0.001)
    _jit._tick("formats.avro.vm.rows", 0.0, done)
    assert len(said) == 1 and said[0].startswith("  still compiling formats.avro.vm.rows (")
