"""The README's promises that can rot: short, the two commands, CI running its test command, and
links that lead somewhere. (Its examples run in tests/docs/test_snippets.py.)"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_short():
    assert len(README.splitlines()) <= 250, "README.md holds at most 250 lines: move the rest to docs/"


def test_readme_keeps_the_two_commands():
    assert "asyncapi-kafka demo" in README
    assert 'pip install -e ".[test]" && python -m pytest' in README


def test_ci_runs_the_readmes_test_command():
    command = re.search(r'pip install -e "\.\[test\]" && (python -m pytest[^\n`]*)', README).group(1).strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    runs = [line.strip() for line in ci.splitlines() if line.strip().startswith("python -m pytest")]
    assert runs and all(r.startswith(command) for r in runs), (command, runs)
    assert 'pip install -q -e ".[test]"' in ci


def test_readme_links_lead_to_files():
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links into the docs"
    assert not [t for t in local if not (ROOT / t).exists()]
