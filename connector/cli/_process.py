"""Settings of the command line's own process (not a library caller's)."""
from __future__ import annotations

import sys

__all__ = ["pyarrow_without_pandas"]


def pyarrow_without_pandas() -> None:
    """Tell pyarrow, in this process, that pandas is not there (unless it is already imported).

    pyarrow's first conversion of a Python or numpy value imports pandas only to ask whether
    the value is a pandas object: 0.2-0.4 s of CPU, a third of a ``peek``. In a command that
    never creates a pandas object the answer is always no. pandas is refused to that one
    question; pyarrow's own pandas functions (``to_pandas``) still import it when called, so
    this changes nothing but the time. Only for the command line's own process: a library
    caller's process may hold pandas objects later.
    """
    if "pandas" in sys.modules:
        return
    import importlib.abc

    import pyarrow as pa

    class _NotHere(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "pandas":
                raise ImportError("pandas is not used by this command")
            return None

    refuse = _NotHere()
    sys.meta_path.insert(0, refuse)
    try:
        pa.array([0])  # the one conversion on which pyarrow asks (once per process)
    finally:
        sys.meta_path.remove(refuse)
