"""A scalar Avro reference (decoder, encoder, value strategies) for the engine's tests, and its
own cross-check against fastavro.

The reference follows the spec record by record and returns *which union branch* was encoded
(``(index, value)``), so tests can check the engine picks the member by the encoded index —
fastavro cannot tell (it returns a plain value). It applies the same limits as the engine
(collection cap, nesting cap, strict booleans, int range, UTF-8, decimal precision, trailing
bytes), raising :class:`RefError` where the engine must give a row error.
"""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import math
import random
import struct

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.formats.avro._schema import parse_avro, union_kind
from connector.formats.avro._walk import MAX_NESTING

PRIMS = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class RefError(Exception):
    pass


class Names:
    """Named types of a schema JSON (with its references)."""

    def __init__(self, schema, refs=()):
        self.defs = {}
        for r in refs:
            self._collect(r, None)
        self._collect(schema, None)

    def _collect(self, x, ns):
        if isinstance(x, list):
            for y in x:
                self._collect(y, ns)
        elif isinstance(x, dict):
            if x.get("type") in ("record", "error", "enum", "fixed"):
                full = x["name"] if "." in x["name"] else ".".join(filter(None, [x.get("namespace", ns), x["name"]]))
                self.defs[full] = (x, full.rpartition(".")[0] or None)
                ns = full.rpartition(".")[0] or None
                for f in x.get("fields", ()):
                    self._collect(f["type"], ns)
            for k in ("type", "items", "values"):
                if k in x and not isinstance(x[k], str):
                    self._collect(x[k], ns)

    def get(self, x, ns):
        """(node dict or primitive name, namespace) for a schema node."""
        if isinstance(x, str):
            if x in PRIMS:
                return {"type": x}, ns
            for cand in (".".join(filter(None, [ns, x])) if "." not in x else x, x):
                if cand in self.defs:
                    return self.defs[cand]
            raise KeyError(x)
        if isinstance(x, list):
            return x, ns
        if isinstance(x.get("type"), (dict, list)) or (isinstance(x.get("type"), str) and x["type"] not in PRIMS
                                                       and x["type"] not in ("record", "error", "enum", "fixed",
                                                                             "array", "map")):
            return self.get(x["type"], ns)
        if x.get("type") in ("record", "error", "enum", "fixed"):
            full = x["name"] if "." in x["name"] else ".".join(filter(None, [x.get("namespace", ns), x["name"]]))
            return x, full.rpartition(".")[0] or None
        return x, ns


# -- reference decoder ---------------------------------------------------------------------
class Reader:
    def __init__(self, data: bytes, cap_items: int):
        self.b, self.i, self.cap = data, 0, cap_items

    def take(self, n):
        if n < 0 or self.i + n > len(self.b):
            raise RefError("truncated")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def varint(self, is_int=False):
        u = 0
        for k in range(10):
            if self.i >= len(self.b):
                raise RefError("truncated")
            c = self.b[self.i]
            self.i += 1
            if k == 9 and c > 1:
                raise RefError("overflow")
            u |= (c & 0x7F) << (7 * k)
            if not c & 0x80:
                if is_int and u >= 1 << 32:
                    raise RefError("int range")
                return (u >> 1) ^ -(u & 1)
        raise RefError("varint too long")


