"""Hypothesis properties: round trips, hostile bytes, truncation, and a scalar reference.

``ref_parse`` below is a deliberately plain one-row-at-a-time reading of the byte
layouts; the vectorized ``parse_frames`` must agree with it on every input.
"""
from __future__ import annotations

import struct
import uuid
import zlib

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wireformat import (DEFAULT_LIMITS, ErrorCode, Framing, Limits, WireFormatError, encode_frame,
                        header_for_id, parse_frames)

E = ErrorCode
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
INT32_MAX = 2**31 - 1
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PAYLOAD_FRAMINGS = [Framing.CONFLUENT, Framing.CONFLUENT_GUID, Framing.GLUE, Framing.APICURIO_LEGACY,
                    Framing.APICURIO_NEW]
HEADER_FRAMINGS = [Framing.HEADER_CONFLUENT, Framing.HEADER_APICURIO_GLOBAL, Framing.HEADER_APICURIO_CONTENT]
INDEXED = (Framing.CONFLUENT, Framing.CONFLUENT_GUID)  # Apicurio writes a Ref message, not indexes


# ---------------------------------------------------------------- scalar reference
REF_HEADER_NAMES = {  # (value, key) header names, spelled out independently of the package
    Framing.HEADER_CONFLUENT: ("__value_schema_id", "__key_schema_id"),
    Framing.HEADER_APICURIO_GLOBAL: ("apicurio.value.globalId", "apicurio.key.globalId"),
    Framing.HEADER_APICURIO_CONTENT: ("apicurio.value.contentId", "apicurio.key.contentId"),
}


class _Err(Exception):
    def __init__(self, code):
        self.code = code


def _varint(buf, pos, limits):
    value = 0
    for k in range(limits.max_varint_bytes):
        if pos >= len(buf):
            raise _Err(E.BAD_VARINT)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            value &= (1 << 64) - 1
            return (value >> 1) ^ -(value & 1), pos
    raise _Err(E.BAD_VARINT)


def ref_indexes(buf, pos, limits):
    if pos >= len(buf):
        raise _Err(E.BAD_VARINT)
    if buf[pos] == 0:
        return [0], pos + 1
    count, pos = _varint(buf, pos, limits)
    if count < 0:
        raise _Err(E.BAD_MESSAGE_INDEX)
    if count > limits.max_message_indexes:
        raise _Err(E.TOO_MANY_INDEXES)
    out = []
    for _ in range(count):
        i, pos = _varint(buf, pos, limits)
        if not 0 <= i <= INT32_MAX:
            raise _Err(E.BAD_MESSAGE_INDEX)
        out.append(i)
    return out or [0], pos


