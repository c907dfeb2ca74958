"""Table-driven tests of every framing: exact ids, payloads and error codes."""
from __future__ import annotations

import struct
import uuid
import zlib

import numpy as np
import pyarrow as pa
import pytest

from wireformat import (
    DEFAULT_LIMITS, ErrorCode, Framing, Limits, LimitExceededError, WireFormatError, encode_frame,
    encode_protobuf_indexes, error_messages, header_for_id, parse_frames
)
from wireformat._headers import header_name
from wireformat._encode import uuid_bytes

G1 = uuid.UUID("6f1a2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b")
G2 = uuid.UUID("00000000-0000-4000-8000-000000000002")
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
E = ErrorCode


def parse(values, framing, **kw):
    return parse_frames(pa.array(values, pa.binary()), framing, **kw)


# (framing, value bytes, expected error, expected int id, expected guid, expected payload)
CASES = [
    ("confluent", b"\x00\x00\x00\x01\x02hello", E.OK, 258, None, b"hello"),
    ("confluent", b"\x00\xff\xff\xff\xff", E.OK, 2**32 - 1, None, b""),
    ("confluent", b"\x00\x00\x00\x01", E.TOO_SHORT, None, None, None),
    ("confluent", b"", E.TOO_SHORT, None, None, None),
    ("confluent", b"\x01\x00\x00\x00\x01x", E.UNKNOWN_MAGIC, None, None, None),
    ("apicurio-new", b"\x00\x00\x00\x00\x07x", E.OK, 7, None, b"x"),
    ("apicurio-legacy", b"\x00" + struct.pack(">q", 2**40 + 3) + b"pl", E.OK, 2**40 + 3, None, b"pl"),
    ("apicurio-legacy", b"\x00" + struct.pack(">q", -2) + b"pl", E.OK, -2, None, b"pl"),
    ("apicurio-legacy", b"\x00\x00\x00\x00\x07x", E.TOO_SHORT, None, None, None),
    ("confluent-guid", b"\x01" + G1.bytes + b"data", E.OK, None, G1.bytes, b"data"),
    ("confluent-guid", b"\x01" + G1.bytes[:15], E.TOO_SHORT, None, None, None),
    ("confluent-guid", b"\x00" + G1.bytes, E.UNKNOWN_MAGIC, None, None, None),
    ("glue", b"\x03\x00" + G1.bytes + b"avro", E.OK, None, G1.bytes, b"avro"),
    ("glue", b"\x03\x05" + G1.bytes + zlib.compress(b"zipped" * 10), E.OK, None, G1.bytes, b"zipped" * 10),
    ("glue", b"\x03\x05" + G1.bytes + zlib.compress(b"zipped")[:-1], E.DECOMPRESSION_FAILED, None, None, None),
    ("glue", b"\x03\x05" + G1.bytes + b"not zlib", E.DECOMPRESSION_FAILED, None, None, None),
    ("glue", b"\x03\x05" + G1.bytes + zlib.compress(b"x") + b"junk", E.DECOMPRESSION_FAILED, None, None, None),
    ("glue", b"\x03\x02" + G1.bytes + b"avro", E.BAD_COMPRESSION, None, None, None),
    ("glue", b"\x03\x00" + G1.bytes[:10], E.TOO_SHORT, None, None, None),
    ("glue", b"\x00\x00" + G1.bytes + b"avro", E.UNKNOWN_MAGIC, None, None, None),
    ("auto", b"\x00\x00\x00\x00\x09p", E.OK, 9, None, b"p"),
    ("auto", b"\x01" + G2.bytes + b"p", E.OK, None, G2.bytes, b"p"),
    ("auto", b"\x03\x00" + G2.bytes + b"p", E.OK, None, G2.bytes, b"p"),
    ("auto", b"\x02abc", E.UNKNOWN_MAGIC, None, None, None),
    ("auto", b"{\"json\": 1}", E.UNKNOWN_MAGIC, None, None, None),
    ("none", b"\x00\x00raw", E.OK, None, None, b"\x00\x00raw"),
    ("none", b"", E.OK, None, None, b""),
]


