"""Decoder orchestration: Spark-exact types, pickling, multi-type topics, framing helpers."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from tests.unit.decode.decode_helpers import Spec, avro_bytes, binary, framed
from hypothesis import given, settings
from hypothesis import strategies as st
from registry import Schema, SchemaType

from connector.formats import DecodeOptions, build_decoder, build_multi_decoder
from connector.formats.protobuf._decode import frame_as_repeated
from connector.errors import ConfigError
from test_avro import ALL, MAPS
from test_json import SCHEMA as JSON_SCHEMA
from test_protobuf import PROTO

A = {"type": "record", "name": "A", "namespace": "ev", "fields": [{"name": "x", "type": "int"}]}
B = {"type": "record", "name": "B", "namespace": "ev", "fields": [{"name": "y", "type": "string"}]}


@pytest.mark.parametrize("spec", [Spec("avro", ALL), Spec("avro", MAPS), Spec("json", JSON_SCHEMA),
                                  Spec("protobuf", PROTO, "shop.Order")], ids=["avro", "avro-maps",
                                                                               "json", "protobuf"])
def test_arrow_type_survives_spark_round_trip(spec):
    from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type
    t = build_decoder(spec, options=DecodeOptions()).arrow_type
    assert to_arrow_type(from_arrow_type(t), timezone="UTC") == t


def test_package_imports_without_pyspark():
    code = ("import sys, connector.formats; "
            "assert not [m for m in sys.modules if m.startswith('pyspark')], 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registry_schema_as_reader_and_pickling(registry):
    reader = Schema(schema_type=SchemaType.AVRO, text=json.dumps(A), id=1)
    d = build_decoder(reader, options=DecodeOptions())
    registry.add(1, A)
    clone = pickle.loads(pickle.dumps(d))
    assert "compiled" not in repr(pickle.dumps(d)) and clone.arrow_type == d.arrow_type
    res = clone.decode(framed([(1, avro_bytes(A, {"x": 5}))]), registry.lookup)
    assert res.values.to_pylist() == [{"x": 5}]


def test_missing_reader_and_wrong_writer_format(registry):
    with pytest.raises(ConfigError):
        build_decoder(None, fmt="avro")
    registry.add(4, '{"type": "object"}', "JSON")
    d = build_decoder(Spec("avro", A), options=DecodeOptions())
    res = d.decode(framed([(4, b"{}")]), registry.lookup)
    assert "schema id 4 is json, expected avro" in res.errors[0].as_py()


def test_unparseable_writer_schema_is_a_row_error_naming_the_id(registry):
    registry.add(8, "{not json")
    d = build_decoder(Spec("avro", A), options=DecodeOptions())
    res = d.decode(framed([(8, b"\x02"), (8, b"\x04")]), registry.lookup)
    assert res.values.null_count == 2
    assert all(e.startswith("avro decode failed for schema id 8") for e in res.errors.to_pylist())


def test_multi_decoder_routes_by_record_full_name(registry):
    registry.add(1, A)
    registry.add(2, B)
    registry.add(3, {"type": "record", "name": "C", "fields": []})
    m = build_multi_decoder({"a": Spec("avro", A), "b": Spec("avro", B)})
    assert m.arrow_type == pa.struct([("a", pa.struct([("x", pa.int32())])),
                                      ("b", pa.struct([("y", pa.string())]))])
    rows = [(2, avro_bytes(B, {"y": "q"})), (1, avro_bytes(A, {"x": 1})), (3, b"")]
    res = m.decode(framed(rows), registry.lookup)
    assert res.values.to_pylist()[:2] == [{"a": None, "b": {"y": "q"}}, {"a": {"x": 1}, "b": None}]
    assert "record type C" in res.errors[2].as_py()
    only = build_multi_decoder({"a": Spec("avro", A), "b": Spec("avro", B)}, only=["a"])
    res = only.decode(framed(rows[:2]), registry.lookup)
    assert res.values.to_pylist() == [{"a": None, "b": None}, {"a": {"x": 1}, "b": None}]
    assert res.errors.null_count == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(0, 3))
def test_frame_as_repeated_equals_python_reference(payloads, skip):
    def varint(n):
        out = bytearray()
        while n > 0x7F:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))
    arr = binary([b"pad"] * skip + payloads).slice(skip)  # non-zero offsets too
    expected = b"".join(b"\x0a" + varint(len(p)) + p for p in payloads)
    assert frame_as_repeated(arr) == expected


def test_scatter_keeps_row_order_across_many_groups(registry):
    for i in range(1, 6):
        registry.add(i, A)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 6, 200).tolist()
    d = build_decoder(Spec("avro", A), options=DecodeOptions())
    res = d.decode(framed([(sid, avro_bytes(A, {"x": k})) for k, sid in enumerate(ids)]), registry.lookup)
    assert [v["x"] for v in res.values.to_pylist()] == list(range(200))
    assert res.schema_ids.to_pylist() == [str(s) for s in ids]


def test_schema_references_avro_and_protobuf(registry):
    from registry import Schema as RSchema
    money = {"type": "record", "name": "Money", "namespace": "ref", "fields": [
        {"name": "cents", "type": "long"}, {"name": "ccy", "type": "string"}]}
    main = {"type": "record", "name": "Invoice", "namespace": "ref", "fields": [
        {"name": "total", "type": "ref.Money"}]}
    ref = RSchema(schema_type=SchemaType.AVRO, text=json.dumps(money))
    registry.add(1, main, references=(("ref.Money", ref),))
    reader = RSchema(schema_type=SchemaType.AVRO, text=json.dumps(main),
                     resolved_references=(("ref.Money", ref),))
    d = build_decoder(reader, options=DecodeOptions())
    full = {"type": "record", "name": "Invoice", "namespace": "ref",
            "fields": [{"name": "total", "type": money}]}
    res = d.decode(framed([(1, avro_bytes(full, {"total": {"cents": 5, "ccy": "EUR"}}))]), registry.lookup)
    assert res.values.to_pylist() == [{"total": {"cents": 5, "ccy": "EUR"}}] and res.errors.null_count == 1

    common = 'syntax = "proto3"; package com; message Money { int64 cents = 1; }'
    inv = 'syntax = "proto3"; package inv; import "com/money.proto"; message Inv { com.Money total = 1; }'
    pref = RSchema(schema_type=SchemaType.PROTOBUF, text=common)
    preader = RSchema(schema_type=SchemaType.PROTOBUF, text=inv,
                      resolved_references=(("com/money.proto", pref),))
    pd = build_decoder(preader, options=DecodeOptions())
    assert pd.arrow_type == pa.struct([("total", pa.struct([("cents", pa.int64())]))])
    vals, errs = pd.decode_group(binary([b"\x0a\x02\x08\x07"]), None, (), "1")
    assert vals.to_pylist() == [{"total": {"cents": 7}}] and errs == [None]
