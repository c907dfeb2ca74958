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

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from connector.formats.protobuf._layout import Status, Wkt
from connector.formats.protobuf._limits import MAX_DEPTH

__all__ = ["OK", "PY", "REDO", "WKT_KIND", "json_text", "render"]

OK, REDO, PY = Status.OK, Status.REDO, Status.PY  # per value: written, its row to the reference path, to json_text
WKT_KIND = {"google.protobuf.Struct": Wkt.STRUCT, "google.protobuf.Value": Wkt.VALUE,
            "google.protobuf.ListValue": Wkt.LIST, "google.protobuf.Any": Wkt.ANY}


class Values(NamedTuple):
    """The kernel's input: value ``r`` is ``data[offs[r]:offs[r + 1]]`` where ``valid[r]``."""

    data: np.ndarray   # uint8
    offs: np.ndarray   # int64
    valid: np.ndarray  # bool


class Text(NamedTuple):
    """The kernel's output: value ``r``'s text ``out[offs[r]:offs[r + 1]]`` (numbers as a 0x00
    placeholder each, their doubles in ``dbl`` in order), its status in ``status[r]``."""

    out: np.ndarray     # uint8
    offs: np.ndarray    # int64
    status: np.ndarray  # uint8: Status
    dbl: np.ndarray     # float64


class Scratch(NamedTuple):
    """The kernel's scratch: a frame per container open (kind, a, b, c: a list's next item and
    end, a struct's first, next and end entry), the entries of the Structs open (key and value
    spans), their order by key, and one word to read a double's bits."""

    fk: np.ndarray
    fa: np.ndarray
    fb: np.ndarray
    fc: np.ndarray
    ek0: np.ndarray
    ek1: np.ndarray
    ev0: np.ndarray
    ev1: np.ndarray
    tmp: np.ndarray
    order: np.ndarray
    f64: np.ndarray
    i64: np.ndarray

    @staticmethod
    def new(nbytes: int) -> "Scratch":
        cap = nbytes // 2 + 16  # entries alive at once: each takes at least two bytes
        word = np.zeros(1, np.float64)

        def frames() -> np.ndarray:
            return np.empty(MAX_DEPTH + 2, np.int64)

        def entries() -> np.ndarray:
            return np.empty(cap, np.int64)

        return Scratch(frames(), frames(), frames(), frames(), entries(), entries(), entries(),
                       entries(), entries(), entries(), word, word.view(np.int64))


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
    nd = K.render(Values(data, offs, valid), int(kind), Text(out, out_offs, status, dbl), Scratch.new(len(data)))
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
