"""Hostile bytes: arbitrary input only ever yields our error types or per-row errors, in
bounded time, and every cap fires exactly at its limit (N accepted, N+1 refused).

Mirrors h11's "hostile bytes" discipline, librdkafka's and confluent-kafka's fuzzed
deserializer inputs, and Spark's ``from_avro``/``from_protobuf`` malformed-record suites
(``AvroFunctionsSuite`` "handle invalid input in from_avro", PERMISSIVE vs FAILFAST).
"""
from __future__ import annotations

import datetime
import json
import tracemalloc
import uuid
import zlib

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.asyncapi import load_document, plan_read
from connector.asyncapi._loader import parse_text
from connector.formats import DecodeOptions, build_decoder
from connector.errors import AsyncApiDocumentError, AsyncApiKafkaError
from registry import Schema, SchemaType
from wireformat import ErrorCode, Framing, Limits, WireFormatError, encode_frame, parse_frames

# Bounded time per example: a parser that went quadratic or looped on some input fails the
# deadline (Hypothesis re-runs a slow example once before reporting it, so one scheduling
# hiccup on the shared cores is not a failure).
FAST = settings(max_examples=150, deadline=datetime.timedelta(seconds=3),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
VALID_CODES = {int(c) for c in ErrorCode}
MAGICS = (b"\x00", b"\x01", b"\x03", b"\x03\x05", b"\x03\x00", b"\x00\x00\x00\x00\x07")


def _spec(fmt: str, text: str, message_name: str | None = None):
    class Spec:  # a connector.asyncapi.SchemaSpec look-alike
        pass

    s = Spec()
    s.format, s.text, s.message_name = fmt, text, message_name
    return s


# ------------------------------------------------------------------ strategies
def _values():
    # Raw bytes, plus bytes behind every magic prefix so the parser gets past byte 0.
    tail = st.binary(max_size=64)
    framed = st.builds(lambda m, t: m + t, st.sampled_from(MAGICS), tail)
    glue_zlib = st.builds(lambda u, p, cut: (b"\x03\x05" + u + zlib.compress(p))[:cut],
                          st.binary(min_size=16, max_size=16), st.binary(max_size=200),
                          st.integers(min_value=0, max_value=400))
    return st.lists(st.one_of(st.none(), tail, framed, glue_zlib), min_size=0, max_size=12)


_HEADER_NAMES = st.sampled_from(["__value_schema_id", "__key_schema_id", "apicurio.value.globalId",
                                 "apicurio.key.globalId", "apicurio.value.contentId",
                                 "apicurio.key.contentId", "other", ""])
_HEADER_VALUES = st.one_of(st.none(), st.binary(max_size=40),
                           st.builds(lambda g, t: b"\x01" + g + t, st.binary(min_size=16, max_size=16),
                                     st.binary(max_size=12)))
_HEADER_LIST = st.one_of(st.none(), st.lists(st.one_of(
    st.none(), st.fixed_dictionaries({"key": st.one_of(st.none(), _HEADER_NAMES),
                                      "value": _HEADER_VALUES})), max_size=6))


def _check_parsed(pf, n: int) -> None:
    assert len(pf) == n
    codes = set(int(c) for c in pf.error)
    assert codes <= VALID_CODES
    ok = pf.ok_mask()
    # An OK row always has a payload; an error row never has one.
    assert all(pf.payload[i].is_valid == bool(ok[i]) for i in range(n))
    for _key, rows in pf.group_by_schema():
        assert ok[rows].all()


# ------------------------------------------------------------------ wireformat
@FAST
@given(values=_values(), framing=st.sampled_from(list(Framing)), is_key=st.booleans(),
       indexes=st.booleans(), headers=st.data())
def test_parse_frames_survives_any_bytes_and_headers(values, framing, is_key, indexes, headers):
    """Every framing, hostile header lists included, Protobuf message-index reader on or off:
    per-row error codes only (mirrors librdkafka's fuzzed ``rd_kafka_msg`` header parsing)."""
    hdrs = None
    if framing.in_header or headers.draw(st.booleans()):
        hdrs = pa.array([headers.draw(_HEADER_LIST) for _ in values], HEADERS_TYPE)
    arr = pa.array(values, pa.binary())
    try:
        pf = parse_frames(arr, framing, headers=hdrs, is_key=is_key, protobuf_indexes=indexes,
                          limits=Limits(max_decompressed_bytes=10_000, max_message_indexes=8))
    except WireFormatError:
        return  # refusing the whole call is allowed, with our type
    _check_parsed(pf, len(values))


@FAST
@given(values=st.lists(st.binary(max_size=40), max_size=8), cut=st.integers(0, 3))
def test_parse_frames_over_large_binary_and_sliced_chunked_input(values, cut):
    """Offsets that do not start at 0 (sliced, chunked, large_binary) must not shift rows."""
    arr = pa.chunked_array([pa.array(values, pa.large_binary()).slice(min(cut, len(values)))],
                           type=pa.large_binary())
    pf = parse_frames(arr, "auto", protobuf_indexes=True)
    _check_parsed(pf, len(values) - min(cut, len(values)))


# ------------------------------------------------------------------ caps at the limit
def test_glue_zlib_cap_allows_exactly_the_limit():
    """Glue decompression bomb guard (the AWS Glue serde's decompression, Spark's
    ``spark.io.compression`` caps): exactly ``max_decompressed_bytes`` decodes, one more is
    ``LIMIT_EXCEEDED`` — and a 10 MB bomb is refused without inflating it."""
    limits = Limits(max_decompressed_bytes=1000)
    u = uuid.uuid4()
    rows = [encode_frame("glue", u, b"a" * 1000, compression="zlib"),
            encode_frame("glue", u, b"a" * 1001, compression="zlib"),
            encode_frame("glue", u, b"\0" * 10_000_000, compression="zlib")]
    assert len(rows[2]) < 20_000
    tracemalloc.start()
    try:
        pf = parse_frames(pa.array(rows, pa.binary()), "glue", limits=limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert list(pf.error) == [ErrorCode.OK, ErrorCode.LIMIT_EXCEEDED, ErrorCode.LIMIT_EXCEEDED]
    assert pf.payload[0].as_py() == b"a" * 1000
    assert peak < 1_000_000  # the bomb was never inflated to 10 MB


def test_record_size_cap_allows_exactly_the_limit():
    """``Limits.max_record_bytes`` (Kafka's ``message.max.bytes`` analogue): N ok, N+1 refused."""
    limits = Limits(max_record_bytes=100)
    rows = [encode_frame("confluent", 1, b"x" * 95), encode_frame("confluent", 1, b"x" * 96)]
    assert [len(r) for r in rows] == [100, 101]
    pf = parse_frames(pa.array(rows, pa.binary()), "confluent", limits=limits)
    assert list(pf.error) == [ErrorCode.OK, ErrorCode.LIMIT_EXCEEDED]


def test_protobuf_index_array_cap_allows_exactly_the_limit():
    """Confluent's Protobuf message-index array (``MessageIndexes.readFrom``): an array of
    ``max_message_indexes`` entries is read, one more is ``TOO_MANY_INDEXES``; a count that
    claims 2**31 entries in 6 bytes is refused without allocating them."""
    limits = Limits(max_message_indexes=4)
    rows = [encode_frame("confluent", 1, b"p", message_indexes=[1] * 4),
            encode_frame("confluent", 1, b"p", message_indexes=[1] * 5),
            b"\x00\x00\x00\x00\x01" + b"\xfe\xff\xff\xff\x0f"]  # count = 2**31 - 1, no entries
    pf = parse_frames(pa.array(rows, pa.binary()), "confluent", limits=limits, protobuf_indexes=True)
    assert list(pf.error) == [ErrorCode.OK, ErrorCode.TOO_MANY_INDEXES, ErrorCode.TOO_MANY_INDEXES]
    assert pf.message_indexes[0].as_py() == [1, 1, 1, 1]


@pytest.mark.parametrize("nbytes, ok", [(10, True), (11, False)])
def test_varint_cap_is_ten_bytes(nbytes, ok):
    """A Protobuf varint padded to 10 bytes is still valid (protobuf's own
    ``ReadRawVarint64``); 11 bytes is ``BAD_VARINT``, never a loop or an overflow."""
    count = b"\x82" + b"\x80" * (nbytes - 2) + b"\x00"  # zigzag(1) padded with continuation bytes
    assert len(count) == nbytes
    row = b"\x00\x00\x00\x00\x01" + count + b"\x02" + b"payload"
    pf = parse_frames(pa.array([row], pa.binary()), "confluent", protobuf_indexes=True)
    if ok:
        assert list(pf.error) == [ErrorCode.OK] and pf.message_indexes[0].as_py() == [1]
        assert pf.payload[0].as_py() == b"payload"
    else:
        assert list(pf.error) == [ErrorCode.BAD_VARINT]


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


NULLS = {"type": "record", "name": "H", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]}


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "reference"])
def test_avro_collection_cap_allows_exactly_the_limit(fast_path):
    """Avro block counts are attacker-controlled (Avro Java's ``SystemLimitException`` for
    collection sizes): 1000 nulls decode under a cap of 1000, 1001 are a row error."""
    writer = Schema(schema_type=SchemaType.AVRO, text=json.dumps(NULLS), id=7)
    dec = build_decoder(_spec("avro", json.dumps(NULLS)),
                        options=DecodeOptions(limits=Limits(max_collection_items=1000), fast_path=fast_path))
    rows = [encode_frame("confluent", 7, _zigzag(n) + b"\x00") for n in (1000, 1001)]
    res = dec.decode(parse_frames(pa.array(rows, pa.binary()), "confluent"), lambda key: writer)
    errs = res.errors.to_pylist()
    assert errs[0] is None and len(res.values[0].as_py()["a"]) == 1000
    assert "max_collection_items=1000" in errs[1] and "schema id 7" in errs[1]
    assert not res.values[1].is_valid


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "reference"])
def test_avro_five_byte_payload_claiming_five_million_nulls_is_refused_with_bounded_memory(fast_path):
    """The classic Avro "billion nulls" payload: 5 bytes claim 5,000,000 zero-byte items. The
    default cap (1,000,000) refuses it before materialising the items."""
    writer = Schema(schema_type=SchemaType.AVRO, text=json.dumps(NULLS), id=7)
    dec = build_decoder(_spec("avro", json.dumps(NULLS)), options=DecodeOptions(fast_path=fast_path))
    payload = _zigzag(5_000_000) + b"\x00"
    assert len(payload) == 5
    frames = parse_frames(pa.array([encode_frame("confluent", 7, payload)], pa.binary()), "confluent")
    dec.decode(frames, lambda key: writer)  # compile outside the measurement
    tracemalloc.start()
    try:
        res = dec.decode(frames, lambda key: writer)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "max_collection_items" in res.errors[0].as_py()
    assert peak < 2_000_000  # 5,000,000 Python None items alone would be 40 MB of pointers


