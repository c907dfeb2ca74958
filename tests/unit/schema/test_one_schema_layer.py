"""Every path resolves schemas through connector.schema (issue 22): the source, the sink, the column
functions and the CLI build no decoder or encoder and ask the registry for no schema themselves.
A second way to resolve schemas would let a feature land on one path and miss the others."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]
# Calls that turn options into schemas: only the schema layer (and the formats it drives) makes them.
SCHEMA_CALLS = {"build_decoder", "build_multi_decoder", "build_encoder", "subject_name", "get_latest", "get_version",
                "get_schema_by_id", "get_schema_by_guid", "get_schema_by_global_id", "get_schema_by_content_id",
                "register_schema", "record_name"}
OWNERS = ("connector/schema/", "connector/formats/", "connector/testing/")


def _calls(path: pathlib.Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in SCHEMA_CALLS:
                out.append((node.lineno, name))
    return out


def test_only_the_schema_layer_resolves_schemas():
    offenders = []
    for path in sorted((ROOT / "connector").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(OWNERS):
            continue
        offenders += [f"{rel}:{line}: {name}()" for line, name in _calls(path)]
    assert not offenders, "schema resolution outside connector.schema:\n  " + "\n  ".join(offenders)


def test_every_path_imports_the_schema_layer():
    """The source, the sink, the column functions and the CLI each reach connector.schema."""
    users = {"connector/read/_setup.py", "connector/write/_setup.py", "connector/write/_values.py", "connector/spark/functions.py",
             "connector/cli/_inspect.py", "connector/cli/_check.py", "connector/cli/_sandbox.py"}
    for rel in users:
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert "from connector.schema import" in text, rel


def test_the_check_sees_a_violation():
    import textwrap

    tmp = ROOT / "tests" / "unit" / "schema" / "_probe_violation.py"
    tmp.write_text(textwrap.dedent("""
        def f(client, spec):
            client.get_latest("s")
            return build_decoder(spec)
    """))
    try:
        assert [n for _, n in _calls(tmp)] == ["get_latest", "build_decoder"]
    finally:
        tmp.unlink()
