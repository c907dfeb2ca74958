"""Random records for every corpus schema: framed payloads written by the reference encoders
plus the value the project's decoder must return for each (its Arrow output mapping).

Used by ``tests/corpus/test_corpus.py`` (correctness) and ``benchmarks/corpus_bench.py``
(throughput). Values are seeded and Hypothesis-style: empty and very long strings, unicode,
extreme integers, every union branch, empty and multi-item arrays and maps, nulls.

Encoders: Avro with ``fastavro.schemaless_writer`` using its tuple notation
``(branch name, value)`` for every union, so the branch is chosen explicitly (never guessed from
the Python type); Protobuf with ``SerializeToString`` on classes from the project's run-time
compiler ``compile_proto``; JSON with ``json.dumps``. Each frame is Confluent
(``wireformat.encode_frame``), Protobuf frames with their message-index array.

Expected values follow the mapping tables of ``connector.formats`` (``_avro_schema``,
``_protobuf_schema``, ``_json_schema``): Avro multi-type unions → ``{memberN: ...}`` with
only the written branch set; timestamps → µs UTC; Protobuf Any/Struct → JSON text (compared
parsed, see :class:`JsonText`); uint64 → Decimal; enums → names. Struct fields the reader
type lacks (recursion cut at ``max_recursion_depth``) are projected away with the decoder's
own ``arrow_type``.

Example
-------
>>> from benchmarks.corpus._gen import cases, generate
>>> c = [c for c in cases() if c.name == "avro/confluent_payment"][0]
>>> batch = generate(c, 3, seed=1)
>>> len(batch.values), len(batch.expected)
(3, 3)
"""
from __future__ import annotations

import base64
import datetime as dt
import io
import json
import math
import random
import struct
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa

from connector.formats import DecodeOptions
from registry import Schema, SchemaType
from wireformat import encode_frame, encode_protobuf_indexes

HERE = Path(__file__).parent
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)

# per-schema settings: reader options and (Protobuf) the message the records are written as
SETTINGS: dict[str, dict] = {
    "avro/recursive_linked_list": {"max_recursion_depth": 3, "gen_depth": 5},
    "avro/recursive_tree": {"max_recursion_depth": 2, "gen_depth": 3},
    "avro/cloudevents_avro_recursive": {"max_recursion_depth": 2, "gen_depth": 3},
    "avro/avro_interop": {"max_recursion_depth": 3, "gen_depth": 4},
    "protobuf/otlp_trace": {"message": "corpus.opentelemetry.proto.trace.v1.TracesData",
                            "max_recursion_depth": 2, "gen_depth": 3},
    "protobuf/otlp_metrics": {"message": "corpus.opentelemetry.proto.metrics.v1.Metric"},
    "protobuf/otlp_logs": {"message": "corpus.opentelemetry.proto.logs.v1.LogRecord"},
    "protobuf/google_cloudevent": {"message": "io.cloudevents.v1.CloudEvent"},
    "protobuf/google_storage_object": {"message": "google.events.cloud.storage.v1.StorageObjectData"},
    "protobuf/google_pubsub_message": {"message": "google.events.cloud.pubsub.v1.MessagePublishedData"},
    "protobuf/google_audit_log": {"message": "google.events.cloud.audit.v1.LogEntryData"},
    "protobuf/google_firestore_document": {"message": "google.events.cloud.firestore.v1.DocumentEventData",
                                           "max_recursion_depth": 2, "gen_depth": 3},
    "protobuf/jaeger_model": {"message": "jaeger.api_v2.Span"},
    "protobuf/zipkin_span": {"message": "zipkin.proto3.Span"},
    "protobuf/iot_telemetry_proto2": {"message": "com.example.iot.SensorReading"},
    "protobuf/order_wrappers": {"message": "com.example.shop.v1.Order"},
    "protobuf/confluent_multi_message": {"message": "io.confluent.examples.proto.PizzaOrder"},
    "protobuf/fulfilment_shapes": {"message": "corpus.fulfilment.v1.Envelope"},
    "protobuf/dialogflow_webhook": {"message": "google.cloud.dialogflow.cx.v3.WebhookRequest"},
    "protobuf/longrunning_operation": {"message": "google.longrunning.Operation"},
    "protobuf/bigquery_table_wrappers": {"message": "google.cloud.bigquery.v2.Table"},
    # depth 2: its Arrow type has 1,098 columns (6,570 at depth 3: see the README's exceptions)
    "protobuf/cel_expression": {"message": "google.api.expr.v1alpha1.ParsedExpr",
                                "max_recursion_depth": 2, "gen_depth": 3},
}
_EXT = {"avro": ".avsc", "json": ".json", "protobuf": ".proto"}
_SCHEMA_TYPE = {"avro": SchemaType.AVRO, "json": SchemaType.JSON, "protobuf": SchemaType.PROTOBUF}


