"""How the decode path scales: with batch size (10k → 1M records) and with the number of
distinct writer schemas in one batch (1, 10, 100 registered schema ids).

Records/s should stay about flat in both: cost linear in records, and schema lookups paid
once per id (the registry client caches ids forever). The writer schemas differ only by
their ``doc`` string, so each registers as its own id yet resolves to the reader trivially.

Run: ``/work/venv/bin/python benchmarks/scaling_bench.py [--quick]``.
"""
from __future__ import annotations

import argparse
import io
import json

import fastavro
import pyarrow as pa

from benchmarks.decode_bench import AVRO, Spec, median_rate, records
from connector.formats import DecodeOptions, build_decoder
from wireformat import encode_frame, parse_frames

_DISTINCT = 5000  # distinct payloads; larger inputs cycle over them


def _payloads() -> list[bytes]:
    parsed = fastavro.parse_schema(AVRO)
    out = []
    for r in records(_DISTINCT):
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed, r)
        out.append(b.getvalue())
    return out


def by_size(sizes=(10_000, 100_000, 1_000_000), out: dict | None = None) -> dict:
    """records/s of parse_frames + decode at each batch size (one schema id)."""
    out = {} if out is None else out
    from registry import Schema, SchemaType

    text = json.dumps(AVRO)
    reg = Schema(schema_type=SchemaType.AVRO, text=text, id=1)
    dec = build_decoder(Spec("avro", text), options=DecodeOptions())
    framed = [encode_frame("confluent", 1, p) for p in _payloads()]
    for n in sizes:
        values = pa.array([framed[i % len(framed)] for i in range(n)], pa.binary())

        def run():
            res = dec.decode(parse_frames(values, "confluent"), lambda key: reg)
            assert res.errors.null_count == n

        run()
        out[f"scaling: {n:,} records, one schema id"] = median_rate(run, n, runs=3 if n <= 100_000 else 2)
    return out


def by_schemas(counts=(1, 10, 100), n: int = 200_000, out: dict | None = None) -> dict:
    """records/s with ``k`` distinct registered writer ids spread over one batch of ``n``.

    Lookups go through the real registry client to an embedded registry on loopback; the
    first (warm-up) pass pays them, the timed passes are what a reused worker sees."""
    out = {} if out is None else out
    from registry import RegistryConfig, client_for
    from connector.testing import RegistryServer

    payloads = _payloads()
    dec = build_decoder(Spec("avro", json.dumps(AVRO)), options=DecodeOptions())
    with RegistryServer() as server:
        client = client_for(RegistryConfig.from_options({"schema.registry.url": server.url}))
        for k in counts:
            ids = [server.register(f"scale-{k}-value", json.dumps({**AVRO, "doc": f"variant {k}.{j}"}))
                   for j in range(k)]
            values = pa.array([encode_frame("confluent", ids[i % k], payloads[i % len(payloads)])
                               for i in range(n)], pa.binary())

            def run():
                res = dec.decode(parse_frames(values, "confluent"), client.lookup)
                assert res.errors.null_count == n, res.errors.drop_null()[:1]

            before = server.request_count("/schemas/ids/")
            run()
            fetched = server.request_count("/schemas/ids/") - before
            rate = median_rate(run, n)
            after = server.request_count("/schemas/ids/") - before
            assert fetched == k and after == k, (k, fetched, after)  # once per id, then cached
            out[f"scaling: {n:,} records, writer schema ids: {k}"] = rate
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    out: dict[str, float] = {}
    by_size((10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000), out)
    by_schemas((1, 10) if args.quick else (1, 10, 100), 50_000 if args.quick else 200_000, out)
    for k, v in out.items():
        print(f"{k:<45}{v:>14,.0f} rec/s")


if __name__ == "__main__":
    main()
