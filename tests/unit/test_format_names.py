"""Nothing outside a format's own package branches on which format it is (issue 36, item 2).

What differs between Avro, Protobuf and JSON Schema is a hook of their ``PayloadFormat``
(``connector/formats/core/_format.py``); every other module asks the format it was given,
through ``connector.formats``' registry, and never compares a format's name. Adding a format
is then adding one package.

The check parses every module of ``connector/`` outside the format packages and fails on a
comparison (``==``, ``!=``, ``in``, ``not in``, ``is``, a ``match`` case) one of whose sides is a
format-name string (``"avro"``, ``"protobuf"``, ``"json"``, the registry's ``"AVRO"``...), a
format object (``AVRO``, ``PROTOBUF``, ``JSON_SCHEMA``) or a ``SchemaType`` member, and on a dict
literal keyed by format names (a branch written as a table).

Not scanned: ``connector/testing`` (stand-ins for the peers: the registry server answers by the
REST API's ``schemaType`` as Confluent's own server does) and the lower layer ``registry``, which
owns the schema-type spellings of the REST protocol (``SchemaType``) and cannot import formats.
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORMAT_PACKAGES = ("connector/formats/avro/", "connector/formats/protobuf/", "connector/formats/json_schema/")
NOT_SCANNED = ("connector/testing/",)

# Every spelling a format goes by: the formats' own names and the registry's schema types
# (registry._types._TYPE_ALIASES), compared case-insensitively.
FORMAT_NAMES = frozenset({"avro", "protobuf", "proto", "json", "jsonschema", "json_schema", "json-schema"})
FORMAT_OBJECTS = frozenset({"AVRO", "PROTOBUF", "JSON_SCHEMA"})


def _names_a_format(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.strip().lower() in FORMAT_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_format(e) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return any(_names_a_format(a) for a in node.args)
    if isinstance(node, ast.Name):
        return node.id in FORMAT_OBJECTS
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # SchemaType.AVRO, AVRO.name
        return node.value.id == "SchemaType" or node.value.id in FORMAT_OBJECTS
    return False


def format_branches(source: str, filename: str = "<source>") -> list[str]:
    """``"line: code"`` for each comparison with a format name in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Compare) and any(_names_a_format(s) for s in (node.left, *node.comparators)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.MatchValue) and _names_a_format(node.value):
            found.append(f"{node.lineno}: case {ast.unparse(node)}")
        elif isinstance(node, ast.Dict) and any(k is not None and isinstance(k, ast.Constant) and _names_a_format(k)
                                                for k in node.keys):
            found.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def _scanned() -> list[pathlib.Path]:
    out = []
    for path in sorted((ROOT / "connector").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(FORMAT_PACKAGES + NOT_SCANNED):
            out.append(path)
    return out


def test_no_module_outside_the_format_packages_compares_a_format_name():
    bad = [f"{path.relative_to(ROOT).as_posix()}:{hit}"
           for path in _scanned() for hit in format_branches(path.read_text(encoding="utf-8"), str(path))]
    assert not bad, ("format-specific branches outside the format packages (make it a hook of "
                     "connector.formats.core.PayloadFormat and ask payload_format(name)):\n  " + "\n  ".join(bad))


def test_the_scan_covers_the_callers_and_skips_the_formats():
    scanned = {p.relative_to(ROOT).as_posix() for p in _scanned()}
    assert {"connector/schema/rules/_fields.py", "connector/asyncapi/_schema.py", "connector/formats/_decoder.py",
            "connector/formats/core/_format.py", "connector/cli/_sandbox_data.py"} <= scanned
    assert not any(p.startswith(FORMAT_PACKAGES) for p in scanned)


def test_the_check_itself_finds_branches_and_only_those():
    src = '''
if fmt == "avro": pass
if "protobuf" != spec.format: pass
if rules.fmt in ("json", "xml"): pass
if stype == "AVRO": pass
if t is SchemaType.PROTOBUF: pass
if f is JSON_SCHEMA or f.name == AVRO.name: pass
match fmt:
    case "json_schema" | "other": pass
table = {"avro": 1, "json": 2}
'''
    assert sorted((hit.split(":")[0] for hit in format_branches(src)), key=int) == ["2", "3", "4", "5", "6", "7", "7", "9", "10"]
    fine = '''
if s.get("format") == "date-time": pass
if kind == "record" or kind == "enum": pass
if mode is Mode.PERMISSIVE or framing is Framing.CONFLUENT: pass
if payload_format(fmt).indexed_messages: pass
args = {"format": "json"}
call(format="avro")
'''
    assert format_branches(fine) == []
