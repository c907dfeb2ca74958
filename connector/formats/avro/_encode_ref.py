"""Reference Avro encoder: one Python call per record over the schema tree.

It is the specification the compiled encoder (``_encode_program`` run by ``_encode_vm``) is
tested against byte for byte, and the path ``EncodeOptions(fast_path=False)`` selects. Input values are Python
objects as ``pa.Array.to_pylist()`` gives them for the decoder's Arrow type (see
``connector.formats.avro._schema``): multi-type unions are dicts ``{"member0": ..}`` with
exactly one member set, ``[int, long]`` is written as the branch that fits, maps are lists
of ``(key, value)`` pairs.

Encoding choices (all readable by any Avro reader): arrays and maps as one block (count,
items, 0), decimals as fastavro sizes them (``(bit_length(|unscaled|) + 8) // 8`` bytes,
so the decoder's size check agrees), ``[float, double]`` always as the double branch.
"""
from __future__ import annotations

import datetime as dt
import re
import struct
from decimal import Context, Decimal, InvalidOperation

from connector.formats.avro._schema import Node, union_kind

__all__ = ["encode_record", "RowError", "UUID_RE"]

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_DAY0 = dt.date(1970, 1, 1)
_US = dt.timedelta(microseconds=1)
_WIDE = Context(prec=100)  # exact for any decimal128 (the default context rounds at 28 digits)
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)


class RowError(ValueError):
    """One record cannot be encoded (its message names the field path)."""


def _zz_varint(n: int, out: bytearray) -> None:
    n = (n << 1) ^ (n >> 63)
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _int(v, lo_hi, path) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise RowError(f"{path}: expected an integer, got {type(v).__name__}")
    if not lo_hi[0] <= v <= lo_hi[1]:
        raise RowError(f"{path}: value {v} out of range for Avro {'int' if lo_hi == INT32 else 'long'}")
    return v


def _micros(v, path, ntz: bool) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, dt.datetime):
        if ntz:
            return (v.replace(tzinfo=None) - _EPOCH_NTZ) // _US
        if v.tzinfo is None:
            raise RowError(f"{path}: naive datetime for a UTC timestamp")
        return (v - _EPOCH) // _US
    raise RowError(f"{path}: expected a timestamp, got {type(v).__name__}")


def unscaled(v, scale: int, precision: int | None, path: str) -> int:
    """The unscaled integer of a decimal, checked against the schema's precision and scale."""
    try:
        d = v if isinstance(v, Decimal) else Decimal(v)
        scaled = d.scaleb(scale, _WIDE)
        if scaled != scaled.to_integral_value(context=_WIDE):
            raise RowError(f"{path}: decimal {v} has more than {scale} fraction digits")
        u = int(scaled)
    except (InvalidOperation, TypeError, ValueError) as e:
        raise RowError(f"{path}: not a decimal: {v!r}") from e
    if precision and abs(u) >= 10 ** precision:
        raise RowError(f"{path}: decimal {v} overflows precision {precision} (scale {scale})")
    return u