def test_yaml_size_cap_allows_exactly_the_limit():
    """Document size cap (Jackson's ``StreamReadConstraints.maxDocumentLength``): a document
    of exactly ``max_bytes`` loads, one byte less of cap refuses it."""
    text = json.dumps(_doc_with_ref_chain(1))
    load_document(text, max_bytes=len(text))
    with pytest.raises(AsyncApiDocumentError, match="cap"):
        load_document(text, max_bytes=len(text) - 1)
    multibyte = "a: \u00e9\u00e9\n"  # 8 bytes in UTF-8, 6 characters: the cap counts bytes
    assert len(multibyte.encode()) == 8
    parse_text(multibyte, max_bytes=8)
    with pytest.raises(AsyncApiDocumentError, match="cap"):
        parse_text(multibyte, max_bytes=7)


def test_yaml_alias_expansion_cap_allows_exactly_the_limit():
    """Billion-laughs guard (SnakeYAML's ``maxAliasesForCollections``): three aliases of a
    10-node anchor add exactly 30 nodes: allowed at 30, refused at 29; a real bomb is refused
    in time linear in its size."""
    text = "a: &x [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [*x, *x, *x]\n"
    assert parse_text(text, max_alias_expansion=30)["b"][2] == list(range(1, 10))
    with pytest.raises(AsyncApiDocumentError, match="alias"):
        parse_text(text, max_alias_expansion=29)
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]  # 10**12 nodes
    with pytest.raises(AsyncApiDocumentError, match="alias bomb"):
        load_document("\n".join(bomb))


