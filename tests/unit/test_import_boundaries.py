"""The seams between the packages, checked statically by walking every module's imports.

Layering (docs/internals.md): wireformat (stdlib, numpy, pyarrow) <- registry (+ requests,
boto3/botocore, wireformat) <- connector. connector.asyncapi/formats/kafka/options/read/write import no pyspark:
only connector.spark, connector.cli and the top-level pyspark_asyncapi_kafka module do.

Within the project: no import cycles between modules (function-level and TYPE_CHECKING
imports count: a cycle hidden inside a function is still two modules that cannot be
understood apart), and a private name (a ``_module`` or a ``_symbol``) is imported only from
the importer's own package; what another package needs goes through its ``__init__.__all__``.

The local stand-ins in ``connector.testing`` (registry server, mock cluster, tansu) are for tests,
the demo and the sandbox only: no product module imports them, only ``connector.cli`` may.
"""
from __future__ import annotations

import ast
import functools
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
PACKAGES = ("wireformat", "registry", "connector")

ALLOWED = {
    "wireformat": STDLIB | {"numpy", "pyarrow", "wireformat"},
    "registry": STDLIB | {"numpy", "pyarrow", "wireformat", "registry", "requests", "urllib3", "boto3", "botocore"},
}
NO_PYSPARK = ("connector/asyncapi", "connector/formats", "connector/kafka", "connector/options", "connector/read",
              "connector/write", "connector/testing", "connector/errors.py")
# The test stand-ins and the only product package allowed to start them (demo, sandbox).
TESTING = "connector.testing"
TESTING_USERS = ("connector.cli",)

# Violations in modules other work in progress is rewriting (issue 13), allowed until those
# branches are merged; the lead removes each entry once its module is fixed. Nothing else may be
# added here: fix the import instead (export the name from the package's __init__.__all__).
# "private: A -> B" = module A imports the private module B or a private name of B across packages;
# "cycle: A, B, ..." = the modules (sorted) of one import cycle.
KNOWN_VIOLATIONS: frozenset[str] = frozenset()


@functools.cache
def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(path: pathlib.Path) -> set[str]:
    """Top-level names of every absolute import in ``path`` (function-level ones included)."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


# -- the project's module graph ---------------------------------------------------------------
def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    """Dotted module name -> (path, is a package) for every module of the project's packages."""
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _own_package(module: str, mods) -> str:
    return module if mods[module][1] else module.rpartition(".")[0]


def _resolve(name: str, mods) -> str | None:
    """The project module ``name`` lives in (its longest prefix that is a module), or None."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _edges(module: str, mods) -> list[tuple[str, str | None]]:
    """(imported project module, imported name or None) for each import in ``module``."""
    path, _ = mods[module]
    package = _own_package(module, mods)
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package, up level-1 packages
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [(f"{source}.{a.name}", None) if f"{source}.{a.name}" in mods else (source, a.name)
                       for a in node.names]
        else:
            continue
        for name, symbol in targets:
            target = _resolve(name, mods)
            if target is not None and target != module:
                out.append((target, symbol))
    return out


def _graph() -> tuple[dict[str, set[str]], set[str]]:
    """The import graph, and the cross-package private imports as ``"private: A -> B"``."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    private: set[str] = set()
    for module in mods:
        graph[module] = set()
        for target, symbol in _edges(module, mods):
            graph[module].add(target)
            if _own_package(target, mods) == _own_package(module, mods):
                continue
            if any(_is_private(p) for p in target.split(".")) or (symbol is not None and _is_private(symbol)):
                private.add(f"private: {module} -> {target}")
    return graph, private


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _path_through(component: list[str], graph) -> str:
    """One concrete cycle inside ``component``, for the failure message (a -> b -> a)."""
    members = set(component)
    start = component[0]
    parents = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while parents[path[-1]] is not None:
                    path.append(parents[path[-1]])
                return " -> ".join([*reversed(path), start])
            if child not in parents:
                parents[child] = node
                queue.append(child)
    return ", ".join(component)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _testing_importers(graph: dict[str, set[str]]) -> list[str]:
    """``"A -> B"`` for each product module A that imports a module B of ``connector.testing``."""
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                  if _within(t, TESTING) and not _within(m, TESTING)
                  and not any(_within(m, user) for user in TESTING_USERS))


# -- the tests ---------------------------------------------------------------------------------
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


def test_no_module_imports_a_higher_layer_even_relatively():
    rank = {pkg: i for i, pkg in enumerate(PACKAGES)}  # wireformat < registry < connector
    graph, _ = _graph()
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                    if rank[t.split(".")[0]] > rank[m.split(".")[0]])
    assert not upward, f"imports against the layering: {upward}"


def test_no_import_cycles_between_modules():
    graph, _ = _graph()
    cycles = [c for c in _cycles(graph) if f"cycle: {', '.join(c)}" not in KNOWN_VIOLATIONS]
    assert not cycles, "import cycles (move what both sides need into a third module):\n" + "\n".join(
        f"  {_path_through(c, graph)}   [modules: {', '.join(c)}]" for c in cycles)


def test_private_names_are_imported_only_within_their_package():
    _, private = _graph()
    bad = sorted(private - KNOWN_VIOLATIONS)
    assert not bad, ("private modules/names imported from another package (export them from that "
                     "package's __init__.__all__ instead):\n  " + "\n  ".join(bad))


def test_product_modules_never_import_the_test_stand_ins():
    graph, _ = _graph()
    graph["pyspark_asyncapi_kafka"] = {
        name for name in _dotted_imports(ROOT / "pyspark_asyncapi_kafka.py") if _within(name, TESTING)}
    bad = _testing_importers(graph)
    assert not bad, ("product modules import connector.testing (a test/demo stand-in; pass the "
                     "server's address in instead):\n  " + "\n  ".join(bad))


def test_the_stand_ins_ship_with_the_cli():
    """The sandbox and demo commands start them at run time: they live inside an installed package."""
    assert (ROOT / "connector" / "testing" / "__init__.py").is_file()
    assert _graph()[0].get("connector.cli._sandbox", set()) & {
        "connector.testing", "connector.testing._embedded", "connector.testing._registry_server"}


def _dotted_imports(path: pathlib.Path) -> set[str]:
    """Full dotted names of every absolute import in ``path`` (``from a.b import c`` gives a.b and a.b.c)."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_checks_themselves_catch_violations():
    """The graph code finds a two-module cycle and a private import in a synthetic graph."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _path_through(["a", "b", "c"], {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == "a -> b -> c -> a"
    assert _cycles({"a": {"b"}, "b": set()}) == []
    mods = {"p": (None, True), "p._x": (None, False), "q": (None, True), "q.m": (None, False)}
    assert _resolve("p._x.thing", mods) == "p._x" and _resolve("numpy", mods) is None
    assert _own_package("p", mods) == "p" and _own_package("q.m", mods) == "q"
    graph = {"connector.kafka._x": {"connector.testing._embedded"}, "connector.cli._demo": {"connector.testing"},
             "connector.testing._tansu": {"connector.testing._embedded", "connector.errors"},
             "connector.testingfoo": {"connector.errors"}, "registry._y": {"connector.testing"}}
    assert _testing_importers(graph) == ["connector.kafka._x -> connector.testing._embedded",
                                         "registry._y -> connector.testing"]
