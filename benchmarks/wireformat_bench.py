"""Throughput of ``wireformat.parse_frames`` against a per-record Python loop.

Run: ``/work/venv/bin/python benchmarks/wireformat_bench.py [--rows N]``

For each framing it builds N framed values with ~50-byte payloads, times
``parse_frames`` (median of 5 runs over all N rows) and a plain per-record loop
that does the same parse with ``struct.unpack`` and builds the same Arrow columns
(median of 3 runs over the same rows, or a sample with ``--loop-rows``, rate scaled), and prints records/s and
the ratio.  Goal: >= 10M records/s and >= 20x the loop on Confluent framing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from wireformat import encode_frame, header_for_id, parse_frames

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
GOAL_RATE = 10_000_000
GOAL_RATIO = 20.0


def _distinct(n_distinct: int, make):
    return [make(i) for i in range(n_distinct)]


def _tile(items, n):
    reps = -(-n // len(items))
    return (items * reps)[:n]


def build(n: int):
    """name -> (values, headers, framing, kwargs, loop function)."""
    rnd = [os.urandom(50) for _ in range(1000)]
    guids = [uuid.UUID(int=i + 1) for i in range(8)]
    conf = _tile(_distinct(1000, lambda i: encode_frame("confluent", i % 40, rnd[i])), n)
    glue = _tile(_distinct(1000, lambda i: encode_frame("glue", guids[i % 8], rnd[i])), n)
    guid = _tile(_distinct(1000, lambda i: encode_frame("confluent-guid", guids[i % 8], rnd[i])), n)
    pb = _tile(_distinct(1000, lambda i: encode_frame(
        "confluent", 3, rnd[i], message_indexes=[0] if i % 10 else [1, i % 4])), n)
    hdr_vals = _tile(rnd, n)
    hdrs = _tile([[("trace", b"abc"), header_for_id("header-confluent", guids[i % 8])] for i in range(1000)], n)
    return {
        "confluent": (pa.array(conf, pa.binary()), None, "confluent", {}, loop_confluent),
        "glue (uncompressed)": (pa.array(glue, pa.binary()), None, "glue", {}, loop_glue),
        "confluent-guid": (pa.array(guid, pa.binary()), None, "confluent-guid", {}, loop_guid),
        "header-confluent": (pa.array(hdr_vals, pa.binary()), pa.array(hdrs, HEADERS_TYPE),
                             "header-confluent", {}, loop_header),
        "confluent + protobuf indexes (10% non-[0])": (pa.array(pb, pa.binary()), None, "confluent",
                                                       {"protobuf_indexes": True}, loop_protobuf),
    }


# ---- per-record loops: what a Python consumer would write, ending in the same Arrow columns
def loop_confluent(values, headers):
    ids, payloads, errors = [], [], []
    for v in values.to_pylist():
        if v is None or len(v) < 5 or v[0] != 0:
            ids.append(None), payloads.append(None), errors.append(1)
            continue
        ids.append(struct.unpack(">I", v[1:5])[0]), payloads.append(v[5:]), errors.append(0)
    return pa.array(ids, pa.int64()), pa.array(payloads, pa.binary()), errors


def loop_guid(values, headers):
    ids, payloads, errors = [], [], []
    for v in values.to_pylist():
        if v is None or len(v) < 17 or v[0] != 1:
            ids.append(None), payloads.append(None), errors.append(1)
            continue
        ids.append(v[1:17]), payloads.append(v[17:]), errors.append(0)
    return pa.array(ids, pa.binary(16)), pa.array(payloads, pa.binary()), errors


def loop_glue(values, headers):
    ids, payloads, errors = [], [], []
    for v in values.to_pylist():
        if v is None or len(v) < 18 or v[0] != 3 or v[1] != 0:
            ids.append(None), payloads.append(None), errors.append(1)
            continue
        ids.append(v[2:18]), payloads.append(v[18:]), errors.append(0)
    return pa.array(ids, pa.binary(16)), pa.array(payloads, pa.binary()), errors


def loop_header(values, headers):
    ids, errors = [], []
    for hs in headers.to_pylist():
        found = None
        for h in hs or ():
            if h["key"] == "__value_schema_id":
                found = h["value"]
        ok = found is not None and len(found) == 17 and found[0] == 1
        ids.append(found[1:17] if ok else None), errors.append(0 if ok else 1)
    return pa.array(ids, pa.binary(16)), values, errors


def _read_varint(v, pos):
    shift = value = 0
    while True:
        b = v[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos


def loop_protobuf(values, headers):
    ids, payloads, indexes = [], [], []
    for v in values.to_pylist():
        sid = struct.unpack(">I", v[1:5])[0]
        if v[5] == 0:
            idx, pos = [0], 6
        else:
            count, pos = _read_varint(v, 5)
            idx = []
            for _ in range(count):
                i, pos = _read_varint(v, pos)
                idx.append(i)
        ids.append(sid), payloads.append(v[pos:]), indexes.append(idx)
    return pa.array(ids, pa.int64()), pa.array(payloads, pa.binary()), pa.array(indexes, pa.list_(pa.int32()))


def median_time(fn, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--loop-rows", type=int, default=None,
                    help="rows for the Python loop (default: all rows; a smaller sample is scaled)")
    args = ap.parse_args(argv)
    n = args.rows
    print(f"building {n:,} rows per framing ...", flush=True)
    cases = build(n)
    print(f"{'case':46s} {'parse_frames rec/s':>20s} {'python loop rec/s':>18s} {'ratio':>7s}")
    verdicts = []
    for name, (values, headers, framing, kw, loop) in cases.items():
        pf = parse_frames(values, framing, headers=headers, **kw)
        assert int(pf.error.max(initial=0)) == 0, name
        parse_frames(values, framing, headers=headers, **kw)  # second warm-up: allocator pools
        m = min(args.loop_rows or n, n)
        sv = values.slice(0, m)
        sh = headers.slice(0, m) if headers is not None else None
        # Interleaved so both sides see the same machine load (the box is shared).
        t_vec, t_loop = [], []
        for i in range(5):
            t_vec.append(median_time(lambda: parse_frames(values, framing, headers=headers, **kw), 1))
            if i < 3:
                t_loop.append(median_time(lambda: loop(sv, sh), 1))
        rate, loop_rate = n / statistics.median(t_vec), m / statistics.median(t_loop)
        ratio = rate / loop_rate
        print(f"{name:46s} {rate:20,.0f} {loop_rate:18,.0f} {ratio:6.1f}x", flush=True)
        verdicts.append((name, rate, ratio))
    # How much of the Confluent time is the payload copy that Arrow's binary layout forces
    # (a header cannot be skipped between rows without copying the bytes).
    values = cases["confluent"][0]
    stop = max(len(v) for v in values.slice(0, 1000).to_pylist())
    t_copy = median_time(lambda: pc.binary_slice(values, 5, stop), 5)
    print(f"\n(confluent: the payload copy alone, pc.binary_slice, runs at {n / t_copy:,.0f} rec/s)")
    name, rate, ratio = verdicts[0]
    ok = rate >= GOAL_RATE and ratio >= GOAL_RATIO
    print(f"\nGoal on {name}: >= {GOAL_RATE / 1e6:.0f}M records/s and >= {GOAL_RATIO:.0f}x the loop: "
          f"{'PASS' if ok else 'FALL SHORT'} ({rate / 1e6:.1f}M/s, {ratio:.1f}x)")
    for other, r, x in verdicts[1:]:
        verdict = "PASS" if r >= GOAL_RATE and x >= GOAL_RATIO else "FALL SHORT"
        print(f"  {other}: {verdict} ({r / 1e6:.1f}M/s, {x:.1f}x)")


if __name__ == "__main__":
    main()
