"""Avro: Hypothesis values of a schema's Arrow type, and the forms the reference libraries use.

Three views of one value:

- the **Arrow form** (:func:`rows`): what ``decode_column`` returns and ``encode_column``
  takes (``connector.formats.avro._schema``'s mapping: multi-type unions as
  ``{memberN: ...}`` structs, maps as ``[(key, value)]``, timestamps as µs datetimes);
- the **datum** fastavro writes (:func:`datum`), every union branch named with fastavro's tuple
  notation ``(branch name, value)`` so the reference writer never guesses a branch;
- the **read form** (:func:`read_form`) fastavro's reader (inside confluent-kafka's
  ``AvroDeserializer`` and the Glue package's ``AvroSchema``) gives back with
  ``return_record_name=True``: union branches collapsed (records of a union as
  ``(name, dict)``), maps as dicts, ``time-*`` as ``datetime.time``, uuid as ``uuid.UUID``.
"""
from __future__ import annotations

import datetime as dt
import decimal
import uuid

from hypothesis import strategies as st

from connector.formats.avro._schema import Node, default_value, union_kind
from tests.roundtrip.common import collection, floats32, floats64, keys, texts

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_MIN_DT = dt.datetime(1, 1, 1, tzinfo=UTC)
_MAX_DT = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_CTX = decimal.Context(prec=80)
_US = dt.timedelta(microseconds=1)


def _decimal(precision: int, scale: int, size: int | None) -> st.SearchStrategy:
    """Unscaled integers up to the precision limit (and, on ``fixed``, to the size's limit)."""
    hi = 10 ** precision - 1
    if size is not None:
        hi = min(hi, (1 << (8 * size - 1)) - 1)
    edge = st.sampled_from([0, 1, -1, hi, -hi, hi // 10, -(hi // 10)])
    return st.one_of(edge, st.integers(-hi, hi)).map(
        lambda u: decimal.Decimal(u).scaleb(-scale, _CTX))


def _timestamp(unit: str, local: bool) -> st.SearchStrategy:
    """Datetimes at the unit's precision across years 1..9999 (edges included)."""
    lo, hi = (_MIN_DT - EPOCH) // _US, (_MAX_DT - EPOCH) // _US
    step = 1000 if unit == "millis" else 1
    us = st.one_of(st.sampled_from([0, -step, step, lo, hi - hi % step]), st.integers(lo // step, hi // step).map(
        lambda x: x * step))
    base = EPOCH_NAIVE if local else EPOCH
    return us.map(lambda x: base + dt.timedelta(microseconds=x))


def _scalar(n: Node) -> st.SearchStrategy:
    k, lg = n.kind, n.logical
    if lg == "decimal" and n.precision and k in ("bytes", "fixed"):
        return _decimal(int(n.precision), int(n.scale or 0), n.size if k == "fixed" else None)
    if k == "null":
        return st.none()
    if k == "boolean":
        return st.booleans()
    if k == "int":
        if lg == "date":
            return st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))
        if lg == "time-millis":
            return st.integers(0, 86_400_000 - 1)
        return st.integers(-(1 << 31), (1 << 31) - 1)
    if k == "long":
        if lg in ("timestamp-millis", "timestamp-micros"):
            return _timestamp(lg.rpartition("-")[2], False)
        if lg in ("local-timestamp-millis", "local-timestamp-micros"):
            return _timestamp(lg.rpartition("-")[2], True)
        if lg == "time-micros":
            return st.integers(0, 86_400_000_000 - 1)
        return st.integers(-(1 << 63), (1 << 63) - 1)
    if k == "float":
        return floats32()
    if k == "double":
        return floats64()
    if k == "bytes":
        return st.binary(max_size=40)
    if k == "fixed":
        return st.binary(min_size=n.size, max_size=n.size)
    if k == "string":
        return st.uuids().map(str) if lg == "uuid" else texts()
    if k == "enum":
        return st.sampled_from(list(n.symbols))
    raise AssertionError(f"no strategy for Avro {k}")


