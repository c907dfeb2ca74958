"""Schema lookups through the process-wide caching client against a real HTTP registry.

Resolves N ids (default 1,000,000) drawn from 100 distinct ids via ``client_for(config).lookup``,
single-threaded and with 4 threads, and checks that exactly 100 HTTP requests reached the
registry each run. The baseline is a bare ``dict.get`` over the same keys in the same run, so
the ratio (not the absolute rate) is what to compare across machines.

Run: ``python benchmarks/registry_bench.py [--lookups N] [--repeat R]``
"""
from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

from registry import RegistryConfig, client_for
from registry._cache import clear_clients
from connector.testing import RegistryServer

DISTINCT = 100


def _keys(n: int, ids: list[int]) -> list[tuple[str, int]]:
    rnd = random.Random(42)
    return [("confluent", rnd.choice(ids)) for _ in range(n)]


def _run(config: RegistryConfig, keys, threads: int) -> float:
    client = client_for(config)
    chunks = [keys[i::threads] for i in range(threads)]
    barrier = threading.Barrier(threads + 1)

    def work(chunk):
        lookup = client.lookup
        barrier.wait()
        for k in chunk:
            lookup(k)

    ts = [threading.Thread(target=work, args=(c,)) for c in chunks]
    for t in ts:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in ts:
        t.join()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lookups", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with RegistryServer() as server:
        ids = [server.register(f"s{i}-value", f'{{"type":"fixed","name":"F{i}","size":{i + 1}}}')
               for i in range(DISTINCT)]
        keys = _keys(args.lookups, ids)
        config = RegistryConfig(urls=(server.url,))
        table = {k: object() for k in set(keys)}
        base = []
        for _ in range(args.repeat):
            get = table.get
            start = time.perf_counter()
            for k in keys:
                get(k)
            base.append(time.perf_counter() - start)
        base_rate = args.lookups / statistics.median(base)
        print(f"baseline dict.get: {base_rate:,.0f} lookups/s (median of {args.repeat})")
        for threads in (1, 4):
            times = []
            for _ in range(args.repeat):
                clear_clients()
                server.reset_counts()
                times.append(_run(config, keys, threads))
                requests = server.request_count()
                assert requests == DISTINCT, f"expected {DISTINCT} HTTP requests, saw {requests}"
            rate = args.lookups / statistics.median(times)
            print(f"client_for(...).lookup, {threads} thread(s): {rate:,.0f} lookups/s "
                  f"(median of {args.repeat}; {rate / base_rate:.2f}x of dict.get); "
                  f"HTTP requests per run: {requests} for {args.lookups:,} lookups")
        stats = client_for(config).stats()
        print(f"last run stats: {stats}")


if __name__ == "__main__":
    main()
