"""The compiled Avro kernel's own mechanics: column buffers that grow mid-group, rows rolled back
inside collections, the row of a value that fails after the kernel (UTF-8, decimal precision)
found through lists and maps, and reader defaults when two writer records fill one column."""
from __future__ import annotations

import pytest

from tests.unit.decode.test_avro_engine import engine
from tests.unit.decode.test_avro_reference import encode

pytestmark = pytest.mark.timeout(120)

ARR = {"type": "record", "name": "A", "fields": [
    {"name": "id", "type": "long"},
    {"name": "xs", "type": {"type": "array", "items": "long"}},
    {"name": "s", "type": "string"}]}


def test_columns_and_bytes_grow_when_a_row_outgrows_what_the_group_learnt():
    small = [encode(ARR, {"id": i, "xs": [i], "s": "a"}) for i in range(50)]
    big = encode(ARR, {"id": 99, "xs": list(range(5000)), "s": "é" * 100_000})
    # a first group teaches one value per row; the second has a row 5,000 times larger in
    # its middle (the kernel stops there, grows the column and redoes the row)
    engine(ARR, small)
    out, errs = engine(ARR, small[:10] + [big] + small[10:])
    assert errs == [None] * 51
    got = out.to_pylist()
    assert got[10] == {"id": 99, "xs": list(range(5000)), "s": "é" * 100_000}
    assert got[:10] + got[11:] == [{"id": i, "xs": [i], "s": "a"} for i in range(50)]


NESTED = {"type": "record", "name": "N", "fields": [
    {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": {
        "type": "record", "name": "I", "fields": [
            {"name": "s", "type": "string"},
            {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4,
                                   "scale": 2}}]}}}},
    {"name": "t", "type": "string"}]}


def _n(items, t="t"):
    return encode(NESTED, {"m": [("k", [{"s": s, "d": d} for s, d in items])], "t": t})


def test_a_row_failing_inside_a_collection_is_rolled_back_and_neighbours_keep_their_values():
    good1, good2 = _n([("a", 1), ("b", 2)]), _n([("c", 3)])
    cut = _n([("x", 1), ("y", 2), ("z", 3)])[:-4]  # truncated inside the third item
    out, errs = engine(NESTED, [good1, cut, good2])
    assert errs[0] is None and errs[2] is None and "truncated" in errs[1]
    got = out.to_pylist()
    assert got[1] is None
    assert [(v["s"], str(v["d"])) for v in got[0]["m"][0][1]] == [("a", "0.01"), ("b", "0.02")]
    assert [v["s"] for v in got[2]["m"][0][1]] == ["c"]


def test_values_failing_after_the_kernel_fail_their_own_row_through_maps_and_lists():
    rows = [_n([("a", 1)]), _n([("ok", 1), ("bq", 2)]), _n([("c", 1), ("d", 10_000)]),
            _n([("e", 5)], t="ok")]
    # invalid UTF-8 in row 1 (an item's string), a decimal beyond precision 4 in row 2
    rows[1] = rows[1].replace(b"\x04bq", b"\x04b\xff")
    out, errs = engine(NESTED, rows)
    assert errs[0] is None and errs[3] is None
    assert "invalid UTF-8" in errs[1] and "exceeds precision 4" in errs[2]
    got = out.to_pylist()
    assert got[1] is None and got[2] is None and got[3]["t"] == "ok"


def test_two_writer_records_read_as_one_reader_record_take_each_its_defaults():
    w = ["null",
         {"type": "record", "name": "a.R", "fields": [{"name": "x", "type": "int"}]},
         {"type": "record", "name": "b.R", "fields": [{"name": "x", "type": "int"},
                                                       {"name": "y", "type": "string"}]}]
    r = ["null", {"type": "record", "name": "R", "fields": [
        {"name": "x", "type": "int"}, {"name": "y", "type": "string", "default": "dflt"}]}]
    rows = [encode(w, (1, {"x": 1})), encode(w, (2, {"x": 2, "y": "own"})), encode(w, (0, None)),
            encode(w, (1, {"x": 3}))]
    out, errs = engine(w, rows, r)
    assert errs == [None] * 4
    assert out.to_pylist() == [{"x": 1, "y": "dflt"}, {"x": 2, "y": "own"}, None,
                               {"x": 3, "y": "dflt"}]