def ref_decode(schema, data: bytes, *, refs=(), cap_items=1_000_000, names=None):
    """Decode one payload; unions come back as ``(branch index, value)``, maps as pair lists,
    decimals as unscaled ints, logical types as their raw numbers."""
    names = names or Names(schema, refs)
    r = Reader(data, cap_items)
    budget = [cap_items]

    def dec(x, ns, depth):
        node, ns = names.get(x, ns)
        if isinstance(node, list):
            if depth > MAX_NESTING:
                raise RefError("nesting")
            idx = r.varint(is_int=True)
            if not 0 <= idx < len(node):
                raise RefError("branch")
            return (idx, dec(node[idx], ns, depth + 1))
        t = node["type"]
        lg = node.get("logicalType")
        if t == "null":
            return None
        if t == "boolean":
            v = r.take(1)[0]
            if v > 1:
                raise RefError("bool")
            return v == 1
        if t in ("int", "long"):
            v = r.varint(is_int=t == "int")
            if t == "long" and lg in ("timestamp-millis", "local-timestamp-millis") and \
                    abs(v) > (2**63 - 1) // 1000:
                raise RefError("timestamp beyond microseconds")
            return v
        if t == "float":
            return struct.unpack("<f", r.take(4))[0]
        if t == "double":
            return struct.unpack("<d", r.take(8))[0]
        if t in ("bytes", "string"):
            n = r.varint()
            b = r.take(n)
            if t == "string":
                try:
                    return b.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise RefError("utf8") from e
            return _dec_bytes(b, node) if lg == "decimal" else b
        if t == "fixed":
            b = r.take(node["size"])
            return _dec_bytes(b, node) if lg == "decimal" else b
        if t == "enum":
            i = r.varint(is_int=True)
            if not 0 <= i < len(node["symbols"]):
                raise RefError("enum")
            return node["symbols"][i]
        if depth > MAX_NESTING:
            raise RefError("nesting")
        if t in ("record", "error"):
            return {f["name"]: dec(f["type"], ns, depth + 1) for f in node["fields"]}
        item = node["items"] if t == "array" else node["values"]
        out = []
        while True:
            n = r.varint()
            if n == 0:
                return out
            if n < 0:
                n = -n
                r.varint()
            budget[0] -= n
            if budget[0] < 0:
                raise RefError("cap")
            if n > len(r.b) - r.i and _min_size(item, ns, names) > 0:
                raise RefError("count")
            for _ in range(n):
                if t == "map":
                    k = r.take(r.varint())
                    try:
                        k = k.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise RefError("utf8") from e
                    out.append((k, dec(item, ns, depth + 1)))
                else:
                    out.append(dec(item, ns, depth + 1))

    v = dec(schema, None, 0)
    if r.i != len(data):
        raise RefError("trailing")
    return v


def _dec_bytes(b, node):
    v = int.from_bytes(b, "big", signed=True)
    if node.get("precision") and abs(v) >= 10 ** node["precision"]:
        raise RefError("precision")
    return v


def _min_size(x, ns, names, seen=()):
    node, ns = names.get(x, ns)
    if isinstance(node, list):
        return 1
    t = node["type"]
    if t == "null":
        return 0
    if t in ("record", "error"):
        key = node["name"]
        if key in seen:
            return 0
        return sum(_min_size(f["type"], ns, names, seen + (key,)) for f in node["fields"])
    return {"float": 4, "double": 8, "fixed": node.get("size", 0)}.get(t, 1)


# -- encoder that forces union branches ----------------------------------------------------
def _zz(n):
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode(schema, value, *, refs=(), names=None, rnd: random.Random | None = None) -> bytes:
    """Encode a value in the reference's form (unions as ``(index, value)``, maps as pair
    lists, decimals as unscaled ints). With ``rnd``, collections are split into random blocks,
    some with negative counts (count, byte size) as the spec allows."""
    names = names or Names(schema, refs)

    def enc(x, ns, v, out):
        node, ns = names.get(x, ns)
        if isinstance(node, list):
            i, inner = v
            out.write(_zz(i))
            return enc(node[i], ns, inner, out)
        t = node["type"]
        lg = node.get("logicalType")
        if t == "null":
            return
        if t == "boolean":
            out.write(b"\x01" if v else b"\x00")
        elif t in ("int", "long", "enum"):
            out.write(_zz(node["symbols"].index(v) if t == "enum" else v))
        elif t == "float":
            out.write(struct.pack("<f", v))
        elif t == "double":
            out.write(struct.pack("<d", v))
        elif t in ("bytes", "string"):
            b = _dec_to_bytes(v) if lg == "decimal" else (v.encode() if t == "string" else v)
            out.write(_zz(len(b)) + b)
        elif t == "fixed":
            out.write(v.to_bytes(node["size"], "big", signed=True) if lg == "decimal" else v)
        elif t in ("record", "error"):
            for f in node["fields"]:
                enc(f["type"], ns, v[f["name"]], out)
        else:
            item = node["items"] if t == "array" else node["values"]
            i = 0
            while i < len(v):
                n = rnd.randint(1, len(v) - i) if rnd else len(v) - i
                body = io.BytesIO()
                for y in v[i:i + n]:
                    if t == "map":
                        k = y[0].encode()
                        body.write(_zz(len(k)) + k)
                        enc(item, ns, y[1], body)
                    else:
                        enc(item, ns, y, body)
                blob = body.getvalue()
                if rnd and rnd.random() < 0.4:
                    out.write(_zz(-n) + _zz(len(blob)) + blob)
                else:
                    out.write(_zz(n) + blob)
                i += n
            out.write(b"\x00")

    out = io.BytesIO()
    enc(schema, None, value, out)
    return out.getvalue()


