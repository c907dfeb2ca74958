"""asyncapi-kafka: read Kafka topics described by AsyncAPI documents into typed Spark DataFrames.

:func:`peek` decodes a few records of a channel without Spark (a ``pyarrow.Table``)."""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["peek", "__version__"]


def peek(asyncapi: str, channel: str | None = None, **kwargs: Any):
    """:func:`connector.read.peek` (imported on first use: ``import connector`` stays cheap)."""
    from connector.read import peek as _peek

    return _peek(asyncapi, channel, **kwargs)
