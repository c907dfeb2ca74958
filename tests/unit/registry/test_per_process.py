"""The one owner of "a client per configuration and process" (registry._process.PerProcess), used by
both the caching registry clients and the DEK registry clients."""
from __future__ import annotations

import os
import select
import threading

import pytest

from registry import _cache, _dek
from registry._process import PerProcess


def test_both_client_kinds_share_the_one_per_process_map():
    assert isinstance(_cache._clients, PerProcess)
    assert isinstance(_dek._clients, PerProcess)


def test_made_once_per_key_and_cleared_with_close():
    made: list[str] = []
    closed: list[list[str]] = []
    clients = PerProcess(lambda key: made.append(key) or [key])
    assert clients.get("a") is clients.get("a")
    assert clients.get("b") == ["b"] and made == ["a", "b"]

    def close(item):
        closed.append(item)
        raise RuntimeError("closing is best effort")

    clients.clear(close)
    assert sorted(closed) == [["a"], ["b"]]
    assert clients.get("a") == ["a"] and made == ["a", "b", "a"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_a_client_is_being_made_starts_afresh():
    """Another thread holds the map's lock (making a client) when the process forks: the child
    gets its own lock and map, so it neither deadlocks nor sees the parent's clients."""
    entered, release = threading.Event(), threading.Event()

    def make(key):
        if key == "slow":
            entered.set()
            release.wait()
        return [key, os.getpid()]

    clients = PerProcess(make)
    parent = clients.get("a")
    maker = threading.Thread(target=clients.get, args=("slow",))
    maker.start()
    entered.wait()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            child = clients.get("a")
            os.write(w, b"1" if child is not parent and child[1] == os.getpid() else b"0")
        finally:
            os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 30)  # a deadline, not a synchronisation
        answer = os.read(r, 1) if ready else b"deadlock"
    finally:
        release.set()
        maker.join()
        if not ready:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(r)
    assert answer == b"1"
