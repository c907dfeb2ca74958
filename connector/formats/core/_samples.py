"""What every format's example-payload generator (``PayloadFormat.samples``, used by
``asyncapi-kafka sandbox``) shares, so the formats' examples agree: record ``i`` of every format
has the same timestamps, and nesting stops at the same depth."""
from __future__ import annotations

import datetime as dt

__all__ = ["SAMPLE_BASE_TIME", "SAMPLE_MAX_DEPTH"]

#: the time of generated record 0 (record ``i`` is ``i`` seconds, or days, later)
SAMPLE_BASE_TIME = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.timezone.utc)
#: nesting depth where generated values stop (null, an empty array or map, an empty message)
SAMPLE_MAX_DEPTH = 6