class Spec:
    """Reader schema as ``build_decoder`` takes it."""

    def __init__(self, fmt, text, message_name=None):
        self.format, self.text, self.message_name = fmt, text, message_name


@dataclass
class Case:
    name: str  # "avro/confluent_payment"
    fmt: str
    text: str
    message: str | None = None
    options: DecodeOptions = field(default_factory=DecodeOptions)
    gen_depth: int = 0

    @property
    def spec(self) -> Spec:
        return Spec(self.fmt, self.text, self.message)


@dataclass
class Batch:
    values: pa.BinaryArray  # Confluent-framed payloads
    expected: list  # decoder output per row (to_pylist form)
    schemas: dict  # schema id -> registry.Schema (the writer)
    framed: list  # the same frames as bytes (for per-record baselines)
    docs: list  # what was encoded (JSON: the documents; others: None)

    def lookup(self, key):
        return self.schemas.get(key[1])


def cases() -> list[Case]:
    out = []
    for fmt in ("avro", "json", "protobuf"):
        for p in sorted((HERE / fmt).glob("*" + _EXT[fmt])):
            name = f"{fmt}/{p.stem}"
            s = SETTINGS.get(name, {})
            out.append(Case(name, fmt, p.read_text(), s.get("message"),
                            DecodeOptions(max_recursion_depth=s.get("max_recursion_depth", 0)),
                            s.get("gen_depth", 0)))
    return out


class JsonText:
    """Expected JSON text: equal to a string that parses to the same value."""

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        if isinstance(other, JsonText):
            return self.obj == other.obj
        if not isinstance(other, str):
            return False
        try:
            return json.loads(other) == self.obj
        except ValueError:
            return False

    def __repr__(self):
        return f"JsonText({self.obj!r})"


class Unordered(list):
    """Expected map entries whose wire order is unspecified (Protobuf maps)."""


def same(a, b) -> bool:
    """Deep equality where NaN equals NaN, JsonText compares parsed JSON and Unordered
    entries compare in any order."""
    if isinstance(b, JsonText):
        return b == a
    if isinstance(b, Unordered) and isinstance(a, list):
        key = lambda kv: repr(kv[0])
        return same(sorted(a, key=key), sorted(b, key=key))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def project(v, t: pa.DataType):
    """Drop struct keys the Arrow type lacks (fields cut by the recursion limit)."""
    if v is None or isinstance(v, JsonText):
        return v
    if pa.types.is_struct(t):
        return {t.field(i).name: project(v.get(t.field(i).name), t.field(i).type)
                for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return type(v)((k, project(x, t.item_type)) for k, x in v)
    if pa.types.is_list(t):
        return [project(x, t.value_type) for x in v]
    return v


# -- edge values ------------------------------------------------------------------------------
STRINGS = ["", "a", "é", "日本語", "😀 emoji", "quote\" back\\slash", "new\nline\ttab", "\u0000nul",
           "x" * 1000, "ʎɐʍ ɹǝɥʇo", " ", "null", "0"]
INT32 = [0, 1, -1, 2**31 - 1, -2**31, 127, -128, 300]
INT64 = [0, 1, -1, 2**63 - 1, -2**63, 2**40, -2**40, 2**31, 5]
DOUBLES = [0.0, -0.0, 1.5, -2.25, 1e308, -1e-308, 5e-324, float("inf"), float("-inf"), float("nan"),
           0.1, 123456789.125]
FLOATS = [0.0, -0.0, 1.5, 3.4028234663852886e38, -1.1754943508222875e-38, float("inf"), float("nan"),
          0.100000001490116]


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


class Rand:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def chance(self, p=0.5):
        return self.r.random() < p

    def count(self, hi=4):
        return self.pick([0, 1, self.r.randint(2, hi)])

    def string(self):
        if self.chance(0.4):
            return self.pick(STRINGS)
        return "".join(self.r.choice("abcdefghijklmnopqrstuvwxyzABC0123456789-_ é中")
                       for _ in range(self.r.randint(1, 24)))

    def bytes_(self, size=None):
        if size is not None:
            return bytes(self.r.getrandbits(8) for _ in range(size))
        return self.pick([b"", b"\x00", b"\xff" * 3, bytes(range(256)),
                          bytes(self.r.getrandbits(8) for _ in range(self.r.randint(1, 20)))])

    def int32(self):
        return self.pick(INT32) if self.chance(0.5) else self.r.randint(-2**31, 2**31 - 1)

    def int64(self):
        return self.pick(INT64) if self.chance(0.5) else self.r.randint(-2**63, 2**63 - 1)

    def double(self, nan=True):
        v = self.pick(DOUBLES) if self.chance(0.5) else self.r.uniform(-1e6, 1e6)
        return 1.0 if (not nan and (math.isnan(v) or math.isinf(v))) else v

    def float32(self):
        return f32(self.pick(FLOATS) if self.chance(0.5) else self.r.uniform(-1e4, 1e4))

    def millis(self):  # 1900..2200, plus the epoch and pre-epoch values
        return self.pick([0, -1, 1, 1_700_000_000_123]) if self.chance(0.3) else \
            self.r.randint(-2_208_988_800_000, 7_258_118_400_000)

    def decimal(self, precision, scale):
        digits = self.pick([0, 1, precision]) if self.chance(0.4) else self.r.randint(1, precision)
        unscaled = self.r.randint(0, 10**digits - 1) * self.pick([1, -1])
        return Decimal(unscaled).scaleb(-scale)


# -- Avro -------------------------------------------------------------------------------------
def _avro_union_kind(branches: list) -> str:
    nn = [b for b in branches if _atype(b) != "null"]
    if len(nn) <= 1:
        return "nullable"
    kinds = {_atype(b) for b in nn}
    if not any(isinstance(b, dict) and b.get("logicalType") for b in nn):
        if kinds == {"int", "long"}:
            return "long"
        if kinds == {"float", "double"}:
            return "double"
    return "struct"


def _atype(s) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, list):
        return "union"
    t = s["type"]
    return t if isinstance(t, str) else _atype(t)


