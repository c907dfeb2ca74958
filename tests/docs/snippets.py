"""The examples of README.md and the docs site, and the markers that say how each one runs.

Every fenced block in ``python``, ``bash``, ``sh`` or ``shell`` follows a marker line, an HTML
comment the site does not show::

    <!-- snippet: needs=spark,kafka -->        run it; needs is a list of:
                                               spark  a SparkSession (so the test is ``jvm``),
                                               kafka  the embedded Kafka and registry, loaded with
                                                      examples/shop.yaml's channels,
                                               none   nothing
    <!-- snippet: needs=kafka continue -->     run in what the page's previous Python example left
    <!-- snippet: needs=kafka exit=2 -->       a shell example that must end with this exit code
    <!-- snippet: skip reason="why" -->        not run here; the reason names what tests it instead

Examples use the addresses of examples/shop.yaml's servers, ``localhost:9092`` and
``http://localhost:8081``; the test runs them with those replaced by the embedded peers' (in the
example and in its copy of the document), from a fresh directory holding ``examples/``.
"""
from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN_LANGS = frozenset({"python", "bash", "sh", "shell"})
NEEDS = frozenset({"spark", "kafka", "none"})
#: Pages whose code blocks are not user examples, and why.
NOT_EXAMPLES = {
    "docs/internals.md": "contracts between packages for contributors: signatures, not runnable examples",
}
#: The addresses examples use: examples/shop.yaml's own servers.
BOOTSTRAP = "localhost:9092"
REGISTRY = "http://localhost:8081"

_MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(?P<body>.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<ticks>`{3,})(?P<lang>[\w+-]*)\s*$")


@dataclasses.dataclass(frozen=True)
class Snippet:
    page: str          # path relative to the repository root
    line: int          # line of the opening fence, 1-based
    lang: str
    code: str
    needs: frozenset[str] = frozenset()
    skip: str | None = None
    cont: bool = False
    exit: int = 0

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_python(self) -> bool:
        return self.lang == "python"


class MarkerError(ValueError):
    """A run-language block without a marker, or a marker that does not parse."""


def pages(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """README.md and every Markdown page of the site, in a stable order."""
    found = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [p for p in found if p.relative_to(root).as_posix() not in NOT_EXAMPLES]


def _parse_marker(body: str, where: str) -> dict:
    try:
        words = shlex.split(body)
    except ValueError as e:
        raise MarkerError(f"{where}: marker does not parse: {e}") from e
    out: dict = {"needs": frozenset(), "skip": None, "cont": False, "exit": 0}
    if words and words[0] == "skip":
        reasons = [w.split("=", 1)[1] for w in words[1:] if w.startswith("reason=")]
        if not reasons or not reasons[0].strip():
            raise MarkerError(f'{where}: a skip marker says why: <!-- snippet: skip reason="..." -->')
        out["skip"] = reasons[0]
        return out
    for w in words:
        if w.startswith("needs="):
            needs = frozenset(n for n in w.split("=", 1)[1].split(",") if n)
            if not needs or needs - NEEDS:
                raise MarkerError(f"{where}: needs= takes {sorted(NEEDS)}, got {w!r}")
            out["needs"] = needs - {"none"}
        elif w == "continue":
            out["cont"] = True
        elif w.startswith("exit="):
            out["exit"] = int(w.split("=", 1)[1])
        else:
            raise MarkerError(f"{where}: unknown word {w!r} in a snippet marker")
    if not any(w.startswith("needs=") for w in words):
        raise MarkerError(f"{where}: a runnable snippet's marker says what it needs (needs=none if nothing)")
    return out


def parse(text: str, page: str) -> list[Snippet]:
    """The runnable-language blocks of one page, with their markers; raises :class:`MarkerError`."""
    lines = text.splitlines()
    snippets: list[Snippet] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, lang = len(m["indent"]), m["ticks"], m["lang"].lower()
        end = next((j for j in range(i + 1, len(lines))
                    if lines[j].strip() == ticks and len(lines[j]) - len(lines[j].lstrip()) <= indent + 3), None)
        if end is None:
            raise MarkerError(f"{page}:{i + 1}: a fence that never closes")
        if lang in RUN_LANGS:
            prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = _MARKER.match(prev)
            if marker is None:
                raise MarkerError(f"{page}:{i + 1}: a {lang} block without a marker line above it "
                                  '(<!-- snippet: needs=... --> or <!-- snippet: skip reason="..." -->)')
            fields = _parse_marker(marker["body"], f"{page}:{i + 1}")
            code = "\n".join(line[indent:] if line[:indent].strip() == "" else line
                             for line in lines[i + 1:end]) + "\n"
            snippets.append(Snippet(page, i + 1, lang, code, **fields))
        i = end + 1
    for k, s in enumerate(snippets):
        if s.cont and not s.skip:
            before = [p for p in snippets[:k] if p.is_python and not p.skip]
            if not s.is_python or not before:
                raise MarkerError(f"{s.id}: 'continue' needs a runnable Python example before it on the page")
    return snippets


def collect(root: pathlib.Path = ROOT) -> list[Snippet]:
    """Every example of README.md and the docs pages, in page order."""
    out: list[Snippet] = []
    for path in pages(root):
        out.extend(parse(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix()))
    return out


def localize(text: str, bootstrap: str, registry: str) -> str:
    """``text`` with the example addresses replaced by the embedded peers'."""
    return text.replace(REGISTRY, registry).replace(BOOTSTRAP, bootstrap)