def test_recursive_yaml_alias_and_python_tags_are_refused():
    """``yaml.safe_load`` only (PyYAML CVE-2017-18342): no object construction, no cycles."""
    with pytest.raises(AsyncApiDocumentError):
        load_document("a: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(AsyncApiDocumentError):
        load_document("a: &a [*a]\n")


def _doc_with_ref_chain(depth: int) -> dict:
    schemas = {f"s{i}": {"$ref": f"#/components/schemas/s{i + 1}"} for i in range(depth - 1)}
    schemas[f"s{depth - 1}"] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "servers": {"k": {"host": "127.0.0.1:9092", "protocol": "kafka"}},
            "channels": {"c": {"address": "t", "messages": {
                "m": {"payload": {"$ref": "#/components/schemas/s0"}}}}},
            "components": {"schemas": schemas}}


def test_ref_depth_cap_allows_exactly_the_limit():
    """``$ref`` chains (json-schema-ref-parser's circular/deep ref handling): a chain of
    ``max_ref_depth`` refs resolves, one more is refused naming the document path."""
    plan = plan_read(load_document(_doc_with_ref_chain(4), max_ref_depth=4), channel="c")
    assert json.loads(plan.value_messages[0].payload.text)["properties"] == {"n": {"type": "integer"}}
    with pytest.raises(AsyncApiDocumentError, match="deeper than 4") as ei:
        plan_read(load_document(_doc_with_ref_chain(5), max_ref_depth=4), channel="c")
    assert "channels.c.messages.m.payload" in str(ei.value)