class AvroGen:
    def __init__(self, parsed, rnd: Rand, max_depth: int):
        self.rnd, self.max_depth = rnd, max_depth
        self.named: dict[str, Any] = {}
        self.depth: dict[str, int] = {}
        self._collect(parsed)

    def _collect(self, s):
        if isinstance(s, list):
            for b in s:
                self._collect(b)
        elif isinstance(s, dict):
            if s.get("type") in ("record", "error", "enum", "fixed") and "name" in s:
                self.named[s["name"]] = s
            for k in ("fields",):
                for f in s.get(k, ()):
                    self._collect(f["type"])
            for k in ("items", "values", "type"):
                if isinstance(s.get(k), (dict, list)):
                    self._collect(s[k])

    def _resolve(self, s):
        return self.named.get(s, s) if isinstance(s, str) else s

    def _too_deep(self, s) -> bool:
        s = self._resolve(s)
        if isinstance(s, dict) and s.get("type") == "record":
            return self.depth.get(s["name"], 0) >= self.max_depth
        return False

    def _usable_branch(self, s) -> bool:
        """A union branch the reader keeps: not a record below the recursion cut, nor an
        array or map of one (the reader's cut removes such branches from its union)."""
        s = self._resolve(s)
        if isinstance(s, dict) and s.get("type") in ("array", "map"):
            return not self._too_deep(s["items"] if s["type"] == "array" else s["values"])
        return not self._too_deep(s)

    def value(self, s) -> tuple[Any, Any]:
        """(datum for fastavro, expected decoded value)."""
        rnd = self.rnd
        s = self._resolve(s)
        if isinstance(s, list):
            usable = [i for i, b in enumerate(s) if self._usable_branch(b)]
            i = rnd.pick(usable)
            b = s[i]
            kept = [x for j, x in enumerate(s) if j in usable]  # the reader's (cut) union
            kind = _avro_union_kind(kept)
            nn = [j for j in usable if _atype(s[j]) != "null"]
            datum, exp = self.value(b)
            bname = self._branch_name(b)
            if _atype(b) == "null":
                exp = None
            elif kind == "long":
                exp = int(exp)
            elif kind == "double":
                exp = float(exp)
            elif kind == "struct":
                exp = {f"member{k}": (exp if j == i else None) for k, j in enumerate(nn)}
            return (bname, datum), exp
        if isinstance(s, str):
            return self._prim(s, None, {})
        t = s["type"]
        if isinstance(t, (dict, list)):
            return self.value(t)
        if t == "record":
            name = s["name"]
            self.depth[name] = self.depth.get(name, 0) + 1
            try:
                d, e = {}, {}
                for f in s["fields"]:
                    d[f["name"]], e[f["name"]] = self.value(f["type"])
                return d, e
            finally:
                self.depth[name] -= 1
        if t == "enum":
            sym = rnd.pick(s["symbols"])
            return sym, sym
        if t == "fixed":
            if s.get("logicalType") == "decimal":
                size, p, sc = s["size"], s["precision"], s.get("scale", 0)
                p = min(p, len(str(2 ** (8 * size - 1))) - 1)
                v = rnd.decimal(p, sc)
                return v, v
            b = rnd.bytes_(s["size"])
            return b, b
        if t == "array":
            n = 0 if self._too_deep(s["items"]) else rnd.count()
            pairs = [self.value(s["items"]) for _ in range(n)]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        if t == "map":
            n = 0 if self._too_deep(s["values"]) else rnd.count()
            keys = list(dict.fromkeys(rnd.string() for _ in range(n)))
            pairs = [(k, self.value(s["values"])) for k in keys]
            return {k: p[0] for k, p in pairs}, [(k, p[1]) for k, p in pairs]
        return self._prim(t, s.get("logicalType"), s)

    def _branch_name(self, b) -> str:
        b = self._resolve(b)
        if isinstance(b, str):
            return b
        t = b["type"]
        if t in ("record", "error", "enum", "fixed"):
            return b["name"]
        return t if isinstance(t, str) else self._branch_name(t)

    def _prim(self, t, lg, s):
        rnd = self.rnd
        if t == "null":
            return None, None
        if t == "boolean":
            v = rnd.chance()
            return v, v
        if t == "int":
            if lg == "date":
                v = rnd.r.randint(-25567, 84000)
                return v, EPOCH_DATE + dt.timedelta(days=v)
            if lg == "time-millis":
                v = rnd.r.randint(0, 86_399_999)
                return v, v
            v = rnd.int32()
            return v, v
        if t == "long":
            if lg == "time-micros":
                v = rnd.r.randint(0, 86_399_999_999)
                return v, v
            if lg in ("timestamp-millis", "local-timestamp-millis"):
                v = rnd.millis()
                base = EPOCH if lg == "timestamp-millis" else EPOCH_NAIVE
                return v, base + dt.timedelta(milliseconds=v)
            if lg in ("timestamp-micros", "local-timestamp-micros"):
                v = rnd.millis() * 1000 + rnd.r.randint(0, 999)
                base = EPOCH if lg == "timestamp-micros" else EPOCH_NAIVE
                return v, base + dt.timedelta(microseconds=v)
            v = rnd.int64()
            return v, v
        if t == "float":
            v = rnd.float32()
            return v, v
        if t == "double":
            v = rnd.double()
            return v, v
        if t == "bytes":
            if lg == "decimal":
                v = rnd.decimal(s["precision"], s.get("scale", 0))
                return v, v
            v = rnd.bytes_()
            return v, v
        if t == "string":
            if lg == "uuid":
                v = str(uuid.UUID(int=rnd.r.getrandbits(128)))
                return v, v
            v = rnd.string()
            return v, v
        raise ValueError(f"unhandled Avro type {t}")


