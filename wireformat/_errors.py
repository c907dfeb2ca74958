"""Error roots shared by every package of the project.

``wireformat`` is the lowest layer (it imports nothing of ours), so the root
``AsyncApiKafkaError`` lives here and the other packages derive from it.
"""
from __future__ import annotations

__all__ = ["AsyncApiKafkaError", "WireFormatError", "LimitExceededError"]


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
