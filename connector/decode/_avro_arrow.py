"""Arrow-side helpers of the Avro fast path: encoded-size check and writer → reader resolution.

polars decodes the concatenated payloads of one writer schema as a single Avro block, which
does not tell where each record ended. :func:`encoded_sizes` recomputes, vectorized, the
canonical encoded size of every decoded record; a row whose size differs from its payload
length (trailing garbage, a short payload, a non-canonical encoder) ends the trusted prefix
and the rest of the group goes through the per-record reference path.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.decode._avro_schema import Node, arrow_type_of, default_value, union_kind

__all__ = ["encoded_sizes", "fast_ok", "resolve", "writer_fast_ok"]


def _varint_len(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.uint64, copy=False)
    n = np.ones(len(z), np.int64)
    for k in range(1, 10):
        n += z >= np.uint64(1 << (7 * k))
    return n


def _zz(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64, copy=False)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def _np(arr: pa.Array, fill=0) -> np.ndarray:
    return np.asarray(arr.fill_null(fill).to_numpy(zero_copy_only=False))


def encoded_sizes(arr: pa.Array, n: Node) -> np.ndarray:
    """Canonical Avro binary size of each value of ``arr`` (decoded with writer ``n``)."""
    k = n.kind
    m = len(arr)
    if k == "union":
        nn = n.nonnull
        null_idx = next((i for i, b in enumerate(n.branches) if b.kind == "null"), 0)
        if not nn:
            return _varint_len(_zz(np.full(m, null_idx)))
        val_idx = n.branches.index(nn[0])
        valid = _np(arr.is_valid(), False)
        inner = encoded_sizes(arr, nn[0])
        return _varint_len(_zz(np.where(valid, val_idx, null_idx))) + np.where(valid, inner, 0)
    if k == "null":
        return np.zeros(m, np.int64)
    if k == "boolean":
        return np.ones(m, np.int64)
    if k == "float":
        return np.full(m, 4, np.int64)
    if k == "double":
        return np.full(m, 8, np.int64)
    if k == "fixed":
        return np.full(m, n.size, np.int64)
    if k in ("int", "long"):
        return _varint_len(_zz(_np(arr)))
    if k == "enum":
        idx = _np(pc.index_in(arr.cast(pa.string()), value_set=pa.array(n.symbols, pa.string())))
        return _varint_len(_zz(idx))
    if k in ("bytes", "string"):
        if n.logical == "decimal" and pa.types.is_decimal(arr.type):
            # fastavro's width: (bit_length(|unscaled|) + 8) // 8
            scale = arr.type.scale
            lens = np.array([0 if d is None else
                             (abs(int(d.scaleb(scale))).bit_length() + 8) // 8
                             for d in arr.to_pylist()], np.int64)
        else:
            lens = _np(pc.binary_length(arr))
        return _varint_len(_zz(lens)) + lens
    if k == "record":
        total = np.zeros(m, np.int64)
        children = arr.flatten()
        for f, child in zip(n.fields, children):
            total += encoded_sizes(child, f.type)
        return total
    if k == "array":
        offs = np.asarray(arr.offsets.to_numpy(), np.int64)
        inner = encoded_sizes(arr.values, n.items)
        cs = np.zeros(len(inner) + 1, np.int64)
        np.cumsum(inner, out=cs[1:])
        per = cs[offs[1:]] - cs[offs[:-1]]
        lens = offs[1:] - offs[:-1]
        return np.where(lens > 0, _varint_len(_zz(lens)) + per + 1, 1)
    raise TypeError(f"no size rule for {n!r}")


def writer_fast_ok(n: Node) -> bool:
    """Whether polars can decode this writer type: no maps, no multi-type unions, top record."""
    def ok(x: Node) -> bool:
        if x.kind == "map":
            return False
        if x.kind == "union":
            return union_kind(x) == "nullable" and len(x.nonnull) == 1 and all(ok(b) for b in x.nonnull)
        if x.kind == "record":
            return bool(x.fields) and all(ok(f.type) for f in x.fields)
        if x.kind == "array":
            return ok(x.items)
        if x.kind in ("bytes", "fixed") and x.logical == "decimal":
            return bool(x.precision) and x.precision <= 38
        return x.kind != "null"
    return n.kind == "record" and ok(n)


def _names(n: Node) -> set:
    s = {n.name, *n.aliases}
    return s | {x.rpartition(".")[2] for x in s if x}


def _match_field(r_field, w: Node):
    names = (r_field.name, *r_field.aliases)
    for i, wf in enumerate(w.fields):
        if wf.name in names:
            return i
    return None


_PROMO = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
          ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}


def fast_ok(w: Node, r: Node) -> bool:
    """Whether :func:`resolve` handles writer ``w`` → reader ``r`` (else use fastavro)."""
    if r.kind == "union":
        if union_kind(r) != "nullable" or not r.nonnull:
            return False
        r = r.nonnull[0]
        if w.kind == "union":
            w = w.nonnull[0]
    elif w.kind == "union":
        return False  # a null written where the reader has no null is a per-row error
    if w.kind != r.kind:
        return (w.kind, r.kind) in _PROMO and w.logical != "decimal" and r.logical != "decimal"
    if w.kind == "record":
        if w.name != r.name and not (_names(r) & _names(w)):
            return False
        for rf in r.fields:
            i = _match_field(rf, w)
            if i is None:
                if not rf.has_default:
                    return False
            elif not fast_ok(w.fields[i].type, rf.type):
                return False
        return True
    if w.kind == "enum":
        return set(w.symbols) <= set(r.symbols)
    if w.kind == "array":
        return fast_ok(w.items, r.items)
    if w.kind == "fixed":
        return w.size == r.size and (w.logical == "decimal") == (r.logical == "decimal") and \
            (w.precision, w.scale) == (r.precision, r.scale)
    if w.logical == "decimal" or r.logical == "decimal":
        return (w.logical, w.precision, w.scale) == (r.logical, r.precision, r.scale)
    return True


def resolve(arr: pa.Array, w: Node, r: Node) -> pa.Array:
    """Writer-shaped ``arr`` (as polars decoded it) → an array of ``arrow_type_of(r)``."""
    target = arrow_type_of(r)
    if r.kind == "union":
        r = r.nonnull[0]
    if w.kind == "union":
        w = w.nonnull[0]
    k = r.kind
    if k == "record":
        children = arr.flatten()
        out = []
        for rf in r.fields:
            i = _match_field(rf, w)
            if i is None:
                dv = default_value(rf.type, rf.default)
                out.append(pa.array([dv] * len(arr), arrow_type_of(rf.type)))
            else:
                out.append(resolve(children[i], w.fields[i].type, rf.type))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(out, fields=list(target), mask=mask)
    if k == "array":
        offsets = arr.offsets.cast(pa.int32())
        values = resolve(arr.values, w.items, r.items)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_timestamp(target):
        ints = arr.cast(pa.int64())
        if r.logical and r.logical.endswith("millis"):
            ints = pc.multiply_checked(ints, 1000)
        return ints.cast(target)
    if pa.types.is_date32(target):
        return arr.cast(pa.int32()).cast(target)
    return arr.cast(target)
