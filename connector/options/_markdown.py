"""The docs' option tables, generated from the option table when the site is built.

A page holds a marker line (``<!-- generated: options table -->``); the mkdocs hook
(``docs/hooks/generated.py``) replaces it with :func:`markdown_table`'s output, so no table is
ever copied by hand. ``python -m connector.options --markdown`` prints both tables;
``tests/unit/test_docs_site.py`` checks every option reaches the built page.
"""
from __future__ import annotations

from connector.options._table import (
    BATCH,
    FROM_REGISTRY,
    FUNCTIONS,
    JOBS,
    OPTIONS,
    STREAM,
    STRIP_HEADER,
    TO_REGISTRY,
    WRITE,
    Option,
)

__all__ = ["markdown_table", "markdown_tables", "expand_option_tables", "TABLES"]

#: Table name -> the marker line a page holds where the table goes.
TABLES = {
    "options": "<!-- generated: options table -->",
    "write": "<!-- generated: write options table -->",
    "functions": "<!-- generated: column function options table -->",
}
#: How the functions table names the scopes (``schema_id`` is ``strip_header``'s scope too).
_FUNCTION_NAMES = {FROM_REGISTRY: "from_registry", TO_REGISTRY: "to_registry", STRIP_HEADER: "strip_header, schema_id"}


def _jobs(o: Option) -> str:
    jobs = o.scope & JOBS
    return "all" if jobs == JOBS else ", ".join(s for s in (BATCH, STREAM, WRITE) if s in jobs)


def _function_rows(shown: list[Option]) -> list[str]:
    """One row per option a column function takes: its keyword argument, the functions, their default."""
    rows = []
    registry = [o for o in shown if o.key.startswith("schema.registry.") and not o.keyword and o.scope & FUNCTIONS]
    for o in shown:
        functions = [f for f in (FROM_REGISTRY, TO_REGISTRY, STRIP_HEADER) if f in o.scope]
        if not functions or o in registry:
            continue
        keyword = f"`{o.keyword}=`" if o.keyword else "`options=`"
        default = "; ".join(f"{_FUNCTION_NAMES[f]}: {d}" for f, d in o.defaults) if o.defaults else \
            (o.documented_default if o.scope & JOBS == frozenset() or o.default else "")
        refusals: dict[str, list[str]] = {}
        for f, _, why in o.refused:
            refusals.setdefault(why, []).append(_FUNCTION_NAMES[f])
        refused = "".join(f" Refused by {' and '.join(fs)}: {why}." for why, fs in refusals.items())
        rows.append(f"| `{o.name}` | {keyword} | {', '.join(_FUNCTION_NAMES[f] for f in functions)} | {default} "
                    f"| {o.doc}{refused} |")
        if o.keyword == "registry_url" and registry:
            rows.append(f"| `schema.registry.*` | `options=` | from_registry, to_registry | | Every other registry "
                        f"option of the first table ({len(registry)}: auth, TLS, vendor, timeouts...). |")
    return rows


def markdown_table(which: str) -> str:
    """One of the option tables as Markdown: ``"options"`` (read and common options, with the jobs
    that take each), ``"write"`` (write-only options) or ``"functions"`` (what the column functions
    take: keyword argument, functions, default).

    Examples
    --------
    >>> markdown_table("write").splitlines()[0]
    '| write option | default | meaning |'
    """
    if which not in TABLES:
        raise KeyError(f"no option table {which!r}: the tables are {sorted(TABLES)}")
    shown = [o for o in OPTIONS if not o.hidden]
    if which == "write":
        rows = [f"| `{o.name}` | {o.documented_default} | {o.doc} |" for o in shown
                if o.scope & JOBS == frozenset({WRITE})]
        head = ["| write option | default | meaning |", "| --- | --- | --- |"]
    elif which == "functions":
        rows = _function_rows(shown)
        head = ["| option | keyword argument | functions | default | meaning |", "| --- | --- | --- | --- | --- |"]
    else:
        rows = [f"| `{o.name}` | {_jobs(o)} | {o.documented_default} | {o.doc} |" for o in shown
                if o.scope & JOBS and o.scope & JOBS != frozenset({WRITE})]
        head = ["| option | jobs | default | meaning |", "| --- | --- | --- | --- |"]
    return "\n".join([*head, *rows])


def markdown_tables() -> str:
    """Every table, as ``python -m connector.options --markdown`` prints them."""
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