# ------------------------------------------------------------------ decoders
AVRO_WRITER = {
    "type": "record", "name": "W", "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "int"}},
        {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
        {"name": "opt", "type": ["null", "double"]},
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 4}},
        {"name": "blob", "type": "bytes"},
        {"name": "flag", "type": "boolean"},
        {"name": "empties", "type": {"type": "array", "items": "null"}},
    ]}
PROTO = """
syntax = "proto3";
package h;
message Outer {
  message Inner { string s = 1; repeated int64 xs = 2; }
  int64 id = 1;
  string name = 2;
  Inner inner = 3;
  repeated Inner many = 4;
  map<string, int32> m = 5;
  oneof o { string a = 6; bytes b = 7; }
  double d = 8;
}
"""
JSON_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "inner": {"type": "object", "properties": {"x": {"type": "number"}}},
    "at": {"type": "string", "format": "date-time"}}}

_DECODERS = {}


def _decoder(fmt: str, fast: bool):
    """Built and warmed once: the deadline measures decoding, not schema compilation."""
    key = (fmt, fast)
    if key not in _DECODERS:
        opts = DecodeOptions(fast_path=fast, limits=Limits(max_collection_items=10_000))
        if fmt == "avro":
            text = json.dumps(AVRO_WRITER)
            dec = build_decoder(_spec("avro", text), options=opts)
            writer = Schema(schema_type=SchemaType.AVRO, text=text, id=7)
        elif fmt == "protobuf":
            dec = build_decoder(_spec("protobuf", PROTO, "h.Outer"), options=opts)
            writer = Schema(schema_type=SchemaType.PROTOBUF, text=PROTO, id=7)
        else:
            text = json.dumps(JSON_SCHEMA)
            dec = build_decoder(_spec("json", text), options=opts)
            writer = Schema(schema_type=SchemaType.JSON, text=text, id=7)
        _DECODERS[key] = (dec, writer)
        _decode(fmt, fast, [b"", b"\x00"])
    return _DECODERS[key]


def _decode(fmt: str, fast: bool, payloads, index_bytes=None):
    dec, writer = _decoder(fmt, fast)
    if fmt == "protobuf":
        rows = [b"\x00\x00\x00\x00\x07" + (index_bytes or b"\x00") + p for p in payloads]
    else:
        rows = [encode_frame("confluent", 7, p) for p in payloads]
    frames = parse_frames(pa.array(rows, pa.binary()), "confluent", protobuf_indexes=fmt == "protobuf")
    res = dec.decode(frames, lambda key: writer)
    assert len(res) == len(payloads) and res.values.type == dec.arrow_type
    errs = res.errors.to_pylist()
    for i, err in enumerate(errs):
        if err is not None:
            assert not res.values[i].is_valid, "a failed row must be null"
            assert isinstance(err, str) and err
    return res


@FAST
@given(payloads=st.lists(st.binary(max_size=80), min_size=1, max_size=8), fast=st.booleans())
def test_avro_decoder_survives_any_payload(payloads, fast):
    """Arbitrary Avro payload bytes behind a valid Confluent header with a fixed writer schema:
    per-row errors only (mirrors Avro's ``TestReadingWritingDataInEvolvedSchemas`` corrupt
    inputs and confluent's ``AvroDeserializer`` on garbage)."""
    _decode("avro", fast, payloads)


