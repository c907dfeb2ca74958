"""Hypothesis strategies for Avro schemas and for values of their Arrow types."""
from __future__ import annotations

import datetime as dt
import decimal
import json

from hypothesis import strategies as st

UTC = dt.timezone.utc
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


class Spec:
    def __init__(self, fmt, text, message_name=None):
        self.format = fmt
        self.text = text if isinstance(text, str) else json.dumps(text)
        self.message_name = message_name


_names = iter(range(10**9))


def _name(prefix):
    return f"{prefix}{next(_names)}"


PRIMS = ["boolean", "int", "long", "float", "double", "bytes", "string",
         {"type": "int", "logicalType": "date"},
         {"type": "int", "logicalType": "time-millis"},
         {"type": "long", "logicalType": "time-micros"},
         {"type": "long", "logicalType": "timestamp-millis"},
         {"type": "long", "logicalType": "timestamp-micros"},
         {"type": "long", "logicalType": "local-timestamp-micros"},
         {"type": "string", "logicalType": "uuid"}]


@st.composite
def scalar_schema(draw):
    kind = draw(st.sampled_from(["prim", "prim", "prim", "enum", "fixed", "decimal", "fdecimal"]))
    if kind == "prim":
        return draw(st.sampled_from(PRIMS))
    if kind == "enum":
        return {"type": "enum", "name": _name("E"), "symbols": ["A", "B", "C"]}
    if kind == "fixed":
        return {"type": "fixed", "name": _name("F"), "size": draw(st.integers(1, 5))}
    p = draw(st.integers(1, 38))
    s = draw(st.integers(0, p))
    if kind == "decimal":
        return {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s}
    size = draw(st.integers(1, 20))
    p = min(p, max(1, int((8 * size - 1) * 0.30103)))  # fits the fixed size
    s = min(s, p)
    return {"type": "fixed", "name": _name("FD"), "size": size, "logicalType": "decimal",
            "precision": p, "scale": s}


def schema(depth=2):
    leaf = scalar_schema()
    if depth <= 0:
        return leaf
    inner = schema(depth - 1)

    @st.composite
    def compound(draw):
        kind = draw(st.sampled_from(["record", "array", "map", "nullable", "nullable2", "intlong",
                                     "floatdouble", "multi"]))
        if kind == "record":
            n = draw(st.integers(1, 4))
            return {"type": "record", "name": _name("R"),
                    "fields": [{"name": f"f{i}", "type": draw(inner)} for i in range(n)]}
        if kind == "array":
            return {"type": "array", "items": draw(inner)}
        if kind == "map":
            return {"type": "map", "values": draw(inner)}
        if kind in ("nullable", "nullable2"):
            t = draw(inner)
            if isinstance(t, list):
                return t  # Avro forbids a union directly inside a union
            return ["null", t] if kind == "nullable" else [t, "null"]
        if kind == "intlong":
            return draw(st.sampled_from([["int", "long"], ["null", "int", "long"], ["long", "int"]]))
        if kind == "floatdouble":
            return draw(st.sampled_from([["float", "double"], ["null", "double", "float"]]))
        members = draw(st.lists(st.sampled_from(["int", "string", "boolean", "double", "bytes",
                                                 "REC", "ARR"]), min_size=2, max_size=3, unique=True))
        out = [] if draw(st.booleans()) else ["null"]
        for m in members:
            if m == "REC":
                out.append({"type": "record", "name": _name("U"), "fields": [{"name": "x", "type": "long"}]})
            elif m == "ARR":
                out.append({"type": "array", "items": "string"})
            else:
                out.append(m)
        if draw(st.booleans()):
            out = out[::-1]
        return out

    return st.one_of(leaf, compound())


def top_schema():
    return st.builds(lambda fs: {"type": "record", "name": _name("Top"),
                                 "fields": [{"name": f"c{i}", "type": t} for i, t in enumerate(fs)]},
                     st.lists(schema(2), min_size=1, max_size=5))


# -- values (Python objects pa.array takes for arrow_type_of(node)) ----------------------------
def value(node, loose=False):
    """Strategy of values for a connector.formats.avro._schema.Node (``loose``: nulls anywhere,
    unknown enum symbols, wrong fixed sizes, several union members: rows that must fail)."""
    s = _value(node, loose)
    return st.one_of(st.none(), s) if loose else s


def _value(node, loose):
    from connector.formats.avro._schema import union_kind

    if loose and node.kind == "enum":
        return st.sampled_from(list(node.symbols) + ["NOPE"])
    if loose and node.kind == "fixed" and node.logical != "decimal":
        return st.binary(min_size=max(0, node.size - 1), max_size=node.size + 1)
    if loose and node.kind == "union" and union_kind(node) == "struct":
        nn = node.nonnull
        return st.fixed_dictionaries({f"member{i}": st.one_of(st.none(), value(b, loose))
                                      for i, b in enumerate(nn)})

    k = node.kind
    if k == "union":
        nn = node.nonnull
        has_null = any(b.kind == "null" for b in node.branches)
        uk = union_kind(node)
        if uk == "struct":
            opts = [st.builds(lambda v, i=i: {f"member{j}": (v if j == i else None) for j in range(len(nn))},
                              value(b, loose)) for i, b in enumerate(nn)]
            s = st.one_of(*opts)
        elif uk == "long":
            s = st.integers(-(1 << 63), (1 << 63) - 1)
        elif uk == "double":
            s = st.floats(allow_nan=False)
        else:
            s = value(nn[0], loose) if nn else st.none()
        return st.one_of(st.none(), s) if has_null else s
    lg = node.logical
    if k == "record":
        return st.fixed_dictionaries({f.name: value(f.type, loose) for f in node.fields})
    if k == "array":
        return st.lists(value(node.items, loose), max_size=3)
    if k == "map":
        return st.lists(st.tuples(st.text(max_size=4), value(node.items, loose)), max_size=3,
                        unique_by=lambda kv: kv[0])
    if lg == "decimal":
        p, s = node.precision, node.scale or 0
        return st.integers(-(10 ** p - 1), 10 ** p - 1).map(
            lambda u: decimal.Decimal(u).scaleb(-s, decimal.Context(prec=100)))
    if k == "boolean":
        return st.booleans()
    if k == "int":
        if lg == "date":
            return st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))
        if lg == "time-millis":
            return st.integers(0, 86_400_000 - 1)
        return st.integers(-(1 << 31), (1 << 31) - 1)
    if k == "long":
        if lg in ("timestamp-millis", "timestamp-micros", "local-timestamp-micros", "local-timestamp-millis"):
            us = st.integers(-(10 ** 15), 10 ** 15)
            if lg.endswith("millis"):
                us = us.map(lambda x: x - x % 1000)
            if lg.startswith("local"):
                return us.map(lambda x: dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=x))
            return us.map(lambda x: _EPOCH + dt.timedelta(microseconds=x))
        if lg == "time-micros":
            return st.integers(0, 86_400_000_000 - 1)
        return st.integers(-(1 << 63), (1 << 63) - 1)
    if k == "float":
        return st.floats(allow_nan=False, width=32)
    if k == "double":
        return st.floats(allow_nan=False)
    if k == "bytes":
        return st.binary(max_size=8)
    if k == "fixed":
        return st.binary(min_size=node.size, max_size=node.size)
    if k == "string":
        if lg == "uuid":
            return st.uuids().map(str)
        return st.text(max_size=8)
    if k == "enum":
        return st.sampled_from(list(node.symbols))
    if k == "null":
        return st.none()
    raise AssertionError(k)
