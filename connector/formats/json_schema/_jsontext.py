"""The text of a free-form JSON value (a leaf the type mapping keeps as JSON text), parsed
the one way both JSON encoders (per record and vectorized) parse it."""
from __future__ import annotations

import json
import math

__all__ = ["loads_json_text"]


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    f = float(text)
    if not math.isfinite(f):
        raise ValueError(f"{text[:40]} is out of a double's range")
    return f


def loads_json_text(text: str):
    """A free-form leaf's JSON text parsed: ``NaN`` and ``Infinity`` (Python's parser takes
    them, JSON has not) and numbers past a double's range (which would be written back as
    ``null``) refused; integers keep every digit (``orjson.loads`` would round big ones).

    >>> loads_json_text('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> loads_json_text("NaN")
    Traceback (most recent call last):
    ValueError: NaN is not JSON
    >>> loads_json_text(" [1] x")
    Traceback (most recent call last):
    ValueError: extra data after the JSON value at character 4
    >>> loads_json_text("1e400")
    Traceback (most recent call last):
    ValueError: 1e400 is out of a double's range
    """
    # The decoder's C scanner, called directly (``json.loads`` would build a decoder per call)
    start = len(text) - len(text.lstrip(_WS))
    try:
        doc, end = _SCAN(text, start)
    except StopIteration:
        raise ValueError(f"expecting a JSON value at character {start}") from None
    if text[end:].strip(_WS):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return doc


_WS = " \t\n\r"  # JSON's whitespace
_SCAN = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite).scan_once  # type: ignore[attr-defined]
