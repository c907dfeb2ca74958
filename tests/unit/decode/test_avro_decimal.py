"""Avro decimals both ways (``connector.formats.avro._decimal``): the decoder's handler (big-endian
two's-complement bytes → decimal128 words) and the encoder's (words → bytes or fixed) equal
Python's int arithmetic, and through the whole decoder a value past its precision fails its
own row, wherever it sits."""
from __future__ import annotations

import io
import json
import struct

import fastavro
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.formats.avro._decimal import read_decimal, write_decimal
from connector.formats.avro._opcodes import EncErr
from connector.formats.core import njit


@njit()
def _read_all(buf, starts, lens, precision, out, bad):
    for i in range(len(starts)):
        lo, hi, ok = read_decimal(buf, starts[i], lens[i], precision)
        out[2 * i] = lo
        out[2 * i + 1] = hi
        bad[i] = not ok


@njit()
def _write(out, hi, lo, size, precision):
    return write_decimal(out, 0, len(out), hi, lo, size, precision)


def _read(values: list[bytes], precision: int):
    buf = np.frombuffer(b"".join(values) or b"\0", np.uint8)
    lens = np.array([len(v) for v in values], np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) if values else np.zeros(0, np.int64)
    out = np.zeros(2 * len(values), np.int64)
    bad = np.zeros(len(values), bool)
    _read_all(buf, starts, lens, precision, out, bad)
    return out.tobytes(), bad.tolist()


def _reference(values: list[bytes], precision: int):
    out, bad = [], []
    for b in values:
        v = int.from_bytes(b, "big", signed=True) if b else 0
        ok = abs(v) < 10 ** precision
        out.append((v if ok else 0).to_bytes(16, "little", signed=True))
        bad.append(not ok)
    return b"".join(out), bad


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=20), max_size=30), st.integers(1, 38))
def test_read_decimal_equals_python_ints(values, precision):
    assert _read(values, precision) == _reference(values, precision)


def test_read_decimal_at_the_limits_of_precision_38_and_of_sign_extension():
    big = 10 ** 38 - 1
    values = [big.to_bytes(17, "big", signed=True), (-big).to_bytes(16, "big", signed=True),
              (10 ** 38).to_bytes(17, "big", signed=True), b"\xff" * 20, b"\x80" + b"\x00" * 15,
              b"\x00" + b"\xff" * 16]  # 17 bytes whose first is no sign extension: 2**128 - 1
    out, bad = _read(values, 38)
    words = [int.from_bytes(out[i * 16:(i + 1) * 16], "little", signed=True) for i in range(len(values))]
    assert words == [big, -big, 0, -1, 0, 0]
    assert bad == [False, False, True, False, True, True]


def _words(v: int) -> tuple[int, int]:
    w = v % (1 << 128)
    lo, hi = w & ((1 << 64) - 1), w >> 64
    return struct.unpack("<qq", struct.pack("<QQ", hi, lo))


@settings(max_examples=300, deadline=None)
@given(st.integers(-(10 ** 38) + 1, 10 ** 38 - 1), st.sampled_from([-1, 4, 8, 16, 17]), st.integers(1, 38))
def test_write_decimal_equals_fastavro_widths_and_python_ints(v, size, precision):
    hi, lo = _words(v)
    out = np.zeros(64, np.uint8)
    pos, err = _write(out, hi, lo, size, precision)
    if abs(v) >= 10 ** precision:
        assert err == EncErr.PRECISION
        return
    if size < 0:  # bytes: fastavro's width, after a zigzag varint length
        width = (abs(v).bit_length() + 8) // 8
        assert err == 0 and out[0] == 2 * width
        assert out[1:pos].tobytes() == v.to_bytes(width, "big", signed=True)
        return
    try:
        want = v.to_bytes(size, "big", signed=True)
    except OverflowError:
        assert err == EncErr.FIXED_DECIMAL
        return
    assert err == 0 and out[:pos].tobytes() == want


_SCHEMA = {"type": "record", "name": "R", "fields": [
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}},
    {"name": "ds", "type": {"type": "array", "items": {"type": "fixed", "name": "F", "size": 3,
                                                       "logicalType": "decimal", "precision": 5,
                                                       "scale": 1}}}]}


def _payload(d: bytes, ds: list[bytes]) -> bytes:
    b = io.BytesIO()
    fastavro.schemaless_writer(b, {"type": "record", "name": "R", "fields": [
        {"name": "d", "type": "bytes"}, {"name": "ds", "type": {"type": "array", "items": {
            "type": "fixed", "name": "F", "size": 3}}}]}, {"d": d, "ds": ds})
    return b.getvalue()


def test_a_decimal_past_its_precision_fails_its_own_row_through_the_decoder():
    from connector.formats import DecodeOptions
    from connector.formats.avro._decode import AvroCodec

    rows = [_payload(b"\x27\x0f", [b"\x01\x86\x9f"]),       # 99.99, [9999.9]
            _payload(b"\x27\x10", []),                      # 100.00: past precision 4
            _payload(b"\x00", [b"\x00\x00\x01", b"\x01\x86\xa0"]),  # ..., 10000.0: past 5
            _payload(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xd8\xf1", [])]
    codec = AvroCodec(json.dumps(_SCHEMA), None, None, DecodeOptions())
    vals, errs = codec.decode(pa.array(rows, pa.binary()), "7")
    got = vals.to_pylist()
    assert [str(got[0]["d"]), [str(x) for x in got[0]["ds"]]] == ["99.99", ["9999.9"]]
    assert errs[0] is None and got[1] is None and got[2] is None
    assert errs[1] == "avro decode failed for schema id 7: decimal value exceeds precision 4"
    assert errs[2] == "avro decode failed for schema id 7: decimal value exceeds precision 5"
    assert errs[3] is None and str(got[3]["d"]) == "-99.99"  # 18 bytes, 16 of them sign
