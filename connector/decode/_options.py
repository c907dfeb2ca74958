"""Options and result types shared by every decoder."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from wireformat import ParsedFrames

__all__ = ["DecodeOptions", "DecodeResult", "Mode"]


class Mode(str, enum.Enum):
    """What a read does with a malformed record (Spark's parse modes).

    A ``str`` enum: ``Mode.PERMISSIVE == "PERMISSIVE"`` and option values keep working.

    Examples
    --------
    >>> Mode.parse("permissive")
    <Mode.PERMISSIVE: 'PERMISSIVE'>
    >>> Mode.parse("DROPMALFORMED", allowed=(Mode.FAILFAST, Mode.PERMISSIVE))
    Traceback (most recent call last):
    ...
    connector.errors.ConfigError: mode must be one of FAILFAST, PERMISSIVE, got 'DROPMALFORMED'
    """

    FAILFAST = "FAILFAST"
    PERMISSIVE = "PERMISSIVE"
    DROPMALFORMED = "DROPMALFORMED"

    # The option spelling in messages and f-strings on every Python (3.12 changed Enum.__format__).
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def parse(cls, value: "str | Mode", allowed: "tuple[Mode, ...] | None" = None) -> "Mode":
        """The mode named by ``value`` (any case); :class:`ConfigError` when unknown or not allowed."""
        from connector.errors import ConfigError

        choices = allowed or tuple(cls)
        name = str(value).strip().upper()
        if name not in choices:
            raise ConfigError(f"mode must be one of {', '.join(choices)}, got {name!r}")
        return cls(name)


@dataclass(frozen=True)
class DecodeOptions:
    """Decoding settings, fixed on the driver.

    Parameters
    ----------
    format : str or None
        Payload format hint (``"avro"``, ``"json"``, ``"protobuf"``) when the reader schema
        does not say it.
    enum_as : str
        Protobuf enums as ``"string"`` (symbol name) or ``"int"`` (number). Avro enums are
        always strings.
    max_recursion_depth : int
        0 refuses recursive schemas with :class:`SchemaMappingError`; N > 0 keeps N nested
        levels of a recursive type and drops the field below that.
    max_collection_items : int
        Cap on the items one record may declare in its arrays and maps (Avro fallback path).
    max_record_bytes : int
        Payloads larger than this are refused per row.
    protobuf_message : str or None
        Protobuf message (full or simple name) to read when the reader schema does not name one.
    fast_path : bool
        Use the vectorized paths (pyarrow.json for JSON); False forces the per-record
        reference paths (used by equivalence tests). No effect on Avro: its one engine is
        vectorized and covers the whole spec.
    evolution : str
        Fields a writer has and the reader lacks: ``"none"`` (dropped), ``"rescue"`` (JSON in
        ``DecodeResult.rescued``) or ``"failOnNewFields"`` (decode raises
        :class:`connector.decode.SchemaEvolutionError`). See ``connector.decode._evolution``.
    """

    format: str | None = None
    enum_as: str = "string"
    max_recursion_depth: int = 0
    max_collection_items: int = 1_000_000
    max_record_bytes: int = 64 * 1024 * 1024
    protobuf_message: str | None = None
    fast_path: bool = True
    evolution: str = "none"

    def __post_init__(self):
        from connector.errors import ConfigError
        if self.evolution not in ("none", "rescue", "failOnNewFields"):
            raise ConfigError(f"evolution must be none, rescue or failOnNewFields, got {self.evolution!r}")
        if self.enum_as not in ("string", "int"):
            raise ConfigError(f"enum_as must be 'string' or 'int', got {self.enum_as!r}")
        for name in ("max_recursion_depth", "max_collection_items", "max_record_bytes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ConfigError(f"{name} must be a non-negative integer")


@dataclass(frozen=True)
class DecodeResult:
    """Output of :meth:`Decoder.decode`.

    Attributes
    ----------
    values : pa.Array
        One value per input row, of the decoder's ``arrow_type``; null on failed rows.
    errors : pa.StringArray
        Null where the row decoded, else the reason.
    parsed : wireformat.ParsedFrames or None
        The frames that were decoded (the source of :attr:`schema_ids`).
    rescued : pa.StringArray or None
        With ``evolution="rescue"``: per row, a JSON object of the fields its writer has and
        the reader lacks (null where none); None in the other modes.
    """

    values: pa.Array
    errors: pa.StringArray
    parsed: "ParsedFrames | None" = None
    rescued: pa.StringArray | None = None

    @property
    def schema_ids(self) -> pa.StringArray | None:
        """The writer schema id of each row as text (null where none), computed on demand
        by ``ParsedFrames.schema_id_column``: most callers never read it."""
        return None if self.parsed is None else self.parsed.schema_id_column(text=True)

    def __len__(self) -> int:
        return len(self.values)
