"""Serialized ``google.protobuf.Struct`` / ``Value`` / ``ListValue`` / ``Any`` → JSON text, for
every value of a column in one compiled pass (numba, cached on disk; imported lazily).

The text is the value's ``json_format.MessageToDict`` written by ``json.dumps`` with sorted
keys, no spaces and UTF-8 (``ensure_ascii=False``), which the reference path writes too
(:func:`json_text`). Sorted keys make it deterministic: protobuf's own map order is its hash
table's. Numbers are written as one placeholder byte (0x00, which JSON text never holds raw)
and their doubles listed; :func:`render` then writes each as Python's ``repr`` does.

An ``Any`` holding a Struct, Value, ListValue, Timestamp, Duration or an integer, bool,
string or double wrapper is rendered here; any other payload is left to protobuf's
``json_format`` for that one value (status ``PY``). A value whose bytes are not in the form
protobuf's serializers write (a field twice, an unknown field, a key repeated in one Struct, a
NaN or infinite number) sends its row to the reference path (status ``REDO``), which decides.
Work is bounded per byte; nesting is capped at :data:`MAX_DEPTH`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["OK", "PY", "REDO", "WKT_KIND", "json_text", "render"]

OK, REDO, PY = 0, 1, 2  # per value: written, its row to the reference path, to json_text
WKT_KIND = {"google.protobuf.Struct": 0, "google.protobuf.Value": 1,
            "google.protobuf.ListValue": 2, "google.protobuf.Any": 3}


def render(values: pa.BinaryArray, kind: int) -> tuple[pa.Array, np.ndarray]:
    """(JSON text of each value, status per value: 0 written, 1 row to the reference path,
    2 this value to ``json_text``); null stays null."""
    n = len(values)
    if pa.types.is_large_binary(values.type):
        values = values.cast(pa.binary())
    offs = np.frombuffer(values.buffers()[1], np.int32, n + 1, values.offset * 4).astype(np.int64)
    buf = values.buffers()[2]
    data = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    total = int(offs[-1] - offs[0])
    out = np.empty(16 * total + 64 * n + 64, np.uint8)
    out_offs = np.empty(n + 1, np.int64)
    status = np.zeros(n, np.uint8)
    dbl = np.empty(total // 9 + n + 1, np.float64)
    from connector.formats.protobuf import _wktkernel

    K: Any = _wktkernel  # numba dispatchers: mypy cannot see their signatures
    nd = K.render(data, offs, valid, kind, out, out_offs, status, dbl, K.ANY_NAMES, K.ANY_ENDS,
                  K.ANY_CODES)
    text, toffs = out, out_offs
    if nd:
        fmt = [repr(x).encode() for x in dbl[:nd].tolist()]
        fo = np.zeros(nd + 1, np.int64)
        np.cumsum([len(f) for f in fmt], out=fo[1:])
        text, toffs = K.splice(out, out_offs, np.frombuffer(b"".join(fmt), np.uint8), fo)
    if toffs[-1] > 2**31 - 1:
        raise OverflowError("more than 2 GiB of JSON text in one column of one batch")
    mask = (~valid) | (status != OK)
    arr = pa.Array.from_buffers(pa.string(), n, [pa.array(~mask).buffers()[1],
                                                 pa.py_buffer(toffs.astype(np.int32)),
                                                 pa.py_buffer(text[:int(toffs[-1])])])
    return arr, status


def json_text(m, pool=None) -> str:
    """The reference: ``MessageToDict`` written with sorted keys, no spaces, UTF-8; an Any of a
    type ``pool`` does not know keeps its bytes readable (``{"@type": url, "value": base64}``).
    Raises ``ValueError`` where protobuf does (a NaN or infinite ``Value`` number)."""
    import base64
    import json

    from google.protobuf import json_format

    try:
        obj = json_format.MessageToDict(m, descriptor_pool=pool)
    except TypeError:  # an Any of an unknown type
        if m.DESCRIPTOR.full_name != "google.protobuf.Any":
            raise
        obj = {"@type": m.type_url, "value": base64.b64encode(m.value).decode()}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
