"""The block path (schemas polars cannot read: maps, multi-type unions, unions of records) must
give exactly what the per-record reference gives, including for corrupt and padded rows."""
from __future__ import annotations

import decimal
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from connector.formats import build_decoder
from tests.unit.decode.decode_helpers import FAST, REFERENCE, Registry, Spec, avro_bytes, framed

A = {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}
B = {"type": "record", "name": "B", "fields": [{"name": "y", "type": "string"}]}
SCHEMA = {"type": "record", "name": "W", "namespace": "t", "fields": [
    {"name": "id", "type": "long"},
    {"name": "tags", "type": {"type": "map", "values": "long"}},
    {"name": "either", "type": ["null", "long", "string"], "default": None},
    {"name": "rec", "type": ["null", A, B], "default": None},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "items", "type": {"type": "array", "items": {"type": "map", "values": ["null", "double"]}}},
    {"name": "name", "type": ["null", "string"], "default": None},
]}

records = st.fixed_dictionaries({
    "id": st.integers(-2**63, 2**63 - 1),
    "tags": st.dictionaries(st.text(max_size=5), st.integers(-2**63, 2**63 - 1), max_size=4),
    "either": st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.text(max_size=8)),
    "rec": st.one_of(st.none(), st.builds(lambda x: {"x": x}, st.integers(-2**31, 2**31 - 1)),
                     st.builds(lambda y: {"y": y}, st.text(max_size=6))),
    "ts": st.integers(-2**40, 2**40),
    "amount": st.integers(-10**9 + 1, 10**9 - 1).map(lambda c: decimal.Decimal(c).scaleb(-2)),
    "items": st.lists(st.dictionaries(st.text(max_size=3), st.one_of(st.none(), st.floats(allow_nan=False)),
                                      max_size=3), max_size=3),
    "name": st.one_of(st.none(), st.text(max_size=10)),
})


def _decode(options, rows):
    reg = Registry()
    reg.add(5, SCHEMA)
    dec = build_decoder(Spec("avro", SCHEMA), options=options)
    return dec.decode(framed(rows), reg.lookup)


@settings(max_examples=60, deadline=None)
@given(st.lists(records, min_size=1, max_size=20), st.data())
def test_block_path_equals_reference(recs, data):
    rows = [(5, avro_bytes(SCHEMA, r)) for r in recs]
    # corrupt some rows: truncated, or padded with trailing bytes (a row error since issue 14)
    for i in range(len(rows)):
        kind = data.draw(st.sampled_from(["ok", "ok", "ok", "truncate", "pad"]))
        sid, payload = rows[i]
        if kind == "truncate" and len(payload) > 1:
            rows[i] = (sid, payload[: data.draw(st.integers(0, len(payload) - 1))])
        elif kind == "pad":
            rows[i] = (sid, payload + b"\x07\x07")
    fast, ref = _decode(FAST, rows), _decode(REFERENCE, rows)
    assert fast.values.equals(ref.values), (fast.values.to_pylist(), ref.values.to_pylist())
    assert (fast.errors.is_null().to_pylist() == ref.errors.is_null().to_pylist())


def test_block_path_is_used_and_decodes_maps_and_unions():
    rec = {"id": 1, "tags": {"a": 1}, "either": "s", "rec": {"y": "b"}, "ts": 1500,
           "amount": decimal.Decimal("1.25"), "items": [{"k": 2.5, "n": None}], "name": None}
    out = _decode(FAST, [(5, avro_bytes(SCHEMA, rec))] * 3)
    row = out.values.to_pylist()[0]
    assert row["tags"] == [("a", 1)] and row["either"] == {"member0": None, "member1": "s"}
    assert row["rec"] == {"member0": None, "member1": {"y": "b"}}
    assert row["ts"].timestamp() == 1.5 and row["amount"] == decimal.Decimal("1.25")
    assert json.dumps(out.errors.to_pylist()) == "[null, null, null]"
