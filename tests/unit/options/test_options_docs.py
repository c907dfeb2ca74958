"""The README's option tables are generated from the option table: stale README, failing test.
Regenerate with ``python -m connector.options --markdown`` and paste each table between its markers."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from connector.options import OPTIONS
from connector.options._markdown import TABLES, markdown_table, markdown_tables

ROOT = pathlib.Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("which", sorted(TABLES))
def test_readme_table_is_generated_from_the_option_table(which):
    begin, end = TABLES[which]
    assert README.count(begin) == 1 and README.count(end) == 1, f"markers of the {which} table"
    block = README[README.index(begin): README.index(end) + len(end)]
    assert block == markdown_table(which), (
        f"README's {which} table is stale: run `python -m connector.options --markdown`")


def test_every_documented_option_has_its_row_and_default():
    rows = {}
    for line in README.splitlines():
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


def test_markdown_command_prints_both_tables():
    out = subprocess.run([sys.executable, "-m", "connector.options", "--markdown"], cwd=ROOT, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}).stdout
    assert out == markdown_tables()