def _decimal_bytes(u: int, size: int | None, path: str) -> bytes:
    if size is None:
        return u.to_bytes((abs(u).bit_length() + 8) // 8, "big", signed=True)
    try:
        return u.to_bytes(size, "big", signed=True)
    except OverflowError as e:
        raise RowError(f"{path}: decimal does not fit fixed({size})") from e


def _write(n: Node, v, out: bytearray, path: str) -> None:
    k = n.kind
    if k == "union":
        _union(n, v, out, path)
        return
    if v is None:
        if k == "null":
            return
        raise RowError(f"{path}: null for a non-nullable Avro {k}")
    if k == "record":
        if not isinstance(v, dict):
            raise RowError(f"{path}: expected a record, got {type(v).__name__}")
        for f in n.fields:
            if f.type.kind == "cut":  # cut at the recursion depth: its one possible value
                out += f.type.empty
                continue
            _write(f.type, v.get(f.name), out, f"{path}.{f.name}")
    elif k == "boolean":
        out.append(1 if v else 0)
    elif k == "int":
        if n.logical == "date" and isinstance(v, dt.date):
            v = (v - _DAY0).days
        elif n.logical == "time-millis" and isinstance(v, dt.time):
            v = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        _zz_varint(_int(v, INT32, path), out)
    elif k == "long":
        lg = n.logical or ""
        if lg.endswith("timestamp-millis") or lg.endswith("timestamp-micros"):
            us = _micros(v, path, lg.startswith("local-"))
            v = us // 1000 if lg.endswith("millis") else us
        elif lg == "time-micros" and isinstance(v, dt.time):
            v = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        _zz_varint(_int(v, INT64, path), out)
    elif k == "float":
        out += struct.pack("<f", v)
    elif k == "double":
        out += struct.pack("<d", v)
    elif k in ("bytes", "fixed") and n.logical == "decimal":
        b = _decimal_bytes(unscaled(v, n.scale or 0, n.precision, path),
                           n.size if k == "fixed" else None, path)
        if k == "bytes":
            _zz_varint(len(b), out)
        out += b
    elif k == "bytes":
        _zz_varint(len(v), out)
        out += v
    elif k == "fixed":
        if len(v) != n.size:
            raise RowError(f"{path}: fixed({n.size}) needs {n.size} bytes, got {len(v)}")
        out += v
    elif k == "string":
        if n.logical == "uuid" and not UUID_RE.fullmatch(v):
            raise RowError(f"{path}: {v[:40]!r} is not a UUID")
        b = v.encode("utf-8")
        _zz_varint(len(b), out)
        out += b
    elif k == "enum":
        try:
            i = n.symbols.index(v)
        except ValueError:
            raise RowError(f"{path}: {v[:40]!r} is not a symbol of enum {n.name}") from None
        _zz_varint(i, out)
    elif k == "array":
        if v:
            _zz_varint(len(v), out)
            for i, x in enumerate(v):
                _write(n.items, x, out, f"{path}[{i}]")
        out.append(0)
    elif k == "map":
        items = v.items() if isinstance(v, dict) else v
        items = list(items)
        if items:
            _zz_varint(len(items), out)
            for key, x in items:
                b = key.encode("utf-8")
                _zz_varint(len(b), out)
                out += b
                _write(n.items, x, out, f"{path}[{key!r}]")
        out.append(0)
    else:
        raise RowError(f"{path}: no encoding for Avro {k}")


def _union(n: Node, v, out: bytearray, path: str) -> None:
    br = n.branches
    null_i = next((i for i, b in enumerate(br) if b.kind == "null"), None)
    nn = n.nonnull
    uk = union_kind(n)
    if uk == "struct":
        if v is not None:
            set_ = [i for i in range(len(nn)) if v.get(f"member{i}") is not None]
            if len(set_) > 1:
                raise RowError(f"{path}: union value sets several members; set exactly one")
            if set_:
                b = nn[set_[0]]
                _zz_varint(br.index(b), out)
                _write(b, v[f"member{set_[0]}"], out, path)
                return
        v = None
    if v is None:
        if null_i is None:
            raise RowError(f"{path}: null for a union without a null branch")
        _zz_varint(null_i, out)
        return
    if uk == "long":
        want = "int" if INT32[0] <= v <= INT32[1] else "long"
        b = next(x for x in nn if x.kind == want)
    elif uk == "double":
        b = next(x for x in nn if x.kind == "double")
    else:
        b = nn[0]
    _zz_varint(br.index(b), out)
    _write(b, v, out, path)


def encode_record(n: Node, v, path: str = "value") -> bytes:
    """Avro binary of one value (raises :class:`RowError` naming the field path)."""
    out = bytearray()
    try:
        _write(n, v, out, path)
    except (struct.error, OverflowError, TypeError, AttributeError, UnicodeError) as e:
        raise RowError(f"{path}: {type(e).__name__}: {e}") from e
    return bytes(out)
