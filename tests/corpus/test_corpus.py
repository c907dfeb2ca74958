"""Every real-world corpus schema (``benchmarks/corpus``) decodes random records exactly.

Records come from the reference encoders (fastavro with explicit union branches, protobuf
``SerializeToString``, ``json.dumps``), framed Confluent; each decoded row must equal the value
the project's mapping promises (``benchmarks/corpus/_gen.py``), with no row error. Avro rows are
also checked against fastavro's own reader so the generator cannot drift from the reference.
"""
from __future__ import annotations

import io
import json

import fastavro
import pytest

from benchmarks.corpus._gen import _strip_for_fastavro, cases, generate, project, same
from connector.formats import build_decoder
from wireformat import parse_frames

N = 120  # records per schema and seed; the whole file stays well under a minute

# Cases that fail on today's code, one place to delete entries from once the engines that fix
# them are merged (strict=False: an entry that starts passing is reported, not an error).
XFAIL: dict[str, str] = {}

CASES = cases()


def _param(c):
    marks = [pytest.mark.xfail(strict=False, reason=XFAIL[c.name])] if c.name in XFAIL else []
    return pytest.param(c, id=c.name, marks=marks)


def test_corpus_size():
    by_fmt = {f: sum(c.fmt == f for c in CASES) for f in ("avro", "json", "protobuf")}
    assert by_fmt["avro"] >= 20 and by_fmt["json"] >= 10 and by_fmt["protobuf"] >= 10, by_fmt


def test_every_case_has_provenance():
    from benchmarks.corpus._gen import HERE
    text = (HERE / "PROVENANCE.md").read_text()
    missing = [c.name for c in CASES if f"`{c.name.split('/', 1)[1]}." not in text]
    assert not missing, missing


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_decodes_exactly(case, seed):
    batch = generate(case, N, seed=seed, schema_id=100 + seed)
    dec = build_decoder(case.spec, options=case.options)
    res = dec.decode(parse_frames(batch.values, "confluent", protobuf_indexes=case.fmt == "protobuf"),
                     batch.lookup)
    got, errors = res.values.to_pylist(), res.errors.to_pylist()
    assert len(got) == N
    bad = []
    for i, (g, e, x) in enumerate(zip(got, errors, batch.expected)):
        want = project(x, dec.arrow_type)
        if e is not None or not same(g, want):
            bad.append(i)
    if bad:
        i = bad[0]
        pytest.fail(f"{len(bad)}/{N} rows wrong; row {i}: error={errors[i]!r}\n got={got[i]!r:.3000}\n"
                    f"want={project(batch.expected[i], dec.arrow_type)!r:.3000}")
    assert res.schema_ids.to_pylist() == [str(100 + seed)] * N


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES if c.fmt != "protobuf"])
def test_generator_agrees_with_reference_reader(case):
    """The generated frames read back with the reference decoder (fastavro / json.loads)."""
    batch = generate(case, 30, seed=7)
    if case.fmt == "json":
        assert [json.loads(f[5:]) for f in batch.framed] == batch.docs
        return
    parsed = fastavro.parse_schema(_strip_for_fastavro(json.loads(case.text)))
    for f in batch.framed:
        buf = io.BytesIO(f[5:])
        fastavro.schemaless_reader(buf, parsed)
        assert buf.read() == b"", "the record did not consume its whole payload"
