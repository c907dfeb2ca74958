"""The read path does not make the kernel page librdkafka's buffers back in on every fetch
(glibc's trim and mmap thresholds, :func:`connector.kafka._native.tune_malloc`).

The reads run in a fresh Python process (the tuning is once per process), against the session's
Kafka cluster, and count the minor page faults of each read of the same records."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import uuid

import pytest

pytestmark = pytest.mark.kafka

_READ = r"""
import json, resource, statistics, sys
from connector.kafka import OffsetRange, read_ranges
from connector.kafka._native import tune_malloc
conf, ranges = json.loads(sys.argv[1]), [OffsetRange(*r) for r in json.loads(sys.argv[2])]
faults, rows = [], set()
for _ in range(int(sys.argv[3])):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    rows.add(sum(b.num_rows for _, b in read_ranges(conf, ranges, include_headers=False)))
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"rows": sorted(rows), "faults": faults, "tuned_again": tune_malloc()}))
"""


def _read(conf, ranges, env, reads):
    out = subprocess.run([sys.executable, "-c", _READ, json.dumps(conf), json.dumps(ranges), str(reads)],
                         capture_output=True, text=True, timeout=120, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_read_does_not_page_fault_per_record(kafka):
    from confluent_kafka import Producer

    topic = f"faults-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 4)
    producer = Producer({**kafka.conf, "compression.type": "lz4", "linger.ms": 50, "log_level": 0})
    values = [os.urandom(60) + bytes(48) for _ in range(5000)]  # ~108 B, compressible
    for p in range(4):
        for i in range(25_000):
            producer.produce(topic, values[i % len(values)], partition=p)
            if i % 10_000 == 0:
                producer.poll(0)
    assert producer.flush(60) == 0
    ranges = [(topic, p, 0, 25_000) for p in range(4)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    got = _read(kafka.conf, ranges, env, 6)
    assert got["rows"] == [100_000] and got["tuned_again"] is False
    # once the heap has grown to its peak (three reads), glibc's defaults still page-fault every
    # fetch back in: 7,000-14,000 faults a read here; tuned: a few dozen
    assert statistics.median(got["faults"][3:]) < 1000, got
    # a process whose environment sets a threshold is left alone (and reads the same)
    assert _read(kafka.conf, ranges, {**env, "MALLOC_TRIM_THRESHOLD_": "131072"}, 1)["rows"] == [100_000]
