"""``frame_payloads`` (vectorized) ≡ ``encode_frame`` / ``header_for_id`` per record, for every framing."""
from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wireformat import (
    Framing,
    WireFormatError,
    encode_frame,
    frame_payloads,
    header_for_id,
    parse_frames,
)

GUID = uuid.UUID("12345678-1234-5678-1234-567812345678")
CASES = [("confluent", 7, None, None), ("confluent", 7, [1, 0], None), ("apicurio-new", 9, None, None),
         ("apicurio-legacy", -3, None, None), ("confluent-guid", GUID, [2], None), ("glue", GUID, None, None),
         ("glue", GUID, None, "zlib"), ("none", None, None, None), ("header-confluent", GUID, [1], None),
         ("header-apicurio-global", 5, None, None), ("header-apicurio-content", 6, None, None)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=20), st.integers(0, 3))
@pytest.mark.parametrize("framing, ident, idx, comp", CASES)
def test_equals_per_record_encoder(framing, ident, idx, comp, payloads, cut):
    arr = pa.array(payloads, pa.binary()).slice(min(cut, len(payloads)))
    got = frame_payloads(arr, framing, ident, message_indexes=idx, compression=comp)
    f = Framing(framing)
    want = [None if p is None else encode_frame(framing, ident, p, compression=comp,
                                                 message_indexes=None if f.in_header else idx)
            for p in arr.to_pylist()]
    assert got.values.to_pylist() == want
    if f.in_header:
        assert got.headers == [header_for_id(framing, ident, message_indexes=idx)]
    else:
        assert got.headers is None
        if framing != "none":
            pf = parse_frames(got.values, framing, protobuf_indexes=idx is not None)
            assert pf.payload.to_pylist() == arr.to_pylist()


def test_apicurio_framings_carry_no_protobuf_indexes():
    """Apicurio's Protobuf serde writes a Ref message, not Confluent indexes (Framing owns this)."""
    for framing in ("apicurio-legacy", "apicurio-new"):
        with pytest.raises(WireFormatError, match="carries no message indexes"):
            frame_payloads(pa.array([b"x"]), framing, 3, message_indexes=[0])


def test_key_headers_and_errors():
    fp = frame_payloads(pa.array([b"x"]), "header-apicurio-global", 5, is_key=True)
    assert fp.headers == [header_for_id("header-apicurio-global", 5, True)]
    with pytest.raises(WireFormatError, match="compression applies only"):
        frame_payloads(pa.array([b"x"]), "confluent", 1, compression="zlib")
    with pytest.raises(WireFormatError, match="auto is for reading"):
        frame_payloads(pa.array([b"x"]), "auto", 1)
    with pytest.raises(WireFormatError, match="out of range"):
        frame_payloads(pa.array([b"x"]), "confluent", 1 << 40)
    with pytest.raises(WireFormatError, match="no message indexes"):
        frame_payloads(pa.array([b"x"]), "glue", GUID, message_indexes=[0])
