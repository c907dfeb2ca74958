"""Several message types on one channel without schema ids: what routing costs (issue 37).

Records: the 6-field JSON ``Payment`` of ``decode_bench`` and a ``Refund`` of other fields, half
each, interleaved, framing ``none``; the channel's headers schemas fix Spring's ``__TypeId__``.
Every path runs ``decode_column`` (the read core of the source, ``peek`` and ``from_registry``):

=====================  ===========================================================================
path                   what
=====================  ===========================================================================
one type (baseline)    a one-message channel: N ``Payment`` records, one decoder, no headers
                       (what a read of one message type costs, with or without this change)
routed by header       the two-message channel, N mixed records, each with its ``__TypeId__``
by validation          the same records without headers: each decoded with both schemas, the
                       one that accepts it kept (records differ in their values' types)
=====================  ===========================================================================

Ratios are against the baseline in the same run; medians of ``--runs`` rounds, the paths taking
turns in each round after a warm-up of all. The load (``os.getloadavg``) is printed. Never fails.

Run: ``python benchmarks/routing_bench.py [--records N] [--runs R]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyarrow as pa

from benchmarks.decode_bench import JSON_SCHEMA, records
from connector.asyncapi import load_document, plan_read
from connector.formats import decode_column
from connector.schema import SchemaRequest, value_decoder
from wireformat import Framing

# ids as text where Payment's are numbers: each record fits one schema only
REFUND = {"title": "Refund", "type": "object", "properties": {
    "id": {"type": "string"}, "order": {"type": "string"}, "amount": {"type": "string"},
    "reason": {"type": "string"}}}
HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))


def _doc(messages: dict) -> dict:
    return {"asyncapi": "3.0.0", "info": {"title": "bench", "version": "1"},
            "channels": {"c": {"address": "c", "messages": {
                name: {"name": name, "payload": schema, "headers": {"type": "object", "properties": {
                    "__TypeId__": {"type": "string", "const": f"bench.{name}"}}}}
                for name, schema in messages.items()}}}}


def _decoder(messages: dict):
    plan = plan_read(load_document(_doc(messages)), channel="c")
    return value_decoder(SchemaRequest(), plan=plan, registry=None, framing=Framing.NONE)


def _data(n: int):
    pays = records(n)
    for p in pays:
        p["ts"] = "2026-01-01T00:00:00Z"
    refunds = [{"id": f"r{i}", "order": f"o{i}", "amount": f"{i}.00", "reason": "late"} for i in range(n)]
    one = pa.array([json.dumps(p).encode() for p in pays], pa.binary())
    mixed, hdrs = [], []
    for i in range(n):
        if i % 2:
            mixed.append(json.dumps(refunds[i]).encode())
            hdrs.append([{"key": "__TypeId__", "value": b"bench.Refund"}])
        else:
            mixed.append(json.dumps(pays[i]).encode())
            hdrs.append([{"key": "__TypeId__", "value": b"bench.Payment"}])
    return one, pa.array(mixed, pa.binary()), pa.array(hdrs, HEADERS_TYPE)


def _run(dec, values, headers, n):
    def go():
        res = decode_column(values, framing=Framing.NONE, decoder=dec, headers=headers)
        assert res.errors.null_count == n, res.errors.drop_null()[:1]
    return go


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    n = args.records
    one, mixed, headers = _data(n)
    single = _decoder({"Payment": JSON_SCHEMA})
    multi = _decoder({"Payment": JSON_SCHEMA, "Refund": REFUND})
    paths = {"one type (baseline)": _run(single, one, None, n),
             "routed by header": _run(multi, mixed, headers, n),
             "by validation": _run(multi, mixed, None, n)}
    for fn in paths.values():  # warm-up: compile and cache everything once
        fn()
    times: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(args.runs):
        for name, fn in paths.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    load = os.getloadavg()
    print(f"routing_bench: {n} records, medians of {args.runs}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    base = statistics.median(times["one type (baseline)"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:<22} {n / med:>12,.0f} rec/s   {med / base:5.2f}x the baseline's time")


if __name__ == "__main__":
    main()
