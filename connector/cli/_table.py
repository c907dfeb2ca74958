"""Plain-text rendering for the CLI: aligned tables and wrapped Spark type strings.

No colours and no terminal probing: the output is read in terminals, CI logs and pasted
into tickets, so it must look the same everywhere.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["render_table", "wrap_type", "split_top_level"]


def render_table(rows: Iterable[Sequence[object]], headers: Sequence[str] | None = None, *,
                 indent: int = 2, gap: int = 2) -> str:
    """Left-aligned columns; ``None`` cells print as ``-``; the last column is not padded.

    Examples
    --------
    >>> print(render_table([("orders", 4), ("payments", 12)], headers=("topic", "partitions")))
      topic     partitions
      orders    4
      payments  12
    """
    table = [["-" if c is None else str(c) for c in row] for row in rows]
    if headers is not None:
        table.insert(0, [str(h) for h in headers])
    if not table:
        return ""
    ncols = max(len(r) for r in table)
    widths = [max((len(r[i]) for r in table if i < len(r)), default=0) for i in range(ncols)]
    pad = " " * indent
    lines = []
    for r in table:
        cells = [c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)]
        lines.append((pad + (" " * gap).join(cells)).rstrip())
    return "\n".join(lines)


def split_top_level(inner: str) -> list[str]:
    """Split ``a:int,b:struct<x:int,y:int>`` at the commas that are not inside ``<>``/``()``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [p for p in parts if p]


def wrap_type(type_string: str, width: int = 88, indent: int = 0) -> list[str]:
    """Lines of a Spark ``simpleString`` type, one struct field per line when it is too long.

    Nested structs (also inside ``array<...>``/``map<...>``) are opened the same way, so a
    field list reads like a DDL column list.

    Examples
    --------
    >>> for line in wrap_type("struct<id:bigint,lines:array<struct<sku:string,qty:int>>>", width=50):
    ...     print(line)
    struct<
      id: bigint,
      lines: array<struct<sku:string,qty:int>>
    >
    """
    pad = " " * indent
    if len(type_string) + indent <= width:
        return [pad + type_string]
    head, sep, rest = _open(type_string)
    if not sep:
        return [pad + type_string]  # no struct to open (e.g. a long decimal or map of scalars)
    inner, tail = rest[:-len(_closing(head))], _closing(head)
    lines = [pad + head + "<"]
    fields = split_top_level(inner)
    for n, f in enumerate(fields):
        comma = "," if n < len(fields) - 1 else ""
        name, colon, ftype = f.partition(":")
        if not colon:
            lines.extend(wrap_type(f + comma, width, indent + 2))
            continue
        label = f"{name}: "
        sub = wrap_type(ftype, width - len(label), indent + 2)
        sub[0] = " " * (indent + 2) + label + sub[0].lstrip()
        sub[-1] += comma
        lines.extend(sub)
    lines.append(pad + tail)
    return lines


def _open(t: str) -> tuple[str, str, str]:
    """Find the outermost ``struct<`` (possibly under array/map wrappers) to break at."""
    if t.startswith("struct<") and t.endswith(">"):
        return "struct", "<", t[len("struct<"):]
    for wrapper in ("array<", "map<"):
        if t.startswith(wrapper) and t.endswith(">"):
            inner = t[len(wrapper):-1]
            # map<k,v>: open the value type when it is a struct
            parts = split_top_level(inner) if wrapper == "map<" else [inner]
            last = parts[-1]
            if last.startswith(("struct<", "array<", "map<")):
                prefix = wrapper + (",".join(parts[:-1]) + "," if len(parts) > 1 else "")
                h, s, r = _open(last)
                if s:
                    return prefix + h, s, r + ">"
    return t, "", ""


def _closing(head: str) -> str:
    """The text closing ``head<`` (one ``>`` per opened wrapper)."""
    return ">" * (head.count("<") + 1)
