"""Same-run A/B of the Avro and Protobuf decode and encode paths: this checkout against another.

Run::

    git worktree add --detach /tmp/kbase main      # or: git archive main | tar -x -C /tmp/kbase
    python -m benchmarks.kernel_ab --base /tmp/kbase [--rounds 5] [--only avro] [--records 20000]
    python -m benchmarks.kernel_ab --base /tmp/kbase --cold      # first-use compile time

Two worker processes, one per checkout (each imports its own ``connector`` and keeps its own
numba cache), stay alive for the whole run; the driver asks them in turn to time one
workload (one sample: the workload repeated for at least ``--sample`` seconds), alternating
which side goes first (ABBA), so both sides of a pair run under the same load. Workloads:
every Avro and Protobuf schema of ``benchmarks/corpus`` decoded (``parse_frames`` +
``Decoder.decode`` per 10,000-row batch, as ``corpus_bench`` does) and encoded
(``encode_column``, as ``corpus_encode_bench`` does), plus the shapes of
``avro_engine_bench`` and ``protobuf_engine_bench`` decoded. Per workload it prints each
side's median rate over the rounds (wall clock and this process's CPU time) and the ratio
new/base; per format and direction the median of the ratios. The load average is printed
before and after. Never asserts a speed.

``--cold``: for each side, a fresh process with an empty ``NUMBA_CACHE_DIR`` builds and runs
once an Avro and a Protobuf decode and encode (what a new user waits for: numba compiling the
kernels), then a second fresh process on the now-filled cache (what every later worker process
pays); their difference is the compile. CPU seconds of the process (wall clock on a shared
machine measures the scheduler), alternating sides, medians of ``--rounds``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = 10_000  # rows per decode call: the source's default maxBatchRows


# -- worker side ---------------------------------------------------------------------------------
def _decode_case(case, n):
    import pyarrow as pa

    from benchmarks.corpus._gen import generate
    from connector.formats import build_decoder
    from wireformat import parse_frames

    batch = generate(case, min(400, n), seed=0)
    framed = (batch.framed * (n // len(batch.framed) + 1))[:n]
    values = pa.array(framed, pa.binary())
    dec = build_decoder(case.spec, options=case.options)
    pb = case.fmt == "protobuf"

    def run():
        for at in range(0, n, STEP):
            part = values.slice(at, STEP)
            res = dec.decode(parse_frames(part, "confluent", protobuf_indexes=pb), batch.lookup)
            assert res.errors.null_count == len(part), res.errors.drop_null()[:1].to_pylist()
    return run


def _encode_case(case, n):
    import pyarrow as pa

    from benchmarks.corpus._gen import generate
    from connector.formats import EncodeOptions, build_decoder, build_encoder, encode_column
    from wireformat import Framing, parse_frames

    batch = generate(case, 400, seed=0)
    dec = build_decoder(case.spec, options=case.options)
    pb = case.fmt == "protobuf"
    rows = dec.decode(parse_frames(batch.values, "confluent", protobuf_indexes=pb), batch.lookup)
    enc = build_encoder(case.spec, options=EncodeOptions(max_recursion_depth=case.options.max_recursion_depth))
    idx = enc.message_indexes
    first = encode_column(rows.values, encoder=enc, framing=Framing.CONFLUENT, schema_id=1, message_indexes=idx)
    good = [i for i, e in enumerate(first.errors.to_pylist()) if e is None]
    arrow = rows.values.take(pa.array([good[i % len(good)] for i in range(n)]))

    def run():
        out = encode_column(arrow, encoder=enc, framing=Framing.CONFLUENT, schema_id=1, message_indexes=idx)
        assert out.error_count == 0, out.errors.drop_null()[:1].to_pylist()
    return run


def _shape_case(fmt, shape, n):
    """A shape of ``avro_engine_bench`` / ``protobuf_engine_bench``, decoded."""
    import io

    import pyarrow as pa

    from benchmarks.decode_bench import our_path
    from connector.formats import DecodeOptions, build_decoder
    from registry import Schema, SchemaType
    from wireformat import encode_frame, encode_protobuf_indexes

    if fmt == "avro":
        import fastavro

        from benchmarks.avro_engine_bench import SHAPES
        from benchmarks.decode_bench import Spec

        schema, gen = SHAPES[shape]
        parsed = fastavro.parse_schema(schema)
        cache: dict = {}
        framed = []
        for r in gen(n):
            if id(r) not in cache:
                b = io.BytesIO()
                fastavro.schemaless_writer(b, parsed, r)
                cache[id(r)] = encode_frame("confluent", 1, b.getvalue())
            framed.append(cache[id(r)])
        text = json.dumps(schema)
        dec = build_decoder(Spec("avro", text), options=DecodeOptions())
        return our_path(dec, pa.array(framed, pa.binary()), n,
                        Schema(schema_type=SchemaType.AVRO, text=text, id=1))
    import random

    from benchmarks.protobuf_engine_bench import SHAPES as PB_SHAPES
    from benchmarks.decode_bench import Spec
    from benchmarks.protobuf_engine_bench import random_message
    from connector.formats.protobuf._schema import compile_proto

    text, message, depth = PB_SHAPES[shape]
    dec = build_decoder(Spec("protobuf", text, message), options=DecodeOptions(max_recursion_depth=depth))
    proto = compile_proto(text, ())
    cls = proto.message_class(proto.find(message))
    rnd = random.Random(7)
    payloads = [random_message(cls, rnd, depth=max(depth, 3)).SerializeToString() for _ in range(min(n, 2000))]
    idx = [m.name for m in cls.DESCRIPTOR.file.message_types_by_name.values()].index(cls.DESCRIPTOR.name)
    head = b"\x00" + (1).to_bytes(4, "big") + encode_protobuf_indexes([idx])
    framed = [head + payloads[i % len(payloads)] for i in range(n)]
    return our_path(dec, pa.array(framed, pa.binary()), n,
                    Schema(schema_type=SchemaType.PROTOBUF, text=text, id=1), protobuf_indexes=True)


def workloads(only: str) -> list[tuple[str, str, str]]:
    """(name, format, direction) of every workload."""
    from benchmarks.avro_engine_bench import SHAPES
    from benchmarks.corpus._gen import cases
    from benchmarks.protobuf_engine_bench import SHAPES as PB_SHAPES

    out = []
    for case in cases():
        if case.fmt in ("avro", "protobuf"):
            out += [(f"decode {case.name}", case.fmt, "decode"), (f"encode {case.name}", case.fmt, "encode")]
    out += [(f"decode avro/shape-{s}", "avro", "decode") for s in SHAPES]
    out += [(f"decode protobuf/shape-{s}", "protobuf", "decode") for s in PB_SHAPES]
    return [w for w in out if only in w[0]]


def _build(name: str, n: int):
    from benchmarks.corpus._gen import cases

    direction, what = name.split(" ", 1)
    fmt, case_name = what.split("/", 1)
    if case_name.startswith("shape-"):
        return _shape_case(fmt, case_name[len("shape-"):], n)
    case = next(c for c in cases() if c.name == what)
    return (_decode_case if direction == "decode" else _encode_case)(case, n)


def worker(n: int, sample_s: float) -> None:
    """Read workload names from stdin; answer each with one sample (records/s wall and CPU)."""
    built: dict = {}
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        try:
            fn = built.get(name)
            if fn is None:
                fn = built[name] = _build(name, n)
                fn()  # warm: plans, caches, numba
                t0 = time.perf_counter()
                fn()
                built[name + "#k"] = max(1, min(50, int(sample_s / max(time.perf_counter() - t0, 1e-6)) + 1))
            k = built[name + "#k"]
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(k):
                fn()
            wall, cpu = time.perf_counter() - t0, max(time.process_time() - c0, 1e-9)
            print(json.dumps({"wall": n * k / wall, "cpu": n * k / cpu}), flush=True)
        except Exception as e:  # reported, the run goes on
            print(json.dumps({"error": f"{type(e).__name__}: {str(e)[:200]}"}), flush=True)


# -- driver side ---------------------------------------------------------------------------------
def _spawn(root: str, n: int, sample_s: float, env=None) -> subprocess.Popen:
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            f"from benchmarks.kernel_ab import worker; worker({n}, {sample_s})")
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=root, env=env)


def _ask(p: subprocess.Popen, name: str) -> dict:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(name + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def ab(base: str, rounds: int, n: int, sample_s: float, only: str) -> None:
    print(f"load average at start: {os.getloadavg()}", flush=True)
    sides = {"base": _spawn(base, n, sample_s), "new": _spawn(HERE, n, sample_s)}
    names = workloads(only)
    got: dict = {(w, s): [] for w, _, _ in names for s in sides}
    try:
        for r in range(rounds):
            for i, (w, _, _) in enumerate(names):
                order = ["base", "new"] if (r + i) % 2 == 0 else ["new", "base"]
                for s in order:
                    got[(w, s)].append(_ask(sides[s], w))
            print(f"round {r + 1}/{rounds} done, load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        for p in sides.values():
            assert p.stdin is not None
            p.stdin.close()
            p.wait()
    print(f"\n{'workload':<52}{'base rec/s':>12}{'new rec/s':>12}{'new/base':>9}{'cpu':>8}")
    ratios: dict = {}
    for w, fmt, direction in names:
        b, nw = got[(w, "base")], got[(w, "new")]
        err = next((x["error"] for x in b + nw if "error" in x), None)
        if err:
            print(f"{w:<52}  ERROR {err}")
            continue
        bw, nw_ = statistics.median(x["wall"] for x in b), statistics.median(x["wall"] for x in nw)
        bc, nc = statistics.median(x["cpu"] for x in b), statistics.median(x["cpu"] for x in nw)
        ratios.setdefault((fmt, direction), []).append((nw_ / bw, nc / bc))
        print(f"{w:<52}{bw:>12,.0f}{nw_:>12,.0f}{nw_ / bw:>9.3f}{nc / bc:>8.3f}")
    print()
    for (fmt, direction), rs in sorted(ratios.items()):
        print(f"{fmt:<9}{direction:<7} median new/base over {len(rs)} workloads: wall "
              f"{statistics.median(r for r, _ in rs):.3f}, cpu {statistics.median(c for _, c in rs):.3f}")
    print(f"load average at end: {os.getloadavg()}")


_COLD = """
import time, sys
t0 = time.process_time()
from benchmarks.kernel_ab import _build
fns = [_build(w, 200) for w in {names!r}]
t1 = time.process_time()
for f in fns:
    f()