@pytest.mark.parametrize("framing,value,err,int_id,guid,payload", CASES)
def test_single_row(framing, value, err, int_id, guid, payload):
    pf = parse([value], framing)
    assert pf.error.tolist() == [err]
    assert pf.int_id.to_pylist() == [int_id]
    assert pf.guid.to_pylist() == [guid]
    assert pf.payload.to_pylist() == [payload]
    assert pf.ok_mask().tolist() == [err == E.OK]
    assert len(pf) == 1


def test_framing_codes_per_row_in_auto():
    pf = parse([b"\x00\x00\x00\x00\x01", b"\x01" + G1.bytes, b"\x03\x00" + G1.bytes, b"\x07", None], "auto")
    assert [Framing.from_code(c) for c in pf.framing] == [
        Framing.CONFLUENT, Framing.CONFLUENT_GUID, Framing.GLUE, Framing.AUTO, Framing.AUTO]
    assert pf.error.tolist() == [0, 0, 0, E.UNKNOWN_MAGIC, E.NULL_VALUE]


def test_fixed_framing_code_on_every_row():
    pf = parse([b"\x05", None], "apicurio-new")
    assert pf.framing.tolist() == [Framing.APICURIO_NEW.code] * 2


def test_nulls_and_many_rows():
    vals = [encode_frame("confluent", i, bytes([i]) * i) if i % 3 else None for i in range(50)]
    pf = parse(vals, "confluent")
    for i in range(50):
        if i % 3:
            assert (pf.error[i], pf.int_id[i].as_py(), pf.payload[i].as_py()) == (0, i, bytes([i]) * i)
        else:
            assert pf.error[i] == E.NULL_VALUE and pf.payload[i].as_py() is None


@pytest.mark.parametrize("typ", [pa.binary(), pa.large_binary()])
@pytest.mark.parametrize("framing", ["confluent", "confluent-guid", "glue", "none", "auto"])
def test_sliced_large_and_chunked(typ, framing):
    sid = G1 if framing in ("confluent-guid", "glue") else 77
    wire = "confluent" if framing == "auto" else framing
    vals = [encode_frame(wire, sid, b"p%d" % i * (i % 7)) for i in range(20)]
    vals[5] = None
    vals[6] = b"\x09"
    full = pa.array(vals, typ)
    expected = parse_frames(pa.array(vals[3:17], pa.binary()), framing)
    sliced = parse_frames(full.slice(3, 14), framing)
    chunked = parse_frames(pa.chunked_array([full.slice(3, 5), full.slice(8, 9)]), framing)
    for got in (sliced, chunked):
        assert got.error.tolist() == expected.error.tolist()
        assert got.payload.to_pylist() == [v[len(v) - len(p):] if p is not None else None
                                           for v, p in zip(vals[3:17], expected.payload.to_pylist())]
        assert got.payload.to_pylist() == expected.payload.to_pylist()
        assert got.int_id.to_pylist() == expected.int_id.to_pylist()
        assert got.guid.to_pylist() == expected.guid.to_pylist()
    assert expected.error[2] == E.NULL_VALUE
    if framing != "none":
        assert expected.error[3] != E.OK


def test_payload_is_binary_and_zero_copy_without_header():
    arr = pa.array([b"abc", b"defg", None])
    pf = parse_frames(arr, "none")
    assert pf.payload.type == pa.binary()
    assert pf.payload.buffers()[2].address == arr.buffers()[2].address
    big = pa.array([b"abc"], pa.large_binary())
    assert parse_frames(big, "none").payload.type == pa.binary()


def test_empty_inputs():
    for framing in Framing:
        kw = {"headers": pa.array([], HEADERS_TYPE)} if framing.in_header else {}
        pf = parse_frames(pa.array([], pa.binary()), framing, **kw)
        assert len(pf) == 0 and len(pf.payload) == 0
    assert len(parse_frames(pa.chunked_array([], pa.binary()), "auto")) == 0


def test_all_null_array():
    pf = parse_frames(pa.array([None, None], pa.binary()), "auto")
    assert pf.error.tolist() == [E.NULL_VALUE] * 2


def test_record_size_limit():
    lim = Limits(max_record_bytes=10)
    pf = parse([encode_frame("confluent", 1, b"x" * 5), encode_frame("confluent", 1, b"x" * 6)], "confluent",
               limits=lim)
    assert pf.error.tolist() == [E.OK, E.LIMIT_EXCEEDED]


