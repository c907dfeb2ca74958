"""Does this string match this JSON Schema ``pattern``: the one owner of the answer.

Every path that checks ``pattern``, ``patternProperties`` (and ``additionalProperties`` beside
them) asks :func:`compile_pattern`: the kernel's columns (``_valid.LeafCheck``), the free-form
leaves (``_subvalid``: fastjsonschema's compiled checks get these objects as their regexes),
python-jsonschema's verdicts (``_reference.validator_class`` extends the draft's validator
class with the keywords below) and the write path (``_encode_vec``).

The meaning is the reference's, python-jsonschema's: ``re.search(pattern, string)``. Python's
``re`` backtracks, so a pattern such as ``^(\\w+\\s?)*$`` takes exponential time on a 40-character
string that almost matches: one hostile record would hang a worker. So ``re`` never runs a
record's string here:

* **RE2** (linear time) runs every pattern whose Python meaning it can express exactly. The
  pattern is parsed with Python's own parser and written again for RE2 (:func:`_generate`):
  ``\\d``, ``\\w``, ``\\s`` become the code points Python's ``re`` gives them (RE2's are ASCII),
  ``$`` at the end becomes ``\\n?\\z`` (Python's ``$`` also matches before a final newline),
  ``[[:alpha:]]`` stays the set of characters Python reads in it. Columns run through
  ``pyarrow.compute.match_substring_regex`` (RE2, vectorized), single strings through
  ``google-re2``.
* The **bounded engine**, the ``regex`` module with a time budget per string
  (:data:`PATTERN_BUDGET_S`), runs the rest: lookaround, backreferences, ``\\b``, atomic groups
  and possessive repeats, inline flags. It is given the same rewriting (Python's classes spelled
  out: the ``regex`` module's own ``\\w``, ``\\d``, ``\\s`` differ from ``re``'s). A string that
  exhausts the budget raises :class:`~connector.errors.PatternBudgetError`; callers make it a row
  error that says so, never a pass.

A pattern Python's ``re`` does not compile is not a pattern of the schema (python-jsonschema's
``check_schema`` refuses it): :class:`~connector.errors.SchemaCompileError`.
"""
from __future__ import annotations

import functools
import re
import sys
import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.errors import PatternBudgetError, SchemaCompileError

if sys.version_info >= (3, 11):
    from re import _constants as _C
    from re import _parser
else:  # pragma: no cover - Python 3.10
    import sre_constants as _C
    import sre_parse as _parser

__all__ = ["JsonPattern", "compile_pattern", "PATTERN_BUDGET_S"]

#: Seconds of the bounded engine per string (RE2 needs none: its time is linear in the string).
PATTERN_BUDGET_S = 0.1
_UNICODE = 32  # re.UNICODE: the only flag a str pattern carries by default
_REPEAT_MAX = 1000  # RE2 refuses counted repetitions above 1000


class _Unsupported(Exception):
    """The construct has no exact form in the target engine."""


@functools.cache
def _category(name: str) -> tuple[tuple[int, int], ...]:
    """The code points Python's ``re`` puts in ``\\d``, ``\\w`` or ``\\s`` (str patterns), as ranges
    (asked of ``re`` itself over every code point: its Unicode tables are the reference's)."""
    text = _every_code_point()
    out = []
    for m in re.finditer(name + "+", text):
        a, b = ord(text[m.start()]), ord(text[m.end() - 1])
        out.append((a, b))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _every_code_point() -> str:
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))


_CATS = {"CATEGORY_DIGIT": (r"\d", False), "CATEGORY_NOT_DIGIT": (r"\d", True),
         "CATEGORY_WORD": (r"\w", False), "CATEGORY_NOT_WORD": (r"\w", True),
         "CATEGORY_SPACE": (r"\s", False), "CATEGORY_NOT_SPACE": (r"\s", True)}


