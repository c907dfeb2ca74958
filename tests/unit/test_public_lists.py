"""Each package's ``__init__.__all__`` is the list of names other product packages import from it.

A package's public list is a promise to the rest of the code: what is in it may be relied on from
outside, what is not may change with the package alone. So, for every package of ``wireformat``,
``registry`` and ``connector`` (each directory with an ``__init__.py``), computed by walking every
product module's imports (function-level and ``TYPE_CHECKING`` ones included):

- ``__all__`` holds no name that no other product package imports, unless the name is a documented
  entry point (a ``:::`` line of ``docs/api/*.md``, or :data:`ENTRY_POINTS` for the few the API
  pages name in prose);
- every name another package imports from a package is in its ``__all__``;
- a package's ``__init__`` binds no public name from the project's modules that is not in
  ``__all__``: what only the package itself uses is imported from its private module, not
  re-exported (tests do the same: ``from connector.kafka._conf import ...``).

Reaching into another package's private ``_module`` is already refused by
``test_import_boundaries.py`` (``test_private_names_are_imported_only_within_their_package``).
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re

import pytest

from tests.unit.test_import_boundaries import PACKAGES, ROOT, _tree
from tests.unit.test_import_boundaries import _modules as _package_modules

# Product modules outside the packages that import from them.
TOP_LEVEL_MODULES = ("pyspark_asyncapi_kafka.py",)

# Packages other work in progress is rewriting (issue 36 item 1): their lists are computed and
# reported, but a mismatch does not fail. The lead removes this once the kernels branch is merged.
# User-facing names the API pages document in prose rather than with a ``:::`` line.
ENTRY_POINTS: dict[str, frozenset[str]] = {
    # docs/api/read.md: "connector.peek is the same function as connector.read.peek"; the version.
    "connector": frozenset({"peek", "__version__"}),
    # docs/reading.md, docs/api/datasource.md: the DataSource class under its public name.
    "connector.spark": frozenset({"AsyncApiKafkaDataSource"}),
    # The local stand-ins are a user-facing package of their own: tests, the demo and the sandbox
    # start them (its module docstring documents each; docs/registries.md, docs/testing.md).
    "connector.testing": frozenset({"RegistryServer", "KarapaceServer", "find_karapace", "TokenServer",
                                    "EmbeddedKafka", "MOCK_PARTITIONS", "TansuBroker", "find_tansu",
                                    "NoidaBroker", "find_noida"}),
}


@functools.cache
def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    """Dotted module name -> (path, is a package) for every product module."""
    mods = _package_modules()
    for name in TOP_LEVEL_MODULES:
        mods[name.removesuffix(".py")] = (ROOT / name, False)
    return mods


def _own_package(module: str) -> str:
    return module if _modules()[module][1] else module.rpartition(".")[0]


def _packages() -> list[str]:
    return sorted(m for m, (_, is_pkg) in _modules().items() if is_pkg)


def _declared_all(package: str) -> list[str]:
    """The ``__all__`` of ``package``'s ``__init__`` ([] when it has none): a literal list, and
    ``__all__ += m.__all__`` of a module ``m`` it imported (``from P import m [as x]``), which
    re-exports that module's own literal list (``registry.errors``)."""
    return _all_of(package)


def _all_of(module: str) -> list[str]:
    """The ``__all__`` a module declares (see :func:`_declared_all`)."""
    names: list[str] = []
    aliases: dict[str, str] = {}  # local name -> the project module it stands for
    for node in _tree(_modules()[module][0]).body:
        if isinstance(node, ast.ImportFrom):
            source = _source_of(node, module)
            for alias in node.names:
                if f"{source}.{alias.name}" in _modules():
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                names = list(ast.literal_eval(node.value))
        elif (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__"
              and isinstance(node.value, ast.Attribute) and node.value.attr == "__all__"
              and isinstance(node.value.value, ast.Name) and node.value.value.id in aliases):
            names += _all_of(aliases[node.value.value.id])
    return names


def _source_of(node: ast.ImportFrom, module: str) -> str:
    if not node.level:
        return node.module or ""
    package = _own_package(module).split(".")
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


# What every module has: not names a package exports.
_MODULE_ATTRIBUTES = frozenset({"__file__", "__name__", "__path__", "__spec__", "__doc__", "__dict__",
                                "__loader__", "__package__"})


