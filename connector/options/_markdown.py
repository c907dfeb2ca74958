"""The docs' option tables, generated from the option table when the site is built.

A page holds a marker line (``<!-- generated: options table -->``); the mkdocs hook
(``docs/hooks/generated.py``) replaces it with :func:`markdown_table`'s output, so no table is
ever copied by hand. ``python -m connector.options --markdown`` prints both tables;
``tests/unit/test_docs_site.py`` checks every option reaches the built page.
"""
from __future__ import annotations

from connector.options._table import ALL, BATCH, OPTIONS, STREAM, WRITE, Option

__all__ = ["markdown_table", "markdown_tables", "expand_option_tables", "TABLES"]

#: Table name -> the marker line a page holds where the table goes.
TABLES = {
    "options": "<!-- generated: options table -->",
    "write": "<!-- generated: write options table -->",
}


def _jobs(o: Option) -> str:
    return "all" if o.scope == ALL else ", ".join(s for s in (BATCH, STREAM, WRITE) if s in o.scope)


def markdown_table(which: str) -> str:
    """One of the option tables as Markdown: ``"options"`` (read and common options, with the jobs
    that take each) or ``"write"`` (write-only options).

    Examples
    --------
    >>> markdown_table("write").splitlines()[0]
    '| write option | default | meaning |'
    """
    if which not in TABLES:
        raise KeyError(f"no option table {which!r}: the tables are {sorted(TABLES)}")
    shown = [o for o in OPTIONS if not o.hidden]
    if which == "write":
        rows = [f"| `{o.name}` | {o.documented_default} | {o.doc} |" for o in shown if o.scope == frozenset({WRITE})]
        head = ["| write option | default | meaning |", "| --- | --- | --- |"]
    else:
        rows = [f"| `{o.name}` | {_jobs(o)} | {o.documented_default} | {o.doc} |" for o in shown
                if o.scope != frozenset({WRITE})]
        head = ["| option | jobs | default | meaning |", "| --- | --- | --- | --- |"]
    return "\n".join([*head, *rows])


def markdown_tables() -> str:
    """Both tables, as ``python -m connector.options --markdown`` prints them."""
    return "\n\n".join(markdown_table(w) for w in TABLES) + "\n"


def expand_option_tables(text: str) -> str:
    """``text`` with each marker line of :data:`TABLES` replaced by its table.

    Examples
    --------
    >>> expand_option_tables("# Options\\n\\n<!-- generated: write options table -->\\n").splitlines()[2]
    '| write option | default | meaning |'
    """
    lines = []
    for line in text.splitlines(keepends=True):
        which = next((w for w, marker in TABLES.items() if line.strip() == marker), None)
        lines.append(line if which is None else markdown_table(which) + "\n")
    return "".join(lines)
