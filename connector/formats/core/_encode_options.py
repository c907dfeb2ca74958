"""Options, result and error types shared by every encoder."""
from __future__ import annotations

import collections
import logging
from dataclasses import dataclass

import pyarrow as pa


__all__ = ["EncodeOptions", "EncodeResult", "note_fallback", "FALLBACKS"]

_log = logging.getLogger("connector.formats")
FALLBACKS: collections.Counter = collections.Counter()  # per process; the tests assert it stays 0


def note_fallback(fmt: str, e: Exception) -> None:
    """A vectorized encoder met a shape it did not foresee; the per-record path takes the batch."""
    FALLBACKS[fmt] += 1
    _log.warning("%s: vectorized encoder fell back to the per-record path (%s: %s)", fmt,
                 type(e).__name__, str(e)[:200])


@dataclass(frozen=True)
class EncodeOptions:
    """Encoding settings, fixed on the driver.

    Parameters
    ----------
    max_recursion_depth : int
        As :class:`connector.formats.DecodeOptions`: recursive schemas are cut at this depth
        (0 refuses them), so the expected Arrow type is the decoder's.
    validate_json : bool
        JSON Schema: validate every value against the schema (a value the schema forbids is
        a row error). Turn off only for trusted data.
    fast_path : bool
        Use the vectorized encoders; False forces the per-record reference encoders (used
        by equivalence tests).
    """

    max_recursion_depth: int = 0
    validate_json: bool = True
    fast_path: bool = True

    def __post_init__(self):
        from connector.errors import ConfigError
        if not isinstance(self.max_recursion_depth, int) or self.max_recursion_depth < 0:
            raise ConfigError("max_recursion_depth must be a non-negative integer")


@dataclass(frozen=True)
class EncodeResult:
    """Output of :meth:`Encoder.encode`.

    Attributes
    ----------
    payloads : pa.BinaryArray
        One unframed payload per input row; null for a null input row (a tombstone) and for
        rows that failed.
    errors : pa.StringArray
        Null where the row encoded (or was a tombstone), else the reason.
    """

    payloads: pa.BinaryArray
    errors: pa.StringArray

    def __len__(self) -> int:
        return len(self.payloads)

    @property
    def error_count(self) -> int:
        """Rows that failed to encode."""
        return len(self.errors) - self.errors.null_count
