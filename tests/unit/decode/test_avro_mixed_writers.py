"""Avro batches holding rows of several writer schemas: decoded in one pass in row order
(``MixedCodecs``), reader defaults written by the kernel, and the same values and row errors
as decoding each row on its own."""
from __future__ import annotations

import io
from datetime import date, datetime, timezone
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.decode.decode_helpers import Spec, avro_bytes, framed

from connector.formats import DecodeOptions, build_decoder

OLD = {"type": "record", "name": "Ev", "namespace": "t", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
# every kind of default: the kernel writes the scalar ones, the assembly the others
READER = dict(OLD, fields=OLD["fields"] + [
    {"name": "s", "type": "string", "default": "dflt é"},
    {"name": "by", "type": "bytes", "default": "\u00ff\u0001"},
    {"name": "i", "type": "int", "default": -7},
    {"name": "l", "type": "long", "default": 2**40},
    {"name": "f", "type": "float", "default": 1.5},
    {"name": "d", "type": "double", "default": -2.25},
    {"name": "b", "type": "boolean", "default": True},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}, "default": "B"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 1000},
    {"name": "dt", "type": {"type": "int", "logicalType": "date"}, "default": 3},
    {"name": "n", "type": ["null", "string"], "default": None},
    {"name": "nl", "type": ["long", "null"], "default": 5},
    {"name": "il", "type": ["int", "long"], "default": 9},
    {"name": "nr", "type": ["null", {"type": "record", "name": "In", "fields": [
        {"name": "x", "type": "int"}]}], "default": None},
    {"name": "rec", "type": {"type": "record", "name": "In2", "fields": [{"name": "x", "type": "int"}]},
     "default": {"x": 1}},
    {"name": "arr", "type": {"type": "array", "items": "int"}, "default": [1, 2]},
    {"name": "m", "type": {"type": "map", "values": "string"}, "default": {"k": "v"}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
     "default": "\u0001\u0000"},
    {"name": "u", "type": ["int", "string"], "default": 4}])


def _new(i: int) -> dict:
    return {"id": i, "name": f"n{i}", "s": "x" * (i % 3), "by": bytes([i % 256]), "i": i, "l": -i, "f": 0.5 * i,
            "d": 0.25 * i, "b": i % 2 == 0, "e": "ABC"[i % 3], "ts": i * 1000, "dt": i, "n": None if i % 2 else "y",
            "nl": None if i % 3 else i, "il": i, "nr": {"x": i} if i % 2 else None, "rec": {"x": -i},
            "arr": list(range(i % 4)), "m": {"a": str(i)}, "dec": Decimal(i) / 100, "u": i if i % 2 else str(i)}


def _expected(writer: dict, payload: bytes, dec) -> object:
    """fastavro's reading of ``payload`` (writer → reader), in the decoder's Arrow form."""
    v = fastavro.schemaless_reader(io.BytesIO(payload), fastavro.parse_schema(writer),
                                   fastavro.parse_schema(READER))
    v["m"] = list(v["m"].items())
    # fastavro leaves defaults in their JSON form: the logical values the reader means
    if isinstance(v["dec"], str):
        v["dec"] = Decimal(int.from_bytes(v["dec"].encode("latin-1"), "big", signed=True)).scaleb(-2)
    if isinstance(v["by"], str):
        v["by"] = v["by"].encode("latin-1")
    if isinstance(v["ts"], int):
        v["ts"] = datetime.fromtimestamp(v["ts"] / 1000, timezone.utc)
    if isinstance(v["dt"], int):
        v["dt"] = date.fromordinal(date(1970, 1, 1).toordinal() + v["dt"])
    u = v["u"]
    v["u"] = {"member0": u if isinstance(u, int) else None, "member1": u if isinstance(u, str) else None}
    return pa.array([v], dec.arrow_type).to_pylist()[0]


@pytest.mark.parametrize("order", ["runs", "interleaved"])
def test_two_writers_in_one_batch_equal_fastavro_and_keep_row_errors(registry, order):
    registry.add(1, OLD)
    registry.add(2, READER)
    dec = build_decoder(Spec("avro", READER), options=DecodeOptions())
    old = [(1, avro_bytes(OLD, {"id": i, "name": f"o{i}"})) for i in range(6)]
    new = [(2, avro_bytes(READER, _new(i))) for i in range(6)]
    old[2] = (1, old[2][1][:-1])  # truncated: a row error of writer 1
    new[3] = (2, new[3][1] + b"\x00")  # trailing byte: a row error of writer 2
    rows = old + new if order == "runs" else [r for pair in zip(old, new) for r in pair]
    rows += [(99, b"\x02"), b"\x07junk"]  # an id the registry does not know, a framing error
    res = dec.decode(framed(rows), registry.lookup)
    vals, errs = res.values.to_pylist(), res.errors.to_pylist()
    for k, row in enumerate(rows[:-2]):
        sid, payload = row
        if payload in (old[2][1], new[3][1]):
            assert vals[k] is None and errs[k].startswith(f"avro decode failed for schema id {sid}: ")
            continue
        assert errs[k] is None, errs[k]
        assert vals[k] == _expected(OLD if sid == 1 else READER, payload, dec), k
    assert "trailing" in errs[rows.index(new[3])] and "past the end of the payload" in errs[rows.index(old[2])]
    assert vals[-2:] == [None, None] and "99" in errs[-2] and errs[-1] is not None
    assert dec._state().reader._mixed._codecs, "the batch was not decoded in one pass"


