"""Objects compiled once per Python worker process and reused across tasks.

Decoders and encoders travel pickled as schema text and options; what they compile from it
(schema plans, Protobuf pools, numba kernels) lives here, keyed by the process id as well, so a
forked worker never uses a parent's objects.
"""
from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, Callable, Hashable, TypeVar

__all__ = ["ProcessCache", "SchemaBound"]

T = TypeVar("T")


class ProcessCache:
    """A thread-safe ``key -> object`` cache private to each process.

    Examples
    --------
    >>> cache = ProcessCache()
    >>> cache.get("k", lambda: [1])
    [1]
    >>> cache.get("k", lambda: [2])  # built once per process
    [1]
    """

    def __init__(self) -> None:
        self._items: dict[tuple[int, Hashable], object] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The object for ``key`` in this process, built by ``build()`` on first use."""
        k = (os.getpid(), key)
        item = self._items.get(k)
        if item is None:
            with self._lock:
                item = self._items.get(k)
                if item is None:
                    item = self._items[k] = build()
        return item  # type: ignore[return-value]


class SchemaBound:
    """Base of :class:`connector.formats.Decoder` and :class:`connector.formats.Encoder`: what
    pickles (format, schema text, references, message name, options) and the key of the
    objects compiled from it in each process (:class:`ProcessCache`)."""

    _PICKLED: tuple[str, ...] = ("fmt", "text", "refs", "message", "options", "_key")

    def __init__(self, fmt: str, text: str | None, refs: tuple, message: str | None, options: Any):
        self.fmt, self.text, self.refs, self.message, self.options = fmt, text, refs, message, options
        self._key = hashlib.sha256(repr((fmt, text, refs, message, options)).encode()).hexdigest()

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._PICKLED}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
