"""Encoders for every framing: producers, tests and the demo write frames with these.

Byte layouts are those of the parsing modules (see ``_framing``); ``encode_frame``
returns the bytes of the Kafka value (or key), ``header_for_id`` the Kafka header
for framings that carry the id in a header.
"""
from __future__ import annotations

import struct
import uuid
import zlib

from wireformat._errors import WireFormatError
from wireformat._framing import Framing
from wireformat._headers import header_name

__all__ = ["encode_frame", "header_for_id", "encode_protobuf_indexes", "uuid_bytes"]

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
