"""Schema-id facts computed once, in wireformat: id columns, one row's id, UUID text."""
from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wireformat import WireFormatError, encode_frame, parse_frames, uuid_strings

# One row: None (null value), an int id (Confluent), a UUID (Glue) or junk bytes.
ROW = st.one_of(st.none(), st.integers(0, 2**32 - 1), st.uuids(), st.binary(max_size=20))


def _frame(r):
    if isinstance(r, int):
        return encode_frame("confluent", r, b"p")
    if isinstance(r, uuid.UUID):
        return encode_frame("glue", str(r), b"p")
    return r


def _expected(r, raw):
    """The id a plain-Python reading of one frame under ``auto`` gives."""
    if isinstance(r, (int, uuid.UUID)):
        return r
    if raw and len(raw) >= 5 and raw[0] == 0:
        return int.from_bytes(raw[1:5], "big")
    if raw and len(raw) >= 17 and raw[0] == 1:
        return uuid.UUID(bytes=raw[1:17])
    if raw and len(raw) >= 18 and raw[0] == 3 and raw[1] == 0:
        return uuid.UUID(bytes=raw[2:18])
    return None


@settings(max_examples=80, deadline=None)
@given(st.lists(ROW, max_size=25), st.integers(0, 3))
def test_schema_id_column_and_row_match_a_per_row_reference(rows, skip):
    vals = [_frame(r) for r in rows]
    arr = pa.array([b"pad"] * skip + vals, pa.binary()).slice(skip)
    parsed = parse_frames(arr, "auto")
    expected = [_expected(r, v) for r, v in zip(rows, vals)]
    assert parsed.schema_id_column(text=True).to_pylist() == [None if e is None else str(e) for e in expected]
    assert parsed.schema_id_column(text=False).to_pylist() == [e if isinstance(e, int) else None
                                                               for e in expected]
    assert [parsed.schema_id_at(i) for i in range(len(rows))] == [
        str(e) if isinstance(e, uuid.UUID) else e for e in expected]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), st.uuids()), max_size=30), st.integers(0, 5), st.integers(0, 5))
def test_uuid_strings_match_python_uuid_text_on_slices(ids, start, stop):
    arr = pa.array([u.bytes if u else None for u in ids], pa.binary(16))
    sl = arr.slice(min(start, len(ids)), max(0, len(ids) - start - stop))
    expected = [str(u) if u else None for u in ids][min(start, len(ids)):][:len(sl)]
    assert uuid_strings(sl).to_pylist() == expected


def test_uuid_strings_refuses_other_types():
    with pytest.raises(WireFormatError):
        uuid_strings(pa.array([b"x"], pa.binary()))
