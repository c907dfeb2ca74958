"""``numba.njit`` with an on-disk cache where one can be written (numba, slow to import, is
imported at the first decoration: by the kernel modules, themselves imported lazily).

numba looks for a cache directory next to the source (``__pycache__``), then in the user's
cache directory (``NUMBA_CACHE_DIR`` overrides both); when none is writable — a package
installed read-only for a user without a home directory, say — ``cache=True`` raises at
decoration time. Then the kernel compiles once per process instead: slower to start, the same
code.
"""
from __future__ import annotations

import pickle

__all__ = ["njit"]


def njit(**options):
    """A decorator: ``numba.njit(cache=True, **options)``, or without the cache when numba
    finds no writable cache directory for the function's file."""
    import numba

    def wrap(fn):
        try:
            dispatcher = numba.njit(cache=True, **options)(fn)
        except RuntimeError as e:  # "cannot cache function ...: no locator available"
            if "cannot cache" not in str(e):
                raise
            return numba.njit(cache=False, **options)(fn)
        _tolerate_stale_index(dispatcher)
        return dispatcher
    return wrap


def _tolerate_stale_index(dispatcher) -> None:
    """Treat a cache index that no longer unpickles as stale. Kernels take named structures
    (``NamedTuple`` classes), which numba pickles into the index by name; an index written by an
    older version of the code (left next to the new source by an upgrade: pip does not know
    numba's files) may name a class that is gone, and numba unpickles it before it checks the
    source's stamp: the first decode would raise ``AttributeError`` where it should recompile."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None:
        return
    load = cache_file._load_index

    def load_index():
        try:
            return load()
        except (AttributeError, ImportError, EOFError, ValueError, TypeError, pickle.UnpicklingError):
            return {}  # the next save writes a fresh index
    cache_file._load_index = load_index