def rows(n: Node, large: bool = False, level: int = 0) -> st.SearchStrategy:
    """Values of ``arrow_type_of(n)`` the schema accepts (nulls where a union allows them);
    ``large``: collections of cheap items outside other collections are now and then large."""
    k = n.kind
    if k == "record":
        return st.fixed_dictionaries({f.name: _field(f, large, level) for f in n.fields if f.type.kind != "cut"})
    if k in ("array", "map"):
        item = rows(n.items, large, level + 1)
        large = large and not level and _scalar_kind(n.items)
        if k == "array":
            return collection(item, large, level=level)
        return collection(st.tuples(keys(), item), large, unique_by=lambda kv: kv[0], level=level)
    if k == "union":
        nn = n.nonnull
        has_null = len(nn) < len(n.branches)
        uk = union_kind(n)
        if uk == "struct":
            members = [rows(b, large, level).map(lambda v, i=i: {f"member{j}": (v if j == i else None)
                                                          for j in range(len(nn))})
                       for i, b in enumerate(nn)]
            s = st.one_of(*members)
        elif uk == "long":
            s = st.one_of(st.integers(-(1 << 31), (1 << 31) - 1), st.integers(-(1 << 63), (1 << 63) - 1))
        elif uk == "double":
            s = floats64()
        elif nn:
            s = rows(nn[0], large, level)
        else:
            return st.none()
        return st.one_of(st.none(), s) if has_null else s
    return _scalar(n)


def _scalar_kind(n: Node) -> bool:
    return n.kind not in ("record", "array", "map", "union") or \
        (n.kind == "union" and all(_scalar_kind(b) for b in n.nonnull))


def _field(f, large: bool, level: int) -> st.SearchStrategy:
    s = rows(f.type, large, level)
    if f.has_default:
        s = st.one_of(st.just(default_value(f.type, f.default)), s)
    return s


# -- the reference libraries' forms --------------------------------------------------------------
def _branch_name(b: Node) -> str:
    return b.name if b.kind in ("record", "enum", "fixed") else b.kind


def _set_member(v: dict) -> int:
    return next(i for i, x in enumerate(v.values()) if x is not None)


def _union_branch(n: Node, v):
    """(branch node, its value in Arrow form) of a union value (None: the null branch)."""
    if v is None:
        return None, None
    nn = n.nonnull
    uk = union_kind(n)
    if uk == "struct":
        i = _set_member(v)
        return nn[i], v[f"member{i}"]
    if uk == "long":
        kind = "int" if -(1 << 31) <= v < (1 << 31) else "long"
        return next(b for b in nn if b.kind == kind), v
    if uk == "double":
        return next(b for b in nn if b.kind == "double"), v
    return nn[0], v


def _cut(n: Node):
    """The one value a place cut at the recursion depth holds."""
    return {"array": [], "map": {}}.get(n.logical)


def datum(n: Node, v):
    """What fastavro's writer takes for the Arrow-form value ``v`` (unions in tuple notation)."""
    k = n.kind
    if k == "cut":
        return _cut(n)
    if v is None:
        return None
    if k == "union":
        b, x = _union_branch(n, v)
        return None if b is None else (_branch_name(b), datum(b, x))
    if k == "record":
        return {f.name: datum(f.type, v.get(f.name)) for f in n.fields}
    if k == "array":
        return [datum(n.items, x) for x in v]
    if k == "map":
        return {key: datum(n.items, x) for key, x in v}
    return v


def read_form(n: Node, v):
    """What fastavro's reader (``return_record_name=True``) gives back for ``v``."""
    k, lg = n.kind, n.logical
    if k == "cut":
        return _cut(n)
    if v is None:
        return None
    if k == "union":
        b, x = _union_branch(n, v)
        if b is None:
            return None
        out = read_form(b, x)
        return (b.name, out) if b.kind == "record" else out
    if k == "record":
        return {f.name: read_form(f.type, v.get(f.name)) for f in n.fields}
    if k == "array":
        return [read_form(n.items, x) for x in v]
    if k == "map":
        return {key: read_form(n.items, x) for key, x in v}
    if lg == "time-millis" and k == "int":
        return (dt.datetime.min + dt.timedelta(milliseconds=v)).time()
    if lg == "time-micros" and k == "long":
        return (dt.datetime.min + dt.timedelta(microseconds=v)).time()
    if lg == "uuid" and k == "string":
        return uuid.UUID(v)
    return v
