"""Framings, per-row error codes, limits and schema keys.

Byte layouts of the framings this package knows (offsets in bytes):

=========================  =====  ==========================================  =========
framing                    magic  header                                       payload
=========================  =====  ==========================================  =========
confluent                  0x00   [1:5] schema id, uint32 big-endian           5
confluent-guid             0x01   [1:17] schema GUID (RFC 4122 bytes)          17
glue                       0x03   [1] compression 0x00/0x05, [2:18] UUID       18
apicurio-legacy            0x00   [1:9] globalId, int64 big-endian             9
apicurio-new               0x00   [1:5] contentId, uint32 big-endian           5
header-confluent           --     Kafka header ``__value_schema_id``           0
                                  = 0x01 + GUID (+ Protobuf indexes)
header-apicurio-global     --     header ``apicurio.value.globalId``, int64    0
header-apicurio-content    --     header ``apicurio.value.contentId``, int64   0
none                       --     none                                         0
=========================  =====  ==========================================  =========

``auto`` picks per row by the magic byte: 0x00 confluent, 0x01 confluent-guid, 0x03 glue.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Tuple, Union

__all__ = ["Framing", "ErrorCode", "Limits", "DEFAULT_LIMITS", "SchemaKey"]


class Framing(str, enum.Enum):
    """Where and how the writer-schema id travels with a Kafka record.

    The values are the option spellings. :attr:`code` is the ``uint8`` stored per
    row in :attr:`wireformat.ParsedFrames.framing` (0 means "not determined").

    Examples
    --------
    >>> Framing("confluent").code
    1
    >>> Framing.from_code(3)
    <Framing.GLUE: 'glue'>
    """

    AUTO = "auto"
    CONFLUENT = "confluent"
    CONFLUENT_GUID = "confluent-guid"
    GLUE = "glue"
    APICURIO_LEGACY = "apicurio-legacy"
    APICURIO_NEW = "apicurio-new"
    HEADER_CONFLUENT = "header-confluent"
    HEADER_APICURIO_GLOBAL = "header-apicurio-global"
    HEADER_APICURIO_CONTENT = "header-apicurio-content"
    NONE = "none"

    # The option spelling in messages and f-strings on every Python (3.12 changed Enum.__format__).
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def code(self) -> int:
        """Per-row ``uint8`` code of this framing (``AUTO`` is 0: not determined)."""
        return _CODES[self]

    @classmethod
    def from_code(cls, code: int) -> "Framing":
        """Framing for a per-row code; 0 gives ``AUTO`` (not determined)."""
        try:
            return _BY_CODE[int(code)]
        except KeyError as e:
            raise ValueError(f"unknown framing code {code!r}") from e

    @property
    def in_header(self) -> bool:
        """True when the id travels in a Kafka header and the payload is unframed."""
        return self in (Framing.HEADER_CONFLUENT, Framing.HEADER_APICURIO_GLOBAL,
                        Framing.HEADER_APICURIO_CONTENT)

    @property
    def has_guid(self) -> bool:
        """True when the id is a 16-byte GUID/UUID rather than an integer."""
        return self in (Framing.CONFLUENT_GUID, Framing.GLUE, Framing.HEADER_CONFLUENT)

    @property
    def id_kind(self) -> str | None:
        """What the id names in the registry: ``"id"`` (Confluent schema id), ``"guid"``
        (Confluent GUID, Glue schema version id), ``"global"`` (Apicurio globalId),
        ``"content"`` (Apicurio contentId); None for ``auto`` (decided per row) and ``none``."""
        return _ID_KINDS.get(self)

    @property
    def id_text(self) -> bool:
        """True when ids are shown as text (GUIDs; ``auto`` may meet GUIDs), else as integers."""
        return self.has_guid or self is Framing.AUTO

    @property
    def carries_protobuf_indexes(self) -> bool:
        """True when Protobuf payloads in this framing carry Confluent message indexes.

        Confluent's serializers write them after the payload header (``confluent``,
        ``confluent-guid``) or after the GUID in the header (``header-confluent``); ``auto``
        meets those per row. Apicurio's Protobuf serde writes its own ``Ref`` message
        instead, and Glue none, so those framings carry no indexes.
        """
        return self in (Framing.CONFLUENT, Framing.CONFLUENT_GUID, Framing.HEADER_CONFLUENT, Framing.AUTO)


_ID_KINDS = {Framing.CONFLUENT: "id", Framing.CONFLUENT_GUID: "guid", Framing.HEADER_CONFLUENT: "guid",
             Framing.GLUE: "guid", Framing.APICURIO_LEGACY: "global", Framing.HEADER_APICURIO_GLOBAL: "global",
             Framing.APICURIO_NEW: "content", Framing.HEADER_APICURIO_CONTENT: "content"}
_CODES = {f: i for i, f in enumerate(Framing)}
_BY_CODE = {i: f for f, i in _CODES.items()}


class ErrorCode(enum.IntEnum):
    """Why one row could not be parsed (``OK`` = 0 when it could)."""

    OK = 0
    NULL_VALUE = 1
    TOO_SHORT = 2
    UNKNOWN_MAGIC = 3
    BAD_COMPRESSION = 4
    DECOMPRESSION_FAILED = 5
    LIMIT_EXCEEDED = 6
    MISSING_HEADER = 7
    BAD_HEADER = 8
    BAD_VARINT = 9
    BAD_MESSAGE_INDEX = 10
    TOO_MANY_INDEXES = 11


MESSAGES: dict[int, str] = {
    ErrorCode.NULL_VALUE: "value is null",
    ErrorCode.TOO_SHORT: "value is shorter than its framing header",
    ErrorCode.UNKNOWN_MAGIC: "unknown magic byte (not a schema-registry frame of the configured framing)",
    ErrorCode.BAD_COMPRESSION: "unknown Glue compression byte (expected 0x00 or 0x05)",
    ErrorCode.DECOMPRESSION_FAILED: "zlib payload is corrupt or truncated",
    ErrorCode.LIMIT_EXCEEDED: "record or decompressed payload exceeds the configured size limit",
    ErrorCode.MISSING_HEADER: "schema-id Kafka header is missing",
    ErrorCode.BAD_HEADER: "schema-id Kafka header has the wrong length or magic byte",
    ErrorCode.BAD_VARINT: "Protobuf message-index varint is truncated or longer than the limit",
    ErrorCode.BAD_MESSAGE_INDEX: "Protobuf message index is negative or out of int32 range",
    ErrorCode.TOO_MANY_INDEXES: "Protobuf message-index array is longer than the limit",
}


@dataclass(frozen=True)
class Limits:
    """Safety limits applied while parsing frames.

    Parameters
    ----------
    max_record_bytes : int
        Longest accepted value (bytes); longer rows get ``LIMIT_EXCEEDED``.
    max_decompressed_bytes : int
        Cap on one row's zlib-decompressed Glue payload (exactly this many bytes is allowed).
    max_varint_bytes : int
        Longest accepted Protobuf message-index varint (10 covers any 64-bit value).
    max_message_indexes : int
        Longest accepted Protobuf message-index array.
    max_collection_items : int
        Cap on the items one record may hold in its arrays and maps (and JSON object members),
        checked by every decoder before it allocates.

    These are the one owner of the limits' defaults: the source's ``limits.*`` options show
    and parse them from here.
    """

    max_record_bytes: int = 64 * 1024 * 1024
    max_decompressed_bytes: int = 128 * 1024 * 1024
    max_varint_bytes: int = 10
    max_message_indexes: int = 1024
    max_collection_items: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("max_record_bytes", "max_decompressed_bytes", "max_varint_bytes",
                     "max_message_indexes", "max_collection_items"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Limits.{name} must be a non-negative int, got {value!r}")
        if not 1 <= self.max_varint_bytes <= 10:
            raise ValueError("Limits.max_varint_bytes must be between 1 and 10")


DEFAULT_LIMITS = Limits()

SchemaKey = Tuple[Framing, Union[int, bytes, None]]
"""``(framing that produced the id, id)``: int ids, 16 raw bytes for GUIDs, None for ``none``."""