t2 = time.process_time()
print(t1 - t0, t2 - t1)
"""
COLD_WORKLOADS = ["decode avro/shape-nested", "encode avro/confluent_payment",
                  "decode protobuf/shape-wide", "encode protobuf/otlp_trace"]


def cold(base: str, rounds: int) -> None:
    """First-use time (numba compiling into an empty cache) and cached start, per side."""
    print(f"load average at start: {os.getloadavg()}", flush=True)
    res: dict = {(s, k): [] for s in ("base", "new") for k in ("compile", "cached")}
    for r in range(rounds):
        for s in (["base", "new"] if r % 2 == 0 else ["new", "base"]):
            root = base if s == "base" else HERE
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, NUMBA_CACHE_DIR=cache)
                for k in ("compile", "cached"):
                    out = subprocess.run([sys.executable, "-c", _COLD.format(names=COLD_WORKLOADS)],
                                         cwd=root, env=dict(env, PYTHONPATH=root), capture_output=True,
                                         text=True, check=True)
                    res[(s, k)].append(sum(map(float, out.stdout.split())))
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{s} {k} {v[-1]:.2f} s" for (s, k), v in res.items()),
              flush=True)
    for k in ("compile", "cached"):
        b, nw = statistics.median(res[("base", k)]), statistics.median(res[("new", k)])
        print(f"set-up and first run of {len(COLD_WORKLOADS)} workloads, {k:>8}: base {b:.2f} CPU s, "
              f"new {nw:.2f} s, new/base {nw / b:.3f}")
    comp = [c - w for c, w in zip(res[("base", "compile")], res[("base", "cached")])]
    comp_new = [c - w for c, w in zip(res[("new", "compile")], res[("new", "cached")])]
    print(f"numba compile (empty cache minus filled cache): base {statistics.median(comp):.2f} s, "
          f"new {statistics.median(comp_new):.2f} s, new/base {statistics.median(comp_new) / statistics.median(comp):.3f}")
    print(f"load average at end: {os.getloadavg()}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other checkout's root")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--sample", type=float, default=0.2, help="seconds per sample at least")
    ap.add_argument("--only", default="", help="workloads whose name contains this")
    ap.add_argument("--cold", action="store_true", help="measure the first use's compile time")
    a = ap.parse_args(argv)
    if a.cold:
        cold(os.path.abspath(a.base), a.rounds)
    else:
        ab(os.path.abspath(a.base), a.rounds, a.records, a.sample, a.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
