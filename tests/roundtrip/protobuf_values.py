"""Protobuf: Hypothesis values of a message's Arrow type, and messages built from them.

:func:`rows` draws values of ``arrow_type_of_message(desc)`` the schema accepts under the
project's mapping (``connector.formats.protobuf._schema``): proto3 implicit-presence scalars
always set (defaults included), ``optional`` scalars, message fields and wrappers nullable, one
member of a oneof at most, Timestamp across years 1..9999 and Duration within ±10,000 years,
uint64 as decimals up to 2^64-1, enums by name (and, for open enums, unknown numbers as
digits), Struct/Value/ListValue/Any as JSON text, maps with unique keys. The reference
library's side: :func:`message` builds the message a value stands for (for confluent-kafka's
``ProtobufSerializer``), :func:`arrow_form` reads a parsed message back into that form (for
its ``ProtobufDeserializer``); :func:`normal` sorts map entries (their wire order is not
part of the value).
"""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor as FD
from hypothesis import strategies as st

from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS, is_map
from tests.roundtrip.common import collection, floats32, floats64, keys, texts
from tests.roundtrip.json_values import FREE

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
_US = dt.timedelta(microseconds=1)
TS_MIN = (dt.datetime(1, 1, 1, tzinfo=UTC) - EPOCH) // _US
TS_MAX = (dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - EPOCH) // _US
DUR_MAX = 315_576_000_000 * 10**6 + 999_999
I32, I64 = (-(1 << 31), (1 << 31) - 1), (-(1 << 63), (1 << 63) - 1)
_TS = "google.protobuf.Timestamp"
_DUR = "google.protobuf.Duration"


def _ints(lo, hi):
    return st.integers(lo, hi)  # Hypothesis draws the bounds, 0 and ±1 often on its own


def _scalar(f) -> st.SearchStrategy:
    t = f.type
    if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return _ints(*I32)
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return _ints(*I64)
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return _ints(0, (1 << 32) - 1)
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return _ints(0, (1 << 64) - 1).map(Decimal)
    if t == FD.TYPE_DOUBLE:
        return floats64()
    if t == FD.TYPE_FLOAT:
        return floats32()
    if t == FD.TYPE_BOOL:
        return st.booleans()
    if t == FD.TYPE_STRING:
        return texts()
    if t == FD.TYPE_BYTES:
        return st.binary(max_size=40)
    if t == FD.TYPE_ENUM:
        names = st.sampled_from([v.name for v in f.enum_type.values])
        if f.enum_type.is_closed:
            return names
        known = {v.number for v in f.enum_type.values}
        return st.one_of(names, _ints(*I32).filter(lambda n: n not in known).map(str))
    raise AssertionError(f"no strategy for Protobuf type {t}")


def _json_text(name: str) -> st.SearchStrategy:
    if name == "google.protobuf.Struct":
        doc = st.dictionaries(keys(), FREE, max_size=3)
    elif name == "google.protobuf.ListValue":
        doc = st.lists(FREE, max_size=3)
    elif name == "google.protobuf.Value":
        doc = FREE.filter(lambda v: v is not None)
    else:  # Any: a packed Timestamp, named by its type URL
        doc = st.integers(TS_MIN // 10**6, TS_MAX // 10**6).map(lambda s: {
            "@type": "type.googleapis.com/google.protobuf.Timestamp",
            "value": (EPOCH + dt.timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
            if s >= (dt.datetime(1000, 1, 1, tzinfo=UTC) - EPOCH).total_seconds() else "1970-01-01T00:00:00Z"})

    def no_big_ints(v):  # Struct numbers are doubles: integers past 2^53 would not come back
        if isinstance(v, int) and not isinstance(v, bool):
            return float(v) if abs(v) < 1 << 53 else 1.5
        if isinstance(v, list):
            return [no_big_ints(x) for x in v]
        if isinstance(v, dict):
            return {k: no_big_ints(x) for k, x in v.items()}
        return v
    return doc.map(no_big_ints).map(lambda v: json.dumps(v, ensure_ascii=False))