def _dec_to_bytes(v: int) -> bytes:
    return v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)


# -- Hypothesis values in the reference's form ---------------------------------------------
def values(schema, *, refs=(), max_depth=3, names=None):
    names = names or Names(schema, refs)

    def s(x, ns, depth):
        node, ns = names.get(x, ns)
        if isinstance(node, list):
            opts = []
            for i, b in enumerate(node):
                bn, _ = names.get(b, ns)
                if depth >= max_depth and isinstance(bn, dict) and bn.get("type") in ("record", "array", "map"):
                    continue
                opts.append(st.tuples(st.just(i), s(b, ns, depth + 1)))
            return st.one_of(opts)
        t = node["type"]
        lg = node.get("logicalType")
        if lg == "decimal" and t in ("bytes", "fixed"):
            p = node.get("precision", 10)
            lim = 10 ** p - 1
            if t == "fixed":
                lim = min(lim, 2 ** (8 * node["size"] - 1) - 1)
            return st.integers(-lim, lim)
        if t == "null":
            return st.none()
        if t == "boolean":
            return st.booleans()
        if t == "int":
            return st.integers(-2**31, 2**31 - 1)
        if t == "long":
            if lg in ("timestamp-millis", "local-timestamp-millis"):
                return st.integers(-2**53, 2**53)
            return st.integers(-2**63, 2**63 - 1)
        if t == "float":
            return st.floats(width=32, allow_nan=False)
        if t == "double":
            return st.floats(allow_nan=False)
        if t == "bytes":
            return st.binary(max_size=8)
        if t == "string":
            return st.text(max_size=8)
        if t == "fixed":
            return st.binary(min_size=node["size"], max_size=node["size"])
        if t == "enum":
            return st.sampled_from(node["symbols"])
        if t in ("record", "error"):
            return st.fixed_dictionaries({f["name"]: s(f["type"], ns, depth + 1) for f in node["fields"]})
        item = node["items"] if t == "array" else node["values"]
        if depth >= max_depth:
            return st.just([])
        n = 3
        if t == "array":
            return st.lists(s(item, ns, depth + 1), max_size=n)
        return st.lists(st.tuples(st.text(max_size=4), s(item, ns, depth + 1)), max_size=n,
                        unique_by=lambda kv: kv[0])
    return s(schema, None, 0)


# -- reference value → the engine's output (raw form: timestamps/dates as numbers) ----------
def raw_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, raw_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", pa.string(), False), pa.field("value", raw_type(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", raw_type(t.value_type)))
    return t


def raw_pylist(arr: pa.Array) -> list:
    """Engine output as Python values with timestamps/dates as plain numbers."""
    rt = raw_type(arr.type)
    # cast only when needed: pyarrow's cast of list<null> loses the values' length
    return (arr if rt == arr.type else arr.cast(rt)).to_pylist()


