"""The decode core shared by the source and the column functions (``decode_column``), the
``Mode`` enum, and the writer-group loop ``Decoder`` and ``MultiDecoder`` share."""
from __future__ import annotations

import pickle
import uuid

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.decode.decode_helpers import Spec, avro_bytes
from wireformat import Framing, encode_frame

from connector.formats import (
    ColumnResult, DecodeOptions, Mode, as_binary, build_decoder, build_multi_decoder, decode_column,
    first_error_row,
)
from connector.formats.avro import AVRO
from connector.errors import ConfigError

A = {"type": "record", "name": "A", "namespace": "ev", "fields": [{"name": "x", "type": "int"}]}
B = {"type": "record", "name": "B", "namespace": "ev", "fields": [{"name": "y", "type": "string"}]}
JSON = Spec("json", {"type": "object", "properties": {"n": {"type": "integer"}}})


def _json_rows():
    return [encode_frame("confluent", 1, b'{"n": 1}'), None, b"\x09junk", encode_frame("confluent", 2, b"{bad")]


@pytest.mark.parametrize("decoder", [None, build_decoder(JSON)], ids=["payload", "decoder"])
def test_null_input_is_a_null_value_without_error(decoder):
    """Tombstones: null in, null out, no error, with or without a decoder."""
    res = decode_column(pa.array(_json_rows(), pa.binary()), framing=Framing.CONFLUENT, decoder=decoder,
                        lookup=lambda key: None)
    assert isinstance(res, ColumnResult) and res.framing is Framing.CONFLUENT
    assert res.values[1].as_py() is None and res.errors[1].as_py() is None
    errors = res.errors.to_pylist()
    assert errors[0] is None and errors[2] and "unknown magic byte" in errors[2]
    if decoder is None:
        assert res.values.to_pylist()[0] == b'{"n": 1}' and errors[3] is None
    else:
        assert res.values.to_pylist()[0] == {"n": 1} and errors[3] is not None
        assert res.values[3].as_py() is None
    assert first_error_row(res.errors) == 2
    assert res.schema_ids.to_pylist() == [1, None, None, 2]


def test_every_input_layout_is_coerced_to_one_binary_array():
    rows = _json_rows()
    for values in (pa.array(rows, pa.large_binary()), pa.chunked_array([rows[:2], rows[2:]], pa.binary()),
                   pa.array([b"pad"] + rows, pa.binary()).slice(1)):
        res = decode_column(values, framing=Framing.CONFLUENT, decoder=None)
        assert res.raw.type == pa.binary() and res.raw.to_pylist() == rows
        assert res.values.to_pylist()[0] == b'{"n": 1}'
    assert as_binary(pa.array(["a"], pa.string())).to_pylist() == [b"a"]


def test_first_error_row():
    assert first_error_row(pa.nulls(3, pa.string())) is None
    assert first_error_row(pa.array([None, None, "x", "y"])) == 2
    assert first_error_row(pa.array([], pa.string())) is None


def test_schema_ids_follow_the_framing_id_text():
    guid = uuid.UUID(int=9)
    vals = pa.array([encode_frame("confluent", 7, b"{}"), encode_frame("glue", str(guid), b"{}"), None])
    res = decode_column(vals, framing=Framing.AUTO, decoder=None)
    assert res.schema_ids.to_pylist() == ["7", str(guid), None]  # auto may meet GUIDs: text
    assert res.parsed.schema_id_at(0) == 7 and res.parsed.schema_id_at(1) == str(guid)
    assert res.parsed.schema_id_at(2) is None
    assert res.parsed.framing_names().to_pylist() == ["confluent", "glue", None]


def test_mode_is_a_str_enum_and_validates():
    assert Mode.parse(" permissive ") is Mode.PERMISSIVE and Mode.FAILFAST == "FAILFAST"
    assert f"{Mode.DROPMALFORMED}" == "DROPMALFORMED" and str(Mode.FAILFAST) == "FAILFAST"
    assert pickle.loads(pickle.dumps(Mode.FAILFAST)) is Mode.FAILFAST
    with pytest.raises(ConfigError, match="FAILFAST, PERMISSIVE"):
        Mode.parse("DROPMALFORMED", allowed=(Mode.FAILFAST, Mode.PERMISSIVE))
    with pytest.raises(ConfigError):
        Mode.parse("LENIENT")


def test_writer_name_is_parsed_once_per_writer_schema(registry, monkeypatch):
    """The record name of a writer schema is cached per process, not re-parsed per batch."""
    registry.add(1, A)
    registry.add(2, B)
    m = build_multi_decoder({"a": Spec("avro", A), "b": Spec("avro", B)})
    calls = []
    real = AVRO.writer_name
    monkeypatch.setattr(AVRO, "writer_name", lambda *a, **k: calls.append(1) or real(*a, **k))
    vals = pa.array([encode_frame("confluent", 1, avro_bytes(A, {"x": 1})),
                     encode_frame("confluent", 2, avro_bytes(B, {"y": "q"}))])
    for _ in range(3):
        res = decode_column(vals, framing=Framing.CONFLUENT, decoder=m, lookup=registry.lookup)
        assert res.values.to_pylist() == [{"a": {"x": 1}, "b": None}, {"a": None, "b": {"y": "q"}}]
    assert len(calls) <= 2  # one per writer schema, not one per group per batch


def test_multi_decoder_shares_the_single_decoders_lookup_rules(registry):
    """A writer of another format is a row error in both decoders (the multi decoder once
    failed the job for a schema type it could not name), and rows without a registry read
    with the reader schema in both."""
    registry.add(4, '{"type": "object"}', "JSON")
    single = build_decoder(Spec("avro", A))
    multi = build_multi_decoder({"a": Spec("avro", A), "b": Spec("avro", B)})
    vals = pa.array([encode_frame("confluent", 4, b"{}")])
    for d in (single, multi):
        res = decode_column(vals, framing=Framing.CONFLUENT, decoder=d, lookup=registry.lookup)
        assert "schema id 4 is json, expected avro" in res.errors[0].as_py()
    jmulti = build_multi_decoder({"j": JSON}, options=DecodeOptions())
    res = decode_column(pa.array([encode_frame("confluent", 5, b'{"n": 3}')]), framing=Framing.CONFLUENT,
                        decoder=jmulti, lookup=lambda key: None)
    assert res.errors.to_pylist() == [None] and res.values.to_pylist() == [{"j": {"n": 3}}]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 2**31 - 1), st.binary(max_size=12)), max_size=30),
       st.integers(0, 3))
def test_decode_column_payloads_match_a_per_row_reference(rows, skip):
    """No decoder: payload, error and id per row equal a plain-Python reading of each frame."""
    vals = [encode_frame("confluent", r, b"p%d" % r) if isinstance(r, int) else r for r in rows]
    arr = pa.array([b"pad"] * skip + vals, pa.binary()).slice(skip)
    res = decode_column(arr, framing=Framing.CONFLUENT, decoder=None)
    for i, v in enumerate(vals):
        ok = v is not None and len(v) >= 5 and v[0] == 0
        assert res.values[i].as_py() == (v[5:] if ok else None)
        assert (res.errors[i].as_py() is None) == (ok or v is None)
        assert res.schema_ids[i].as_py() == (int.from_bytes(v[1:5], "big") if ok else None)
