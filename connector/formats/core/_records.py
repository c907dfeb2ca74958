"""Records as plain values (dicts, lists, scalars: fastavro's Avro objects, JSON values): what the
Avro and JSON Schema :class:`connector.formats.core.RecordForm`\\s share."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["transform_plain", "plain_json"]


def transform_plain(obj: Any, path: tuple[str, ...], fn: Callable[[Any], Any]) -> Any:
    """``obj`` with ``fn`` applied to each value at the leaf ``path`` (a
    :class:`connector.formats.core.Leaf`'s), in place; absent and null values are left alone.
    A ``memberN`` step (a branch of an Avro union of several types) is the value itself: ``fn``
    sees every branch's values and keeps those of other types."""
    if obj is None:
        return None
    if not path:
        return fn(obj)
    step, rest = path[0], path[1:]
    if step == "[]":
        if isinstance(obj, list):
            obj[:] = [transform_plain(item, rest, fn) for item in obj]
    elif step == "{}":
        if isinstance(obj, dict):
            for k in list(obj):
                obj[k] = transform_plain(obj[k], rest, fn)
    elif step.startswith("member") and step[6:].isdigit():
        return transform_plain(obj, rest, fn)
    elif isinstance(obj, dict) and step in obj:
        obj[step] = transform_plain(obj[step], rest, fn)
    return obj


def plain_json(obj: Any) -> bytes:
    """JSON of a plain record as confluent-kafka's DLQ action writes it: bytes as latin-1 text,
    any other non-JSON value (decimals, datetimes, UUIDs) as its ``str``."""
    return json.dumps(obj, default=_default).encode("utf-8")


def _default(o: Any) -> str:
    if isinstance(o, (bytes, bytearray)):
        return bytes(o).decode("latin-1")
    return str(o)
