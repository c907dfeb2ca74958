"""Every module's docstring examples run (issue 22): the examples in the code are part of the docs,
and a stale one is a bug. Modules whose examples use ``spark`` get the session's SparkSession."""
from __future__ import annotations

import doctest
import importlib
import io
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _modules() -> list[str]:
    names = ["pyspark_asyncapi_kafka"]
    for pkg in ("wireformat", "registry", "connector"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__main__":
                continue
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("name", _modules())
def test_module_examples_run(name, request):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name) if t.examples]
    if not tests:
        return
    globs = {}
    if any("spark." in ex.source and not ex.options.get(doctest.SKIP) for t in tests for ex in t.examples):
        globs["spark"] = request.getfixturevalue("spark")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    for t in tests:
        t.globs.update(globs)
        runner.run(t, out=out.write)
    assert runner.failures == 0, out.getvalue()
