"""Every module's docstring examples run (issue 22): the examples in the code are part of the docs,
and a stale one is a bug. Modules whose examples use ``spark`` get the session's SparkSession (and the
``jvm`` marker, read from the source text at collection so the quick subset leaves them out)."""
from __future__ import annotations

import doctest
import importlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


#: An example that uses the ``spark`` session (``pyspark.sql`` alone needs no JVM).
_USES_SPARK = re.compile(r"(?<![\w.])spark\.")
_SPARK_EXAMPLE = re.compile(r"^\s*(?:>>>|\.\.\.) (?!.*doctest: \+SKIP).*(?<![\w.])spark\.", re.M)


def _modules() -> list:
    names = [pytest.param("pyspark_asyncapi_kafka")]
    for pkg in ("wireformat", "registry", "connector"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__main__" or parts[:2] == ["connector", "examples"]:
                continue  # examples/ holds documents and a pipeline's definitions, run by their own tests
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            needs_spark = bool(_SPARK_EXAMPLE.search(path.read_text(encoding="utf-8")))
            names.append(pytest.param(name, marks=[pytest.mark.jvm] if needs_spark else [], id=name))
    return names


@pytest.mark.parametrize("name", _modules())
def test_module_examples_run(name, request):
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name) if t.examples]
    if not tests:
        return
    globs = {}
    if any(_USES_SPARK.search(ex.source) and not ex.options.get(doctest.SKIP) for t in tests for ex in t.examples):
        globs["spark"] = request.getfixturevalue("spark")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    for t in tests:
        t.globs.update(globs)
        runner.run(t, out=out.write)
    assert runner.failures == 0, out.getvalue()
