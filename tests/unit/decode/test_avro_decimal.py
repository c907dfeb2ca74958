"""Avro decimal bytes → decimal128 words: the compiled pass equals Python's int arithmetic."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.formats.avro._decimal import decimal_column


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
def test_compiled_decimals_equal_python_ints(values, precision):
    buf = np.frombuffer(b"".join(values), np.uint8)
    lens = np.array([len(v) for v in values], np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) if values else np.zeros(0, np.int64)
    out, bad = decimal_column(buf, starts, lens, precision)
    want, want_bad = _reference(values, precision)
    assert out == want
    assert bad.tolist() == want_bad


def test_limits_of_precision_38_and_sign_extension():
    big = 10 ** 38 - 1
    values = [big.to_bytes(17, "big", signed=True), (-big).to_bytes(16, "big", signed=True),
              (10 ** 38).to_bytes(17, "big", signed=True), b"\xff" * 20, b"\x80" + b"\x00" * 15]
    out, bad = decimal_column(np.frombuffer(b"".join(values), np.uint8),
                              np.array([0, 17, 33, 50, 70]), np.array([17, 16, 17, 20, 16]), 38)
    words = [int.from_bytes(out[i * 16:(i + 1) * 16], "little", signed=True) for i in range(5)]
    assert words == [big, -big, 0, -1, 0]
    assert bad.tolist() == [False, False, True, False, True]