def _uses(module: str) -> set[tuple[str, str]]:
    """(package, name) for each name ``module`` takes from a project package's ``__init__``.

    ``from P import n`` and ``import P`` / ``import P as x`` followed by ``P.n`` / ``x.n`` count;
    a name that is itself a submodule (``from connector.spark import functions``) does not.
    """
    mods = _modules()
    found: set[tuple[str, str]] = set()
    bound: dict[str, str] = {}  # local name -> the package module it stands for
    tree = _tree(mods[module][0])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _source_of(node, module)
            if source in mods and mods[source][1]:
                for alias in node.names:
                    if f"{source}.{alias.name}" not in mods:
                        found.add((source, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
    if bound:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                chain = []
                inner: ast.expr = node
                while isinstance(inner, ast.Attribute):
                    chain.append(inner.attr)
                    inner = inner.value
                if isinstance(inner, ast.Name) and inner.id in bound:
                    dotted = [bound[inner.id], *reversed(chain)]
                    # the longest prefix that is a package, then the name after it
                    for cut in range(len(dotted) - 1, 0, -1):
                        prefix = ".".join(dotted[:cut])
                        if prefix in mods:
                            if (mods[prefix][1] and f"{prefix}.{dotted[cut]}" not in mods
                                    and dotted[cut] not in _MODULE_ATTRIBUTES):
                                found.add((prefix, dotted[cut]))
                            break
    return found


@functools.cache
def _imported_from_outside() -> dict[str, dict[str, set[str]]]:
    """package -> name -> the modules of other packages that import it."""
    out: dict[str, dict[str, set[str]]] = {p: {} for p in _packages()}
    for module in _modules():
        for package, name in _uses(module):
            if _own_package(module) != package:
                out[package].setdefault(name, set()).add(module)
    return out


_DIRECTIVE = re.compile(r"^:::\s+(\S+)\s*$")
_MEMBER = re.compile(r"^\s+-\s+(\w+)\s*$")


@functools.cache
def _documented() -> dict[str, set[str]]:
    """package -> the names the API pages document (``::: pkg.name`` or ``::: pkg`` with ``members``).

    A directive naming a module that is not a package (``::: connector.spark.functions``,
    ``::: connector.errors``) documents that module, which is not a package's list.
    """
    mods = _modules()
    out: dict[str, set[str]] = {}
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        target = None
        for line in page.read_text(encoding="utf-8").splitlines():
            directive = _DIRECTIVE.match(line)
            if directive:
                target = directive.group(1)
                if target not in mods:
                    package, _, name = target.rpartition(".")
                    if package in mods and mods[package][1]:
                        out.setdefault(package, set()).add(name)
                continue
            member = _MEMBER.match(line)
            if member and target in mods and mods[target][1]:
                out.setdefault(target, set()).add(member.group(1))
    for package, names in ENTRY_POINTS.items():
        out.setdefault(package, set()).update(names)
    return out


def _reexported(package: str) -> set[str]:
    """Public names ``package``'s ``__init__`` binds from the project's own modules (imports at
    module level, ``TYPE_CHECKING`` blocks included) and its own top-level definitions."""
    mods = _modules()
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.ImportFrom):
                source = _source_of(node, package)
                if source.split(".")[0] in PACKAGES:
                    for a in node.names:
                        if a.name == "*":  # binds what the module lists
                            names.update(_all_of(source))
                        elif f"{source}.{a.name}" not in mods:
                            names.add(a.asname or a.name)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)

    visit(_tree(mods[package][0]).body)
    return {n for n in names if not n.startswith("_")}


def _problems(declared: set[str], used: dict[str, set[str]], documented: set[str],
              reexported: set[str]) -> list[str]:
    problems = []
    unused = sorted(declared - set(used) - documented)
    if unused:
        problems.append(f"in __all__ but imported by no other package and not documented: {unused}")
    missing = {name: sorted(users) for name, users in sorted(used.items()) if name not in declared}
    if missing:
        problems.append(f"imported from outside but not in __all__ (name: importers): {missing}")
    undocumented = sorted(documented - declared)
    if undocumented:
        problems.append(f"documented as public but not in __all__: {undocumented}")
    hidden = sorted(reexported - declared)
    if hidden:
        problems.append("bound in __init__ but not in __all__ (import it from its private module "
                        f"where it is used, or name it _private): {hidden}")
    return problems


def _report(package: str) -> list[str]:
    return _problems(set(_declared_all(package)), _imported_from_outside()[package],
                     _documented().get(package, set()), _reexported(package))


@pytest.mark.parametrize("package", _packages())
def test_all_is_what_other_packages_import(package):
    problems = _report(package)
    assert not problems, f"{package}:\n  " + "\n  ".join(problems)


def test_the_entry_points_name_real_packages():
    assert set(ENTRY_POINTS) <= set(_packages())


def test_the_walk_sees_every_form_of_import():
    """The import walk counts absolute, relative, function-level, TYPE_CHECKING and attribute uses."""
    uses = _imported_from_outside()
    # pyspark_asyncapi_kafka imports the DataSource from the Spark layer at module level
    assert "pyspark_asyncapi_kafka" in uses["connector.spark"]["AsyncApiKafkaDataSource"]
    # connector/cli/_server.py: ``import connector`` then ``connector.__version__`` in a function
    assert "connector.cli._server" in uses["connector"]["__version__"]
    # documented names come from the ::: lines with their members lists
    assert {"peek", "build_setup"} <= _documented()["connector.read"]
    assert "RegistryError" in _documented()["registry"]


def test_each_kind_of_mismatch_is_reported():
    ok = _problems({"a", "doc"}, {"a": {"x.m"}}, {"doc"}, {"a", "doc"})
    assert ok == []
    unused, missing, undocumented, hidden = _problems({"a", "stale"}, {"a": {"x.m"}, "b": {"y.n"}}, {"c"},
                                                      {"a", "stale", "helper"})
    assert "['stale']" in unused
    assert "{'b': ['y.n']}" in missing
    assert "['c']" in undocumented
    assert "['helper']" in hidden
