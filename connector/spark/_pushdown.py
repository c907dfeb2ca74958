"""Spark's pushed filters → :class:`connector.kafka.Predicate` (what a batch read takes over).

PySpark (4.1+) offers a Python data source the filters of a query as frozen dataclasses
(``pyspark.sql.datasource.EqualTo``, ``In``, ``StringStartsWith``, ``Not`` ...; their AND) when
``spark.sql.python.filterPushdown.enabled`` is true. This module keeps those on the Kafka
columns it can answer exactly (see :mod:`connector.kafka._pushdown`) and hands the rest back
to Spark. A reader that overrides ``pushFilters`` fails every query while the setting is off
(``DATA_SOURCE_PUSHDOWN_DISABLED``), so :func:`in_pushdown_planner` tells the data source which
reader to give: the pushing one only to Spark's filter-pushdown planner, which runs only while
the setting is on.
"""
from __future__ import annotations

import datetime as dt
import sys
from types import FrameType
from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from connector.kafka import Predicate

__all__ = ["translate", "in_pushdown_planner", "PUSHDOWN_PLANNER_MODULE"]

#: The PySpark worker that calls ``DataSource.reader`` and then ``pushFilters`` (4.1+).
PUSHDOWN_PLANNER_MODULE = "pyspark.sql.worker.data_source_pushdown_filters"

_OPS: dict[type, str] = {
    EqualTo: "=", EqualNullSafe: "<=>", LessThan: "<", LessThanOrEqual: "<=", GreaterThan: ">",
    GreaterThanOrEqual: ">=", In: "in", StringStartsWith: "startswith", StringEndsWith: "endswith",
    StringContains: "contains", IsNull: "isnull", IsNotNull: "isnotnull",
}
_STRING_ONLY = ("startswith", "endswith", "contains")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _micros(v: Any) -> int | None:
    if not isinstance(v, dt.datetime) or v.tzinfo is None:
        return None  # Spark hands TIMESTAMP literals over as aware datetimes; anything else stays with Spark
    delta = v - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _value(column: str, v: Any, string_columns: frozenset[str]):
    """The literal as the predicate stores it, or ``...`` when it cannot be pushed."""
    if v is None:
        return None
    if column in string_columns:
        return v if isinstance(v, str) else ...
    if column == "timestamp":
        us = _micros(v)
        return ... if us is None else us
    return v if isinstance(v, int) and not isinstance(v, bool) else ...


def _predicate(f: Filter, string_columns: frozenset[str]) -> Predicate | None:
    negated = isinstance(f, Not)
    leaf: Any = f.child if isinstance(f, Not) else f
    op = _OPS.get(type(leaf))
    attr: tuple[str, ...] = tuple(getattr(leaf, "attribute", ()))
    if op is None or len(attr) != 1:
        return None
    column = attr[0]
    if column not in string_columns and column not in ("partition", "offset", "timestamp"):
        return None
    if op in _STRING_ONLY and column not in string_columns:
        return None
    if op in ("isnull", "isnotnull"):
        return Predicate(column, op, None, negated)
    if op == "in":
        values = tuple(_value(column, v, string_columns) for v in leaf.value)
        if not values or any(v is None or v is ... for v in values):
            return None  # IN with a NULL is unknown for non-members: leave it to Spark
        return Predicate(column, op, values, negated)
    value = _value(column, leaf.value, string_columns)
    if value is ... or value is None and op != "<=>":
        return None
    return Predicate(column, op, value, negated)


def translate(filters: Iterable[Filter], param_names: Sequence[str]
              ) -> tuple[list[tuple[Filter, Predicate]], list[Filter]]:
    """Split Spark's filters into those the read takes over and those Spark keeps.

    Parameters
    ----------
    filters : iterable of pyspark.sql.datasource.Filter
        As passed to ``DataSourceReader.pushFilters``.
    param_names : sequence of str
        The address parameter columns of the channel (string columns fixed per topic).

    Returns
    -------
    (list of (Filter, Predicate), list of Filter)
        Pushed filters with their predicate, and the filters Spark must still evaluate (the
        same objects it passed in, as ``pushFilters`` must return them).

    Examples
    --------
    >>> from pyspark.sql.datasource import EqualTo, GreaterThan
    >>> pushed, kept = translate([EqualTo(("partition",), 1), GreaterThan(("value", "id"), 3)], ())
    >>> [str(p) for _, p in pushed], kept
    (['partition = 1'], [GreaterThan(attribute=('value', 'id'), value=3)])
    """
    strings = frozenset(("topic", *param_names))
    pushed: list[tuple[Filter, Predicate]] = []
    kept: list[Filter] = []
    for f in filters:
        p = _predicate(f, strings)
        if p is None:
            kept.append(f)
        else:
            pushed.append((f, p))
    return pushed, kept


def _module_of(frame: FrameType) -> str:
    name = frame.f_globals.get("__name__", "")
    if name == "__main__":  # a worker started as ``python -m <module>`` (no daemon)
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        name = getattr(spec, "name", name) or name
    return name


def in_pushdown_planner() -> bool:
    """Whether Spark's filter-pushdown planner is the caller (it runs only while
    ``spark.sql.python.filterPushdown.enabled`` is true, and is the only caller of
    ``pushFilters``); every other caller, the plain read planner included, must get a reader
    that does not override ``pushFilters``."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if _module_of(frame) == PUSHDOWN_PLANNER_MODULE:
            return True
        frame = frame.f_back
    return False