def ref_parse(value, headers, framing, is_key=False, limits=DEFAULT_LIMITS, pb=False):
    """One row: dict(error, framing, int_id, guid, payload, indexes)."""
    fr = Framing(framing)
    r = dict(error=0, framing=0 if fr is Framing.AUTO else fr.code, int_id=None, guid=None,
             payload=None, indexes=None)
    try:
        if value is None:
            raise _Err(E.NULL_VALUE)
        if len(value) > limits.max_record_bytes:
            raise _Err(E.LIMIT_EXCEEDED)
        if fr is Framing.NONE:
            r["payload"] = value
            return r
        if fr.in_header:
            found, hv = False, None
            for k, v in headers or []:
                if k == REF_HEADER_NAMES[fr][int(is_key)]:
                    found, hv = True, v
            if not found:
                raise _Err(E.MISSING_HEADER)
            if fr is Framing.HEADER_CONFLUENT:
                if pb and hv is not None and len(hv) == 17 and hv[0] == 1:
                    raise _Err(E.BAD_VARINT)
                if hv is None or not hv or hv[0] != 1 or (len(hv) <= 17 if pb else len(hv) != 17):
                    raise _Err(E.BAD_HEADER)
                guid = hv[1:17]
                if pb:
                    idx, end = ref_indexes(hv, 17, limits)
                    if end != len(hv):
                        raise _Err(E.BAD_HEADER)
                    r["indexes"] = idx
                r["guid"] = guid
            else:
                if hv is None or len(hv) != 8:
                    raise _Err(E.BAD_HEADER)
                r["int_id"] = struct.unpack(">q", hv)[0]
            r["payload"] = value
            return r
        if not value:
            raise _Err(E.TOO_SHORT)
        if fr is Framing.AUTO:
            fr = {0: Framing.CONFLUENT, 1: Framing.CONFLUENT_GUID, 3: Framing.GLUE}.get(value[0])
            if fr is None:
                raise _Err(E.UNKNOWN_MAGIC)
            r["framing"] = fr.code
        magic = {Framing.CONFLUENT_GUID: 1, Framing.GLUE: 3}.get(fr, 0)
        if value[0] != magic:
            raise _Err(E.UNKNOWN_MAGIC)
        if fr is Framing.GLUE:
            if len(value) < 18:
                raise _Err(E.TOO_SHORT)
            if value[1] not in (0, 5):
                raise _Err(E.BAD_COMPRESSION)
            guid, payload = value[2:18], value[18:]
            if value[1] == 5:
                d = zlib.decompressobj()
                try:
                    payload = d.decompress(payload, limits.max_decompressed_bytes + 1)
                except zlib.error:
                    raise _Err(E.DECOMPRESSION_FAILED) from None
                if len(payload) > limits.max_decompressed_bytes:
                    raise _Err(E.LIMIT_EXCEEDED)
                if not d.eof or d.unused_data:
                    raise _Err(E.DECOMPRESSION_FAILED)
            r["guid"], r["payload"] = guid, payload
            return r
        size = {Framing.CONFLUENT_GUID: 16, Framing.APICURIO_LEGACY: 8}.get(fr, 4)
        if len(value) < 1 + size:
            raise _Err(E.TOO_SHORT)
        pos = 1 + size
        if fr is Framing.CONFLUENT_GUID:
            ident = ("guid", value[1:17])
        elif size == 8:
            ident = ("int_id", struct.unpack(">q", value[1:9])[0])
        else:
            ident = ("int_id", struct.unpack(">I", value[1:5])[0])
        if pb and fr in INDEXED:
            r["indexes"], pos = ref_indexes(value, pos, limits)
        r[ident[0]] = ident[1]
        r["payload"] = value[pos:]
        return r
    except _Err as e:
        r.update(error=int(e.code), int_id=None, guid=None, payload=None, indexes=None)
        return r


def vector_rows(pf):
    idx = pf.message_indexes.to_pylist() if pf.message_indexes is not None else [None] * len(pf)
    return [dict(error=int(e), framing=int(f), int_id=i, guid=g, payload=p, indexes=x)
            for e, f, i, g, p, x in zip(pf.error, pf.framing, pf.int_id.to_pylist(), pf.guid.to_pylist(),
                                        pf.payload.to_pylist(), idx)]


# ---------------------------------------------------------------- strategies
guids = st.binary(min_size=16, max_size=16)
payloads = st.binary(max_size=40)
index_lists = st.one_of(st.just([0]), st.lists(st.integers(0, INT32_MAX), min_size=1, max_size=5))


def _id_for(fr, draw):
    if fr.has_guid:
        return draw(guids)
    if fr in (Framing.CONFLUENT, Framing.APICURIO_NEW):
        return draw(st.integers(0, 2**32 - 1))
    return draw(st.integers(-2**63, 2**63 - 1))


@st.composite
def valid_rows(draw, fr, pb=False):
    """(value, headers, schema id, payload, indexes) written by our encoders."""
    sid = _id_for(fr, draw)
    payload = draw(payloads)
    idx = draw(index_lists) if pb and (fr in INDEXED or fr is Framing.HEADER_CONFLUENT) else None
    headers = []
    if fr.in_header:
        noise = draw(st.lists(st.tuples(st.sampled_from(["a", "__key_schema_id", "apicurio.key.globalId"]),
                                        st.binary(max_size=20)), max_size=2))
        headers = noise + [header_for_id(fr, sid, message_indexes=idx)]
        value = encode_frame(fr, sid, payload)
    else:
        comp = draw(st.sampled_from([None, "zlib"])) if fr is Framing.GLUE else None
        value = encode_frame(fr, sid, payload, compression=comp, message_indexes=idx)
    return value, headers, sid, payload, idx


