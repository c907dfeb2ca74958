"""Same-run A/B of the JSON decoder over the whole JSON corpus: this tree against another checkout.

Run: ``python benchmarks/json_ab_bench.py --base /tmp/base-checkout [--rounds 5] [--records 20000]``
(make the other checkout with ``git archive main | tar -x -C /tmp/base-checkout``).

The records are generated once, by this tree's corpus generator (``benchmarks/corpus/_gen.py``:
records valid for their schema), and written to a file both builds read, so both decode the
same bytes. Each round runs one worker process per build, the builds taking turns (this tree
first on even rounds, the other first on odd ones); a worker imports its tree's ``connector``,
decodes every corpus JSON schema's records once to warm up (numba's cache, per-schema caches,
as a reused Spark worker is) and then times ``parse_frames`` + ``Decoder.decode`` per batch of
the source's ``maxBatchRows`` (10,000), several passes, keeping the fastest pass: the noise of
a shared machine only ever adds time. Time is this process's CPU time (``process_time``): what
the decode costs, whatever else the machine runs (wall-clock samples measure the scheduler too). Reported: per schema the median over rounds of both
rates and of their ratio (ratios of the same round), the median ratio over schemas, and the
load average at the start and the end. Never fails.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _make_data(path: str, n: int, only: str) -> None:
    sys.path.insert(0, HERE)
    from benchmarks.corpus._gen import cases, generate

    out = {}
    for case in cases():
        if case.fmt != "json" or (only and only not in case.name):
            continue
        batch = generate(case, min(400, n), seed=0)
        framed = (batch.framed * (n // len(batch.framed) + 1))[:n]
        out[case.name] = (case.text, case.options.max_recursion_depth, framed)
    with open(path, "wb") as f:
        pickle.dump(out, f)


def _worker(tree: str, path: str, passes: int) -> None:
    sys.path.insert(0, tree)
    import pyarrow as pa

    from connector.formats import DecodeOptions, build_decoder
    from wireformat import parse_frames

    with open(path, "rb") as f:
        data = pickle.load(f)

    class Spec:
        def __init__(self, text):
            self.format, self.text = "json", text

    step = 10_000
    rates = {}
    for name, (text, depth, framed) in data.items():
        values = pa.array(framed, pa.binary())
        dec = build_decoder(Spec(text), options=DecodeOptions(max_recursion_depth=depth))
        bad = 0

        def run():
            nonlocal bad
            for at in range(0, len(values), step):
                part = values.slice(at, step)
                res = dec.decode(parse_frames(part, "confluent"), lambda key: None)
                bad += len(part) - res.errors.null_count
        run()  # warm-up
        if bad:
            rates[name] = None
            continue
        best = float("inf")
        for _ in range(passes):
            t0 = time.process_time()
            run()
            best = min(best, time.process_time() - t0)
        rates[name] = len(values) / max(best, 1e-9)
    print(json.dumps({"module": sys.modules["connector"].__file__, "rates": rates}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="the other checkout (the A side)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--worker", nargs=2, metavar=("TREE", "DATA"))
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker[0], args.worker[1], args.passes)
        return
    if not args.base:
        ap.error("--base is required")
    base = os.path.abspath(args.base)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "frames.pickle")
        _make_data(data, args.records, args.only)
        trees = {"base": base, "this": HERE}
        got: dict[str, list[dict]] = {"base": [], "this": []}
        for r in range(args.rounds):
            order = ["this", "base"] if r % 2 == 0 else ["base", "this"]
            for side in order:
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", trees[side], data,
                                      "--passes", str(args.passes)], capture_output=True, text=True, check=False,
                                     cwd=tmp)
                if out.returncode:
                    print(out.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"worker for {side} failed")
                res = json.loads(out.stdout.strip().splitlines()[-1])
                if not res["module"].startswith(trees[side]):
                    raise SystemExit(f"{side} imported {res['module']}, not its own tree")
                got[side].append(res["rates"])
            print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", flush=True)
    load1 = os.getloadavg()
    print(f"\n{args.records:,} records per schema, {args.rounds} rounds (builds alternating), best of "
          f"{args.passes} passes per round; load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end\n")
    print(f"{'schema':<40}{'base rec/s':>12}{'this rec/s':>12}{'this/base':>10}  (CPU time)")
    ratios = []
    for name in got["this"][0]:
        b = [x[name] for x in got["base"]]
        t = [x[name] for x in got["this"]]
        if None in b or None in t:
            print(f"{name:<40}{'rows failed':>34}  base: {None not in b}, this: {None not in t}")
            continue
        ratio = statistics.median(y / x for x, y in zip(b, t))
        ratios.append(ratio)
        print(f"{name:<40}{statistics.median(b):>12,.0f}{statistics.median(t):>12,.0f}{ratio:>10.3f}")
    if ratios:
        print(f"\nmedian ratio over {len(ratios)} schemas: {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f}; geometric mean "
              f"{statistics.geometric_mean(ratios):.3f})")


if __name__ == "__main__":
    main()
