"""Options and result types shared by every decoder."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from wireformat import DEFAULT_LIMITS, Limits

from connector.formats.core._enum import OptionEnum
from connector.formats.core._evolution import EvolutionMode

if TYPE_CHECKING:
    from wireformat import ParsedFrames

__all__ = ["DecodeOptions", "DecodeResult", "Mode", "EnumRepr"]


class EnumRepr(OptionEnum):
    """How Protobuf enum values come out: their symbol names or their numbers (``enumsAsInts``)."""

    STRING = "string"
    INT = "int"

    @classmethod
    def label(cls) -> str:
        return "enum representation"


class Mode(OptionEnum):
    """What a read does with a malformed record (Spark's parse modes).

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

    @classmethod
    def label(cls) -> str:
        return "mode"


@dataclass(frozen=True)
class DecodeOptions:
    """Decoding settings, fixed on the driver.

    Parameters
    ----------
    enum_as : EnumRepr
        Protobuf enums as symbol names or numbers. Avro enums are always strings.
    max_recursion_depth : int
        0 refuses recursive schemas with :class:`SchemaMappingError`; N > 0 keeps N nested
        levels of a recursive type and drops the field below that.
    limits : wireformat.Limits
        ``max_record_bytes`` (larger payloads are row errors) and ``max_collection_items``
        (records declaring more array/map items are row errors, before anything is allocated).
    fast_path : bool
        Use the vectorized paths (pyarrow.json for JSON); False forces the per-record
        reference paths (used by equivalence tests). No effect on Avro: its one engine is
        vectorized and covers the whole spec.
    evolution : EvolutionMode
        Fields a writer has and the reader lacks: dropped, rescued (JSON in
        ``DecodeResult.rescued``) or a reason to stop (decode raises
        :class:`connector.formats.SchemaEvolutionError`). See ``connector.formats.core._evolution``.
    validate_json : bool
        JSON: a record its JSON Schema does not accept (python-jsonschema's verdict) is a row
        error. False reads every record the type mapping can hold.
    """

    enum_as: EnumRepr = EnumRepr.STRING
    max_recursion_depth: int = 0
    limits: Limits = DEFAULT_LIMITS
    fast_path: bool = True
    evolution: EvolutionMode = EvolutionMode.NONE
    validate_json: bool = True

    def __post_init__(self):
        from connector.errors import ConfigError
        if not isinstance(self.evolution, EvolutionMode):
            raise ConfigError(f"evolution must be an EvolutionMode, got {self.evolution!r}")
        if not isinstance(self.enum_as, EnumRepr):
            raise ConfigError(f"enum_as must be an EnumRepr, got {self.enum_as!r}")
        for name in ("max_recursion_depth",):
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
