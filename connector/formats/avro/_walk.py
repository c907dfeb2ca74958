"""Encoded sizes of writer types, for plans and skip nodes (see :mod:`connector.formats.avro._plan`).

:data:`MAX_NESTING` is the nesting cap of one payload (records and collections inside one
another), the kernel's frame limit.
"""
from __future__ import annotations

from connector.formats.avro._schema import Node

__all__ = ["MAX_NESTING", "min_size", "skip_width"]

MAX_NESTING = 128  # nesting levels of records/unions/collections in one payload


def skip_width(w: Node):
    """Constant encoded size of a writer type, or None (cached on the node)."""
    if "width" in w.memo:
        return w.memo["width"]
    w.memo["width"] = None  # cycles are variable-sized
    k = w.kind
    wd = {"null": 0, "boolean": 1, "float": 4, "double": 8}.get(k)
    if k == "fixed":
        wd = w.size
    elif k == "record":
        ws = [skip_width(f.type) for f in w.fields]
        wd = None if None in ws else sum(ws)
    w.memo["width"] = wd
    return wd


def min_size(w: Node) -> int:
    """Smallest encoded size of a writer type (0 for null and records of nulls)."""
    if "min" in w.memo:
        return w.memo["min"]
    w.memo["min"] = 0
    v = skip_width(w)
    if v is None:
        v = sum(min_size(f.type) for f in w.fields) if w.kind == "record" else 1
    w.memo["min"] = v
    return v
