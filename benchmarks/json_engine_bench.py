"""JSON Schema decode throughput on real event shapes: our path vs the per-record loop.

Schemas (shapes of public event schemas, trimmed): the 6-field record of ``decode_bench``,
the 50-field WIDE record of ``wide_bench`` (map + ``integer|string|null`` union), a
CloudEvents 1.0 envelope (free-form ``data``, extension map), a GitHub ``issues`` webhook
(nested objects, nullable users, labels, a custom-properties map), a Wikimedia
``mediawiki.recentchange`` event (nullable integers, free-form ``log_params``), Hudi commit
metadata (map of arrays of write stats) and an OTLP-JSON trace export (deep nesting, an
``AnyValue`` union inside arrays).

Baselines, per record: ``json.loads`` alone (dicts out, what ``wide_bench`` times), and the
project's JSON baseline of ``decode_bench``, ``json.loads`` + Arrow conversion, here producing
the same table as ours (free-form and union leaves ``json.dumps``'d, then one
``pyarrow.array`` with the output type: ``from_pylist`` cannot infer maps and unions). The
goal (3x) is judged against the latter. "orjson ref" is the per-row path every schema with
a map, union or free-form field took before. "ours" is ``parse_frames`` +
``Decoder.decode`` (``our_path``, asserting every row decoded). Medians of 3, the paths
taking turns (``interleaved``).
Never fails.

Run: ``/work/venv/bin/python benchmarks/json_engine_bench.py [--records N]``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import orjson
import pyarrow as pa

from benchmarks import decode_bench, wide_bench
from benchmarks.decode_bench import Spec, our_path
from connector.formats import DecodeOptions, build_decoder
from connector.formats.json_schema._schema import JNode, parse_json_schema
from wireformat import encode_frame

_USER = {"type": "object", "properties": {
    "login": {"type": "string"}, "id": {"type": "integer"}, "node_id": {"type": "string"},
    "type": {"enum": ["User", "Bot", "Organization"]}, "site_admin": {"type": "boolean"}}}

CLOUDEVENTS = {
    "title": "CloudEvent", "type": "object", "required": ["id", "source", "specversion", "type"],
    "properties": {
        "id": {"type": "string"}, "source": {"type": "string", "format": "uri-reference"},
        "specversion": {"type": "string"}, "type": {"type": "string"},
        "datacontenttype": {"type": ["string", "null"]}, "dataschema": {"type": ["string", "null"]},
        "subject": {"type": ["string", "null"]},
        "time": {"type": ["string", "null"], "format": "date-time"},
        "data": {"type": ["object", "string", "number", "array", "boolean", "null"]},
        "data_base64": {"type": ["string", "null"], "contentEncoding": "base64"},
        "extensions": {"type": "object", "additionalProperties": {"type": "string"}},
    }}

WEBHOOK = {
    "title": "IssuesEvent", "type": "object", "$defs": {"user": _USER},
    "properties": {
        "action": {"enum": ["opened", "edited", "closed", "reopened", "labeled"]},
        "issue": {"type": "object", "properties": {
            "id": {"type": "integer"}, "number": {"type": "integer"}, "title": {"type": "string"},
            "body": {"type": ["string", "null"]}, "state": {"enum": ["open", "closed"]},
            "locked": {"type": "boolean"}, "comments": {"type": "integer"},
            "created_at": {"type": "string", "format": "date-time"},
            "closed_at": {"type": ["string", "null"], "format": "date-time"},
            "user": {"$ref": "#/$defs/user"},
            "assignee": {"oneOf": [{"$ref": "#/$defs/user"}, {"type": "null"}]},
            "labels": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "integer"}, "name": {"type": "string"}, "color": {"type": "string"},
                "default": {"type": "boolean"}}}},
            "reactions": {"type": "object", "properties": {
                "total_count": {"type": "integer"}, "+1": {"type": "integer"}, "-1": {"type": "integer"}}}}},
        "repository": {"type": "object", "properties": {
            "id": {"type": "integer"}, "full_name": {"type": "string"}, "private": {"type": "boolean"},
            "owner": {"$ref": "#/$defs/user"}, "topics": {"type": "array", "items": {"type": "string"}},
            "stargazers_count": {"type": "integer"}, "pushed_at": {"type": "string", "format": "date-time"},
            "custom_properties": {"type": "object", "additionalProperties": {"type": ["string", "null"]}}}},
        "sender": {"$ref": "#/$defs/user"},
    }}

RECENTCHANGE = {
    "title": "mediawiki/recentchange", "type": "object",
    "properties": {
        "$schema": {"type": "string"},
        "meta": {"type": "object", "properties": {
            "uri": {"type": "string"}, "request_id": {"type": "string"}, "id": {"type": "string"},
            "dt": {"type": "string", "format": "date-time"}, "domain": {"type": "string"},
            "stream": {"type": "string"}}},
        "id": {"type": ["integer", "null"]}, "type": {"enum": ["edit", "new", "log", "categorize"]},
        "namespace": {"type": "integer"}, "title": {"type": "string"}, "comment": {"type": "string"},
        "timestamp": {"type": "integer"}, "user": {"type": "string"}, "bot": {"type": "boolean"},
        "minor": {"type": "boolean"}, "patrolled": {"type": "boolean"},
        "length": {"type": "object", "properties": {"old": {"type": ["integer", "null"]},
                                                     "new": {"type": ["integer", "null"]}}},
        "revision": {"type": "object", "properties": {"old": {"type": ["integer", "null"]},
                                                       "new": {"type": ["integer", "null"]}}},
        "server_url": {"type": "string"}, "wiki": {"type": "string"},
        "log_params": {"anyOf": [{"type": "array"}, {"type": "object"}, {"type": "string"}]},
    }}

HUDI = {
    "title": "HoodieCommitMetadata", "type": "object",
    "properties": {
        "partitionToWriteStats": {"type": "object", "additionalProperties": {
            "type": "array", "items": {"type": "object", "properties": {
                "fileId": {"type": "string"}, "path": {"type": "string"},
                "prevCommit": {"type": ["string", "null"]}, "numWrites": {"type": "integer"},
                "numDeletes": {"type": "integer"}, "numUpdateWrites": {"type": "integer"},
                "totalWriteBytes": {"type": "integer"}, "totalWriteErrors": {"type": "integer"},
                "partitionPath": {"type": "string"}, "fileSizeInBytes": {"type": "integer"}}}}},
        "compacted": {"type": "boolean"},
        "extraMetadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "operationType": {"enum": ["INSERT", "UPSERT", "BULK_INSERT", "DELETE"]},
    }}

_ANY_VALUE = {"type": "object", "properties": {
    "stringValue": {"type": "string"}, "boolValue": {"type": "boolean"},
    "intValue": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    "doubleValue": {"type": "number"}}}
_KV = {"type": "object", "properties": {"key": {"type": "string"}, "value": _ANY_VALUE}}
OTLP = {
    "title": "ExportTraceServiceRequest", "type": "object",
    "properties": {"resourceSpans": {"type": "array", "items": {"type": "object", "properties": {
        "resource": {"type": "object", "properties": {
            "attributes": {"type": "array", "items": _KV}, "droppedAttributesCount": {"type": "integer"}}},
        "scopeSpans": {"type": "array", "items": {"type": "object", "properties": {
            "scope": {"type": "object", "properties": {"name": {"type": "string"},
                                                       "version": {"type": "string"}}},
            "spans": {"type": "array", "items": {"type": "object", "properties": {
                "traceId": {"type": "string"}, "spanId": {"type": "string"},
                "parentSpanId": {"type": "string"}, "name": {"type": "string"},
                "kind": {"type": "integer"}, "startTimeUnixNano": {"type": "string"},
                "endTimeUnixNano": {"type": "string"},
                "attributes": {"type": "array", "items": _KV},
                "status": {"type": "object", "properties": {"code": {"type": "integer"},
                                                            "message": {"type": "string"}}}}}}}}}}}}}}

EVENT_SCHEMAS = {"cloudevents": CLOUDEVENTS, "github-webhook": WEBHOOK,
                 "wikimedia-recentchange": RECENTCHANGE, "hudi-commit": HUDI, "otlp-json": OTLP}


def random_value(node: JNode, rnd: random.Random, depth: int = 0):
    """A value valid for ``node`` (the decoder's view of a schema), about as real data looks."""
    k = node.kind
    if k == "struct":
        return {name: random_value(t, rnd, depth + 1) for name, t in node.fields if rnd.random() < 0.9}
    if k == "map":
        return {f"k{rnd.randrange(50)}": random_value(node.items, rnd, depth + 1)
                for _ in range(rnd.randrange(4))}
    if k == "list":
        return [random_value(node.items, rnd, depth + 1) for _ in range(rnd.randrange(1 if depth > 3 else 4))]
    if k == "string":
        return f"{rnd.choice(['alpha', 'beta', 'gamma', 'delta'])}-{rnd.randrange(10**6)}"
    if k == "timestamp":
        t = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=rnd.randrange(10**8),
                                                                            microseconds=rnd.randrange(10**6))
        return t.isoformat().replace("+00:00", "Z")
    if k == "date":
        return (dt.date(2020, 1, 1) + dt.timedelta(days=rnd.randrange(3000))).isoformat()
    if k == "int":
        return rnd.randrange(-10**12, 10**12)
    if k == "float":
        return rnd.random() * 1000
    if k == "bool":
        return rnd.random() < 0.5
    if k == "null":
        return None
    allowed = sorted(node.allowed or {"object", "string", "integer", "array"})
    t = rnd.choice(allowed)
    return {"object": lambda: {"a": rnd.randrange(100), "b": [f"x{rnd.randrange(9)}"]},
            "array": lambda: [rnd.randrange(100), "s"], "string": lambda: f"s{rnd.randrange(1000)}",
            "integer": lambda: rnd.randrange(10**9), "number": lambda: rnd.random(),
            "boolean": lambda: True, "null": lambda: None}[t]()


