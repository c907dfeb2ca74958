"""read_range vs a raw confluent-kafka consume loop on the librdkafka mock cluster.

Produces ~200k records of ~50 bytes over 4 partitions, then times (median of 3):

* baseline: a raw ``Consumer.consume`` loop that only touches ``msg.value()``;
* ``read_range`` over the same partitions, producing Arrow record batches with every column.

The mock cluster's fetch path is slow (FACTS.md), so the ratio, not the absolute rate, is the
number to watch. Run: ``/work/venv/bin/python benchmarks/kafka_read_bench.py [records]``.
"""
from __future__ import annotations

import statistics
import sys
import time

from confluent_kafka import Consumer, TopicPartition

from connector.kafka import KafkaOffsetReader, OffsetRange, read_range
from connector.testing import EmbeddedKafka

TOPIC = "bench"


def raw_loop(conf: dict, ends: dict) -> int:
    c = Consumer({**conf, "group.id": "bench-raw", "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    n = 0
    try:
        for (topic, p), end in ends.items():
            c.assign([TopicPartition(topic, p, 0)])
            seen = 0
            while seen < end:
                for m in c.consume(num_messages=min(10000, end - seen), timeout=1.0):
                    if m.error() is None:
                        m.value()
                        seen += 1
            n += seen
    finally:
        c.close()
    return n


def arrow_read(conf: dict, ends: dict) -> int:
    n = 0
    for (topic, p), end in ends.items():
        for b in read_range(conf, OffsetRange(topic, p, 0, end)):
            n += b.num_rows
    return n


def main(total: int = 200_000) -> None:
    with EmbeddedKafka() as kafka:
        payload = b"x" * 42
        values = [b"%07d" % i + payload for i in range(total)]
        for p in range(4):
            kafka.produce_many(TOPIC, values[p::4], keys=[b"k"] * len(values[p::4]),
                               partition=p, flush=False)
        kafka.flush()
        with KafkaOffsetReader(kafka.conf) as r:
            ends = r.latest(r.partitions_for([TOPIC]))
        assert sum(ends.values()) == total, ends
        results = {}
        for name, fn in (("raw consume loop (value() only)", raw_loop),
                         ("read_range -> Arrow batches", arrow_read)):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                n = fn(kafka.conf, ends)
                times.append(time.perf_counter() - t0)
                assert n == total, (name, n)
            results[name] = statistics.median(times)
        base = results["raw consume loop (value() only)"]
        print(f"records: {total} (~50 B values, 4 partitions, librdkafka mock cluster)")
        for name, sec in results.items():
            print(f"{name:34s} median {sec:7.3f} s  {total / sec:>10,.0f} records/s  "
                  f"ratio vs raw {base / sec:5.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
