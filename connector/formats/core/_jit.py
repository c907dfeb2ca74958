"""``numba.njit`` with an on-disk cache where one can be written (numba, slow to import, is
imported at the first decoration: by the kernel modules, themselves imported lazily).

numba looks for a cache directory next to the source (``__pycache__``), then in the user's
cache directory (``NUMBA_CACHE_DIR`` overrides both); when none is writable — a package
installed read-only for a user without a home directory, say — ``cache=True`` raises at
decoration time. Then the kernel compiles once per process instead: slower to start, the same
code.
"""
from __future__ import annotations

__all__ = ["njit"]


def njit(**options):
    """A decorator: ``numba.njit(cache=True, **options)``, or without the cache when numba
    finds no writable cache directory for the function's file."""
    import numba

    def wrap(fn):
        try:
            return numba.njit(cache=True, **options)(fn)
        except RuntimeError as e:  # "cannot cache function ...: no locator available"
            if "cannot cache" not in str(e):
                raise
            return numba.njit(cache=False, **options)(fn)
    return wrap