def expected(v, node):
    """Reference value → the engine's raw Python value for reader tree ``node`` (same schema)."""
    k = node.kind
    if k == "union":
        i, inner = v
        b = node.branches[i] if i < len(node.branches) else None
        if b is None or b.kind == "null":
            return None
        uk = union_kind(node)
        val = expected(inner, b)
        if uk == "nullable":
            return val
        if uk in ("long", "double"):
            return float(val) if uk == "double" else val
        nn = node.nonnull
        j = nn.index(b)
        return {f"member{m}": (val if m == j else None) for m in range(len(nn))}
    if k == "record":
        return {f.name: expected(v[f.name], f.type) for f in node.fields}
    if k == "array":
        return [expected(x, node.items) for x in v]
    if k == "map":
        return [(key, expected(x, node.items)) for key, x in v]
    if node.logical == "decimal" and k in ("bytes", "fixed") and node.precision:
        return decimal.Decimal(v).scaleb(-(node.scale or 0), decimal.Context(prec=80))
    if k == "long" and node.logical in ("timestamp-millis", "local-timestamp-millis"):
        return v * 1000
    return v


def same(a, b) -> bool:
    """Equality that treats NaN as equal to NaN (arbitrary bytes decode to NaNs)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal):
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    return a == b and type(a) is type(b)


def reader_tree(schema, refs=(), max_depth=0):
    return parse_avro(json.dumps(schema), max_depth=max_depth, refs=tuple(json.dumps(r) for r in refs))[0]


# -- the reference's own checks ------------------------------------------------------------
PLAIN = {"type": "record", "name": "P", "namespace": "ref", "fields": [
    {"name": "a", "type": "long"}, {"name": "b", "type": "int"}, {"name": "c", "type": "string"},
    {"name": "d", "type": "double"}, {"name": "e", "type": "bytes"}, {"name": "f", "type": "float"},
    {"name": "g", "type": {"type": "array", "items": "long"}},
    {"name": "h", "type": {"type": "map", "values": "string"}},
    {"name": "n", "type": ["null", "string"]},
    {"name": "en", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "r", "type": {"type": "record", "name": "In", "fields": [{"name": "z", "type": "boolean"}]}}]}


def _untag(v, x, names, ns=None):
    """Reference form → fastavro's input form (unions untagged, maps as dicts)."""
    node, ns = names.get(x, ns)
    if isinstance(node, list):
        return _untag(v[1], node[v[0]], names, ns)
    t = node["type"]
    if t in ("record", "error"):
        return {f["name"]: _untag(v[f["name"]], f["type"], names, ns) for f in node["fields"]}
    if t == "array":
        return [_untag(y, node["items"], names, ns) for y in v]
    if t == "map":
        return {k: _untag(y, node["values"], names, ns) for k, y in v}
    return v


@settings(max_examples=60, deadline=None)
@given(values(PLAIN), st.randoms(use_true_random=False))
def test_reference_encoder_and_decoder_agree_with_fastavro(v, rnd):
    names = Names(PLAIN)
    plain = encode(PLAIN, v)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(PLAIN), _untag(v, PLAIN, names))
    assert plain == buf.getvalue()  # one block per collection: the bytes fastavro writes
    blocky = encode(PLAIN, v, rnd=rnd)  # random blocks, negative counts: still the same value
    for b in (plain, blocky):
        got = ref_decode(PLAIN, b)
        assert same(got, v) or (got["f"] != got["f"])
        assert fastavro.schemaless_reader(io.BytesIO(b), fastavro.parse_schema(PLAIN)) == \
            _untag(got, PLAIN, names)


def test_reference_refuses_what_the_engine_must_refuse():
    s = {"type": "record", "name": "T", "fields": [{"name": "i", "type": "int"}]}
    with pytest.raises(RefError):
        ref_decode(s, b"\x80\x80\x80\x80\x80\x01")  # int beyond 32 bits
    with pytest.raises(RefError):
        ref_decode(s, b"\x02\x00")  # trailing byte
    assert ref_decode(s, b"\x03") == {"i": -2}
    assert expected((2, 5), reader_tree(["null", "int", "long", "string"])) == \
        {"member0": None, "member1": 5, "member2": None}
    assert dt.date(1970, 1, 1)  # the module imports datetime for the logical-type tests
