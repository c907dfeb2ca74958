"""The vectorized ``CEL`` and ``CEL_FIELD`` domain steps, as the read and the write both run them.

Each step evaluates a rule on the ``live`` rows of a batch of decoded (read) or to-be-encoded
(write) Arrow values, in the Arrow subset of :mod:`._cel`, and hands the rows whose condition
failed to ``fail(rows, text)`` (positions in the values; the caller knows which batch rows and
subjects they are and applies ``onFailure``). A rule outside the subset raises
:class:`NotVectorizable`: the caller then runs it record by record through confluent-kafka.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.schema.rules._cel import NotVectorizable, compile_cel, split_guard
from connector.schema.rules._common import put_rows, true_rows
from connector.schema.rules._fields import field_rule_columns, message_types, replace_leaf

__all__ = ["cel_condition", "cel_field"]

#: ``fail(rows, text)``: rows (positions in the values) whose condition failed, and why.
Fail = Callable[[np.ndarray, str], Any]


def _failed_text(rule) -> str:
    return rule.doc or f"Rule expr failed: {rule.expr}"


def cel_condition(rule, values: pa.Array, live: np.ndarray, schema: Any, fmt: str, message: str | None,
                  fail: Fail) -> None:
    """A ``CEL`` condition over ``message`` (the record): its guard, then its body."""
    guard, body = split_guard(rule.expr or "")
    sub = values.filter(pa.array(live)) if not live.all() else values
    types = message_types(schema, fmt, message)
    ok = np.ones(len(sub), bool)
    if guard is not None:
        ok = true_rows(compile_cel(guard).evaluate({"message": sub}, types), len(sub))
    res = true_rows(compile_cel(body).evaluate({"message": sub}, types), len(sub)) if ok.any() else ok
    failed = ok & ~res
    if failed.any():
        fail(np.flatnonzero(live)[failed], _failed_text(rule))


def cel_field(rule, values: pa.Array, live: np.ndarray, schema: Any, fmt: str, message: str | None,
              fail: Fail) -> pa.Array:
    """A ``CEL_FIELD`` rule on each field it selects (``value``, ``name``, ``fullName``,
    ``typeName``; ``message`` too for top-level fields): a condition fails rows, a transform
    returns the values with the field's new values where the guard holds."""
    guard, body = split_guard(rule.expr or "")
    m = int(live.sum())
    idx = np.flatnonzero(live)
    keep = pa.array(live)
    for leaf, col in field_rule_columns(values, schema, fmt, message, rule.tags):
        env: dict[str, Any] = {"value": col.filter(keep), "name": leaf.name, "fullName": leaf.full_name,
                               "typeName": leaf.type}
        if len(leaf.path) == 1:
            env["message"] = values.filter(keep)
        types = {("value",): leaf.type, **message_types(schema, fmt, message)}
        gmask = np.ones(m, bool) if guard is None else true_rows(compile_cel(guard).evaluate(env, types), m)
        if not gmask.any():
            continue
        result = compile_cel(body).evaluate(env, types)
        if not isinstance(result, pa.Array):
            result = pa.array([result] * m)
        if rule.kind == "CONDITION":
            failed = gmask & ~true_rows(result, m)
            if failed.any():
                fail(idx[failed], _failed_text(rule))
            continue
        if not result.type.equals(col.type):
            if pa.types.is_integer(result.type) and pa.types.is_integer(col.type):
                result = result.cast(col.type)
            else:
                raise NotVectorizable("a field transform whose result is not of the field's type")
        new_sub = pc.if_else(pa.array(gmask), result, env["value"])
        values = replace_leaf(values, leaf.path, put_rows(col, idx, new_sub))
    return values
