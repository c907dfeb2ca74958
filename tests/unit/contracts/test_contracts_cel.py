"""The vectorized CEL subset equals confluent-kafka's CEL executor (cel-python) on random records:
for every expression, the rows Arrow evaluates to exactly true are the rows where confluent-kafka's
condition passes; everything outside the subset says so (NotVectorizable) instead of guessing."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("celpy")
from confluent_kafka.schema_registry import Schema as CSchema
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
from confluent_kafka.schema_registry.schema_registry_client import Rule, RuleKind, RuleMode
from confluent_kafka.schema_registry.serde import RuleContext

from connector.schema.rules import NotVectorizable, compile_cel

TYPE = pa.struct([("n", pa.int64()), ("i", pa.int32()), ("x", pa.float64()), ("s", pa.string()), ("b", pa.bool_()),
                  ("r", pa.struct([("k", pa.int64()), ("t", pa.string())])), ("l", pa.list_(pa.int64()))])
SCHEMA = CSchema(json.dumps({"type": "record", "name": "R", "fields": []}), "AVRO")
EXPRESSIONS = [
    "message.n >= 18", "message.n + message.i > 3 && message.x < 2.5", "!(message.b) || message.s == 'ab'",
    "size(message.s) <= 2 && message.s.startsWith('a')", "message.s.endsWith('b') || message.s.contains('z')",
    "message.r.k * 2 - message.n != 0", "message.x * message.x / 2.0 >= 0.5", "message.b ? message.n > 0 : message.i < 0",
    "message.s + message.r.t == 'abc'", "size(message.l) > 1 && message.r.t != ''", "-message.n < message.i",
    "message.n > 0 && message.s > 'b'", "message.x == 1.0 || message.s <= 'a'",
]
records = st.fixed_dictionaries({
    "n": st.integers(-50, 50), "i": st.integers(-5, 5),
    "x": st.floats(-4, 4, allow_nan=False).map(lambda v: round(v, 2)),
    "s": st.sampled_from(["", "a", "ab", "abc", "b", "zz", "é"]), "b": st.booleans(),
    "r": st.fixed_dictionaries({"k": st.integers(-3, 3), "t": st.sampled_from(["", "c", "bc"])}),
    "l": st.lists(st.integers(-2, 2), max_size=3)})

_executor = CelExecutor()


def _confluent(expr: str, rec: dict) -> bool:
    from celpy import celtypes

    rule = Rule("r", None, RuleKind.CONDITION, RuleMode.READ, "CEL", None, None, expr, None, None, False)
    ctx = RuleContext(None, None, None, SCHEMA, "s", RuleMode.READ, rule, 0, [rule], None, None)
    try:
        out = _executor.transform(ctx, rec)
    except Exception:
        return False
    return out is True or (isinstance(out, celtypes.BoolType) and bool(out))


@settings(max_examples=60, deadline=None)
@given(st.lists(records, min_size=1, max_size=12))
def test_vectorized_conditions_equal_confluents(recs):
    arr = pa.array(recs, TYPE)
    evaluated = 0
    for expr in EXPRESSIONS:
        try:
            got = compile_cel(expr).evaluate({"message": arr})
        except NotVectorizable:  # an overflow: the rule runs per record instead
            continue
        evaluated += 1
        ours = [v is True for v in got.to_pylist()]
        assert ours == [_confluent(expr, r) for r in recs], expr
    assert evaluated == len(EXPRESSIONS)  # every one is inside the subset: the comparison is not vacuous


@pytest.mark.parametrize("expr", [
    "message.name.matches('^a')", "has(message.n)", "message.n == null", "message.n in [1, 2]",
    "message.x > 1", "message.l[0] > 1", "timestamp('2020-01-01T00:00:00Z') < now", "1u == message.n",
    "message.n / 2 > 1"])
def test_outside_the_subset_is_refused(expr):
    arr = pa.array([{"n": 1, "i": 1, "x": 1.0, "s": "a", "b": True, "r": {"k": 1, "t": ""}, "l": [1]}], TYPE)
    with pytest.raises(NotVectorizable):
        compile_cel(expr).evaluate({"message": arr})


def test_nulls_are_left_to_the_per_record_path():
    arr = pa.array([{"n": None, "i": 1, "x": 1.0, "s": "a", "b": True, "r": None, "l": None}], TYPE)
    with pytest.raises(NotVectorizable, match="nulls"):
        compile_cel("message.n > 1").evaluate({"message": arr})