class _Gen:
    """Python's parse of a pattern written for ``re2`` or for ``regex`` (its V0 syntax)."""

    def __init__(self, target: str):
        self.target = target

    def lit(self, c: int) -> str:
        ch = chr(c)
        if ch.isascii() and ch.isalnum():
            return ch
        if self.target == "re2":
            return f"\\x{{{c:X}}}"
        return f"\\u{c:04X}" if c <= 0xFFFF else f"\\U{c:08X}"

    def ranges(self, rs) -> str:
        return "".join(self.lit(a) if a == b else f"{self.lit(a)}-{self.lit(b)}" for a, b in rs)

    def seq(self, items, tail: bool) -> str:
        items = list(items)
        return "".join(self.node(op, av, tail and i == len(items) - 1) for i, (op, av) in enumerate(items))

    def node(self, op, av, tail: bool) -> str:
        name = str(op)
        if name == "LITERAL":
            return self.lit(av)
        if name == "NOT_LITERAL":
            return f"[^{self.lit(av)}]"
        if name == "ANY":
            return "."
        if name == "IN":
            return self.charset(av)
        if name == "CATEGORY":
            return self.charset([(op, av)])
        if name == "BRANCH":
            return "(?:" + "|".join(self.seq(alt, tail) for alt in av[1]) + ")"
        if name == "SUBPATTERN":
            group, add, delete, p = av
            if add or delete:
                raise _Unsupported("inline flags")
            inner = self.seq(p, tail)
            return f"({inner})" if self.target == "regex" and group is not None else f"(?:{inner})"
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, p = av
            unbounded = hi == _C.MAXREPEAT
            if self.target == "re2" and (name == "POSSESSIVE_REPEAT" or lo > _REPEAT_MAX
                                         or (not unbounded and hi > _REPEAT_MAX)):
                raise _Unsupported(name)
            rep = f"{{{lo},}}" if unbounded else f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
            rep += {"MAX_REPEAT": "", "MIN_REPEAT": "?", "POSSESSIVE_REPEAT": "+"}[name]
            return f"(?:{self.seq(p, False)}){rep}"
        if name == "AT":
            return self.at(str(av), tail)
        if self.target == "re2":
            raise _Unsupported(name)  # lookaround, backreferences, atomic groups, conditionals
        if name == "ATOMIC_GROUP":
            return f"(?>{self.seq(av, False)})"
        if name in ("ASSERT", "ASSERT_NOT"):
            direction, p = av
            head = {("ASSERT", 1): "(?=", ("ASSERT", -1): "(?<=", ("ASSERT_NOT", 1): "(?!",
                    ("ASSERT_NOT", -1): "(?<!"}[(name, direction)]
            return f"{head}{self.seq(p, False)})"
        if name == "GROUPREF":
            return f"(?:\\g<{av}>)"
        if name == "GROUPREF_EXISTS":
            group, yes, no = av
            return f"(?({group}){self.seq(yes, False)}|{self.seq(no, False) if no else ''})"
        raise _Unsupported(name)

    def at(self, code: str, tail: bool) -> str:
        if code == "AT_BEGINNING" or code == "AT_BEGINNING_STRING":
            return "^" if code == "AT_BEGINNING" else r"\A"
        if code == "AT_END_STRING":
            return r"\z" if self.target == "re2" else r"\Z"
        if code == "AT_END":  # Python: at the end, or before a newline that ends the string
            if self.target == "regex":
                return r"(?=\n?\Z)"
            if not tail:
                raise _Unsupported("$ before more of the pattern")
            return r"(?:\n?\z)"
        if self.target == "re2":
            raise _Unsupported(code)  # \b, \B: RE2's word is ASCII
        word = f"[{self.ranges(_category(chr(92) + 'w'))}]"
        if code == "AT_BOUNDARY":
            return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
        if code == "AT_NON_BOUNDARY":
            return f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"
        raise _Unsupported(code)

    def charset(self, items) -> str:
        items = list(items)
        negate = bool(items) and str(items[0][0]) == "NEGATE"
        if negate:
            items = items[1:]
        inverted = [op for op, av in items if str(op) == "CATEGORY" and _CATS.get(str(av), (None, False))[1]]
        if inverted and len(items) > 1:  # [^\W\d_]: a set no engine spells alike; re lists its members
            return f"[{self.ranges(_members(_python_set(items, negate)))}]"
        parts = []
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                parts.append(self.lit(av))
            elif name == "RANGE":
                parts.append(f"{self.lit(av[0])}-{self.lit(av[1])}")
            elif name == "CATEGORY":
                cls, flip = _CATS.get(str(av), (None, False))
                if cls is None:
                    raise _Unsupported(str(av))
                if flip:
                    negate = not negate
                parts.append(self.ranges(_category(cls)))
            else:
                raise _Unsupported(name)
        return f"[{'^' if negate else ''}{''.join(parts)}]"


def _python_set(items, negate: bool) -> str:
    """A set's items written again for Python's ``re`` (``\\uXXXX`` escapes, ``\\d`` as itself)."""
    def lit(c: int) -> str:
        return f"\\u{c:04X}" if c <= 0xFFFF else f"\\U{c:08X}"
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(lit(av))
        elif name == "RANGE":
            out.append(f"{lit(av[0])}-{lit(av[1])}")
        elif name == "CATEGORY" and str(av) in _CATS:
            cls, flip = _CATS[str(av)]
            out.append(cls.upper() if flip else cls)
        else:
            raise _Unsupported(name)
    return f"[{'^' if negate else ''}{''.join(out)}]"


@functools.lru_cache(maxsize=256)
def _members(python_set: str) -> tuple[tuple[int, int], ...]:
    """The code points Python's ``re`` puts in a set, as ranges. Lone surrogates are left out: no
    UTF-8 text holds one (the kernel refuses a JSON ``\\ud800`` escape as a row error)."""
    return _category(python_set)


