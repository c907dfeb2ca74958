"""What is read from ``.proto`` source text without compiling it (AsyncAPI documents: the
message a payload names is chosen before any import of the file can be resolved)."""
from __future__ import annotations

import re

__all__ = ["top_level_messages"]

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", re.S)


def top_level_messages(proto: str) -> list[str]:
    """Names of the top-level ``message`` declarations of a ``.proto`` source, in order.

    Examples
    --------
    >>> top_level_messages('message A { message B {} } /* message C {} */ message D {}')
    ['A', 'D']
    """
    text = _COMMENTS.sub(lambda m: " " if m.group(0)[0] == "/" else '""', proto)
    names, depth = [], 0
    for m in re.finditer(r"[{}]|\bmessage\s+([A-Za-z_][A-Za-z0-9_]*)", text):
        tok = m.group(0)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            names.append(m.group(1))
    return names
