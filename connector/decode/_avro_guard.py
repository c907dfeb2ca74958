"""Guard of the Avro reference path against hostile collection counts.

fastavro trusts array block counts. Items of most types take at least one byte, so a
lying count runs out of payload at once; but items of zero-byte types (``null``, empty
records) let 5 bytes claim billions of items. For schemas with such arrays, a small
skip-scanner checks every block count against ``max_collection_items`` before fastavro runs.
"""
from __future__ import annotations

from connector.decode._avro_schema import Node

__all__ = ["needs_guard", "check_counts"]


def _min_size(n: Node) -> int:
    k = n.kind
    if k == "null":
        return 0
    if k == "float":
        return 4
    if k == "double":
        return 8
    if k == "fixed":
        return n.size or 0
    if k == "record":
        return sum(_min_size(f.type) for f in n.fields)
    return 1  # boolean, int, long, bytes, string, enum, array, map, union


def needs_guard(n: Node, seen=None) -> bool:
    """True when some array of ``n`` has items that may encode to zero bytes."""
    seen = set() if seen is None else seen
    if id(n) in seen:
        return False
    seen.add(id(n))
    if n.kind == "array" and _min_size(n.items) == 0:
        return True
    kids = [f.type for f in n.fields] + list(n.branches) + ([n.items] if n.items else [])
    return any(needs_guard(c, seen) for c in kids)


class AvroLimitError(ValueError):
    pass


def _long(b: bytes, pos: int) -> tuple[int, int]:
    shift = acc = 0
    while True:
        if pos >= len(b) or shift > 63:
            raise AvroLimitError("truncated or overlong varint")
        c = b[pos]
        pos += 1
        acc |= (c & 0x7F) << shift
        if not c & 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7


def check_counts(b: bytes, n: Node, cap: int) -> None:
    """Raise ValueError if the record declares more than ``cap`` collection items in total."""
    budget = [cap]

    def skip(pos: int, x: Node) -> int:
        k = x.kind
        if k == "null":
            return pos
        if k == "boolean":
            return pos + 1
        if k in ("int", "long", "enum"):
            return _long(b, pos)[1]
        if k == "float":
            return pos + 4
        if k == "double":
            return pos + 8
        if k == "fixed":
            return pos + (x.size or 0)
        if k in ("bytes", "string"):
            ln, pos = _long(b, pos)
            if ln < 0:
                raise AvroLimitError("negative length")
            return pos + ln
        if k == "record":
            for f in x.fields:
                pos = skip(pos, f.type)
            return pos
        if k == "union":
            i, pos = _long(b, pos)
            if not 0 <= i < len(x.branches):
                raise AvroLimitError(f"union branch {i} out of range")
            return skip(pos, x.branches[i])
        # array / map: blocks of (count, [byte size if count < 0], items)
        while True:
            cnt, pos = _long(b, pos)
            if cnt == 0:
                return pos
            if cnt < 0:
                cnt = -cnt
                _, pos = _long(b, pos)
            budget[0] -= cnt
            if budget[0] < 0:
                raise AvroLimitError(f"record declares more than max_collection_items={cap} items")
            for _ in range(cnt):
                if k == "map":
                    ln, pos = _long(b, pos)
                    pos += max(ln, 0)
                pos = skip(pos, x.items)
                if pos > len(b):
                    raise AvroLimitError("truncated")
    skip(0, n)
