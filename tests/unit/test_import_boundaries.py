"""The layering of ARCHITECTURE.md, checked by walking every module's imports.

wireformat: stdlib, numpy, pyarrow only. registry: + requests, boto3/botocore, wireformat.
connector.asyncapi/decode/kafka: no pyspark. Only connector.spark, connector.cli and the
top-level pyspark_asyncapi_kafka module import pyspark.
"""
from __future__ import annotations

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}

ALLOWED = {
    "wireformat": STDLIB | {"numpy", "pyarrow", "wireformat"},
    "registry": STDLIB | {"numpy", "pyarrow", "wireformat", "registry", "requests", "urllib3", "boto3", "botocore"},
}
NO_PYSPARK = ("connector/asyncapi", "connector/decode", "connector/kafka", "connector/errors.py")


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_its_layer_allows(package):
    bad = {}
    for path in (ROOT / package).rglob("*.py"):
        extra = _imports(path) - ALLOWED[package]
        if extra:
            bad[str(path.relative_to(ROOT))] = sorted(extra)
    assert not bad, f"{package} imports outside its layer: {bad}"


def test_only_the_spark_layer_imports_pyspark():
    offenders = []
    for rel in NO_PYSPARK:
        target = ROOT / rel
        paths = [target] if target.is_file() else list(target.rglob("*.py"))
        for path in paths:
            if "pyspark" in _imports(path):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"modules that must not import pyspark do: {offenders}"


def test_lower_layers_never_import_connector():
    for package in ("wireformat", "registry"):
        for path in (ROOT / package).rglob("*.py"):
            assert "connector" not in _imports(path), path
