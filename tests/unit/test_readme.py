"""The README's promises that can rot: every option documented, the two commands present."""
import pathlib
import re

from connector.options import OPTION_DOCS

README = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_every_option_is_in_the_readme_table():
    documented = {m.lower() for m in re.findall(r"^\| `([^`]+)`", README, flags=re.M)}
    expanded = set()
    for name in documented:  # "a.b.c / .d" rows document several names
        expanded.add(name)
    missing = []
    for name in OPTION_DOCS:
        if name == "schema.registry.<setting>":
            continue
        if name.lower() not in expanded and name.lower() not in README.lower():
            missing.append(name)
    assert not missing, f"options missing from README: {missing}"


def test_every_registry_option_is_in_the_readme():
    from registry import REGISTRY_OPTION_NAMES

    text = README.lower()
    missing = []
    for name in REGISTRY_OPTION_NAMES:
        last = name.rsplit(".", 1)[-1]
        if name not in text and f".{last}" not in text:
            missing.append(name)
    assert not missing, f"registry options missing from README: {missing}"


def test_readme_keeps_the_two_commands():
    assert "asyncapi-kafka demo" in README
    assert 'pip install -e ".[test]" && python -m pytest' in README
