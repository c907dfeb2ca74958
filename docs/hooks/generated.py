"""mkdocs hook: the parts of pages that are generated from the code when the site is built.

- ``<!-- generated: options table -->`` / ``<!-- generated: write options table -->`` /
  ``<!-- generated: column function options table -->``: the option tables, from the option table
  (``connector.options.expand_option_tables``);
- ``<!-- generated: cli help -->``: the ``--help`` of ``asyncapi-kafka`` and each sub-command,
  from the command's own argparse parser.

``tests/unit/test_docs_site.py`` calls :func:`expand` on the pages as the build does.
"""
from __future__ import annotations

import argparse
import os

CLI_MARKER = "<!-- generated: cli help -->"


def cli_help() -> str:
    """The help of the command and of every sub-command, as Markdown."""
    from connector.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: the same text on every machine
    try:
        parser = build_parser()
        parts = [f"### asyncapi-kafka\n\n```text\n{parser.format_help().rstrip()}\n```\n"]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, command in sub.choices.items():
            parts.append(f"### asyncapi-kafka {name}\n\n```text\n{command.format_help().rstrip()}\n```\n")
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def expand(markdown: str) -> str:
    """A page's Markdown with every generated part filled in."""
    from connector.options._markdown import expand_option_tables

    text = expand_option_tables(markdown)
    if CLI_MARKER in text:
        text = "\n".join(cli_help() if line.strip() == CLI_MARKER else line for line in text.split("\n"))
    return text


def on_page_markdown(markdown, page, config, files):  # mkdocs calls it with these arguments
    return expand(markdown)
