"""Objects made once per key in each process: the caching registry clients
(:func:`registry.client_for`) and the DEK registry clients (:func:`registry.dek_registry_for`).

Spark's Python workers are forked from a daemon, so a process may inherit its parent's clients:
their HTTP sessions and locks must not be shared with the child. A child starts afresh, without
closing what it inherited (that would shut sockets the parent still uses).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class PerProcess(Generic[K, V]):
    """A thread-safe ``key -> object`` map whose objects ``make(key)`` builds on first use in
    each process.

    Examples
    --------
    >>> made = PerProcess(lambda key: [key])
    >>> made.get("k") is made.get("k")
    True
    """

    def __init__(self, make: Callable[[K], V]):
        self._make = make
        self._forked()
        _INSTANCES.append(self)

    def _forked(self) -> None:
        self._items: dict[K, V] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def get(self, key: K) -> V:
        """The object for ``key`` in this process."""
        item = self._items.get(key)
        if item is not None and self._pid == os.getpid():
            return item
        with self._lock:
            if self._pid != os.getpid():  # forked without the at-fork hook (no os.register_at_fork)
                self._items.clear()
                self._pid = os.getpid()
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = self._make(key)
            return item

    def clear(self, close: Callable[[V], object] | None = None) -> None:
        """Drop every object, calling ``close`` on each first (best effort)."""
        with self._lock:
            if close is not None:
                for item in self._items.values():
                    try:
                        close(item)
                    except Exception:  # noqa: BLE001 - closing is best effort
                        pass
            self._items.clear()
            self._pid = os.getpid()


_INSTANCES: list[PerProcess] = []


def _after_fork() -> None:
    for instance in _INSTANCES:
        instance._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