def _message_value(desc, t: pa.DataType, large: bool, level: int) -> st.SearchStrategy:
    name = desc.full_name
    if name == _TS:
        return st.integers(TS_MIN, TS_MAX).map(lambda us: EPOCH + dt.timedelta(microseconds=us))
    if name == _DUR:
        return _ints(-DUR_MAX, DUR_MAX)
    if name in WKT_SCALARS:
        return _scalar(desc.fields_by_name["value"])
    if name in WKT_JSON:
        return _json_text(name)
    return rows(desc, t, large, level)


def _single(f, t: pa.DataType, large: bool, level: int) -> st.SearchStrategy:
    if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        return _message_value(f.message_type, t, large, level)
    return _scalar(f)


def _field(f, t: pa.DataType, large: bool, level: int) -> st.SearchStrategy:
    if is_map(f):
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        entry = st.tuples(keys() if kf.type == FD.TYPE_STRING else _scalar(kf),
                          _single(vf, t.item_type, large, level + 1))
        cheap = vf.type not in (FD.TYPE_MESSAGE, FD.TYPE_GROUP)
        return collection(entry, large and not level and cheap, unique_by=lambda kv: kv[0], level=level)
    if f.is_repeated:
        cheap = f.type not in (FD.TYPE_MESSAGE, FD.TYPE_GROUP)
        return collection(_single(f, t.value_type, large, level + 1), large and not level and cheap, level=level)
    s = _single(f, t, large, level)
    return st.one_of(st.none(), s) if f.has_presence and not f.is_required else s


def _real_oneof(f):
    """The oneof ``f`` belongs to, None for none and for proto3 ``optional``'s synthetic one."""
    o = f.containing_oneof
    if o is None or (len(o.fields) == 1 and o.name == "_" + f.name):
        return None
    return o


def rows(desc, t: pa.DataType, large: bool = False, level: int = 0) -> st.SearchStrategy:
    """Values of the message's Arrow type ``t`` (fields cut by the recursion depth absent)."""
    fields = {f.name: f for f in desc.fields}
    present = [t.field(i).name for i in range(t.num_fields)]
    groups: dict[str, list] = {}
    for name in present:
        o = _real_oneof(fields[name])
        if o is not None:
            groups.setdefault(o.name, []).append(name)
    plain = {name: _field(fields[name], t.field(name).type, large, level) for name in present
             if _real_oneof(fields[name]) is None}
    out = st.fixed_dictionaries(plain)
    for members in groups.values():
        options = [st.just({m: None for m in members})] + [
            _single(fields[m], t.field(m).type, large, level).map(
                lambda v, m=m, members=tuple(members): {x: (v if x == m else None) for x in members})
            for m in members]
        out = st.tuples(out, st.one_of(*options)).map(lambda p: {**p[0], **p[1]})
    return out.map(lambda d: {name: d[name] for name in present})


# -- the reference library's side -------------------------------------------------------------
def _scalar_value(f, v):
    if f.type == FD.TYPE_ENUM and isinstance(v, str):
        ev = f.enum_type.values_by_name.get(v)
        return ev.number if ev is not None else int(v)
    if isinstance(v, Decimal):
        return int(v)
    return v


