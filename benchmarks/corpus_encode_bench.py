"""Corpus encode throughput: our write core vs confluent-kafka's serializer loop, on every corpus schema.

Run: ``python -m benchmarks.corpus_encode_bench [--quick] [--only NAME]`` or as the
``corpus-encode`` section of ``python -m benchmarks``. For each schema of ``benchmarks/corpus``
(the generated records of ``benchmarks/corpus/_gen.py``) it times, in the same run and on the
same records (medians of 3):

- ours: ``encode_column`` (Arrow column → Confluent-framed payloads, what a write task runs per
  batch), asserting every row encoded;
- the baseline: confluent-kafka's ``AvroSerializer`` / ``JSONSerializer`` (which validates each
  document, as it does by default) / ``ProtobufSerializer`` called once per record on what a
  Python producer holds (dicts, documents, ready message objects). Baselines run on a subset
  and are reported as rates.

Goals (issue 24): Avro ≥ 10×, JSON ≥ 10×, Protobuf ≥ 5×. Never fails: a schema whose path errors
is reported as such.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyarrow as pa

from benchmarks.corpus._gen import cases, generate
from benchmarks.corpus_bench import UNIQUE
from benchmarks.decode_bench import median_rate
from connector.formats import EncodeOptions, build_decoder, build_encoder, encode_column
from wireformat import Framing, parse_frames

GOALS = {"avro": 10.0, "json": 10.0, "protobuf": 5.0}
BASELINE_NAME = {"avro": "confluent AvroSerializer loop", "json": "confluent JSONSerializer loop",
                 "protobuf": "confluent ProtobufSerializer loop"}


def _baseline(case, batch, framed: list[bytes]):
    """(a callable serializing a list of inputs one at a time, the inputs for ``framed``)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import MessageField, SerializationContext

    ctx = SerializationContext("corpus", MessageField.VALUE)
    client = SchemaRegistryClient.new_client({"url": f"mock://corpus-encode-{case.name}"})
    conf = {"auto.register.schemas": True}
    if case.fmt == "avro":
        import fastavro
        from confluent_kafka.schema_registry.avro import AvroSerializer

        parsed = fastavro.parse_schema(json.loads(case.text))
        inputs = [fastavro.schemaless_reader(io.BytesIO(v[5:]), parsed, parsed, return_record_name=True)
                  for v in framed]
        ser = AvroSerializer(client, case.text, conf=conf)
    elif case.fmt == "json":
        from confluent_kafka.schema_registry.json_schema import JSONSerializer

        inputs = [json.loads(v[5:]) for v in framed]
        ser = JSONSerializer(case.text, client, conf=conf)
    else:
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
        from google.protobuf import message_factory

        from connector.formats.protobuf._schema import compile_proto
        compiled = compile_proto(case.text, ())
        cls = message_factory.GetMessageClass(compiled.find(case.message))
        frames = parse_frames(pa.array(framed, pa.binary()), "confluent", protobuf_indexes=True)
        inputs = [cls.FromString(p) for p in frames.payload.to_pylist()]
        ser = ProtobufSerializer(cls, client, conf={**conf, "use.deprecated.format": False})
    return (lambda part: [ser(x, ctx) for x in part]), inputs


def bench_case(case, n: int, slow_n: int) -> tuple[float, float]:
    batch = generate(case, UNIQUE, seed=0)
    dec = build_decoder(case.spec, options=case.options)
    pb = case.fmt == "protobuf"
    rows = dec.decode(parse_frames(batch.values, "confluent", protobuf_indexes=pb), batch.lookup)
    assert rows.errors.null_count == len(batch.values), rows.errors.drop_null()[:1].to_pylist()
    enc = build_encoder(case.spec, options=EncodeOptions(max_recursion_depth=case.options.max_recursion_depth))
    indexes = enc.message_indexes
    # The generator writes what decoders must read, validation keywords aside (a JSON ``maximum``,
    # ``maxItems``...): only the records the schema accepts are timed, on both sides.
    first = encode_column(rows.values, encoder=enc, framing=Framing.CONFLUENT, schema_id=1, message_indexes=indexes)
    good = [i for i, e in enumerate(first.errors.to_pylist()) if e is None]
    assert good, first.errors.drop_null()[:1].to_pylist()
    take = [good[i % len(good)] for i in range(n)]
    arrow = rows.values.take(pa.array(take))
    framed = [batch.framed[i] for i in take]

    def ours():
        out = encode_column(arrow, encoder=enc, framing=Framing.CONFLUENT, schema_id=1, message_indexes=indexes)
        assert out.error_count == 0, out.errors.drop_null()[:1].to_pylist()

    ours()  # warm per-process caches, like a reused worker
    base, inputs = _baseline(case, batch, framed[:slow_n])
    base(inputs[:10])
    return median_rate(ours, n), median_rate(lambda: base(inputs), len(inputs))


def run(quick: bool, rates: dict | None = None, only: str = "") -> list[dict]:
    n = 5_000 if quick else 20_000
    slow_n = 500 if quick else 2_000
    rows = []
    for case in cases():
        if only and only not in case.name:
            continue
        row = {"schema": case.name, "format": case.fmt, "goal": GOALS[case.fmt],
               "baseline": BASELINE_NAME[case.fmt]}
        try:
            ours, base = bench_case(case, n, slow_n)
            row.update(ours=ours, base=base, ratio=ours / base,
                       verdict="PASS" if ours / base >= GOALS[case.fmt] else "FALL SHORT")
        except Exception as e:
            traceback.print_exc(limit=3)
            row.update(ours=None, base=None, ratio=None, verdict=f"ERROR {type(e).__name__}: {str(e)[:80]}")
        rows.append(row)
        _print_row(row)
        if rates is not None and row["ours"]:
            rates[f"corpus encode {case.name}: ours"] = row["ours"]
            rates[f"corpus encode {case.name}: {row['baseline']}"] = row["base"]
    summary(rows)
    return rows


def _print_row(r):
    if r["ours"] is None:
        print(f"{r['schema']:<44}{'':>12}{'':>12}{'':>8}  {r['verdict']}", flush=True)
        return
    print(f"{r['schema']:<44}{r['ours']:>12,.0f}{r['base']:>12,.0f}{r['ratio']:>7.1f}x  "
          f"{r['verdict']} (goal {r['goal']:g}x)", flush=True)


def summary(rows) -> list[str]:
    """One line per format: schemas meeting the goal and the median ratio."""
    lines = []
    for fmt in ("avro", "json", "protobuf"):
        rs = [r for r in rows if r["format"] == fmt]
        if not rs:
            continue
        ok = [r for r in rs if r["verdict"] == "PASS"]
        ratios = [r["ratio"] for r in rs if r["ratio"]]
        med = statistics.median(ratios) if ratios else float("nan")
        short = [r["schema"].split("/", 1)[1] for r in rs if r["verdict"] != "PASS"]
        lines.append(f"corpus encode {fmt}: {len(ok)}/{len(rs)} schemas >= {GOALS[fmt]:g}x vs "
                     f"{BASELINE_NAME[fmt]} (median {med:.1f}x)" + (f"; short: {', '.join(short)}" if short else ""))
    for line in lines:
        print(line)
    return lines


def header():
    print(f"{'schema':<44}{'ours rec/s':>12}{'loop rec/s':>12}{'ratio':>8}  verdict")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    header()
    run(args.quick, only=args.only)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
