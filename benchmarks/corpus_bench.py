"""Corpus throughput: our decode path vs the per-record loop, on every corpus schema.

Run: ``/work/venv/bin/python benchmarks/corpus_bench.py [--quick] [--only NAME]`` or as the
``corpus`` section of ``python -m benchmarks``. For each schema of ``benchmarks/corpus`` it
times, in the same run and on the same frames (medians of 3):

- ours: ``parse_frames`` + ``Decoder.decode`` (Arrow out) per batch of the source's default
  ``maxBatchRows`` (10,000), asserting every row decoded;
- the per-record loop a Python user writes (issue 27): Avro → ``fastavro.schemaless_reader``
  per record (dicts); JSON → ``json.loads`` per record (dicts); Protobuf → ``FromString`` plus
  ``json_format.MessageToDict`` per record. Baselines run on a subset and are reported as rates.

Ours and the loop alternate, three runs each, every sample at least ~0.1 s (the callable
repeated); rates are medians. Goals: every schema ≥ 3× its
loop; medians Avro ≥ 10×, JSON ≥ 3×. Never fails: a schema whose path errors is reported as such.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyarrow as pa

from benchmarks.corpus._gen import cases, generate
from connector.formats import build_decoder
from connector.options._table import default_of
from wireformat import parse_frames

GOALS = {"avro": 3.0, "json": 3.0, "protobuf": 3.0}  # every schema
MEDIAN_GOALS = {"avro": 10.0, "json": 3.0}
BASELINE_NAME = {"avro": "fastavro schemaless_reader loop", "json": "json.loads loop (dicts)",
                 "protobuf": "FromString + MessageToDict loop"}
MIN_SAMPLE_S = 0.1  # each timed sample repeats its callable to last about this long
UNIQUE = 400  # distinct generated records, tiled up to the benchmark size


def _tile(batch, n):
    framed = (batch.framed * (n // len(batch.framed) + 1))[:n]
    return framed, pa.array(framed, pa.binary())


def _baseline(case, framed):
    """A callable decoding ``framed`` one record at a time, the way Python users do."""
    if case.fmt == "json":
        loads = json.loads
        return lambda part: [loads(v[5:]) for v in part]
    if case.fmt == "avro":
        import io

        import fastavro
        parsed = fastavro.parse_schema(json.loads(case.text))
        read, bio = fastavro.schemaless_reader, io.BytesIO
        return lambda part: [read(bio(v[5:]), parsed, None) for v in part]
    from google.protobuf import json_format, message_factory

    from connector.formats.protobuf._schema import compile_proto
    from wireformat import encode_protobuf_indexes
    compiled = compile_proto(case.text, ())
    desc = compiled.find(case.message)
    cls = message_factory.GetMessageClass(desc)
    skip = 5 + len(encode_protobuf_indexes([compiled.message_names().index(desc.full_name)]))
    to_dict, pool = json_format.MessageToDict, compiled.pool  # the pool resolves Any's types
    return lambda part: [to_dict(cls.FromString(v[skip:]), descriptor_pool=pool) for v in part]


def _alternating(fns, sizes, runs=3):
    """(wall-clock rates, CPU-time rates), medians of ``runs``, of each callable, the callables
    run in turn. CPU time (``process_time``: this process, all its threads) is what the work
    costs whatever else the machine runs; on a shared machine wall-clock samples also measure
    the scheduler."""
    wall = [[] for _ in fns]
    cpu = [[] for _ in fns]
    for _ in range(runs):
        for w, c, fn in zip(wall, cpu, fns):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            w.append(time.perf_counter() - t0)
            c.append(max(time.process_time() - c0, 1e-9))
    return ([n / statistics.median(t) for n, t in zip(sizes, wall)],
            [n / statistics.median(t) for n, t in zip(sizes, cpu)])


def bench_case(case, n, slow_n):
    batch = generate(case, min(UNIQUE, n), seed=0)
    framed, values = _tile(batch, n)
    dec = build_decoder(case.spec, options=case.options)
    pb = case.fmt == "protobuf"

    step = default_of("max_batch_rows")  # the batches the source decodes

    def ours():
        for at in range(0, n, step):
            part = values.slice(at, step)
            res = dec.decode(parse_frames(part, "confluent", protobuf_indexes=pb), batch.lookup)
            assert res.errors.null_count == len(part), res.errors.drop_null()[:1].to_pylist()

    ours()  # warm per-process caches, like a reused worker
    base = _baseline(case, framed)
    part = framed[:slow_n]
    base(part[:10])
    fns = [_repeated(ours), _repeated(lambda: base(part))]
    (r_ours, r_base), (c_ours, c_base) = _alternating(
        [f for f, _ in fns], [n * k for (_, k), n in zip(fns, (n, len(part)))])
    return r_ours, r_base, c_ours / c_base


def _repeated(fn, at_least=MIN_SAMPLE_S):
    """(callable running ``fn`` k times, k) with k such that one sample takes about
    ``at_least`` seconds: a 2 ms sample on a loaded machine measures the scheduler."""
    t0 = time.perf_counter()
    fn()
    k = max(1, min(50, int(at_least / max(time.perf_counter() - t0, 1e-6)) + 1))

    def run():
        for _ in range(k):
            fn()
    return run, k


def run(quick: bool, rates: dict | None = None, only: str = "") -> list[dict]:
    n = 5_000 if quick else 20_000  # 50 schemas: the full section stays ~5-8 min on a busy machine
    slow_n = 1_000 if quick else 2_000
    rows = []
    for case in cases():
        if only and only not in case.name:
            continue
        row = {"schema": case.name, "format": case.fmt, "goal": GOALS[case.fmt],
               "baseline": BASELINE_NAME[case.fmt]}
        try:
            ours, base, cpu_ratio = bench_case(case, n, slow_n)
            row.update(ours=ours, base=base, ratio=ours / base, cpu_ratio=cpu_ratio,
                       verdict="PASS" if ours / base >= GOALS[case.fmt] else "FALL SHORT")
        except Exception as e:
            traceback.print_exc(limit=2)
            row.update(ours=None, base=None, ratio=None, cpu_ratio=None, verdict=f"ERROR {type(e).__name__}: {str(e)[:80]}")
        rows.append(row)
        _print_row(row)
        if rates is not None and row["ours"]:
            rates[f"corpus {case.name}: ours"] = row["ours"]
            rates[f"corpus {case.name}: {row['baseline']}"] = row["base"]
    summary(rows)
    return rows


def _print_row(r):
    if r["ours"] is None:
        print(f"{r['schema']:<44}{'':>12}{'':>12}{'':>8}  {r['verdict']}", flush=True)
        return
    print(f"{r['schema']:<44}{r['ours']:>12,.0f}{r['base']:>12,.0f}{r['ratio']:>7.1f}x"
          f"{r['cpu_ratio']:>7.1f}x  {r['verdict']} (goal {r['goal']:g}x)", flush=True)


def summary(rows) -> list[str]:
    """One line per format: schemas meeting the goal and the median ratio."""
    lines = []
    for fmt in ("avro", "json", "protobuf"):
        rs = [r for r in rows if r["format"] == fmt]
        ok = [r for r in rs if r["verdict"] == "PASS"]
        ratios = [r["ratio"] for r in rs if r["ratio"]]
        cpus = [r["cpu_ratio"] for r in rs if r["cpu_ratio"]]
        if not rs:
            continue
        med = statistics.median(ratios) if ratios else float("nan")
        short = [r["schema"].split("/", 1)[1] for r in rs if r["verdict"] != "PASS"]
        want = MEDIAN_GOALS.get(fmt)
        verdict = "" if want is None else f", goal {want:g}x: {'PASS' if med >= want else 'FALL SHORT'}"
        cpu_med = statistics.median(cpus) if cpus else float("nan")
        lines.append(f"corpus {fmt}: {len(ok)}/{len(rs)} schemas >= {GOALS[fmt]:g}x vs {BASELINE_NAME[fmt]} "
                     f"(median {med:.1f}x{verdict}; CPU-time median {cpu_med:.1f}x)"
                     + (f"; short: {', '.join(short)}" if short else ""))
    for line in lines:
        print(line)
    return lines


def header():
    print(f"{'schema':<44}{'ours rec/s':>12}{'loop rec/s':>12}{'ratio':>8}{'cpu':>8}  verdict")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    header()
    run(args.quick, only=args.only)


if __name__ == "__main__":
    main()