def _set_message(m, v, pool) -> None:
    name = m.DESCRIPTOR.full_name
    if name == _TS:
        m.FromMicroseconds((v - EPOCH) // _US)
    elif name == _DUR:
        m.FromMicroseconds(v)
    elif name in WKT_SCALARS:
        m.value = _scalar_value(m.DESCRIPTOR.fields_by_name["value"], v)
    elif name in WKT_JSON:
        json_format.Parse(v, m, descriptor_pool=pool)
    else:
        m.SetInParent()
        fill(m, v, pool)


def fill(msg, v: dict, pool) -> None:
    """Set ``msg``'s fields from the Arrow-form value ``v``."""
    desc = msg.DESCRIPTOR
    for name, x in v.items():
        if x is None:
            continue
        f = desc.fields_by_name[name]
        if is_map(f):
            target = getattr(msg, name)
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            for k, val in x:
                key = _scalar_value(kf, k)
                if vf.type == FD.TYPE_MESSAGE:
                    _set_message(target[key], val, pool)
                else:
                    target[key] = _scalar_value(vf, val)
        elif f.is_repeated:
            target = getattr(msg, name)
            for item in x:
                if f.type == FD.TYPE_MESSAGE:
                    _set_message(target.add(), item, pool)
                else:
                    target.append(_scalar_value(f, item))
        elif f.type == FD.TYPE_MESSAGE:
            _set_message(getattr(msg, name), x, pool)
        else:
            setattr(msg, name, _scalar_value(f, x))


def message(cls, v: dict, pool):
    m = cls()
    fill(m, v, pool)
    return m


def _scalar_form(f, v):
    if f.type == FD.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else str(v)
    if f.type in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return Decimal(v)
    return v


def _message_form(m, t: pa.DataType, pool):
    name = m.DESCRIPTOR.full_name
    if name == _TS:
        return EPOCH + dt.timedelta(microseconds=m.ToMicroseconds())
    if name == _DUR:
        return m.ToMicroseconds()
    if name in WKT_SCALARS:
        return _scalar_form(m.DESCRIPTOR.fields_by_name["value"], m.value)
    if name in WKT_JSON:
        return json_format.MessageToJson(m, indent=None, descriptor_pool=pool)
    return arrow_form(m, t, pool)


def arrow_form(msg, t: pa.DataType, pool) -> dict:
    """The Arrow-form value of a parsed message (what our decoder returns for its bytes)."""
    desc = msg.DESCRIPTOR
    out = {}
    for i in range(t.num_fields):
        name, ft = t.field(i).name, t.field(i).type
        f = desc.fields_by_name[name]
        x = getattr(msg, name)
        if is_map(f):
            vf = f.message_type.fields_by_name["value"]
            kf = f.message_type.fields_by_name["key"]
            out[name] = [(_scalar_form(kf, k), _message_form(x[k], ft.item_type, pool)
                          if vf.type == FD.TYPE_MESSAGE else _scalar_form(vf, x[k])) for k in x]
        elif f.is_repeated:
            out[name] = [_message_form(item, ft.value_type, pool) if f.type == FD.TYPE_MESSAGE
                         else _scalar_form(f, item) for item in x]
        elif f.has_presence and not msg.HasField(name):
            out[name] = None
        elif f.type == FD.TYPE_MESSAGE:
            out[name] = _message_form(x, ft, pool)
        else:
            out[name] = _scalar_form(f, x)
    return out


def _normal_single(f, t: pa.DataType, v):
    if v is None:
        return None
    if f.type == FD.TYPE_MESSAGE:
        name = f.message_type.full_name
        if name in WKT_JSON:
            return ("json", json.loads(v))
        if name not in WKT_SCALARS:
            return normal(f.message_type, t, v)
    return v


def normal(desc, t: pa.DataType, v):
    """``v`` with map entries sorted and JSON-text leaves parsed: equal messages compare equal."""
    if v is None:
        return None
    out = {}
    for i in range(t.num_fields):
        name, ft = t.field(i).name, t.field(i).type
        f, x = desc.fields_by_name[name], v.get(name)
        if x is None:
            out[name] = None
        elif is_map(f):
            vf = f.message_type.fields_by_name["value"]
            out[name] = sorted(((k, _normal_single(vf, ft.item_type, y)) for k, y in x), key=lambda kv: repr(kv[0]))
        elif f.is_repeated:
            out[name] = [_normal_single(f, ft.value_type, y) for y in x]
        else:
            out[name] = _normal_single(f, ft, x)
    return out
