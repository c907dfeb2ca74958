"""Facts that once had two or three owners have one (issue 22); these checks fail if a second copy
creeps back. Each names where the fact lives."""
from __future__ import annotations

import ast
import dataclasses
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PRODUCT = [p for pkg in ("wireformat", "registry", "connector") for p in sorted((ROOT / pkg).rglob("*.py"))]


def _assignments(name: str) -> list[str]:
    """Modules that bind ``name`` at module level (an assignment, not an import)."""
    out = []
    for path in PRODUCT:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                out.append(path.relative_to(ROOT).as_posix())
    return out


def test_constants_are_defined_once():
    assert _assignments("RESCUED_COLUMN") == ["connector/formats/core/_evolution.py"]
    assert _assignments("EARLIEST") == _assignments("LATEST") == ["connector/kafka/_offsets.py"]
    assert _assignments("EVOLUTION_MODES") == []  # the EvolutionMode enum is the one list
    assert _assignments("VENDORS") == ["registry/_config.py"]  # derived from registry.Vendor


def test_limits_have_one_owner():
    from wireformat import Limits

    from connector.formats import DecodeOptions

    fields = {f.name for f in dataclasses.fields(DecodeOptions)}
    assert "limits" in fields and not fields & {f.name for f in dataclasses.fields(Limits)}


def test_registry_options_are_declared_by_the_registry_only():
    """connector/options generates its schema.registry.* rows from registry.REGISTRY_OPTIONS."""
    import re

    for rel in ("connector/options/_table.py", "connector/options/_parse.py"):
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert not re.search(r'"schema\.registry\.[a-z]', text), f"{rel} names a registry option itself"
    assert "REGISTRY_OPTIONS" in (ROOT / "connector/options/_table.py").read_text(encoding="utf-8")


def test_owned_kafka_settings_and_offset_precedence_have_one_owner():
    """The conf builder refuses owned settings; the option parser alone applies Spark's precedence."""
    parse = (ROOT / "connector/options/_parse.py").read_text(encoding="utf-8")
    assert "OWNED_KAFKA_SETTINGS" not in parse and "OWNED_PRODUCER_SETTINGS" not in parse
    offsets = (ROOT / "connector/kafka/_offsets.py").read_text(encoding="utf-8")
    assert '"offsetsbytimestamp"' not in offsets and "_PRECEDENCE" in parse


def test_payload_format_facts_and_the_text_rule_have_one_owner():
    """A format names its facts as class keywords of ``formats.core.PayloadFormat``, which holds
    their defaults and the "binary payloads need a schema's text" rule of ``reader``/``encoder``;
    formats implement the hooks (``_reader``, ``_encoder``) and bind no fact in their bodies."""
    facts = {"name", "title", "registry_type", "indexed_messages", "binary_payloads"}
    owner = "connector/formats/core/_format.py"
    formats = []
    for path in PRODUCT:
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel != owner:
            assert "has no text" not in text, f"{rel} checks a schema's text itself (PayloadFormat.reader owns it)"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "PayloadFormat" for b in node.bases):
                formats.append(node.name)
                bound = {t.id for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                         for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
                defined = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                assert not bound & facts, f"{rel} {node.name} binds {bound & facts} (class keywords instead)"
                assert not defined & {"reader", "encoder"}, f"{rel} {node.name} overrides the base's template"
    assert sorted(formats) == ["AvroFormat", "JsonSchemaFormat", "ProtobufFormat"]