def interleaved(fns, n: int, runs: int = 3) -> list[float]:
    """Median records/s of each of ``fns``, run in turn ``runs`` times: on a shared machine
    every path sees the same load swings, so the ratios hold even when the rates do not."""
    times = [[] for _ in fns]
    for _ in range(runs):
        for t, fn in zip(times, fns):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
    return [n / statistics.median(t) for t in times]


def user_loop(node: JNode, framed: list[bytes]):
    """The per-record loop a Python user writes for the same Arrow output."""
    from connector.formats.json_schema._types import read_type

    def conv(n: JNode):
        if n.kind == "json":
            return lambda v: None if v is None else json.dumps(v, separators=(",", ":"))
        if not n.contains("json"):
            return lambda v: v
        if n.kind == "struct":
            kids = [(name, conv(t)) for name, t in n.fields]
            return lambda v: None if v is None else {k: c(v.get(k)) for k, c in kids}
        c = conv(n.items)
        if n.kind == "map":
            return lambda v: None if v is None else {k: c(x) for k, x in v.items()}
        return lambda v: None if v is None else [c(x) for x in v]

    top, rt = conv(node), read_type(node)

    def run():
        pa.array([top(json.loads(v[5:])) for v in framed], rt)
    return run


def cases(n: int) -> dict[str, tuple[dict, list[bytes]]]:
    """name → (schema, framed payloads)."""
    out = {}
    flat = [dict(r, ts=f"2023-11-14T22:13:{r['id'] % 60:02d}.{r['id'] % 999999:06d}Z")
            for r in decode_bench.records(min(n, 2000))]
    out["flat (decode_bench)"] = (decode_bench.JSON_SCHEMA, [orjson.dumps(d) for d in flat])
    out["wide, map + union (wide_bench)"] = (
        wide_bench.json_schema(), [orjson.dumps(wide_bench._json_ready(r)) for r in wide_bench.records(2000)])
    rnd = random.Random(7)
    for name, schema in EVENT_SCHEMAS.items():
        node = parse_json_schema(json.dumps(schema))
        out[name] = (schema, [orjson.dumps(random_value(node, rnd)) for _ in range(2000)])
    return {k: (s, [encode_frame("confluent", 1, docs[i % len(docs)]) for i in range(n)])
            for k, (s, docs) in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    args = ap.parse_args()
    n = args.records
    rows = []
    for name, (schema, framed) in cases(n).items():
        values = pa.array(framed, pa.binary())
        dec = build_decoder(Spec("json", json.dumps(schema)), options=DecodeOptions())
        ref = build_decoder(Spec("json", json.dumps(schema)), options=DecodeOptions(fast_path=False))

        def loads(framed=framed):
            for v in framed:
                json.loads(v[5:])

        node = parse_json_schema(json.dumps(schema))
        ours, before = our_path(dec, values, n, None), our_path(ref, values, n, None)
        ours()
        rates = interleaved([loads, user_loop(node, framed), before, ours], n)
        rows.append((name, sum(map(len, framed)) / n - 5, *rates))
    print(f"\n{n:,} records per schema, median of 3 runs; load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'schema':<32}{'bytes':>6}{'json.loads':>11}{'+ Arrow':>10}{'orjson ref':>11}"
          f"{'ours':>10}{'vs loads':>9}{'vs +Arrow':>10}")
    for name, size, loads_r, user_r, old, mine in rows:
        r = mine / user_r
        print(f"{name:<32}{size:>6.0f}{loads_r:>11,.0f}{user_r:>10,.0f}{old:>11,.0f}{mine:>10,.0f}"
              f"{mine / loads_r:>8.1f}x{r:>9.1f}x  {'PASS' if r >= 3 else 'FALL SHORT'} (goal 3x)")


if __name__ == "__main__":
    main()