def _strip_for_fastavro(obj):
    """Logical types fastavro would convert on write, except decimal, removed: the generator
    hands it raw ints (its own logical conversions are not what is being tested)."""
    if isinstance(obj, list):
        return [_strip_for_fastavro(x) for x in obj]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "logicalType" and v != "decimal":
                continue
            out[k] = _strip_for_fastavro(v) if isinstance(v, (dict, list)) else v
        return out
    return obj


def _gen_avro(case: Case, n: int, rnd: Rand, sid: int):
    obj = json.loads(case.text)
    parsed = fastavro.parse_schema(_strip_for_fastavro(obj))
    gen_parsed = fastavro.parse_schema(obj)  # keeps logical types for the generator
    g = AvroGen(gen_parsed, rnd, case.gen_depth or 10_000)
    framed, expected = [], []
    for _ in range(n):
        datum, exp = g.value(gen_parsed)
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, datum)
        framed.append(encode_frame("confluent", sid, buf.getvalue()))
        expected.append(exp)
    return framed, expected, None


# -- Protobuf ---------------------------------------------------------------------------------
_WKT_TS, _WKT_DUR = "google.protobuf.Timestamp", "google.protobuf.Duration"
_WRAPPERS = {"google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
             "google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
             "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue"}


class ProtoGen:
    def __init__(self, compiled, rnd: Rand, max_depth: int, enum_as="string"):
        from google.protobuf import json_format
        from google.protobuf.descriptor import FieldDescriptor as FD
        self.FD, self.jf = FD, json_format
        self.compiled, self.rnd, self.max_depth = compiled, rnd, max_depth
        self.depth: dict[str, int] = {}

    def fill(self, msg) -> dict:
        """Fill ``msg`` randomly; return the expected decoded struct."""
        rnd = self.rnd
        desc = msg.DESCRIPTOR
        self.depth[desc.full_name] = self.depth.get(desc.full_name, 0) + 1
        try:
            chosen = {}
            for o in desc.oneofs:
                if o.fields and not (len(o.fields) == 1 and o.name == "_" + o.fields[0].name):
                    opts = [f for f in o.fields if not self._too_deep(f)]
                    chosen[o.full_name] = rnd.pick(opts) if opts and rnd.chance(0.85) else None
            exp = {}
            for f in desc.fields:
                o = f.containing_oneof
                if o is not None and o.full_name in chosen:
                    if chosen[o.full_name] is f:
                        exp[f.name] = self._set(msg, f)
                    else:
                        exp[f.name] = None
                    continue
                if self._is_map(f):
                    exp[f.name] = self._map(msg, f)
                elif f.is_repeated:
                    exp[f.name] = self._repeated(msg, f)
                elif f.is_required or rnd.chance(0.8) and not self._too_deep(f):
                    exp[f.name] = self._set(msg, f)
                else:
                    exp[f.name] = self._unset(f)
            return exp
        finally:
            self.depth[desc.full_name] -= 1

    def _too_deep(self, f) -> bool:
        if f.type != self.FD.TYPE_MESSAGE:
            return False
        return self.depth.get(f.message_type.full_name, 0) >= self.max_depth

    @staticmethod
    def _is_map(f) -> bool:
        return f.type == f.TYPE_MESSAGE and f.message_type.GetOptions().map_entry

    def _unset(self, f):
        FD = self.FD
        if f.type == FD.TYPE_MESSAGE or f.has_presence:
            return None
        return self._expect_scalar(f, f.default_value)

    def _expect_scalar(self, f, v):
        FD = self.FD
        if f.type == FD.TYPE_ENUM:
            ev = f.enum_type.values_by_number.get(v)
            return ev.name if ev is not None else str(v)
        if f.type in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
            return Decimal(v)
        if f.type == FD.TYPE_FLOAT:
            return f32(v)
        return v

    def _scalar(self, f):
        FD, rnd = self.FD, self.rnd
        t = f.type
        if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
            return rnd.int32()
        if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
            return rnd.int64()
        if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
            return rnd.pick([0, 1, 2**32 - 1, 2**31, rnd.r.randint(0, 2**32 - 1)])
        if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
            return rnd.pick([0, 1, 2**64 - 1, 2**63, rnd.r.randint(0, 2**64 - 1)])
        if t == FD.TYPE_DOUBLE:
            return rnd.double()
        if t == FD.TYPE_FLOAT:
            return rnd.float32()
        if t == FD.TYPE_BOOL:
            return rnd.chance()
        if t == FD.TYPE_STRING:
            return rnd.string()
        if t == FD.TYPE_BYTES:
            return rnd.bytes_()
        if t == FD.TYPE_ENUM:
            nums = [v.number for v in f.enum_type.values]
            if not f.enum_type.is_closed and rnd.chance(0.1):
                return 99  # an open enum keeps unknown numbers
            return rnd.pick(nums)
        raise ValueError(t)

    def _message_value(self, sub, f) -> Any:
        """Fill the sub-message ``sub`` (of field ``f``'s type); return its expected value."""
        name = sub.DESCRIPTOR.full_name
        rnd = self.rnd
        if name == _WKT_TS:
            micros = rnd.millis() * 1000 + rnd.r.randint(0, 999)
            sub.seconds, sub.nanos = micros // 1_000_000, (micros % 1_000_000) * 1000
            return EPOCH + dt.timedelta(microseconds=micros)
        if name == _WKT_DUR:
            micros = rnd.r.randint(-10**12, 10**12)
            sub.seconds = int(micros / 1_000_000)
            sub.nanos = (micros - sub.seconds * 1_000_000) * 1000
            return micros
        if name in _WRAPPERS:
            vf = sub.DESCRIPTOR.fields_by_name["value"]
            sub.value = self._scalar(vf)
            return self._expect_scalar(vf, sub.value)
        if name in ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"):
            v = {"google.protobuf.Struct": self._json_obj, "google.protobuf.ListValue": self._json_list,
                 "google.protobuf.Value": self._json_value}[name]()
            self.jf.ParseDict(v, sub)
            return JsonText(json.loads(self.jf.MessageToJson(sub, indent=None)))
        if name == "google.protobuf.Any":
            from google.protobuf import message_factory
            kind = rnd.pick([_WKT_TS, _WKT_DUR, "google.protobuf.Struct", "google.protobuf.Int64Value",
                             "google.protobuf.StringValue"])
            try:
                desc = self.compiled.pool.FindMessageTypeByName(kind)
            except KeyError:
                kind, desc = _WKT_TS, self.compiled.pool.FindMessageTypeByName(_WKT_TS)
            inner = message_factory.GetMessageClass(desc)()
            if kind == _WKT_TS:
                inner.seconds, inner.nanos = rnd.r.randint(0, 2**31), rnd.pick([0, 500_000_000])
            elif kind == _WKT_DUR:
                inner.seconds = rnd.r.randint(-10**6, 10**6)
            elif kind == "google.protobuf.Struct":
                self.jf.ParseDict(self._json_obj(), inner)
            elif kind == "google.protobuf.Int64Value":
                inner.value = rnd.int64()
            else:
                inner.value = rnd.string()
            sub.Pack(inner)
            return JsonText(json.loads(self.jf.MessageToJson(sub, indent=None,
                                                             descriptor_pool=self.compiled.pool)))
        return self.fill(sub)

    def _json_obj(self, depth=0):
        return {self.rnd.string(): self._json_value(depth + 1) for _ in range(self.rnd.count())}

    def _json_list(self, depth=0):
        return [self._json_value(depth + 1) for _ in range(self.rnd.count())]

    def _json_value(self, depth=0):
        rnd = self.rnd
        kinds = ["null", "bool", "num", "str"] + (["obj", "list"] if depth < 3 else [])
        k = rnd.pick(kinds)
        if k == "null":
            return None
        if k == "bool":
            return rnd.chance()
        if k == "num":
            return rnd.pick([0.0, 1.5, -3.0, 1e300, 2.0**53, rnd.r.uniform(-1e6, 1e6), 12345.0])
        if k == "str":
            return rnd.string()
        return self._json_obj(depth) if k == "obj" else self._json_list(depth)

    def _set(self, msg, f):
        FD = self.FD
        if f.type == FD.TYPE_MESSAGE:
            sub = getattr(msg, f.name)
            exp = self._message_value(sub, f)
            sub.SetInParent()
            return exp
        v = self._scalar(f)
        setattr(msg, f.name, v)
        return self._expect_scalar(f, v)

    def _repeated(self, msg, f):
        FD = self.FD
        n = 0 if self._too_deep(f) else self.rnd.count()
        cont = getattr(msg, f.name)
        out = []
        for _ in range(n):
            if f.type == FD.TYPE_MESSAGE:
                out.append(self._message_value(cont.add(), f))
            else:
                v = self._scalar(f)
                cont.append(v)
                out.append(self._expect_scalar(f, v))
        return out

    def _map(self, msg, f):
        FD = self.FD
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        cont = getattr(msg, f.name)
        out = Unordered()
        for _ in range(self.rnd.count()):
            k = self._scalar(kf)
            if k in cont:
                continue
            if vf.type == FD.TYPE_MESSAGE:
                if self._too_deep(vf):
                    continue
                exp = self._message_value(cont[k], vf)
            else:
                cont[k] = self._scalar(vf)
                exp = self._expect_scalar(vf, cont[k])
            out.append((self._expect_scalar(kf, k), exp))
        return out