@pytest.mark.parametrize("cap", [0, 1, 100, 4096])
def test_zlib_cap_fires_exactly_at_limit(cap):
    lim = Limits(max_decompressed_bytes=cap)
    at = encode_frame("glue", G1, b"a" * cap, compression="zlib")
    over = encode_frame("glue", G1, b"a" * (cap + 1), compression="zlib")
    pf = parse([at, over], "glue", limits=lim)
    assert pf.error.tolist() == [E.OK, E.LIMIT_EXCEEDED]
    assert pf.payload.to_pylist() == [b"a" * cap, None]


def test_zlib_bomb_is_bounded():
    bomb = encode_frame("glue", G1, bytes(50_000_000), compression="zlib")
    assert len(bomb) < 100_000
    pf = parse([bomb], "glue", limits=Limits(max_decompressed_bytes=1 << 20))
    assert pf.error.tolist() == [E.LIMIT_EXCEEDED]


def test_glue_mixed_compressed_short_and_long_payloads():
    vals = [encode_frame("glue", G1, b"s", compression="zlib"), encode_frame("glue", G2, b"L" * 40),
            encode_frame("glue", G2, b"long enough payload", compression="zlib"), None]
    pf = parse(vals, "glue")
    assert pf.payload.to_pylist() == [b"s", b"L" * 40, b"long enough payload", None]
    assert pf.guid.to_pylist() == [G1.bytes, G2.bytes, G2.bytes, None]


def hdrs(rows):
    return pa.array(rows, HEADERS_TYPE)


@pytest.mark.parametrize("is_key", [False, True])
def test_header_confluent(is_key):
    name = "__key_schema_id" if is_key else "__value_schema_id"
    other = "__value_schema_id" if is_key else "__key_schema_id"
    h = hdrs([
        [(name, b"\x01" + G1.bytes)],
        [("a", b"x"), (name, b"\x01" + G1.bytes), (name, b"\x01" + G2.bytes)],  # last wins
        [(other, b"\x01" + G1.bytes)],
        None,
        [(name, b"\x02" + G1.bytes)],
        [(name, b"\x01" + G1.bytes[:5])],
        [(name, None)],
        [(name, b"\x01" + G1.bytes)],
    ])
    pf = parse([b"v0", b"v1", b"v2", b"v3", b"v4", b"v5", b"v6", None], "header-confluent", headers=h,
               is_key=is_key)
    assert pf.error.tolist() == [0, 0, E.MISSING_HEADER, E.MISSING_HEADER, E.BAD_HEADER, E.BAD_HEADER,
                                 E.BAD_HEADER, E.NULL_VALUE]
    assert pf.guid.to_pylist()[:2] == [G1.bytes, G2.bytes]
    assert pf.payload.to_pylist()[:3] == [b"v0", b"v1", None]
    assert pf.schema_id.type == pa.binary(16)


@pytest.mark.parametrize("framing,key", [("header-apicurio-global", "apicurio.value.globalId"),
                                         ("header-apicurio-content", "apicurio.value.contentId")])
def test_header_apicurio(framing, key):
    h = hdrs([[(key, struct.pack(">q", 12345))], [(key, struct.pack(">q", -1))], [(key, b"\x00" * 4)], []])
    pf = parse([b"a", b"b", b"c", b"d"], framing, headers=h)
    assert pf.error.tolist() == [0, 0, E.BAD_HEADER, E.MISSING_HEADER]
    assert pf.int_id.to_pylist() == [12345, -1, None, None]
    assert pf.schema_id.type == pa.int64()
    assert header_for_id(framing, 12345) == (key, struct.pack(">q", 12345))


def test_header_sliced_and_chunked_headers():
    rows = [[(f"k{i}", b"x"), ("__value_schema_id", b"\x01" + uuid.UUID(int=i).bytes)] for i in range(10)]
    rows[4] = []
    h = hdrs(rows)
    vals = pa.array([b"v%d" % i for i in range(10)])
    pf = parse_frames(vals.slice(2, 6), "header-confluent", headers=h.slice(2, 6))
    assert pf.guid.to_pylist() == [uuid.UUID(int=i).bytes if i != 4 else None for i in range(2, 8)]
    assert pf.error.tolist() == [0, 0, E.MISSING_HEADER, 0, 0, 0]
    pf2 = parse_frames(pa.chunked_array([vals.slice(0, 3), vals.slice(3)]), "header-confluent",
                       headers=pa.chunked_array([h.slice(0, 5), h.slice(5)]))
    assert pf2.guid.to_pylist()[5] == uuid.UUID(int=5).bytes


