"""Encoders for every framing: producers, tests and the demo write frames with these.

Byte layouts are those of the parsing modules (see ``_framing``); ``encode_frame``
returns the bytes of the Kafka value (or key), ``header_for_id`` the Kafka header
for framings that carry the id in a header.
"""
from __future__ import annotations

import struct
import uuid
import zlib
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from wireformat._errors import WireFormatError
from wireformat._framing import Framing
from wireformat._headers import header_name

__all__ = ["encode_frame", "header_for_id", "encode_protobuf_indexes", "uuid_bytes",
           "frame_payloads", "FramedPayloads"]

# Payload framings whose header may be followed by Protobuf message indexes.
_INDEXED = tuple(f for f in Framing if f.carries_protobuf_indexes and not f.in_header and f is not Framing.AUTO)


def uuid_bytes(value) -> bytes:
    """The 16 RFC 4122 bytes of a UUID given as ``uuid.UUID``, text or 16 bytes.

    Examples
    --------
    >>> uuid_bytes("00000000-0000-0000-0000-000000000001")[-1]
    1
    """
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 16:
            raise WireFormatError(f"a GUID is 16 bytes, got {len(raw)}")
        return raw
    if isinstance(value, str):
        try:
            return uuid.UUID(value).bytes
        except ValueError as e:
            raise WireFormatError("not a UUID string") from e
    raise WireFormatError(f"cannot make a GUID from {type(value).__name__}")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zz(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def encode_protobuf_indexes(indexes) -> bytes:
    """Confluent's Protobuf message-index array (``[0]`` and ``[]`` encode as one 0x00 byte).

    Examples
    --------
    >>> encode_protobuf_indexes([0]), encode_protobuf_indexes([1, 2])
    (b'\\x00', b'\\x04\\x02\\x04')
    """
    idx = [int(i) for i in indexes]
    if any(i < 0 or i >= (1 << 31) for i in idx):
        raise WireFormatError("message indexes must be in [0, 2**31)")
    if idx in ([], [0]):
        return b"\x00"
    return _varint(_zz(len(idx))) + b"".join(_varint(_zz(i)) for i in idx)


def _int(schema_id, bits: int, signed: bool) -> int:
    if not isinstance(schema_id, int) or isinstance(schema_id, bool):
        raise WireFormatError(f"schema id must be an int, got {type(schema_id).__name__}")
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= schema_id <= hi:
        raise WireFormatError(f"schema id {schema_id} out of range for a {bits}-bit id")
    return schema_id


def encode_frame(framing, schema_id, payload: bytes, *, compression=None, message_indexes=None) -> bytes:
    """Frame one serialized payload for Kafka.

    Parameters
    ----------
    framing : Framing or str
        Any framing but ``auto``. Header framings return the payload unchanged (put
        :func:`header_for_id` into the record headers).
    schema_id : int, str, uuid.UUID or bytes
        Integer id, or GUID/UUID for ``confluent-guid`` and ``glue``.
    payload : bytes
        The serialized message.
    compression : {None, "none", "zlib"}
        Glue only.
    message_indexes : sequence of int, optional
        Confluent Protobuf message indexes, written after the id.

    Examples
    --------
    >>> encode_frame("confluent", 1, b"x")
    b'\\x00\\x00\\x00\\x00\\x01x'
    """
    try:
        framing = Framing(framing)
    except ValueError as e:
        raise WireFormatError(f"unknown framing {framing!r}") from e
    payload = bytes(payload)
    if compression not in (None, "none") and framing is not Framing.GLUE:
        raise WireFormatError("compression applies only to the glue framing")
    if message_indexes is not None and framing not in _INDEXED:
        raise WireFormatError(f"framing {framing.value!r} carries no message indexes in the value")
    idx = b"" if message_indexes is None else encode_protobuf_indexes(message_indexes)
    if framing in (Framing.CONFLUENT, Framing.APICURIO_NEW):
        return b"\x00" + struct.pack(">I", _int(schema_id, 32, False)) + idx + payload
    if framing is Framing.APICURIO_LEGACY:
        return b"\x00" + struct.pack(">q", _int(schema_id, 64, True)) + idx + payload
    if framing is Framing.CONFLUENT_GUID:
        return b"\x01" + uuid_bytes(schema_id) + idx + payload
    if framing is Framing.GLUE:
        if compression == "zlib":
            return b"\x03\x05" + uuid_bytes(schema_id) + zlib.compress(payload)
        if compression not in (None, "none"):
            raise WireFormatError(f"unknown compression {compression!r}; use 'zlib' or None")
        return b"\x03\x00" + uuid_bytes(schema_id) + payload
    if framing.in_header or framing is Framing.NONE:
        return payload
    raise WireFormatError("auto is for reading; pick a concrete framing to encode")


def header_for_id(framing, schema_id, is_key: bool = False, *, message_indexes=None) -> tuple[str, bytes]:
    """Kafka header ``(key, value)`` carrying ``schema_id`` for a header framing.

    Examples
    --------
    >>> header_for_id("header-apicurio-global", 5)
    ('apicurio.value.globalId', b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x05')
    """
    try:
        framing = Framing(framing)
    except ValueError as e:
        raise WireFormatError(f"unknown framing {framing!r}") from e
    if not framing.in_header:
        raise WireFormatError(f"framing {framing.value!r} does not carry the id in a header")
    name = header_name(framing, is_key)
    if framing is Framing.HEADER_CONFLUENT:
        idx = b"" if message_indexes is None else encode_protobuf_indexes(message_indexes)
        return name, b"\x01" + uuid_bytes(schema_id) + idx
    if message_indexes is not None:
        raise WireFormatError("Apicurio id headers carry no message indexes")
    return name, struct.pack(">q", _int(schema_id, 64, True))


class FramedPayloads(NamedTuple):
    """Output of :func:`frame_payloads`.

    Attributes
    ----------
    values : pa.BinaryArray
        The Kafka values (or keys), one per payload; null where the payload was null.
    headers : list of (str, bytes) or None
        For header framings, the header every record of the batch carries; else None.
    """

    values: pa.BinaryArray
    headers: list | None


def _frame_prefix(framing: Framing, schema_id, idx: bytes, compression) -> bytes:
    if framing in (Framing.CONFLUENT, Framing.APICURIO_NEW):
        return b"\x00" + struct.pack(">I", _int(schema_id, 32, False)) + idx
    if framing is Framing.APICURIO_LEGACY:
        return b"\x00" + struct.pack(">q", _int(schema_id, 64, True)) + idx
    if framing is Framing.CONFLUENT_GUID:
        return b"\x01" + uuid_bytes(schema_id) + idx
    if framing is Framing.GLUE:
        return (b"\x03\x05" if compression == "zlib" else b"\x03\x00") + uuid_bytes(schema_id)
    if framing.in_header or framing is Framing.NONE:
        return b""
    raise WireFormatError("auto is for reading; pick a concrete framing to encode")


def frame_prefix(framing, schema_id, *, message_indexes=None, compression=None,
                 is_key: bool = False) -> tuple[bytes | None, list | None]:
    """(the bytes every framed value starts with, the header every record carries or None).

    The prefix is None where framing is not a constant prefix (Glue with zlib compresses each
    value). An encoder given the prefix writes framed values in the same pass as the payloads,
    with no second copy (what :func:`frame_payloads` does after the fact).

    Examples
    --------
    >>> frame_prefix("confluent", 1)
    (b'\\x00\\x00\\x00\\x00\\x01', None)
    >>> frame_prefix("header-apicurio-global", 7)
    (b'', [('apicurio.value.globalId', b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x07')])
    >>> frame_prefix("glue", "b6c5cf4d-9b64-4d6e-8f0a-5f2d1c3b4a59", compression="zlib")[0] is None
    True
    """
    try:
        framing = Framing(framing)
    except ValueError as e:
        raise WireFormatError(f"unknown framing {framing!r}") from e
    if compression not in (None, "none") and framing is not Framing.GLUE:
        raise WireFormatError("compression applies only to the glue framing")
    if compression not in (None, "none", "zlib"):
        raise WireFormatError(f"unknown compression {compression!r}; use 'zlib' or None")
    headers = None
    if framing.in_header:
        headers = [header_for_id(framing, schema_id, is_key, message_indexes=message_indexes)]
        idx = b""
    else:
        if message_indexes is not None and framing not in _INDEXED:
            raise WireFormatError(f"framing {framing.value!r} carries no message indexes in the value")
        idx = b"" if message_indexes is None else encode_protobuf_indexes(message_indexes)
    prefix = _frame_prefix(framing, schema_id, idx, compression)
    if framing is Framing.GLUE and compression == "zlib":
        return None, headers
    return prefix, headers


def frame_payloads(payloads, framing, schema_id, *, message_indexes=None, compression=None,
                   is_key: bool = False) -> FramedPayloads:
    """Frame a whole array of serialized payloads of one schema (the vectorized :func:`encode_frame`).

    Every row gets the same header bytes (one schema id per call), so framing is one
    Arrow ``binary_join_element_wise`` call: the header is computed once and copied in
    C++ in front of every payload. Glue's zlib compression is per record by nature (each
    value is its own zlib stream): that case runs ``zlib.compress`` once per row.

    Parameters
    ----------
    payloads : pa.BinaryArray
        Serialized messages; null rows (tombstones) stay null.
    framing : Framing or str
        Any framing but ``auto``.
    schema_id : int, str, uuid.UUID or bytes
        As for :func:`encode_frame`.
    message_indexes : sequence of int, optional
        Confluent Protobuf message indexes (in the value, or in the ``header-confluent`` header).
    compression : {None, "none", "zlib"}
        Glue only.
    is_key : bool
        Header framings: name the key's header instead of the value's.

    Returns
    -------
    FramedPayloads

    Examples
    --------
    >>> import pyarrow as pa
    >>> fp = frame_payloads(pa.array([b"x", None]), "confluent", 1)
    >>> fp.values.to_pylist(), fp.headers
    ([b'\\x00\\x00\\x00\\x00\\x01x', None], None)
    """
    prefix, headers = frame_prefix(framing, schema_id, message_indexes=message_indexes, compression=compression,
                                   is_key=is_key)
    if isinstance(payloads, pa.ChunkedArray):
        payloads = payloads.combine_chunks()
    if not isinstance(payloads, pa.Array):
        payloads = pa.array(payloads, pa.binary())
    if pa.types.is_large_binary(payloads.type) or pa.types.is_string(payloads.type) or \
            pa.types.is_large_string(payloads.type):
        payloads = payloads.cast(pa.binary())
    if not pa.types.is_binary(payloads.type):
        raise WireFormatError(f"payloads must be binary, got {payloads.type}")
    if prefix is None:
        # zlib streams are per record by nature: no batch form exists.
        head = _frame_prefix(Framing.GLUE, schema_id, b"", "zlib")
        vals = pa.array([None if p is None else head + zlib.compress(p)
                         for p in payloads.to_pylist()], pa.binary())
        return FramedPayloads(vals, None)
    if not prefix:
        return FramedPayloads(payloads, headers)
    empty = pa.scalar(b"", pa.binary())
    vals = pc.binary_join_element_wise(pa.scalar(prefix, pa.binary()), payloads, empty)
    return FramedPayloads(vals, headers)