header_keys = st.sampled_from(["__value_schema_id", "__key_schema_id", "apicurio.value.globalId",
                               "apicurio.value.contentId", "apicurio.key.globalId", "x"])
header_values = st.one_of(st.none(), st.binary(max_size=24), st.binary(min_size=8, max_size=8),
                          st.builds(lambda g, t: b"\x01" + g + t, guids,
                                    st.sampled_from([b"", b"\x00", b"\x02\x02", b"\x02"]) | st.binary(max_size=6)))
header_lists = st.one_of(st.none(), st.lists(st.tuples(header_keys, header_values), max_size=4))


@st.composite
def hostile_values(draw):
    """Random bytes that often start like a real frame."""
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return None
    prefix = draw(st.sampled_from([b"", b"\x00", b"\x01", b"\x03\x00", b"\x03\x05", b"\x03\x01",
                                   b"\x00\x00\x00\x00\x01", b"\x01" + bytes(range(16)),
                                   b"\x03\x00" + bytes(16), b"\x03\x05" + bytes(16)]))
    tail = draw(st.binary(max_size=30))
    if kind == 3:  # plausible Protobuf index bytes after the header
        tail = draw(st.binary(min_size=0, max_size=12).map(lambda b: bytes(x | 0x80 if i % 3 else x
                                                                          for i, x in enumerate(b))))
    elif kind == 4:  # a zlib stream, maybe cut or with trailing bytes
        z = zlib.compress(draw(st.binary(max_size=80)))
        tail = z[:draw(st.integers(0, len(z)))] + draw(st.sampled_from([b"", b"\x00"]))
    elif kind == 5:
        tail = b"\x00" + tail
    return prefix + tail


# ---------------------------------------------------------------- properties
@pytest.mark.parametrize("fr", PAYLOAD_FRAMINGS + HEADER_FRAMINGS)
@pytest.mark.parametrize("pb", [False, True])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_round_trip(fr, pb, data):
    rows = data.draw(st.lists(valid_rows(fr, pb), min_size=1, max_size=8))
    vals = pa.array([r[0] for r in rows], pa.binary())
    heads = pa.array([r[1] for r in rows], HEADERS_TYPE)
    pf = parse_frames(vals, fr, headers=heads, protobuf_indexes=pb)
    assert pf.error.tolist() == [0] * len(rows)
    assert pf.payload.to_pylist() == [r[3] for r in rows]
    ids = pf.guid.to_pylist() if fr.has_guid else pf.int_id.to_pylist()
    assert ids == [r[2] for r in rows]
    if pb:
        expect = [r[4] if r[4] is not None else None for r in rows]
        assert pf.message_indexes.to_pylist() == expect
    groups = pf.group_by_schema()
    assert {k: g.tolist() for k, g in groups} == {
        (fr, r[2]): [i for i, x in enumerate(rows) if x[2] == r[2]] for r in rows}
    assert pf.group_by_schema() is groups  # once per batch: the decoder and the rules both ask


@pytest.mark.parametrize("fr", list(Framing))
@SETTINGS
@given(vals=st.lists(hostile_values(), max_size=12), heads=st.data(), pb=st.booleans(), is_key=st.booleans())
def test_hostile_bytes_match_reference(fr, vals, heads, pb, is_key):
    hlist = heads.draw(st.lists(header_lists, min_size=len(vals), max_size=len(vals)))
    limits = Limits(max_message_indexes=3, max_varint_bytes=heads.draw(st.integers(1, 10)),
                    max_decompressed_bytes=heads.draw(st.integers(0, 64)), max_record_bytes=40)
    pf = parse_frames(pa.array(vals, pa.binary()), fr, headers=pa.array(hlist, HEADERS_TYPE),
                      is_key=is_key, limits=limits, protobuf_indexes=pb)
    got = vector_rows(pf)
    want = [ref_parse(v, h, fr, is_key, limits, pb) for v, h in zip(vals, hlist)]
    if not pb:
        for w in want:
            w["indexes"] = None
    for g, w, v in zip(got, want, vals):
        assert g == w, (v, g, w)
    assert all(ErrorCode(e) is not None for e in pf.error)