def test_header_misuse_raises():
    with pytest.raises(WireFormatError):
        parse([b"a"], "header-confluent")
    with pytest.raises(WireFormatError):
        parse([b"a"], "header-confluent", headers=pa.array([1]))
    with pytest.raises(WireFormatError):
        parse([b"a"], "header-confluent", headers=hdrs([[], []]))


def test_misuse_raises_wireformat_error():
    with pytest.raises(WireFormatError):
        parse_frames(pa.array(["text"]), "auto")
    with pytest.raises(WireFormatError):
        parse_frames([b"x"], "auto")
    with pytest.raises(WireFormatError):
        parse([b"x"], "bogus")
    with pytest.raises(ValueError):
        Limits(max_varint_bytes=11)


PB = [
    ([0], b"\x00"),
    ([1], b"\x02\x02"),
    ([1, 2], b"\x04\x02\x04"),
    ([0, 0, 5], b"\x06\x00\x00\x0a"),
    ([300], b"\x02\xd8\x04"),
]


@pytest.mark.parametrize("indexes,encoded", PB)
def test_protobuf_indexes(indexes, encoded):
    assert encode_protobuf_indexes(indexes) == encoded
    for framing, sid in (("confluent", 5), ("confluent-guid", G1)):
        v = encode_frame(framing, sid, b"msg", message_indexes=indexes)
        pf = parse([v], framing, protobuf_indexes=True)
        assert pf.message_indexes.to_pylist() == [indexes]
        assert pf.payload.to_pylist() == [b"msg"]
    # Apicurio's Protobuf serde writes a Ref message, not Confluent indexes (Framing owns this fact)
    for framing, sid in (("apicurio-new", 5), ("apicurio-legacy", 9)):
        with pytest.raises(WireFormatError, match="carries no message indexes"):
            encode_frame(framing, sid, b"msg", message_indexes=indexes)


def test_protobuf_index_errors():
    head = b"\x00\x00\x00\x00\x01"
    vals = [head, head + b"\x04\x02", head + b"\x02" + b"\xff" * 11, head + b"\x01\x02",
            head + b"\x02\x01", head + encode_protobuf_indexes(list(range(1, 6))),
            head + b"\x80\x00rest", head + b"\x02\x80\x80\x80\x80\x10"]
    pf = parse(vals, "confluent", protobuf_indexes=True, limits=Limits(max_message_indexes=4))
    assert pf.error.tolist() == [E.BAD_VARINT, E.BAD_VARINT, E.BAD_VARINT, E.BAD_MESSAGE_INDEX,
                                 E.BAD_MESSAGE_INDEX, E.TOO_MANY_INDEXES, 0, E.BAD_MESSAGE_INDEX]
    # 0x80 0x00 is a non-minimal zero count: still [0]
    assert pf.message_indexes.to_pylist()[6] == [0] and pf.payload.to_pylist()[6] == b"rest"
    assert pf.message_indexes.to_pylist()[0] is None


def test_protobuf_indexes_null_for_glue_and_none_rows():
    vals = [encode_frame("glue", G1, b"g"), encode_frame("confluent", 1, b"c", message_indexes=[2])]
    pf = parse(vals, "auto", protobuf_indexes=True)
    assert pf.message_indexes.to_pylist() == [None, [2]]
    assert pf.payload.to_pylist() == [b"g", b"c"]


def test_protobuf_indexes_in_confluent_header():
    name, value = header_for_id("header-confluent", G1, message_indexes=[1, 0])
    h = hdrs([[(name, value)], [(name, b"\x01" + G1.bytes)], [(name, value + b"x")]])
    pf = parse([b"m0", b"m1", b"m2"], "header-confluent", headers=h, protobuf_indexes=True)
    assert pf.error.tolist() == [0, E.BAD_VARINT, E.BAD_HEADER]
    assert pf.message_indexes.to_pylist() == [[1, 0], None, None]
    assert pf.payload.to_pylist() == [b"m0", None, None]


