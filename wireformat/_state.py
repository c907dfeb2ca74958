"""Per-row parse state shared by the framing modules (columns, not objects per row)."""
from __future__ import annotations

import numpy as np

from wireformat._framing import ErrorCode

__all__ = ["RowState"]


class RowState:
    """Mutable columns filled by the framing parsers; the first error of a row sticks.

    Attributes
    ----------
    error, framing : numpy.ndarray[uint8]
        Error code and framing code per row.
    skip : numpy.ndarray[int64]
        Bytes of framing before the payload, per row.
    int_id, has_int : numpy.ndarray
        Integer id per row and where it is set.
    guid, has_guid : numpy.ndarray
        ``(n, 16)`` GUID bytes per row (allocated on first use) and where set.
    replaced : dict[int, bytes]
        Rows whose payload is not a slice of the input (decompressed Glue rows).
    header_index_src : tuple or None
        For ids in headers that carry Protobuf indexes: ``(rows, BinView of header values)``.
    """

    def __init__(self, n: int):
        self.n = n
        self.error = np.zeros(n, dtype=np.uint8)
        self.framing = np.zeros(n, dtype=np.uint8)
        self.skip = np.zeros(n, dtype=np.int64)
        self.int_id = np.zeros(n, dtype=np.int64)
        self.has_int = np.zeros(n, dtype=bool)
        self.guid: np.ndarray | None = None
        self.has_guid = np.zeros(n, dtype=bool)
        self.replaced: dict[int, bytes] = {}
        self.header_index_src: tuple | None = None

    def fail(self, mask: np.ndarray, code: ErrorCode) -> None:
        """Mark ``code`` on rows in ``mask`` that have no error yet."""
        self.error[mask & (self.error == 0)] = code

    def fail_rows(self, rows: np.ndarray, code: ErrorCode) -> None:
        """Mark ``code`` on the row indices ``rows`` that have no error yet."""
        if len(rows):
            sub = self.error[rows]
            sub[sub == 0] = code
            self.error[rows] = sub

    def set_guid(self, mask: np.ndarray, values: np.ndarray) -> None:
        """Store 16-byte GUIDs on ``mask`` rows; ``values`` is ``(n, 16)`` or ``(mask.sum(), 16)``."""
        guid = self.guid
        if guid is None:
            guid = self.guid = np.zeros((self.n, 16), dtype=np.uint8)
        full = len(values) == self.n
        if full and mask.all():
            guid[:] = values
        elif full:
            np.copyto(guid, values, where=mask[:, None])
        else:
            guid[np.flatnonzero(mask)] = values
        self.has_guid |= mask

    def set_int(self, mask: np.ndarray, values: np.ndarray) -> None:
        """Store integer ids on ``mask`` rows; ``values`` is full-length or ``(mask.sum(),)``."""
        if len(values) == self.n:
            # copyto casts while copying: no temporary int64 array
            np.copyto(self.int_id, values, casting="unsafe", where=True if mask.all() else mask)
        else:
            self.int_id[mask] = values
        self.has_int |= mask

    def set_skip(self, mask: np.ndarray, header_len: int) -> None:
        """Payload of ``mask`` rows starts ``header_len`` bytes into the value."""
        if mask.all():
            self.skip.fill(header_len)
        else:
            self.skip[mask] = header_len

    @property
    def live(self) -> np.ndarray:
        return self.error == 0
