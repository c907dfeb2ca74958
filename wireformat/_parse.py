"""Dispatcher: one vectorized parse of a column of Kafka values into ``ParsedFrames``.

=================  =========================================================
magic byte [0]     framing chosen by ``auto`` (fixed framings check theirs)
=================  =========================================================
0x00               confluent (4-byte id); apicurio-* only when configured
0x01               confluent-guid
0x03               glue
other              ``UNKNOWN_MAGIC``
=================  =========================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wireformat._arrowbuf import binary_view, build_payload, fixed_head, validity_buffer
from wireformat._confluent import INT_ID_BYTES, parse_guid, parse_int_id
from wireformat._errors import WireFormatError
from wireformat._framing import DEFAULT_LIMITS, MESSAGES, ErrorCode, Framing, Limits, SchemaKey
from wireformat._glue import parse_glue
from wireformat._headers import parse_header_id
from wireformat._protobuf_index import build_index_lists, parse_indexes
from wireformat._state import RowState

__all__ = ["ParsedFrames", "parse_frames", "error_messages", "uuid_strings"]

_MAGIC = {Framing.CONFLUENT: 0, Framing.APICURIO_NEW: 0, Framing.APICURIO_LEGACY: 0,
          Framing.CONFLUENT_GUID: 1, Framing.GLUE: 3}
_HEADER_LEN = {Framing.CONFLUENT: 5, Framing.APICURIO_NEW: 5, Framing.APICURIO_LEGACY: 9,
               Framing.CONFLUENT_GUID: 17, Framing.GLUE: 18}
_AUTO = ((Framing.CONFLUENT, 0), (Framing.CONFLUENT_GUID, 1), (Framing.GLUE, 3))
# Framings after whose id header Confluent's Protobuf serializers write message indexes.
# Payload framings whose header may be followed by Protobuf message indexes.
_INDEXED = tuple(f for f in Framing if f.carries_protobuf_indexes and not f.in_header and f is not Framing.AUTO)
_UINT32_IDS = {Framing.CONFLUENT.code, Framing.APICURIO_NEW.code}
_GUID_IDS = {f.code for f in Framing if f.has_guid}


@dataclass(frozen=True, eq=False)
class ParsedFrames:
    """Result of :func:`parse_frames`: one entry per input row.

    Attributes
    ----------
    payload : pyarrow.BinaryArray
        The serialized message without its framing; null on error rows.
    error : numpy.ndarray[uint8]
        :class:`ErrorCode` per row, 0 = OK.
    framing : numpy.ndarray[uint8]
        :attr:`Framing.code` of the framing found per row (0 = not determined).
    int_id : pyarrow.Int64Array
        Integer schema id; null where the row has none.
    guid : pyarrow.FixedSizeBinaryArray
        16-byte GUID/UUID schema id; null where the row has none.
    message_indexes : pyarrow.ListArray or None
        ``list<int32>`` Protobuf message indexes when parsed; null on rows whose framing
        carries none (glue, apicurio headers, none) and on error rows.
    """

    payload: pa.Array
    error: np.ndarray
    framing: np.ndarray
    int_id: pa.Array
    guid: pa.Array
    message_indexes: pa.Array | None = None
    _groups: list | None = field(default=None, init=False, repr=False)  # group_by_schema, once

    def __len__(self) -> int:
        return len(self.error)

    def ok_mask(self) -> np.ndarray:
        """True on rows that parsed."""
        return self.error == 0

    @property
    def schema_id(self) -> pa.Array:
        """Schema ids in their natural type.

        ``uint32`` when every id is a 4-byte id, ``int64`` when 8-byte ids occur,
        ``fixed_size_binary(16)`` for GUIDs.  A column mixing integer and GUID ids
        (``auto`` over Confluent and Glue data) has no single type: use
        :attr:`int_id` and :attr:`guid` then.
        """
        codes = set(np.unique(self.framing).tolist()) - {0, Framing.NONE.code}
        if codes and codes <= _GUID_IDS:
            return self.guid
        if codes & _GUID_IDS:
            raise WireFormatError("schema ids mix integers and GUIDs; use int_id and guid")
        if codes and codes <= _UINT32_IDS:
            return self.int_id.cast(pa.uint32())
        return self.int_id

    def schema_id_column(self, *, text: bool) -> pa.Array:
        """The schema id of every row as one column, null where a row has none.

        Parameters
        ----------
        text : bool
            False: ``int64`` (GUID rows are null). True: ``string``, GUIDs as canonical UUID
            text and integer ids in decimal, the form :attr:`Framing.id_text` framings show.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from wireformat import encode_frame, parse_frames
        >>> pf = parse_frames(pa.array([encode_frame("confluent", 7, b"a"),
        ...                             encode_frame("glue", "00000000-0000-0000-0000-000000000005", b"b")]),
        ...                   "auto")
        >>> pf.schema_id_column(text=False).to_pylist()
        [7, None]
        >>> pf.schema_id_column(text=True).to_pylist()
        ['7', '00000000-0000-0000-0000-000000000005']
        """
        if not text:
            return self.int_id
        ints = self.int_id.cast(pa.string())
        if self.guid.null_count == len(self.guid):
            return ints
        return pc.coalesce(uuid_strings(self.guid), ints)

    def schema_id_at(self, row: int) -> int | str | None:
        """The schema id of one row (an int, or UUID text for GUIDs): for error messages."""
        value = self.int_id[row].as_py()
        if value is not None:
            return value
        guid = self.guid[row].as_py()
        return str(uuid.UUID(bytes=guid)) if guid else None

    def framing_names(self) -> pa.Array:
        """The :class:`Framing` value found per row as text; null where none was determined."""
        names = pa.array([None] + [f.value for f in Framing if f.code != 0], pa.string())
        codes = [0] + [f.code for f in Framing if f.code != 0]
        lut = np.zeros(max(codes) + 1, np.int32)
        lut[codes] = np.arange(len(codes), dtype=np.int32)
        return names.take(pa.array(lut[self.framing]))

    def group_by_schema(self) -> list[tuple[SchemaKey, np.ndarray]]:
        """Row indices per distinct ``(framing, id)``, error rows excluded.

        Rows parsed with ``none`` are grouped under ``(Framing.NONE, None)``.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from wireformat import Framing, encode_frame, parse_frames
        >>> vals = pa.array([encode_frame("confluent", 7, b"a"), encode_frame("confluent", 9, b"b"),
        ...                  encode_frame("confluent", 7, b"c")])
        >>> [(k[1], rows.tolist()) for k, rows in parse_frames(vals, "confluent").group_by_schema()]
        [(7, [0, 2]), (9, [1])]
        """
        if self._groups is None:  # asked by the decoder and the contract rules of one batch
            object.__setattr__(self, "_groups", self._group_by_schema())
        assert self._groups is not None
        return self._groups

    def _group_by_schema(self) -> list[tuple[SchemaKey, np.ndarray]]:
        ok = self.error == 0
        n = len(self)
        out: list = []
        codes = self.framing[ok]
        one = len(codes) and codes.min() == codes.max()
        for code in ([int(codes[0])] if one else np.unique(codes).tolist()):
            fr = Framing.from_code(code)
            rows = np.flatnonzero(ok & (self.framing == code))
            if fr is Framing.NONE or fr is Framing.AUTO:
                out.append(((fr, None), rows))
                continue
            if fr.has_guid:
                mat = np.frombuffer(self.guid.buffers()[1], dtype=np.uint8).reshape(-1, 16)
                keys: np.ndarray = mat[self.guid.offset:self.guid.offset + n][rows]
                uniq, inv = np.unique(keys, axis=0, return_inverse=True)
                labels: list[bytes] | list[int] = [bytes(u) for u in uniq]
            else:
                ids = np.frombuffer(self.int_id.buffers()[1], dtype=np.int64)
                keys = ids[self.int_id.offset:self.int_id.offset + n][rows]
                if len(keys) and keys.min() == keys.max():  # the common batch: one writer, no sort
                    out.append(((fr, int(keys[0])), rows))
                    continue
                uniq, inv = np.unique(keys, return_inverse=True)
                labels = [int(u) for u in uniq]
            inv = inv.reshape(-1)
            order = np.argsort(inv, kind="stable")
            bounds = np.cumsum(np.bincount(inv, minlength=len(uniq)))[:-1]
            for label, grp in zip(labels, np.split(rows[order], bounds)):
                out.append(((fr, label), grp))
        return out


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# Positions of the 32 hex digits inside the 36-character canonical UUID text.
_DIGIT_POS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def uuid_strings(guid: pa.Array) -> pa.Array:
    """Canonical UUID text for every row of a ``fixed_size_binary(16)`` array, vectorized.

    Null rows stay null; sliced arrays are fine.

    Examples
    --------
    >>> import uuid
    >>> import pyarrow as pa
    >>> uuid_strings(pa.array([uuid.UUID(int=1).bytes, None], pa.binary(16))).to_pylist()
    ['00000000-0000-0000-0000-000000000001', None]
    """
    if not pa.types.is_fixed_size_binary(guid.type) or guid.type.byte_width != 16:
        raise WireFormatError(f"uuid_strings needs fixed_size_binary(16), got {guid.type}")
    n = len(guid)
    if guid.null_count == n:
        return pa.nulls(n, pa.string())
    raw = np.frombuffer(guid.buffers()[1], dtype=np.uint8)[guid.offset * 16:(guid.offset + n) * 16].reshape(n, 16)
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[raw >> 4]
    digits[:, 1::2] = _HEX[raw & 0x0F]
    text[:, _DIGIT_POS] = digits
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * 36).tobytes())
    validity = guid.buffers()[0]
    if validity is not None and guid.offset:
        validity = pc.is_valid(guid).buffers()[1]
    return pa.StringArray.from_buffers(n, offsets, pa.py_buffer(text.tobytes()), validity, guid.null_count)


def error_messages(error_codes) -> pa.Array:
    """Human-readable reason per row, null where the code is ``OK``.

    Examples
    --------
    >>> import numpy as np
    >>> error_messages(np.array([0, 2], dtype=np.uint8)).to_pylist()
    [None, 'value is shorter than its framing header']
    """
    codes = np.asarray(error_codes, dtype=np.int64)
    top = max(int(codes.max(initial=0)), max(ErrorCode)) + 1
    table = [None] + [MESSAGES.get(c, f"unknown error code {c}") for c in range(1, top)]
    if codes.size and codes.min() < 0:
        raise WireFormatError("error codes must be non-negative")
    return pa.array(table, type=pa.string()).take(pa.array(codes))


def parse_frames(values, framing, *, headers=None, is_key: bool = False,
                 limits: Limits = DEFAULT_LIMITS, protobuf_indexes: bool = False) -> ParsedFrames:
    """Parse schema-registry framing over a whole column of Kafka values (or keys).

    Parameters
    ----------
    values : pyarrow.BinaryArray, pyarrow.LargeBinaryArray or pyarrow.ChunkedArray
        Record values or keys; sliced arrays and nulls are fine.
    framing : Framing or str
        One of the :class:`Framing` spellings.
    headers : pyarrow.ListArray, optional
        Kafka headers ``list<struct<key: string, value: binary>>``; required by header framings.
    is_key : bool
        Use the key header names (``__key_schema_id``, ``apicurio.key.*``).
    limits : Limits
        Size caps; breaches become per-row ``LIMIT_EXCEEDED`` (or index errors).
    protobuf_indexes : bool
        Parse Confluent's Protobuf message-index array after the id.

    Returns
    -------
    ParsedFrames
        Bad rows never raise: they get an :class:`ErrorCode`.  Only misuse (wrong
        column types, missing headers column) raises :class:`WireFormatError`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from wireformat import encode_frame, parse_frames
    >>> pf = parse_frames(pa.array([encode_frame("confluent", 42, b"hi"), b"x"]), "confluent")
    >>> pf.schema_id.to_pylist(), pf.payload.to_pylist(), pf.error.tolist()
    ([42, None], [b'hi', None], [0, 3])
    """
    try:
        framing = Framing(framing)
    except ValueError as e:
        raise WireFormatError(f"unknown framing {framing!r}; valid: "
                              f"{', '.join(f.value for f in Framing)}") from e
    if not isinstance(limits, Limits):
        raise WireFormatError("limits must be a wireformat.Limits")
    view = binary_view(values)
    n = len(view)
    st = RowState(n)
    st.fail(~view.valid, ErrorCode.NULL_VALUE)
    st.fail(view.length > limits.max_record_bytes, ErrorCode.LIMIT_EXCEEDED)
    live = st.live
    if framing is not Framing.AUTO:
        st.framing[:] = framing.code
    if framing is Framing.NONE:
        pass
    elif framing.in_header:
        parse_header_id(view, live, st, headers, framing, is_key, protobuf_indexes)
    else:
        has_byte = view.length >= 1
        st.fail(live & ~has_byte, ErrorCode.TOO_SHORT)
        head = None if framing is Framing.AUTO else fixed_head(view, _HEADER_LEN[framing])
        first = head[:, 0] if head is not None else view.data.take(view.start, mode="clip")
        candidates = live & has_byte
        pairs = _AUTO if framing is Framing.AUTO else ((framing, _MAGIC[framing]),)
        known = np.zeros(n, dtype=bool)
        for fr, magic in pairs:
            rows = candidates & (first == magic)
            known |= rows
            if framing is Framing.AUTO:
                st.framing[rows] = fr.code
            if fr in INT_ID_BYTES:
                parse_int_id(view, rows, st, fr, head)
            elif fr is Framing.CONFLUENT_GUID:
                parse_guid(view, rows, st, head)
            else:
                parse_glue(view, rows, st, limits, head)
        st.fail(candidates & ~known, ErrorCode.UNKNOWN_MAGIC)
    indexes = _message_indexes(view, st, limits) if protobuf_indexes else None
    ok = st.live
    # Fixed framings without index arrays skip the same header length on every OK row.
    uniform = None if framing is Framing.AUTO or protobuf_indexes else _HEADER_LEN.get(framing, 0)
    payload = build_payload(view, st.skip, ok, replaced=st.replaced or None, uniform_skip=uniform)
    int_id = pa.Array.from_buffers(pa.int64(), n, [validity_buffer(st.has_int & ok),
                                                   pa.py_buffer(st.int_id)])
    if st.guid is None:
        guid = pa.nulls(n, pa.binary(16))
    else:
        guid = pa.Array.from_buffers(pa.binary(16), n, [validity_buffer(st.has_guid & ok),
                                                        pa.py_buffer(st.guid)])
    return ParsedFrames(payload, st.error, st.framing, int_id, guid, indexes)


def _message_indexes(view, st: RowState, limits: Limits) -> pa.Array:
    """Parse Confluent Protobuf index arrays after the id and move ``skip`` past them."""
    n = len(view)
    indexed = np.isin(st.framing, [f.code for f in _INDEXED]) & st.live
    rows = np.flatnonzero(indexed)
    full = len(rows) == n  # the usual case: whole columns, no gathers by row

    def sel(a):
        return a if full else a[rows]

    start = sel(view.start)
    codes, new_pos, lengths, slots = parse_indexes(view.data, start + sel(st.skip), sel(view.end), limits)
    st.error[rows] = codes  # these rows had no error yet
    st.skip[rows] = new_pos - start
    # parse_indexes reports slot rows relative to the rows it was given: map them back.
    all_rows, all_lengths = [rows], [lengths]
    all_slots = [(rows[r], j, v) for r, j, v in slots]
    if st.header_index_src is not None:
        hrows, hdata, hpos, hend = st.header_index_src
        live = st.error[hrows] == 0
        hrows, hpos, hend = hrows[live], hpos[live], hend[live]
        hcodes, hnew, hlens, hslots = parse_indexes(hdata, hpos, hend, limits)
        # The index array must fill the rest of the header value exactly.
        hcodes[(hcodes == 0) & (hnew != hend)] = ErrorCode.BAD_HEADER
        st.error[hrows] = hcodes
        all_rows.append(hrows)
        all_lengths.append(hlens)
        all_slots.extend((hrows[r], j, v) for r, j, v in hslots)
    has_list = np.zeros(n, dtype=bool)
    for r in all_rows:
        has_list[r] = True
    ok = has_list & st.live
    return build_index_lists(n, np.concatenate(all_rows), np.concatenate(all_lengths), all_slots, ok)
