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
