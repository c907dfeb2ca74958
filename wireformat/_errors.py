"""Error roots shared by every package of the project.

``wireformat`` is the lowest layer (it imports nothing of ours), so the root
``AsyncApiKafkaError`` lives here and the other packages derive from it.
"""
from __future__ import annotations

__all__ = ["AsyncApiKafkaError", "WireFormatError", "LimitExceededError", "add_note"]


class AsyncApiKafkaError(Exception):
    """Root of every error this project raises on purpose."""


class WireFormatError(AsyncApiKafkaError):
    """A frame (schema-registry header + payload) that cannot be parsed.

    Parameters
    ----------
    message : str
        What is wrong, in words.
    code : int, optional
        The per-row :class:`wireformat.ErrorCode` value, when one applies.
    row : int, optional
        Index of the offending row in the array that was parsed.
    """

    def __init__(self, message: str, *, code: int | None = None, row: int | None = None):
        super().__init__(message)
        self.code = code
        self.row = row


class LimitExceededError(WireFormatError):
    """A configured safety limit (size, length, count) was exceeded."""


def add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)`` on Python 3.11+; on 3.10 (which the project supports) the note is
    kept in ``__notes__`` the same way, so callers and tests read it alike.

    Examples
    --------
    >>> e = ValueError("x"); add_note(e, "while reading"); e.__notes__
    ['while reading']
    """
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python 3.10
        exc.__notes__ = [*getattr(exc, "__notes__", []), note]  # type: ignore[attr-defined]