def test_mixed_batch_equals_one_group_at_a_time(registry):
    registry.add(1, OLD)
    registry.add(2, READER)
    dec = build_decoder(Spec("avro", READER), options=DecodeOptions())
    rows = [(1 + i % 2, avro_bytes(OLD, {"id": i, "name": "a"}) if i % 2 == 0 else avro_bytes(READER, _new(i)))
            for i in range(40)]
    together = dec.decode(framed(rows), registry.lookup).values
    alone = [dec.decode(framed([r]), registry.lookup).values[0].as_py() for r in rows]
    assert together.to_pylist() == alone
    assert together.type == dec.arrow_type


def test_a_writer_that_cannot_be_read_fails_only_its_rows_in_a_mixed_batch(registry):
    registry.add(1, OLD)
    registry.add(2, READER)
    registry.add(3, "{not json")  # the mixed codec cannot compile: group by group
    registry.add(4, {"type": "record", "name": "Ev", "namespace": "t", "fields": [{"name": "id", "type": "string"}]})
    dec = build_decoder(Spec("avro", READER), options=DecodeOptions())
    rows = [(1, avro_bytes(OLD, {"id": 1, "name": "a"})), (3, b"\x02"), (2, avro_bytes(READER, _new(1))),
            (4, b"\x02a")]
    res = dec.decode(framed(rows), registry.lookup)
    errs = res.errors.to_pylist()
    assert errs[0] is None and errs[2] is None
    assert errs[1].startswith("avro decode failed for schema id 3") and "schema id 4" in errs[3]
    assert res.values[0].as_py()["s"] == "dflt é" and res.values[2].as_py()["name"] == "n1"
    # writer 4 resolves (its rows fail in the kernel): mixed with writer 1 in one pass
    res = dec.decode(framed([rows[0], rows[3], rows[0]]), registry.lookup)
    assert res.errors.to_pylist()[::2] == [None, None] and "no default" in res.errors[1].as_py()


def test_scalar_defaults_are_written_by_the_kernel_and_the_others_by_the_assembly():
    import json

    from connector.formats.avro._decode import AvroCodec
    from connector.formats.avro._schema import parse_avro

    reader, _ = parse_avro(json.dumps(READER))
    codec = AvroCodec(json.dumps(OLD), reader, json.dumps(READER), DecodeOptions())
    root = codec.program.cols[codec.program.root_col]
    (_, post), = root.variants
    assert sorted(READER["fields"][i]["name"] for i in post) == ["arr", "dec", "m", "rec", "u"]
    vals, errs = codec.decode(pa.array([avro_bytes(OLD, {"id": 1, "name": "a"})] * 3, pa.binary()), "1")
    assert errs == [None] * 3 and len(set(map(str, vals.to_pylist()))) == 1
    v = vals[0].as_py()
    assert (v["s"], v["by"], v["i"], v["l"], v["f"], v["d"], v["b"], v["e"], v["n"], v["nl"], v["il"],
            v["nr"]) == ("dflt é", b"\xff\x01", -7, 2**40, 1.5, -2.25, True, "B", None, 5, 9, None)
    assert v["rec"] == {"x": 1} and v["arr"] == [1, 2] and v["m"] == [("k", "v")]


def test_values_failing_in_the_assembly_name_their_own_writer(registry):
    registry.add(1, OLD)
    registry.add(2, READER)
    dec = build_decoder(Spec("avro", READER), options=DecodeOptions())
    bad_utf8 = b"\x02" + b"\x04\xff\xfe"  # id 1, name: 2 bytes that are not UTF-8
    big = dict(_new(2), dec=Decimal("999.99"))
    wide = avro_bytes(dict(READER, fields=[dict(f, type={"type": "bytes", "logicalType": "decimal",
                                                           "precision": 9, "scale": 2})
                                           if f["name"] == "dec" else f for f in READER["fields"]]),
                      dict(big, dec=Decimal("9999999.99")))  # beyond precision 5 once read
    rows = [(2, avro_bytes(READER, _new(1))), (1, bad_utf8), (2, wide), (1, avro_bytes(OLD, {"id": 3, "name": "ok"}))]
    res = dec.decode(framed(rows), registry.lookup)
    errs = res.errors.to_pylist()
    assert errs[0] is None and errs[3] is None
    assert errs[1] == "avro decode failed for schema id 1: invalid UTF-8 in a string"
    assert errs[2] == "avro decode failed for schema id 2: decimal value exceeds precision 5"
    assert res.values[1].as_py() is None and res.values[2].as_py() is None
    assert res.values[3].as_py()["name"] == "ok" and res.values[0].as_py()["name"] == "n1"


_PAYLOADS = {1: [avro_bytes(OLD, {"id": i, "name": "é" * i}) for i in range(4)],
             2: [avro_bytes(READER, _new(i)) for i in range(4)]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([1, 2, 99]), st.integers(0, 3), st.integers(0, 40)),
                min_size=1, max_size=12))
def test_property_a_batch_of_any_writers_equals_its_rows_decoded_alone(registry, rows):
    """Any order of writers, some rows cut short (row errors) or of an unknown id: the batch
    gives each row what decoding it alone gives."""
    registry.add(1, OLD)
    registry.add(2, READER)
    dec = build_decoder(Spec("avro", READER), options=DecodeOptions())
    framed_rows = []
    for sid, i, cut in rows:
        p = _PAYLOADS.get(sid, _PAYLOADS[1])[i]
        framed_rows.append((sid, p[:len(p) - cut] if cut < len(p) else p))
    res = dec.decode(framed(framed_rows), registry.lookup)
    alone = [dec.decode(framed([r]), registry.lookup) for r in framed_rows]
    assert res.values.to_pylist() == [a.values[0].as_py() for a in alone]
    assert res.errors.to_pylist() == [a.errors[0].as_py() for a in alone]
