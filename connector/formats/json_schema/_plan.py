"""Which reader reads which field of an object schema, and how their outputs are joined.

A field pyarrow's JSON reader can express is read by it; a map, union or free-form field is
read by msgspec; an object field holding both kinds is *split*: its expressible sub-fields
stay with pyarrow and only the rest goes to msgspec (so a map deep inside a webhook's
``repository`` object does not move the whole object off pyarrow). Fields under arrays and
maps are not split: an array holding a union is read by msgspec whole.
"""
# ruff: noqa: UP045 - Optional[...] builds msgspec types at run time, where "X | None" fails on some X
from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa

from connector.formats.json_schema._schema import JNode
from connector.formats.json_schema._types import arrow_readable, py_type, typed_dict

__all__ = ["Plan"]


def _pyarrow_read_type(t: pa.DataType) -> pa.DataType:
    """The explicit-schema type for pyarrow's JSON reader: dates are read as text."""
    if pa.types.is_date32(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _pyarrow_read_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _pyarrow_read_type(t.value_type)))
    return t


_FEW = 12  # top-level scalars read by msgspec too when it reads other fields anyway


class Plan:
    """The split of one struct node. ``fields``: (name, node, mode, sub-plan or None) with
    mode ``"arrow"``, ``"narrow"`` or ``"split"``."""

    def __init__(self, node: JNode, top: bool = True):
        self.node = node
        self.fields: list[tuple[str, JNode, str, Plan | None]] = []
        for name, t in node.fields:
            if arrow_readable(t):
                self.fields.append((name, t, "arrow", None))
                continue
            if t.kind == "struct":
                sub = Plan(t, top=False)
                if sub.has_arrow:
                    self.fields.append((name, t, "split", sub))
                    continue
            self.fields.append((name, t, "narrow", None))
        arrow = [t for _, t, m, _ in self.fields if m != "narrow"]
        if top and len(arrow) < len(self.fields) and len(arrow) <= _FEW and \
                all(t.kind not in ("struct", "list") for t in arrow):
            # msgspec parses the whole text anyway: a few scalars beside the fields it must
            # read are cheaper to take from it than from a second parse by pyarrow
            self.fields = [(name, t, "narrow", None) for name, t, _, _ in self.fields]
        self.has_arrow: bool = any(m != "narrow" for _, _, m, _ in self.fields)
        self.has_narrow = any(m != "arrow" for _, _, m, _ in self.fields)

    def arrow_type(self, final: bool) -> pa.StructType:
        """What pyarrow reads (``final``: after casting dates)."""
        out = []
        for name, t, mode, sub in self.fields:
            if mode == "arrow":
                out.append(pa.field(name, t.arrow if final else _pyarrow_read_type(t.arrow)))
            elif mode == "split":
                assert sub is not None  # a "split" field always carries its sub-plan
                out.append(pa.field(name, sub.arrow_type(final)))
        return pa.struct(out)

    def narrow_node(self) -> JNode:
        """The tree msgspec reads (as a struct node)."""
        return JNode("struct", [(name, sub.narrow_node() if sub is not None else t)
                                for name, t, mode, sub in self.fields if mode != "arrow"])

    def py_type(self) -> Any:
        """msgspec type of a whole payload: an object holding the msgspec-read fields."""
        return Optional[self._typed_dict()]

    def _typed_dict(self) -> Any:
        spec = {}
        for name, t, mode, sub in self.fields:
            if mode == "narrow":
                spec[name] = py_type(t)
            elif mode == "split":
                assert sub is not None
                spec[name] = Optional[sub._typed_dict()]
        return typed_dict("JsonPart", spec)

    def merge(self, arrow: pa.StructArray | None, narrow: pa.StructArray | None,
              mask: pa.Array | None) -> pa.StructArray:
        """The node's array from the two readers' parts (same rows, same order)."""
        children = []
        for name, _t, mode, sub in self.fields:
            # the engine passes the part of each reader the plan uses (has_arrow / has_narrow)
            if mode == "arrow":
                assert arrow is not None
                children.append(arrow.field(name))
            elif mode == "narrow":
                assert narrow is not None
                children.append(narrow.field(name))
            else:
                assert arrow is not None and narrow is not None and sub is not None
                a = arrow.field(name)
                children.append(sub.merge(a, narrow.field(name), a.is_null() if a.null_count else None))
        return pa.StructArray.from_arrays(children, fields=list(self.node.arrow), mask=mask)
