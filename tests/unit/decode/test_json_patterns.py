"""JSON Schema ``pattern``: one owner (``_pattern``), re's meaning, bounded work per string.

* Verdicts: every engine (RE2 through google-re2 and through Arrow, the bounded ``regex``
  engine) agrees with ``re.search`` — what python-jsonschema runs — on real-world patterns and
  on the constructs where RE2 and ``re`` read a pattern apart (``$`` before a final newline,
  Unicode ``\\d \\w \\s``, ``[[:alpha:]]``, ``{,n}``).
* Hostile strings: a pattern that backtracks exponentially in ``re`` finishes on every path
  (read columns, free-form leaves, python-jsonschema's verdict, the write path): RE2 gives the
  right verdict; a pattern only the bounded engine runs gives a row error saying the check ran
  out of budget. Each runs in a subprocess whose timeout is only a safety net: the assertions are
  on the results.
* A schema that cannot be validated with is misconfiguration (``SchemaCompileError``): the job
  fails, no row is blamed.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import warnings

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.errors import PatternBudgetError, SchemaCompileError
from connector.formats import DecodeOptions, build_decoder
from connector.formats.json_schema._pattern import compile_pattern
from connector.formats.json_schema._reference import Reference
from tests.unit.decode.decode_helpers import Registry, Spec, framed

# real-world patterns (corpus schemas, OpenAPI/AsyncAPI documents) and the constructs where RE2
# and Python's re differ
PATTERNS = [
    r"^[0-9]{4}$", r"^iglu:", r"^[a-z0-9-]+$", r"^\d{3}-\d{4}$", r"^[A-Z]{3}$", r"^\S+@\S+\.\S+$",
    r"^(\w+\s?)*$", r"^([a-zA-Z0-9]+\.?)+@example\.com$", r"^[[:alpha:]]+$", r"^a{,3}$", r"\d", r"^\w+$",
    r"^\s*$", r"^[^\s@]+@[^\s@]+$", r"a$|b$", r"^(?:[01]\d|2[0-3]):[0-5]\d$", r"\D\W\S", r"^.+$", r"x\Z",
    r"\Ax", r"^[\u00e0-\u00ff]+$", r"^[\w.-]+$", r"^[^\W\d_]+$", r"^$", r"", r"\$", r"[$]", r"^[^$]*$",
    # only the bounded engine: lookaround, backreferences, word boundaries, flags, $ inside
    r"(?<=a)b", r"^(?!x)\w+$", r"(a)\1", r"\bfoo\b", r"(?i)^abc$", r"^ab$\n", r"(?P<q>['\"]).*(?P=q)",
    r"a++b", r"(?>a|ab)c",
]
ALPHABET = "ab fxo\n_.@9!:-$'\"AZ[]\u00e9\u0663\u2003\u00a0\u00b2\U0001d7d8"
BOUNDED = {r"(?<=a)b", r"^(?!x)\w+$", r"(a)\1", r"\bfoo\b", r"(?i)^abc$", r"^ab$\n", r"(?P<q>['\"]).*(?P=q)",
           r"a++b", r"(?>a|ab)c"}

# catastrophic in re: exponential backtracking on a string that almost matches
HOSTILE_RE2 = r"^(\w+\s?)*$"  # RE2 runs it in linear time
HOSTILE_BOUNDED = r"^(?!q)(a|a)*b"  # lookahead: only the bounded engine runs it (and it backtracks)
HOSTILE_STRING = "a" * 40 + "c b"  # contains the b: the regex module cannot skip the search


def test_engines():
    assert compile_pattern(HOSTILE_RE2).engine == "re2"
    assert compile_pattern(HOSTILE_BOUNDED).engine == "bounded"
    for p in PATTERNS:
        assert compile_pattern(p).engine == ("bounded" if p in BOUNDED else "re2"), p


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(ALPHABET, max_size=10), min_size=1, max_size=30))
def test_every_engine_agrees_with_re(strings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for p in PATTERNS:
            want = [re.search(p, s) is None for s in strings]
            rx = compile_pattern(p)
            assert [not rx.search(s) for s in strings] == want, p
            miss, over = rx.misses(pa.array(strings))
            assert miss.tolist() == want and not over.any(), p  # Arrow's RE2 (or one by one)
            bounded = rx._bounded_rx()  # the bounded engine's spelling of every pattern, too
            assert [bounded.search(s) is None for s in strings] == want, p


def test_nulls_are_neither_misses_nor_over():
    miss, over = compile_pattern("^a$").misses(pa.array(["a", None, "b"]))
    assert miss.tolist() == [False, False, True] and not over.any()


def test_a_lone_surrogate_is_checked_by_the_bounded_engine():
    assert compile_pattern(r"^\w?.$").search("\ud800") == (re.search(r"^\w?.$", "\ud800") is not None)


@pytest.mark.parametrize("bad", ["(", "[a-", "a{2,1}", r"\p{L}", 5])
def test_a_pattern_re_cannot_compile_is_the_schemas_fault(bad):
    with pytest.raises(SchemaCompileError, match="pattern"):
        compile_pattern(bad)


def test_the_bounded_engine_runs_out_of_budget_instead_of_hanging():
    with pytest.raises(PatternBudgetError, match="ran out of budget"):
        compile_pattern(HOSTILE_BOUNDED).search(HOSTILE_STRING)
    miss, over = compile_pattern(HOSTILE_BOUNDED).misses(pa.array([HOSTILE_STRING, "aab", "x"]))
    assert over.tolist() == [True, False, False] and miss.tolist() == [False, False, True]


# -- python-jsonschema's verdicts use the same owner --------------------------------------------
@pytest.mark.parametrize("schema, doc, valid", [
    ({"type": "string", "pattern": "^ab$"}, "ab\n", True),  # re's $ before a final newline
    ({"type": "string", "pattern": "(?<=a)b"}, "ab", True),
    ({"type": "string", "pattern": "(?<=a)b"}, "cb", False),
    ({"type": "string", "pattern": r"(a)\1"}, "xaa", True),
    ({"type": "object", "patternProperties": {r"^(\d)\1$": {"type": "integer"}}}, {"11": "x"}, False),
    ({"type": "object", "patternProperties": {r"^(\d)\1$": {"type": "integer"}}}, {"12": "x"}, True),
    ({"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False}, {"ab": 1}, True),
    ({"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False}, {"ba": 1}, False),
])
def test_the_reference_reads_patterns_as_jsonschema_does(schema, doc, valid):
    from jsonschema.validators import validator_for

    assert validator_for(schema)(schema).is_valid(doc) is valid  # python-jsonschema itself
    assert (Reference(schema).why(doc) is None) is valid


# -- hostile records on every path, in a subprocess (the timeout is a safety net only) ----------
def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=300, cwd=str(__import__("pathlib").Path(__file__).parents[3]))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


_READ = """
import json
from connector.formats import build_decoder
from tests.unit.decode.decode_helpers import Registry, Spec, framed
schema = json.loads({schema!r})
docs = json.loads({docs!r})
reg = Registry(); reg.add(3, schema, "JSON")
res = build_decoder(Spec("json", schema)).decode(framed([(3, json.dumps(d).encode()) for d in docs]), reg.lookup)
print(json.dumps({{"values": res.values.to_pylist(), "errors": res.errors.to_pylist()}}))
"""


def _read(schema, docs) -> dict:
    return _run(_READ.format(schema=json.dumps(schema), docs=json.dumps(docs)))


@pytest.mark.parametrize("where", ["column", "free-form", "reference"])
def test_a_hostile_string_on_a_linear_pattern_gets_its_verdict(where):
    p = {"type": "string", "pattern": HOSTILE_RE2}
    schema = {"column": {"type": "object", "properties": {"s": p}},
              "free-form": {"type": "object", "properties": {"s": {"anyOf": [p, {"type": "integer"}]}}},
              "reference": {"type": "object", "properties": {"s": {"type": "string"}},
                            "if": {"required": ["s"]}, "then": {"properties": {"s": p}}}}[where]
    got = _read(schema, [{"s": "ab cd"}, {"s": HOSTILE_STRING + "!" * 3}, {"s": "ab cd!"}])
    assert got["errors"][0] is None
    for e in got["errors"][1:]:
        assert "not valid against its schema: $.s:" in e and "does not match" in e, e


@pytest.mark.parametrize("where", ["column", "free-form", "patternProperties"])
def test_a_hostile_string_on_a_backtracking_pattern_is_a_row_error_that_says_so(where):
    p = {"type": "string", "pattern": HOSTILE_BOUNDED}
    schema = {"column": {"type": "object", "properties": {"s": p}},
              "free-form": {"type": "object", "properties": {"s": {"anyOf": [p, {"type": "integer"}]}}},
              "patternProperties": {"type": "object", "properties": {"s": {
                  "type": "object", "patternProperties": {HOSTILE_BOUNDED: {"type": "integer"}}}}}}[where]
    pp = where == "patternProperties"
    docs = [{"s": {"aab": 1}} if pp else {"s": "aab"}, {"s": {HOSTILE_STRING: 1}} if pp else {"s": HOSTILE_STRING},
            {"s": {"aab": "x"}} if pp else {"s": "x"}]
    got = _read(schema, docs)
    assert got["errors"][0] is None and got["values"][0] is not None
    keyword = "patternProperties" if pp else "pattern"
    assert f"'{keyword}' — the pattern check ran out of budget" in got["errors"][1], got["errors"][1]
    assert ("$.s['" if pp else "$.s:") in got["errors"][1]
    assert got["values"][1] is None
    assert "ran out of budget" not in got["errors"][2] and "not valid against its schema" in got["errors"][2]


def test_a_hostile_value_written_is_a_row_error_not_a_hang():
    got = _run(f"""
        import json, pyarrow as pa
        from connector.formats import build_encoder
        from tests.unit.decode.decode_helpers import Spec
        out = {{}}
        for name, pat in (("re2", {HOSTILE_RE2!r}), ("bounded", {HOSTILE_BOUNDED!r})):
            enc = build_encoder(Spec("json", {{"type": "object", "properties": {{"s": {{"type": "string", "pattern": pat}}}}}}))
            vals = pa.array([{{"s": "ab cd" if name == "re2" else "aab"}},
                             {{"s": {HOSTILE_STRING!r} + ("!!!" if name == "re2" else "")}}],
                            pa.struct([("s", pa.string())]))
            out[name] = enc.encode(vals).errors.to_pylist()
        print(json.dumps(out))
        """)
    assert got["re2"][0] is None and "does not match" in got["re2"][1]
    assert got["bounded"][0] is None and "ran out of budget" in got["bounded"][1]


# -- misconfiguration fails the job -------------------------------------------------------------
def test_a_ref_to_nowhere_fails_when_the_schema_is_loaded():
    schema = {"type": "object", "properties": {"a": {"type": "string"},
                                               "b": {"not": {"$ref": "#/definitions/missing"}}}}
    with pytest.raises(SchemaCompileError, match="properties/b/not/\\$ref"):
        build_decoder(Spec("json", schema))


def test_a_ref_the_reference_cannot_resolve_is_the_schemas_fault():
    # a nested $id: the load-time walk leaves resolution to jsonschema, which finds it per record
    schema = {"type": "object", "properties": {"a": {"type": "string"},
                                               "b": {"$id": "http://example.com/b", "not": {"$ref": "#/nowhere"}}}}
    ref = Reference(schema)
    assert ref.why({"a": "x"}) is None
    with pytest.raises(SchemaCompileError, match="cannot be validated with"):
        ref.why({"a": "y", "b": 1})


def test_a_reader_that_does_not_compile_in_the_task_fails_the_job():
    """A decoder pickled on the driver whose reader schema does not compile where it runs (here
    built without the driver's compile) raises a typed error naming the schema; before, every
    row of the group became an error in PERMISSIVE mode."""
    from connector.formats import Decoder

    text = json.dumps({"title": "Order", "type": "object", "properties": {"a": {"type": "string", "pattern": "("}}})
    d = Decoder("json", text, (), None, DecodeOptions())
    reg = Registry()
    reg.add(3, text, "JSON")
    with pytest.raises(SchemaCompileError, match="json reader schema 'Order' \\(records of schema id 3\\)"):
        d.decode(framed([(3, b'{"a": "x"}')]), reg.lookup)


def test_a_pattern_that_is_not_a_regex_fails_when_loaded_on_the_write_path_too():
    from connector.formats import build_encoder

    with pytest.raises(SchemaCompileError):
        build_encoder(Spec("json", {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}))
