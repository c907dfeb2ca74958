"""Arrow helpers every format's decoder shares."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["payload_view", "to_arrow_checked"]


def payload_view(payloads: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of a binary array without copying."""
    if pa.types.is_large_binary(payloads.type):
        payloads = payloads.cast(pa.binary())
    bufs = payloads.buffers()
    offs = np.frombuffer(bufs[1], np.int32, len(payloads) + 1, payloads.offset * 4)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return offs, data


def to_arrow_checked(rows: list, errors: list, arrow_type: pa.DataType, prefix: str):
    """``pa.array(rows)``; if that fails, locate the rows that do not fit the type."""
    try:
        return pa.array(rows, type=arrow_type), errors
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        pass
    for i, r in enumerate(rows):
        if r is None:
            continue
        try:
            pa.array([r], type=arrow_type)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
            rows[i] = None
            errors[i] = f"{prefix}: value does not fit {arrow_type}: {e}"
    return pa.array(rows, type=arrow_type), errors