def _generate(parsed, target: str) -> str:
    if parsed.state.flags & ~(_UNICODE | re.VERBOSE):
        raise _Unsupported("flags")
    return _Gen(target).seq(parsed, True)


def _re2_search(rx: Any):
    """``search(utf8) -> bool`` of a google-re2 pattern: its low-level match where the module has
    it (0.5 µs a call; its ``re``-like ``search`` builds a match object: 4 µs)."""
    try:
        match, anchor = rx._regexp.Match, type(rx._regexp).Anchor.UNANCHORED
    except AttributeError:  # pragma: no cover - another google-re2 layout
        return lambda b: rx.search(b) is not None

    def search(b: bytes) -> bool:
        return match(anchor, b, 0, len(b))[0][0] >= 0
    return search


class JsonPattern:
    """One compiled ``pattern``: :meth:`search` for one string, :meth:`misses` for a column.

    Attributes
    ----------
    source : str
        The pattern as the schema writes it.
    engine : str
        ``"re2"`` (linear time) or ``"bounded"`` (the ``regex`` module, :data:`PATTERN_BUDGET_S`
        per string).
    """

    def __init__(self, source: str):
        self.source = source
        try:
            with warnings.catch_warnings():  # "possible nested set" ([[:alpha:]]): re reads it as a set
                warnings.simplefilter("ignore", FutureWarning)
                parsed = _parser.parse(source, 0)
                re.compile(source)
        except (re.error, TypeError, ValueError, OverflowError, RecursionError) as e:
            raise SchemaCompileError(f"pattern {source!r} is not a regular expression: {e}") from e
        self._parsed = parsed
        self._bounded: Any = None
        self.re2_text: str | None = None
        self._re2: Any = None
        try:
            text = _generate(parsed, "re2")
            import re2

            self._re2 = _re2_search(re2.compile(text))
            self.re2_text = text
        except Exception:  # noqa: BLE001 - _Unsupported, or RE2 refuses it (size, syntax): bounded engine
            self._re2 = None
        self.engine = "re2" if self._re2 is not None else "bounded"
        if self._re2 is None:
            self._bounded_rx()

    def _bounded_rx(self):
        if self._bounded is None:
            import regex

            try:
                text = _generate(self._parsed, "regex")
            except _Unsupported:
                text = self.source  # inline flags and the like: regex reads them as re does
            try:
                self._bounded = regex.compile(text, regex.V0)
            except (regex.error, ValueError, OverflowError, RecursionError) as e:
                raise SchemaCompileError(f"pattern {self.source!r} cannot be run by a bounded engine: {e}") from e
        return self._bounded

    def search(self, s: str) -> bool:
        """Whether ``s`` holds a match (``re.search`` as python-jsonschema reads the pattern).

        Raises
        ------
        PatternBudgetError
            The bounded engine spent :data:`PATTERN_BUDGET_S` on ``s`` without an answer.
        """
        if self._re2 is not None:
            try:
                return self._re2(s.encode())
            except UnicodeEncodeError:  # a lone surrogate (json.loads keeps them): not UTF-8
                pass
        try:
            return self._bounded_rx().search(s, timeout=PATTERN_BUDGET_S) is not None
        except TimeoutError as e:
            raise PatternBudgetError(self.source, s) from e

    def misses(self, arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """``(miss, over)``: boolean masks over ``arr`` (strings) of the values the pattern does
        not match, and of those whose check ran out of budget (``miss`` is False there). Nulls
        are neither."""
        n = len(arr)
        over = np.zeros(n, bool)
        if self.re2_text is not None:
            try:
                hit = pc.match_substring_regex(arr, pattern=self.re2_text)
                return (~hit.fill_null(True).to_numpy(zero_copy_only=False)), over
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # Arrow's RE2 refuses it (its own memory budget): one by one
        miss = np.zeros(n, bool)
        for i, v in enumerate(arr.to_pylist()):
            if v is None:
                continue
            try:
                miss[i] = not self.search(v)
            except PatternBudgetError:
                over[i] = True
        return miss, over

    def __reduce__(self):
        return (compile_pattern, (self.source,))

    def __repr__(self) -> str:
        return f"JsonPattern({self.source!r}, engine={self.engine!r})"


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> JsonPattern:
    return JsonPattern(source)


def compile_pattern(source: Any) -> JsonPattern:
    """The one :class:`JsonPattern` of ``source`` in this process (compiled once, cached).

    Raises
    ------
    SchemaCompileError
        ``source`` is not a string, or not a regular expression Python's ``re`` compiles.
    """
    if not isinstance(source, str):
        raise SchemaCompileError(f"pattern {source!r} is not a string")
    return _compiled(source)
