"""``numba.njit`` with an on-disk cache that a read-only install can still keep, and a word to
the user when a kernel compiles (numba, slow to import, is imported at the first decoration:
by the kernel modules, themselves imported lazily).

Where the compiled code is kept, first writable wins:

1. ``NUMBA_CACHE_DIR``, when set (numba's own setting);
2. next to the source (``__pycache__``), as numba does by default;
3. :func:`cache_dir`: ``$ASYNCAPI_KAFKA_CACHE_DIR``, else ``$XDG_CACHE_HOME/asyncapi-kafka/numba``,
   else ``~/.cache/asyncapi-kafka/numba`` — for a package installed read-only (a system
   site-packages, a container image, a packed environment on executors).

When none is writable (no home directory, say) the kernel compiles once per process instead:
slower to start, the same code.

A compile takes seconds per kernel (a minute or two for all of them, once per machine and
version): the first one in a process prints a line on stderr naming the kernel and where the
result is kept, and one line when each is done, with its time (through the ``asyncapi_kafka``
logger at INFO instead, when the application configured logging). Loading a cached kernel
prints nothing.
"""
from __future__ import annotations

import logging
import os
import pickle
import sys
import threading
import time
from typing import Any

__all__ = ["njit", "cache_dir", "load_cached"]

log = logging.getLogger("asyncapi_kafka.jit")

_APP = "asyncapi-kafka"


def cache_dir() -> str:
    """Where compiled kernels go when the package's own directory is not writable."""
    explicit = os.environ.get("ASYNCAPI_KAFKA_CACHE_DIR")
    if explicit:
        return os.path.join(explicit, "numba")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, _APP, "numba")


_cache_class = None
_listening = False
_lock = threading.Lock()


def _function_cache():
    """numba's ``FunctionCache`` with this module's locators (numba's class attribute is shared
    by every numba function of the process, the user's too: a subclass keeps ours to ours)."""
    global _cache_class
    if _cache_class is not None:
        return _cache_class
    from numba.core import caching

    def first(*names):  # numba 0.60 spells them with a leading underscore
        return next(getattr(caching, n) for n in names if hasattr(caching, n))

    base = first("_CacheLocator")
    mixin = first("_SourceFileBackedLocatorMixin")

    class UserCacheLocator(mixin, base):  # type: ignore[valid-type, misc]
        """:func:`cache_dir`, one sub-directory per source directory (as numba names them)."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(cache_dir(), self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self):
            return self._cache_path

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = [first("UserProvidedCacheLocator", "_UserProvidedCacheLocator"),
                            first("InTreeCacheLocator", "_InTreeCacheLocator"), UserCacheLocator]

    class Cache(caching.FunctionCache):
        _impl_class = Impl

    _cache_class = Cache
    return Cache


def njit(**options):
    """A decorator: ``numba.njit(**options)`` cached on disk where it can be (see the module
    docstring), or uncached when no cache directory is writable."""
    import numba

    _listen()

    def wrap(fn):
        dispatcher = numba.njit(cache=False, **options)(fn)
        try:
            dispatcher._cache = _function_cache()(fn)
        except RuntimeError as e:  # "cannot cache function ...: no locator available"
            if "cannot cache" not in str(e):
                raise
        else:
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


def load_cached() -> int:
    """Load every compiled kernel that the disk cache holds for this machine and this code, of
    the kernel modules imported so far; compile nothing. For a process that forks workers (a
    Spark worker daemon, ``asyncapi-kafka serve``): each worker then starts with the kernels in
    memory instead of loading them itself. Returns how many were loaded."""
    if "numba" not in sys.modules:
        return 0
    from numba.core.dispatcher import Dispatcher

    loaded = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("connector.") or module is None:
            continue
        for obj in list(vars(module).values()):
            if not isinstance(obj, Dispatcher) or obj.py_func.__module__ != name:
                continue
            disp: Any = obj  # numba's private cache API, typed loosely
            try:  # numba's cache index: (signature, machine, hash of the code) -> data file
                cache = disp._cache
                index = cache._cache_file._load_index()
                codegen = disp.targetctx.codegen()
                sigs = [key[0] for key in index if cache._index_key(key[0], codegen) == key]
            except (AttributeError, OSError, ValueError, TypeError):  # uncached, or another numba
                continue
            for sig in sigs:
                if tuple(sig) not in disp.overloads:
                    disp.compile(sig)  # in the index for this machine and code: a load
                    loaded += 1
    return loaded


def _name(dispatcher) -> str:
    fn = getattr(dispatcher, "py_func", None)
    if fn is None:
        return "a kernel"
    module = fn.__module__.replace("connector.", "").replace("._", ".")
    return f"{module}.{fn.__qualname__}"


def _where(dispatcher) -> str:
    path = getattr(dispatcher._cache, "cache_path", None)
    if path is None:  # NullCache: nowhere writable
        return "nowhere writable: it compiles again in each process"
    if os.path.basename(path) == "__pycache__":
        return "next to the package's source, in __pycache__"
    return os.path.dirname(path)  # the cache root (numba names a sub-directory per source directory)


def _say(text: str) -> None:
    if logging.getLogger("asyncapi_kafka").hasHandlers():
        log.info(text)
    else:
        print(f"asyncapi-kafka: {text}", file=sys.stderr, flush=True)


#: seconds between two "still compiling" lines of one long compile
TICK_S = 15.0


def _tick(name: str, started: float, done: threading.Event) -> None:
    while not done.wait(TICK_S):
        _say(f"  still compiling {name} ({time.perf_counter() - started:.0f} s)")


def _listen() -> None:
    """Report compiles of the connector's kernels (numba's ``numba:compile`` event fires only
    when a kernel is compiled, not when it is loaded from the cache)."""
    global _listening
    with _lock:
        if _listening:
            return
        _listening = True
    from numba.core import event

    class _Compiles(event.Listener):
        def __init__(self):
            self.depth = 0  # helpers compile inside their kernel's compile (numba holds one lock)
            self.started = 0.0
            self.said = False
            self.done: threading.Event | None = None

        def _ours(self, ev) -> bool:
            fn = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
            return fn is not None and fn.__module__.startswith("connector.")

        def on_start(self, ev):
            self.depth += 1
            if self.depth != 1 or not self._ours(ev):
                return
            self.started = time.perf_counter()
            dispatcher = ev.data["dispatcher"]
            if not self.said:
                self.said = True
                _say(f"compiling numba kernels on first use (once per machine and version; kept in {_where(dispatcher)})")
            _say(f"  compiling {_name(dispatcher)} ...")
            self.done = threading.Event()
            threading.Thread(target=_tick, args=(_name(dispatcher), self.started, self.done), daemon=True,
                             name="asyncapi-kafka-compile-progress").start()

        def on_end(self, ev):
            self.depth -= 1
            if self.depth == 0 and self._ours(ev) and self.started:
                if self.done is not None:
                    self.done.set()
                _say(f"  compiled {_name(ev.data['dispatcher'])} in {time.perf_counter() - self.started:.1f} s")
                self.started = 0.0

    event.register("numba:compile", _Compiles())
