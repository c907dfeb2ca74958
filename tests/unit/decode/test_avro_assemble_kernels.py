"""The compiled helpers of the Avro assembly against plain Python."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from connector.formats.avro import _assemble_kernels as K


def test_enum_strings_with_nulls_and_multibyte_symbols():
    syms = ["A", "", "Zürich", "UNKNOWN"]
    texts = [s.encode() for s in syms]
    offs = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offs[1:])
    data = np.frombuffer(b"".join(texts), np.uint8)
    idx = np.array([2, 0, 3, 1, 2, 0], np.int64)
    valid = np.array([1, 0, 1, 1, 1, 0], bool)
    o, d = K.enum_strings(idx, valid, offs, data)
    arr = pa.Array.from_buffers(pa.string(), len(idx), [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                        pa.py_buffer(o), pa.py_buffer(d)])
    arr.validate(full=True)
    assert arr.to_pylist() == [syms[i] if v else None for i, v in zip(idx, valid)]
    assert K.enum_strings(np.array([4], np.int64), np.array([True]), offs, data) is None
    assert K.enum_strings(np.array([-1], np.int64), np.array([True]), offs, data) is None


def test_string_offsets():
    lens = np.array([3, 0, 5, 1], np.int64)
    assert K.string_offsets(lens).tolist() == [0, 3, 3, 8, 9]
    assert K.string_offsets(np.zeros(0, np.int64)).tolist() == [0]
    assert K.string_offsets(np.array([2**31 - 1, 1], np.int64)) is None