@FAST
@given(payloads=st.lists(st.binary(max_size=80), min_size=1, max_size=8),
       index_bytes=st.one_of(st.just(b"\x00"), st.binary(min_size=1, max_size=6)))
def test_protobuf_decoder_survives_any_payload_and_index_path(payloads, index_bytes):
    """Arbitrary Protobuf wire bytes and message-index bytes (Spark ``ProtobufFunctionsSuite``
    malformed records; protobuf-python's ``DecodeError`` must not escape)."""
    _decode("protobuf", True, payloads, index_bytes)


_JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
              st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(["id", "name", "tags", "inner", "at", "x", ""]),
                                            inner, max_size=5)),
    max_leaves=20)


@settings(FAST, max_examples=100)
@given(payloads=st.lists(st.one_of(st.binary(max_size=80),
                                   _JSON_VALUES.map(lambda v: json.dumps(v).encode())),
                         min_size=1, max_size=8), fast=st.booleans())
def test_json_decoder_survives_any_payload(payloads, fast):
    """Arbitrary bytes and arbitrary JSON values against a fixed JSON Schema (Spark
    ``JsonFunctionsSuite`` ``from_json`` corrupt records): per-row errors only."""
    _decode("json", fast, payloads)


def test_decoders_name_the_schema_id_in_row_errors():
    """A row error must say which writer schema failed (confluent's ``SerializationError``
    carries the schema id; an operator needs it to find the producer)."""
    for fmt in ("avro", "protobuf", "json"):
        res = _decode(fmt, True, [b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"])
        assert "7" in res.errors[0].as_py(), (fmt, res.errors[0].as_py())


# ------------------------------------------------------------------ the AsyncAPI loader
_YAML_PIECES = st.sampled_from([
    "asyncapi: 3.0.0\n", "asyncapi: '2.6.0'\n", "info: {title: t, version: '1'}\n", "channels:\n",
    "  c: {address: t}\n", "  c:\n    $ref: '#/x'\n", "x: &a [1, 2]\n", "y: *a\n", "y: *nope\n",
    "- - - - -\n", "{", "}", "[", "]", ": ", "? ", "!!binary AAAA\n", "!!python/name:os.system\n",
    "%YAML 1.1\n", "---\n", "...\n", "\t", "\"\\u", "'", "&", "*", "#", "|\n  x\n", ">-\n",
    "servers: {k: {host: 'h:1', protocol: kafka}}\n", "$ref: 'http://169.254.169.254/x'\n",
    "$ref: '../../etc/passwd'\n", "\x00", "\ufeff", "1e999\n", "0x10\n", "~\n"])


@FAST
@given(text=st.one_of(st.text(max_size=300), st.lists(_YAML_PIECES, max_size=25).map("".join)))
def test_loader_survives_any_text(text):
    """Arbitrary YAML/JSON text: the document loads, or an ``AsyncApiDocumentError`` (never a
    ``yaml`` error, ``RecursionError`` or ``KeyError``) — mirrors the AsyncAPI parser-js
    invalid-document fixtures."""
    try:
        doc = load_document(text)
    except AsyncApiDocumentError:
        return
    except AsyncApiKafkaError as e:  # any other typed error is acceptable too, but note it
        assert type(e).__module__.startswith(("connector", "registry", "wireformat")), e
        return
    for name in list(getattr(doc, "channels", {}) or {}):
        try:
            plan_read(doc, channel=name)
        except AsyncApiKafkaError:
            pass


@pytest.mark.timeout(60)
@pytest.mark.parametrize("depth", [250, pytest.param(3000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("opener", ["a: [", "a: {b: "])
def test_loader_refuses_deep_nesting_typed(depth, opener):
    """Deeply nested flow collections (the PyYAML/json ``RecursionError`` denial of service,
    CVE-2020-1747's neighbourhood): a typed refusal, never a ``RecursionError``. (Refusals
    past Python's recursion limit cost about 1.5 s here, flat in the depth: bounded.)"""
    closer = {"a: [": "]", "a: {b: ": "}"}[opener]
    text = opener + opener[3:] * (depth - 1) + "1" + closer * depth + "\n"
    parse_text(opener + "1" + closer)  # the same shape, shallow, is fine
    with pytest.raises(AsyncApiDocumentError):
        load_document(text)  # not an AsyncAPI document either way; must fail typed