@pytest.mark.parametrize("fr", [Framing.AUTO] + PAYLOAD_FRAMINGS + HEADER_FRAMINGS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_valid_rows_match_reference_with_indexes(fr, data):
    concrete = fr if fr is not Framing.AUTO else data.draw(st.sampled_from(
        [Framing.CONFLUENT, Framing.CONFLUENT_GUID, Framing.GLUE]))
    rows = data.draw(st.lists(st.one_of(valid_rows(concrete, True), hostile_values().map(
        lambda v: (v, [], None, None, None))), max_size=10))
    vals = [r[0] for r in rows]
    hl = [r[1] for r in rows]
    pf = parse_frames(pa.array(vals, pa.binary()), fr, headers=pa.array(hl, HEADERS_TYPE),
                      protobuf_indexes=True)
    assert vector_rows(pf) == [ref_parse(v, h, fr, pb=True) for v, h in zip(vals, hl)]


@pytest.mark.parametrize("fr", PAYLOAD_FRAMINGS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_every_truncation_point_is_an_error(fr, data):
    pb = fr in INDEXED and data.draw(st.booleans())
    value, _, _, payload, idx = data.draw(valid_rows(fr, pb))
    zipped = fr is Framing.GLUE and value[1] == 5
    header_len = len(value) - (0 if zipped else len(payload))
    # Every cut inside the header (and anywhere in a zlib stream) must be caught.
    cuts = list(range(len(value))) if zipped else list(range(header_len))
    pf = parse_frames(pa.array([value[:c] for c in cuts], pa.binary()), fr, protobuf_indexes=pb)
    assert all(e != 0 for e in pf.error.tolist()), [(c, e) for c, e in zip(cuts, pf.error.tolist())]
    assert pf.payload.null_count == len(cuts)


@pytest.mark.parametrize("fr", HEADER_FRAMINGS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_every_header_truncation_is_an_error(fr, data):
    pb = fr is Framing.HEADER_CONFLUENT and data.draw(st.booleans())
    value, headers, *_ = data.draw(valid_rows(fr, pb))
    name, hv = headers[-1]
    cut_headers = [[(name, hv[:c])] for c in range(len(hv))]
    pf = parse_frames(pa.array([value] * len(cut_headers), pa.binary()), fr,
                      headers=pa.array(cut_headers, HEADERS_TYPE), protobuf_indexes=pb)
    assert all(e in (E.BAD_HEADER, E.BAD_VARINT) for e in pf.error.tolist())


@settings(max_examples=50, deadline=None)
@given(vals=st.lists(hostile_values(), max_size=30), start=st.integers(0, 10), length=st.integers(0, 30))
def test_sliced_and_large_inputs_match_reference(vals, start, length):
    arr = pa.array(vals, pa.large_binary()).slice(start, length)
    pf = parse_frames(arr, "auto", protobuf_indexes=True)
    sub = vals[start:start + length]
    assert vector_rows(pf) == [ref_parse(v, None, "auto", pb=True) for v in sub]


def test_only_wireformat_errors_for_bad_arguments():
    for bad in (pa.array([1, 2]), pa.array(["a"]), b"bytes", None):
        with pytest.raises(WireFormatError):
            parse_frames(bad, "auto")


def test_reference_agrees_on_known_vectors():
    g = uuid.UUID(int=1).bytes
    assert ref_parse(b"\x00\x00\x00\x00\x05\x00x", None, "confluent", pb=True)["indexes"] == [0]
    assert ref_parse(b"\x03\x05" + g + zlib.compress(b"z"), None, "auto")["payload"] == b"z"
    assert ref_parse(b"\x03", None, "auto")["error"] == E.TOO_SHORT
