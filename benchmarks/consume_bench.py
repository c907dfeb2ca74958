"""The consume step alone: ways to get an offset range into Arrow, against the raw consume loop.

One process, one core, the librdkafka mock cluster, the realistic order record of
``spark_bench`` (Confluent-framed, ~110 B). Every candidate reads the same partitions one
after another and is timed against the raw loop in the same run: a warm-up of every
candidate first, then ``runs`` rounds in which the candidates alternate (the mock's fetch
path swings by several times between cold and warm, FACTS.md), medians per candidate.

Candidates:

* ``raw``: ``Consumer.consume(10000)``, ``msg.value()`` only, one consumer re-assigned per
  partition (the baseline of ``spark_bench``);
* ``raw poll``: the same with ``Consumer.poll()`` per message;
* ``read_range``: :func:`connector.kafka.read_range` as the source calls it (a fresh consumer
  per range, every column, Arrow out), with several ``batch_size`` values and librdkafka
  fetch settings;
* ``consume only``: ``read_range``'s native consumer and fetch loop without building Arrow
  (what the Arrow step costs is the difference);
* ``Message objects to Arrow``: the read path before the native consumer (a confluent-kafka
  ``Message`` per record, columns from its accessors), kept to measure what the native path
  saves.

Besides wall time, the CPU time of the consuming thread (``time.thread_time``) is printed:
librdkafka's own threads fetch and decompress in parallel, so the thread's CPU is what the
read costs the Python worker.

Run: ``python -m benchmarks.consume_bench [--records N] [--partitions P] [--runs R]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from confluent_kafka import Consumer, TopicPartition

TOPIC = "consume-bench"


def _raw(conf: dict, ends: dict, *, poll: bool = False, batch: int = 10000) -> int:
    c = Consumer({**conf, "group.id": "bench-raw", "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    n = 0
    deadline = time.monotonic() + 300
    try:
        for (topic, p), end in ends.items():
            c.assign([TopicPartition(topic, p, 0)])
            seen = 0
            while seen < end:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"raw loop stalled at {topic}-{p} offset {seen}")
                if poll:
                    m = c.poll(1.0)
                    if m is not None and m.error() is None:
                        m.value()
                        seen += 1
                    continue
                for m in c.consume(num_messages=min(batch, end - seen), timeout=1.0):
                    if m.error() is None:
                        m.value()
                        seen += 1
            n += seen
    finally:
        c.close()
    return n


def raw_loop(conf: dict, ends: dict) -> int:
    """The baseline: ``consume(10000)`` and ``value()`` of each record."""
    return _raw(conf, ends)


def _read_range(conf: dict, ends: dict, **kw) -> int:
    from connector.kafka import OffsetRange, read_range

    n = 0
    for (topic, p), end in ends.items():
        for b in read_range(conf, OffsetRange(topic, p, 0, end), **kw):
            n += b.num_rows
    return n


def _consume_only(conf: dict, ends: dict, batch: int = 10000) -> int:
    """``read_range``'s native consumer and fetch loop, messages destroyed without building
    Arrow: the cost of the fetch alone."""
    from connector.kafka import OffsetRange
    from connector.kafka._consume import _close_consumer, _consumer_conf, _fetch, _open_consumer
    from connector.kafka._fetch_errors import Progress

    n = 0
    for (topic, p), end in ends.items():
        c = _open_consumer(_consumer_conf(conf, "read_committed"), batch)
        try:
            rng = OffsetRange(topic, p, 0, end)
            c.assign(topic, p, 0)
            nxt = 0
            progress = Progress(60.0)
            while nxt < end:
                _fetch(c, min(batch, end - nxt), end, rng, nxt, progress)
                if c.count():
                    nxt = c.last_offset() + 1
                    n += c.count()
                c.discard()
        finally:
            _close_consumer(c)
    return n


def _messages_to_arrow(conf: dict, ends: dict, batch: int = 10000) -> int:
    """The read path before the native consumer (for history): ``Consumer.consume`` and a
    ``Message`` per record, every column built from the accessors, Arrow out."""
    from itertools import chain

    import numpy as np
    import pyarrow as pa
    from confluent_kafka import Message

    from connector.kafka._consume import _consumer_conf
    from connector.kafka._raw_schema import HEADERS_TYPE

    n = 0
    for (topic, p), end in ends.items():  # a fresh consumer per range, as read_range did
        c = Consumer(_consumer_conf(conf, "read_committed"))
        try:
            c.assign([TopicPartition(topic, p, 0)])
            seen = 0
            while seen < end:
                msgs = [m for m in c.consume(min(batch, end - seen), timeout=1.0) if m.error() is None]
                if not msgs:
                    continue
                k = len(msgs)
                ts = np.fromiter(chain.from_iterable(map(Message.timestamp, msgs)), np.int64, 2 * k)
                hs = list(map(Message.headers, msgs))
                cols = [pa.array(list(map(Message.key, msgs)), pa.binary()),
                        pa.array(list(map(Message.value, msgs)), pa.binary()),
                        np.fromiter(map(Message.offset, msgs), np.int64, k),
                        pa.array(ts[1::2] * 1000, pa.int64(), mask=ts[0::2] == 0),
                        pa.array([[{"key": a, "value": b} for a, b in h] if h else None for h in hs],
                                 HEADERS_TYPE) if any(hs) else pa.nulls(k, HEADERS_TYPE)]
                seen += len(cols[2])
            n += seen
        finally:
            c.close()
    return n


def candidates(variants: bool = True) -> dict:
    """Name -> ``fn(conf, ends) -> rows``; the first is the baseline."""
    out = {"raw consume loop (value() only)": raw_loop,
           "read_range (default)": lambda c, e: _read_range(c, e),
           "Message objects to Arrow (the old read_range)": _messages_to_arrow}
    if not variants:
        return out
    out.update({
        "raw consume loop, consume(1000)": lambda c, e: _raw(c, e, batch=1000),
        "raw poll loop (value() only)": lambda c, e: _raw(c, e, poll=True),
        "consume only (read_range's fetch, no Arrow)": _consume_only,
        "read_range batch_size=2000": lambda c, e: _read_range(c, e, batch_size=2000),
        "read_range batch_size=50000": lambda c, e: _read_range(c, e, batch_size=50000),
        "read_range max.partition.fetch.bytes=8MB": lambda c, e: _read_range(
            {**c, "max.partition.fetch.bytes": str(8 << 20)}, e),
        "read_range queued.max.messages.kbytes=16MB": lambda c, e: _read_range(
            {**c, "queued.max.messages.kbytes": str(16 << 10)}, e),
        "read_range fetch.wait.max.ms=5": lambda c, e: _read_range({**c, "fetch.wait.max.ms": "5"}, e),
        "read_range fetch.min.bytes=1MB": lambda c, e: _read_range({**c, "fetch.min.bytes": str(1 << 20)}, e),
    })
    return out


def produce(kafka, total: int, partitions: int) -> dict:
    """Realistic orders over ``partitions`` of one topic; returns ``{(topic, p): end}``."""
    from benchmarks.spark_bench import ORDER_V2, _order_frames
    from connector.kafka import KafkaOffsetReader

    kafka.create_topic(TOPIC, partitions=partitions)
    values = _order_frames(total // partitions, 1, ORDER_V2, 2)
    for p in range(partitions):
        kafka.produce_many(TOPIC, values, partition=p, flush=False)
    kafka.flush()
    with KafkaOffsetReader(kafka.conf) as r:
        tps = r.partitions_for([TOPIC])
        ends, lows = r.latest(tps), r.earliest(tps)
    if any(lows.values()) or sum(ends.values()) != (total // partitions) * partitions:
        raise RuntimeError(f"mock broker dropped records (low watermarks {lows})")
    return ends


def run(total: int = 200_000, partitions: int = 4, runs: int = 5, variants: bool = True,
        out: dict | None = None) -> dict:
    """Median seconds per candidate (alternating rounds after a warm-up); ``out`` gets rec/s."""
    from connector.testing import EmbeddedKafka

    out = {} if out is None else out
    # lz4: 50k records of ~110 B per partition overflow the mock's ~5 MB per partition uncompressed
    with EmbeddedKafka(producer_config={"compression.type": "lz4", "linger.ms": 50}) as kafka:
        ends = produce(kafka, total, partitions)
        rows = sum(ends.values())
        fns = candidates(variants)
        for name, fn in fns.items():  # warm-up of every side
            got = fn(kafka.conf, ends)
            if got != rows:
                raise RuntimeError(f"{name} read {got} of {rows} rows")
        times: dict[str, list[float]] = {k: [] for k in fns}
        cpu: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(runs):
            for name, fn in fns.items():
                t0, c0 = time.perf_counter(), time.thread_time()
                fn(kafka.conf, ends)
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(time.thread_time() - c0)
    base = statistics.median(times["raw consume loop (value() only)"])
    print(f"consume step: {rows:,} realistic orders (lz4), {partitions} partitions, mock cluster, "
          f"medians of {runs} alternating runs, load {os.getloadavg()[0]:.1f}")
    for name, ts in times.items():
        med = statistics.median(ts)
        out[f"consume {rows // 1000}k/{partitions}p: {name}"] = rows / med
        print(f"  {name:<46} {rows / med:>10,.0f} rec/s  {base / med:5.2f}x raw  "
              f"consuming thread CPU {statistics.median(cpu[name]):.3f} s  "
              f"[{', '.join(f'{t:.2f}' for t in ts)}] s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline-only", action="store_true", help="raw loop and read_range only")
    args = ap.parse_args()
    run(args.records, args.partitions, args.runs, variants=not args.baseline_only)


if __name__ == "__main__":
    main()
