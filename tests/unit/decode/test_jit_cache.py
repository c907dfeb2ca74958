"""The compiled kernels work where numba finds no writable cache directory (a package installed
read-only, no home directory): they compile per process instead of failing at import."""
from __future__ import annotations

import numpy as np
from numba.core import caching

from connector.formats.core import njit


def _twice(a):
    return a * 2


def test_without_a_writable_cache_directory_the_kernel_compiles_uncached(monkeypatch):
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])  # what numba finds then
    f = njit(nogil=True)(_twice)
    assert f(np.arange(3)).tolist() == [0, 2, 4]
    assert type(f._cache).__name__ == "NullCache"


def test_with_one_the_kernel_is_cached_on_disk():
    f = njit(nogil=True)(_twice)
    assert type(f._cache).__name__ == "FunctionCache"
    assert f(np.arange(2)).tolist() == [0, 2]


def test_importing_the_formats_does_not_import_numba():
    """numba takes a quarter of a second to import: only the first decode that runs a kernel
    pays it (peek's and the CLI's cold start do not)."""
    import subprocess
    import sys

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
