"""Avro encoding entry point: the vectorized encoder, or the per-record reference."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from connector.formats.avro._encode_ref import RowError, encode_record
from connector.formats.core import EncodeError, note_fallback, prepend

__all__ = ["encode_avro"]


def encode_avro(node, values: pa.Array, fast: bool = True, prefix: bytes = b""):
    """(payloads BinaryArray, errors: list / object array, or None when every row encoded); each
    payload after ``prefix``."""
    if fast:
        from connector.formats.avro._encode_vec import encode_vectorized
        try:
            payloads, errors, bad = encode_vectorized(node, values, prefix)
        except EncodeError:
            raise
        except Exception as e:  # noqa: BLE001 - any surprise: the checked per-record path
            note_fallback("avro", e)  # a shape the vectorized encoder did not foresee
            return encode_reference(node, values, prefix)
        if bad is None:
            return payloads, None
        for i in np.flatnonzero(bad).tolist():  # only failed rows
            errors[i] = f"avro encode failed: {errors[i]}"
        return payloads, errors
    return encode_reference(node, values, prefix)


def encode_reference(node, values: pa.Array, prefix: bytes = b""):
    """Per-record reference path (``_avro_ref``)."""
    rows = values.to_pylist()
    out: list = [None] * len(rows)
    errors: list = [None] * len(rows)
    for i, v in enumerate(rows):
        if v is None:
            continue
        try:
            out[i] = encode_record(node, v)
        except RowError as e:
            errors[i] = f"avro encode failed: {e}"
    return prepend(out, prefix), errors