def _gen_protobuf(case: Case, n: int, rnd: Rand, sid: int):
    from google.protobuf import message_factory

    from connector.formats.protobuf._schema import compile_proto
    compiled = compile_proto(case.text, ())
    desc = compiled.find(case.message)
    cls = message_factory.GetMessageClass(desc)
    names = compiled.message_names()
    idx = names.index(desc.full_name)
    head = encode_protobuf_indexes([idx])
    g = ProtoGen(compiled, rnd, case.gen_depth or 10_000)
    framed, expected = [], []
    for _ in range(n):
        m = cls()
        exp = g.fill(m)
        framed.append(encode_frame("confluent", sid, head + m.SerializeToString()))
        expected.append(exp)
    return framed, expected, None


# -- JSON -------------------------------------------------------------------------------------
class JsonGen:
    def __init__(self, root, rnd: Rand):
        self.root, self.rnd = root, rnd

    def ref(self, s):
        while isinstance(s, dict) and "$ref" in s:
            node = self.root
            for part in [p for p in s["$ref"][1:].split("/") if p]:
                node = node[part]
            s = node
        return s

    def doc(self, s):
        rnd = self.rnd
        s = self.ref(s)
        if s is True or s == {} or s is None:
            return self._free()
        for key in ("oneOf", "anyOf"):
            if key in s:
                return self.doc(rnd.pick(s[key]))
        if "enum" in s:
            return rnd.pick(s["enum"])
        if "const" in s:
            return s["const"]
        t = s.get("type")
        if isinstance(t, list):
            t = rnd.pick(t)
        if t is None:
            t = "object" if "properties" in s else "array" if "items" in s else None
        if t is None:
            return self._free()
        if t == "null":
            return None
        if t == "object":
            props = s.get("properties")
            if not props:
                extra = s.get("additionalProperties")
                if isinstance(extra, dict) and extra:
                    return {k: self.doc(extra) for k in dict.fromkeys(rnd.string() for _ in range(rnd.count()))}
                return self._free_obj()
            req = set(s.get("required", ()))
            return {k: self.doc(v) for k, v in props.items() if k in req or rnd.chance(0.85)}
        if t == "array":
            n = min(max(rnd.count(), s.get("minItems", 0)), s.get("maxItems", 10**9))
            items = [self.doc(s.get("items", {})) for _ in range(n)]
            if s.get("uniqueItems"):
                items = list({json.dumps(x): x for x in items}.values()) or [self.doc(s.get("items", {}))]
            return items
        if t == "string":
            fmt = s.get("format")
            if fmt == "date-time":
                return self._datetime()
            if fmt == "date":
                d = EPOCH_DATE + dt.timedelta(days=rnd.r.randint(-25567, 84000))
                return d.isoformat()
            if fmt == "uuid":
                return str(uuid.UUID(int=rnd.r.getrandbits(128)))
            v = regex_example(s["pattern"], rnd) if "pattern" in s else rnd.string()
            lo, hi = s.get("minLength", 0), s.get("maxLength", 10**9)
            if len(v) < lo:
                v = v + "x" * (lo - len(v))
            return v[:hi]
        if t == "integer":
            lo = s.get("minimum", -2**63)
            hi = s.get("maximum", 2**63 - 1)
            return min(max(rnd.int64(), lo), hi)
        if t == "number":
            lo, hi = s.get("minimum", s.get("exclusiveMinimum")), s.get("maximum", s.get("exclusiveMaximum"))
            if lo is not None or hi is not None:
                picks = [v for v in (0.5, 1.0, 99.5, 12345.678)
                         if (lo is None or v > lo) and (hi is None or v < hi)]
                return rnd.pick(picks or [lo if lo is not None else hi])
            return rnd.pick([0, 1, -1, 2.5, -1e300, 1e-300, rnd.r.uniform(-1e6, 1e6), 2**53])
        if t == "boolean":
            return rnd.chance()
        return self._free()

    def _datetime(self) -> str:
        rnd = self.rnd
        micros = rnd.millis() * 1000 + rnd.r.randint(0, 999)
        t = EPOCH + dt.timedelta(microseconds=micros)
        off = rnd.pick([0, 0, 330, -300])
        local = t + dt.timedelta(minutes=off)
        frac = rnd.pick(["", "ms", "us"])
        if frac == "":
            local = local.replace(microsecond=0)
        elif frac == "ms":
            local = local.replace(microsecond=local.microsecond // 1000 * 1000)
        body = local.strftime("%Y-%m-%dT%H:%M:%S")
        if frac == "ms":
            body += f".{local.microsecond // 1000:03d}"
        elif frac == "us":
            body += f".{local.microsecond:06d}"
        tz = "Z" if off == 0 else f"{'+' if off > 0 else '-'}{abs(off) // 60:02d}:{abs(off) % 60:02d}"
        return body + tz

    def _free(self):
        return self.rnd.pick([None, True, 3, -2.5, "text", [1, "a"], {"k": {"n": [None]}}, self._free_obj()])

    def _free_obj(self):
        return {self.rnd.string(): self.rnd.pick([1, "v", None, [True]]) for _ in range(self.rnd.count())}


def _parse_dt(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(UTC)


def json_expected(node, v):
    """The decoder's output for document ``v`` under the project's JSON type tree ``node``."""
    k = node.kind
    if k == "json":
        return None if v is None else JsonText(v)
    if v is None:
        return None
    if k == "struct":
        return {name: json_expected(t, v.get(name)) for name, t in node.fields}
    if k == "map":
        return [(key, json_expected(node.items, x)) for key, x in v.items()]
    if k == "list":
        return [json_expected(node.items, x) for x in v]
    if k == "timestamp":
        return _parse_dt(v)
    if k == "date":
        return dt.date.fromisoformat(v)
    if k == "float":
        return float(v)
    return v


def regex_example(pattern: str, rnd: Rand) -> str:
    """A string the simple ``pattern`` matches (anchors, literals, classes, ``\\d``/``\\w``, the
    quantifiers ``? * + {n} {n,m}``); a random string for anything else (``valid_doc`` retries)."""
    out, i, p = [], 0, pattern
    while i < len(p):
        c = p[i]
        if c in "^$":
            i += 1
            continue
        if c == "[":
            j = p.index("]", i)
            body, chars, k = p[i + 1:j], [], 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    chars += [chr(x) for x in range(ord(body[k]), ord(body[k + 2]) + 1)]
                    k += 3
                else:
                    chars.append(body[k])
                    k += 1
            atom, i = chars, j + 1
        elif c == "\\" and i + 1 < len(p):
            atom = {"d": list("0123456789"), "w": list("abcXYZ019_")}.get(p[i + 1], [p[i + 1]])
            i += 2
        elif c in "()|":
            return rnd.string()
        else:
            atom, i = ([c] if c != "." else list("abc")), i + 1
        lo = hi = 1
        if i < len(p) and p[i] in "?*+":
            lo, hi = {"?": (0, 1), "*": (0, 3), "+": (1, 3)}[p[i]]
            i += 1
        elif i < len(p) and p[i] == "{":
            j = p.index("}", i)
            a, _, b = p[i + 1:j].partition(",")
            lo = int(a)
            hi = int(b) if b else (lo if not _ else lo + 3)
            i = j + 1
        out += [rnd.pick(atom) for _ in range(rnd.r.randint(lo, hi))]
    return "".join(out)


def valid_doc(g: JsonGen, root, validator, tries: int = 200):
    """A document of ``root`` that python-jsonschema accepts (the reader validates every record):
    drawn until one is (a ``oneOf`` of objects without ``additionalProperties: false`` makes most
    draws match several branches)."""
    for _ in range(tries):
        d = g.doc(root)
        if validator.is_valid(d):
            return d
    raise ValueError(f"no valid document in {tries} draws; last: {validator.iter_errors(d).__next__().message}")


def _gen_json(case: Case, n: int, rnd: Rand, sid: int):
    from connector.formats.json_schema._reference import validator_class
    from connector.formats.json_schema._schema import parse_json_schema
    root = json.loads(case.text)
    node = parse_json_schema(case.text, max_depth=case.options.max_recursion_depth)
    validator = validator_class(root)(root)
    g = JsonGen(root, rnd)
    framed, expected, docs = [], [], []
    for _ in range(n):
        d = valid_doc(g, root, validator)
        framed.append(encode_frame("confluent", sid, json.dumps(d, ensure_ascii=rnd.chance()).encode()))
        expected.append(json_expected(node, d))
        docs.append(d)
    return framed, expected, docs


def generate(case: Case, n: int, *, seed: int = 0, schema_id: int = 1) -> Batch:
    """``n`` random records of ``case`` framed Confluent with ``schema_id``, and the values the
    decoder must return (projected on ``arrow_type`` when the caller passes it later)."""
    rnd = Rand(f"{case.name}/{seed}")
    fn = {"avro": _gen_avro, "protobuf": _gen_protobuf, "json": _gen_json}[case.fmt]
    framed, expected, docs = fn(case, n, rnd, schema_id)
    schema = Schema(schema_type=_SCHEMA_TYPE[case.fmt], text=case.text, id=schema_id)
    return Batch(pa.array(framed, pa.binary()), expected, {schema_id: schema}, framed, docs)


__all__ = ["Batch", "Case", "JsonText", "Spec", "b64", "cases", "generate", "project", "same"]


def b64(b: bytes) -> str:  # for readable failure messages
    return base64.b64encode(b).decode()
