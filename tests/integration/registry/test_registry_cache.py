"""Caching clients: exact request counts against a real HTTP registry."""
from __future__ import annotations

import os
import threading
import time

import pytest

from registry import RegistryUnavailable, SchemaNotFound, client_for
from registry._cache import CachingRegistry
from registry._confluent import ConfluentRegistry

# as registries store it (Karapace, the stand-in): compact, keys sorted
ORDER = '{"fields":[{"name":"id","type":"long"}],"name":"Order","type":"record"}'


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _caching(server, fast_config, clock=None, **kw):
    cfg = fast_config(server.url, **kw)
    return CachingRegistry(ConfluentRegistry(cfg), cfg, clock=clock or time.monotonic)


def test_hits_make_no_requests(server, fast_config):
    sid = server.register("orders-value", ORDER)
    c = client_for(fast_config(server.url))
    for _ in range(50):
        assert c.lookup(("confluent", sid)).id == sid
        assert c.get_schema_by_id(sid).id == sid
    assert server.request_count() == 1
    st = c.stats()
    assert (st.requests, st.misses, st.errors) == (1, 1, 0)
    assert st.hits == 99


def test_client_for_is_shared_per_config(server, fast_config):
    cfg = fast_config(server.url)
    assert client_for(cfg) is client_for(fast_config(server.url))
    assert client_for(cfg) is not client_for(fast_config(server.url, max_retries=1))


def _wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.001)


def test_concurrent_misses_are_coalesced_into_one_request(server, fast_config):
    sid = server.register("orders-value", ORDER)
    c = client_for(fast_config(server.url))
    server.pause()  # hold the first request until every thread is waiting on it
    barrier = threading.Barrier(10)
    results, errors = [], []

    def worker():
        barrier.wait()
        try:
            results.append(c.get_schema_by_id(sid))
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for t in threads:
        t.start()
    assert server.wait_for_requests(1)
    _wait_until(lambda: c.stats().coalesced == 9)
    server.resume()
    for t in threads:
        t.join()
    assert not errors and len(results) == 10 and all(r.id == sid for r in results)
    assert server.request_count() == 1
    st = c.stats()
    assert (st.requests, st.coalesced, st.misses) == (1, 9, 10)


def test_coalesced_waiters_share_the_error(server, fast_config):
    c = client_for(fast_config(server.url, cache_notfound_ttl_s=0))
    server.pause()
    out = []
    threads = [threading.Thread(target=lambda: out.append(_catch(c.get_schema_by_id, 42))) for _ in range(4)]
    for t in threads:
        t.start()
    assert server.wait_for_requests(1)
    _wait_until(lambda: c.stats().coalesced == 3)
    server.resume()
    for t in threads:
        t.join()
    assert [type(e) for e in out] == [SchemaNotFound] * 4
    assert all(e.is_records_fault for e in out)  # a typed 40403 is a registry's own answer
    assert server.request_count("/schemas/ids") == 1 and server.request_count("/subjects") == 0


def _catch(fn, *a):
    try:
        fn(*a)
    except Exception as e:
        return e
    return None


def test_negative_cache_expires(server, fast_config):
    clock = FakeClock()
    c = _caching(server, fast_config, clock, cache_notfound_ttl_s=30)
    for _ in range(3):
        with pytest.raises(SchemaNotFound):
            c.get_schema_by_id(1)
    assert server.request_count("/schemas/ids") == 1
    server.register("orders-value", ORDER)  # gets id 1 now
    with pytest.raises(SchemaNotFound):
        c.get_schema_by_id(1)
    clock.now += 31
    assert c.get_schema_by_id(1).text == ORDER
    assert server.request_count("/schemas/ids") == 2


def test_5xx_is_never_cached(server, fast_config):
    sid = server.register("orders-value", ORDER)
    c = _caching(server, fast_config, max_retries=0)
    server.fail_next(1, 503)
    with pytest.raises(RegistryUnavailable):
        c.get_schema_by_id(sid)
    assert c.get_schema_by_id(sid).id == sid
    assert server.request_count() == 2
    assert c.stats().errors == 1


def test_latest_is_cached_for_its_ttl(server, fast_config):
    clock = FakeClock()
    c = _caching(server, fast_config, clock, cache_latest_ttl_s=60)
    server.register("orders-value", ORDER)
    assert c.get_latest("orders-value").version == 1
    v2 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"x","type":"int"}]}'
    server.register("orders-value", v2)
    clock.now += 59
    assert c.get_latest("orders-value").version == 1
    assert server.request_count("/subjects/orders-value/versions/latest") == 1
    clock.now += 2
    assert c.get_latest("orders-value").version == 2
    assert server.request_count("/subjects/orders-value/versions/latest") == 2


def test_bounded_cache_evicts_least_recently_used(server, fast_config):
    ids = [server.register(f"s{i}", f'{{"type":"fixed","name":"F{i}","size":{i + 1}}}') for i in range(3)]
    c = _caching(server, fast_config, cache_max_entries=2)
    c.get_schema_by_id(ids[0])
    c.get_schema_by_id(ids[1])
    c.get_schema_by_id(ids[0])
    c.get_schema_by_id(ids[2])  # evicts ids[1]
    server.reset_counts()
    c.get_schema_by_id(ids[0])
    assert server.request_count() == 0
    c.get_schema_by_id(ids[1])
    assert server.request_count() == 1


def test_references_are_cached_across_schemas(server, fast_config):
    from registry._types import SchemaReference
    server.register("money", '{"type":"record","name":"Money","fields":[{"name":"c","type":"long"}]}')
    a = server.register("a-value", '{"type":"record","name":"A","fields":[{"name":"m","type":"Money"}]}',
                        references=[SchemaReference("Money", "money", 1)])
    b = server.register("b-value", '{"type":"record","name":"B","fields":[{"name":"m","type":"Money"}]}',
                        references=[SchemaReference("Money", "money", 1)])
    c = client_for(fast_config(server.url))
    assert c.get_schema_by_id(a).resolved_references[0][0] == "Money"
    assert c.get_schema_by_id(b).resolved_references[0][0] == "Money"
    assert server.request_count("/subjects/money/versions/1") == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_client_recreated_after_fork(server, fast_config):
    sid = server.register("orders-value", ORDER)
    cfg = fast_config(server.url)
    parent = client_for(cfg)
    parent.get_schema_by_id(sid)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: must get a new client (fresh cache) and still work
        try:
            child = client_for(cfg)
            ok = child is not parent and child.stats().requests == 0 and child.get_schema_by_id(sid).id == sid
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    answer = os.read(r, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"
    assert server.request_count() == 2  # one from the parent, one from the child's fresh cache
