"""The docs' option tables are generated from the option table when the site is built: every
documented option reaches the built page with its default, and nothing is copied by hand."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from connector.options._table import OPTIONS
from connector.options._markdown import expand_option_tables
from connector.options._markdown import TABLES, markdown_table, markdown_tables

ROOT = pathlib.Path(__file__).resolve().parents[3]
PAGE = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("which", sorted(TABLES))
def test_the_options_page_holds_each_marker_once_and_no_copied_table(which):
    assert PAGE.count(TABLES[which]) == 1, f"docs/options.md: the {which} table's marker"
    assert markdown_table(which).splitlines()[0] not in PAGE, "a table copied into the page by hand"


def test_every_documented_option_reaches_the_built_page_with_its_default():
    rows = {}
    for line in expand_option_tables(PAGE).splitlines():
        m = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if m:
            cells = [c.strip() for c in m.group(2).split("|")]
            rows.setdefault(m.group(1), cells)
    for o in OPTIONS:
        if o.hidden:
            assert o.name not in rows
            continue
        assert o.name in rows, o.name
        assert o.documented_default == rows[o.name][-2], o.name  # the default is the second-to-last column


def test_every_registry_option_is_documented():
    from registry._config import REGISTRY_OPTION_NAMES

    built = expand_option_tables(PAGE)
    assert not [n for n in REGISTRY_OPTION_NAMES if f"`{n}`" not in built]


def test_markers_elsewhere_are_left_alone():
    text = "intro\n<!-- generated: options table --> with words after it\n"
    assert expand_option_tables(text) == text


def test_markdown_command_prints_both_tables():
    out = subprocess.run([sys.executable, "-m", "connector.options", "--markdown"], cwd=ROOT, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}).stdout
    assert out == markdown_tables()
