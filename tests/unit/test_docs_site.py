"""The docs site without building it (``.ci/run`` builds it with ``mkdocs build --strict``): every
example is marked, the nav names pages that exist, the generated parts expand, and the LICENSE
is Apache-2.0's text as published."""
from __future__ import annotations

import hashlib
import importlib.util
import pathlib
import re

import pytest
import yaml

from tests.docs.snippets import MarkerError, collect, parse

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _hook():
    spec = importlib.util.spec_from_file_location("docs_hook", ROOT / "docs" / "hooks" / "generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_files(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [f for item in node for f in _nav_files(item)]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _nav_files(value)]
    return []


def test_every_example_of_the_readme_and_the_pages_is_marked():
    snippets = collect()
    assert {s.page for s in snippets} >= {"README.md", "docs/reading.md", "docs/peek.md"}
    runnable = [s for s in snippets if not s.skip]
    assert {"spark", "kafka"} <= {n for s in runnable for n in s.needs}
    assert all(s.skip.strip() for s in snippets if s.skip)


@pytest.mark.parametrize("text, error", [
    ("```python\nprint(1)\n```\n", "without a marker"),
    ("<!-- snippet: skip -->\n```bash\nls\n```\n", "says why"),
    ("<!-- snippet: needs=gpu -->\n```python\nx = 1\n```\n", "needs= takes"),
    ("<!-- snippet: needs=none fast -->\n```python\nx = 1\n```\n", "unknown word"),
    ("<!-- snippet: continue -->\n```python\nx = 1\n```\n", "says what it needs"),
    ("<!-- snippet: needs=none continue -->\n```python\nx = 1\n```\n", "'continue' needs"),
    ("<!-- snippet: needs=none -->\n```python\nx = 1\n", "never closes"),
])
def test_bad_markers_are_refused(text, error):
    with pytest.raises(MarkerError, match=error):
        parse(text, "page.md")


def test_markers_parse_into_what_the_runner_needs():
    text = ('Intro.\n\n<!-- snippet: needs=spark,kafka -->\n```python\nx = 1\n```\n\n'
            '```text\nnot run\n```\n\n- a list item:\n\n  <!-- snippet: needs=kafka exit=2 continue -->\n'
            '  ```python\n  y = x\n  ```\n\n<!-- snippet: skip reason="why not" -->\n```bash\nrm -rf /\n```\n')
    first, second, third = parse(text, "p.md")
    assert (first.line, first.needs, first.code) == (4, frozenset({"spark", "kafka"}), "x = 1\n")
    assert (second.needs, second.exit, second.cont, second.code) == (frozenset({"kafka"}), 2, True, "y = x\n")
    assert (third.skip, third.lang) == ("why not", "bash")


def test_the_nav_names_pages_that_exist():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    files = _nav_files(config["nav"])
    assert len(files) == len(set(files))
    assert not [f for f in files if not (ROOT / "docs" / f).is_file()]
    assert config["theme"]["name"] == "material" and config["strict"] is True
    assert config["hooks"] == ["docs/hooks/generated.py"]


def test_generated_parts_expand():
    hook = _hook()
    options = hook.on_page_markdown((ROOT / "docs" / "options.md").read_text(encoding="utf-8"), None, None, None)
    assert "<!-- generated:" not in options and "| `asyncapi` | all | (required) |" in options
    cli = hook.expand((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    for command in ("demo", "inspect", "check", "sandbox", "peek"):
        assert f"### asyncapi-kafka {command}\n\n```text\nusage: asyncapi-kafka {command}" in cli


def test_no_page_holds_a_copied_option_table():
    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        assert "| option | jobs | default | meaning |" not in page.read_text(encoding="utf-8"), page


def test_license_is_the_apache_2_text_unmodified():
    # The MD5 of https://www.apache.org/licenses/LICENSE-2.0.txt, which many packages ship verbatim.
    assert hashlib.md5((ROOT / "LICENSE").read_bytes()).hexdigest() == "3b83ef96387f14655fc854ddc3c6bd57"
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'license = "Apache-2.0"' in pyproject


def test_changelog_keeps_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog") and "## [Unreleased]" in text
    assert "keepachangelog.com" in text


def test_ci_builds_the_site_strictly_with_the_docs_extra():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -q -e ".[docs]"' in ci and "mkdocs build --strict" in ci
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs_extra = re.search(r"^docs = \[(.*)\]$", pyproject, re.M).group(1)
    assert all(f'"{name}' in docs_extra for name in ("mkdocs>", "mkdocs-material", "mkdocstrings[python]"))


def test_the_pipelines_example_is_a_valid_spec():
    spec = yaml.safe_load((ROOT / "examples" / "pipelines" / "spark-pipeline.yml").read_text(encoding="utf-8"))
    assert spec["storage"].startswith("file:///")  # PySpark wants an absolute URI
    assert [lib["glob"]["include"] for lib in spec["libraries"]] == ["transformations/**"]
    source = (ROOT / "examples" / "pipelines" / "transformations" / "orders.py").read_text(encoding="utf-8")
    compile(source, "orders.py", "exec")
    assert 'format="asyncapi-kafka"' in source and '@dp.table' in source