def test_schema_id_natural_types():
    assert parse([encode_frame("confluent", 5, b"")], "confluent").schema_id.type == pa.uint32()
    assert parse([encode_frame("apicurio-legacy", 5, b"")], "apicurio-legacy").schema_id.type == pa.int64()
    assert parse([encode_frame("glue", G1, b"")], "glue").schema_id.type == pa.binary(16)
    assert parse([encode_frame("confluent", 2**32 - 1, b"")], "confluent").schema_id.to_pylist() == [2**32 - 1]
    mixed = parse([encode_frame("confluent", 5, b""), encode_frame("glue", G1, b"")], "auto")
    with pytest.raises(WireFormatError):
        mixed.schema_id


def test_group_by_schema():
    vals = [encode_frame("confluent", 7, b"a"), encode_frame("glue", G2, b"b"), encode_frame("confluent", 3, b"c"),
            encode_frame("confluent", 7, b"d"), b"\x09bad", encode_frame("glue", G1, b"e"),
            encode_frame("glue", G2, b"f"), None]
    groups = parse(vals, "auto").group_by_schema()
    got = {k: v.tolist() for k, v in groups}
    assert got == {(Framing.CONFLUENT, 3): [2], (Framing.CONFLUENT, 7): [0, 3],
                   (Framing.GLUE, G1.bytes): [5], (Framing.GLUE, G2.bytes): [1, 6]}
    assert all(isinstance(k[1], int) for k in got if k[0] is Framing.CONFLUENT)
    none_groups = parse([b"a", None, b"b"], "none").group_by_schema()
    assert [(k, v.tolist()) for k, v in none_groups] == [((Framing.NONE, None), [0, 2])]


def test_error_messages():
    msgs = error_messages(np.array([0, E.TOO_SHORT, E.MISSING_HEADER, 200], dtype=np.uint8)).to_pylist()
    assert msgs[0] is None
    assert "shorter" in msgs[1] and "header" in msgs[2] and "200" in msgs[3]
    assert all(isinstance(m, str) and m for m in error_messages(np.arange(1, 12)).to_pylist())


def test_encoders():
    assert encode_frame("confluent", 1, b"x") == b"\x00\x00\x00\x00\x01x"
    assert encode_frame("confluent-guid", str(G1), b"") == b"\x01" + G1.bytes
    assert encode_frame("glue", G1.bytes, b"p") == b"\x03\x00" + G1.bytes + b"p"
    assert encode_frame("header-confluent", G1, b"p") == b"p"
    assert header_for_id("header-confluent", G1, is_key=True) == ("__key_schema_id", b"\x01" + G1.bytes)
    assert header_name(Framing.HEADER_APICURIO_CONTENT, True) == "apicurio.key.contentId"
    assert uuid_bytes(G1) == uuid_bytes(str(G1)) == uuid_bytes(G1.bytes) == G1.bytes
    for bad in [lambda: encode_frame("confluent", -1, b""), lambda: encode_frame("confluent", 2**32, b""),
                lambda: encode_frame("confluent", "7", b""), lambda: encode_frame("auto", 1, b""),
                lambda: encode_frame("confluent", 1, b"", compression="zlib"),
                lambda: encode_frame("glue", G1, b"", compression="lz4"), lambda: uuid_bytes("nope"),
                lambda: uuid_bytes(b"short"), lambda: header_for_id("confluent", 1),
                lambda: encode_protobuf_indexes([-1]), lambda: encode_frame("glue", G1, b"", message_indexes=[1])]:
        with pytest.raises(WireFormatError):
            bad()


def test_defaults():
    assert DEFAULT_LIMITS.max_decompressed_bytes == 128 * 1024 * 1024
    assert DEFAULT_LIMITS.max_varint_bytes == 10
    assert issubclass(LimitExceededError, WireFormatError)


def test_docstring_examples_run():
    import doctest

    import wireformat
    from wireformat import _encode, _framing, _parse

    for mod in (wireformat, _encode, _framing, _parse):
        result = doctest.testmod(mod)
        assert result.attempted > 0 and result.failed == 0, mod.__name__


def test_parsed_frames_is_frozen_and_checks_headers_length():
    pf = parse([b"x"], "none")
    with pytest.raises(AttributeError):
        pf.error = None
    assert pf.message_indexes is None
