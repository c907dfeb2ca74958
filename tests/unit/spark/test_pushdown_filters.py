"""Spark's filter dataclasses → pushed predicates, and which reader the data source gives (no JVM)."""
from __future__ import annotations

import datetime as dt
import sys
import types

from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    Not,
    StringContains,
    StringStartsWith,
)

from connector.spark._pushdown import PUSHDOWN_PLANNER_MODULE, in_pushdown_planner, translate

UTC = dt.timezone.utc


def _pushed(filters, params=("warehouse",)):
    pushed, kept = translate(filters, params)
    return [str(p) for _, p in pushed], kept


def test_kafka_columns_are_taken_and_the_rest_is_kept():
    ts = dt.datetime(2026, 1, 1, 0, 0, 0, 250, tzinfo=UTC)
    nested = EqualTo(("value", "id"), 3)
    pushed, kept = _pushed([
        IsNotNull(("timestamp",)), GreaterThanOrEqual(("timestamp",), ts), In(("partition",), [1, 2]),
        Not(EqualTo(("partition",), 3)), LessThan(("offset",), 10), StringStartsWith(("topic",), "shop."),
        EqualTo(("warehouse",), "berlin"), nested, EqualTo(("key",), "k"),
    ])
    assert pushed == ["timestamp IS NOT NULL", "timestamp >= '2026-01-01T00:00:00.000250+00:00'", "partition IN (1, 2)",
                      "NOT (partition = 3)", "offset < 10", "topic STARTSWITH 'shop.'", "warehouse = 'berlin'"]
    assert kept == [nested, EqualTo(("key",), "k")]
    assert all(a is b for a, b in zip(kept, [nested]))  # the very objects Spark passed


def test_literals_of_the_wrong_type_stay_with_spark():
    odd = [EqualTo(("partition",), 1.5), EqualTo(("partition",), True), GreaterThan(("timestamp",), "2026"),
           GreaterThan(("timestamp",), dt.datetime(2026, 1, 1)),  # naive: not a Spark TIMESTAMP literal
           StringContains(("partition",), "1"), In(("offset",), [1, None]), EqualTo(("topic",), 3),
           EqualTo(("partition",), None)]
    pushed, kept = _pushed(odd)
    assert pushed == [] and kept == odd
    pushed, _ = _pushed([EqualNullSafe(("warehouse",), None)])
    assert pushed == ["warehouse <=> None"]


def test_only_sparks_pushdown_planner_gets_the_pushing_reader():
    assert in_pushdown_planner() is False
    # Spark runs the planner as a module (daemon) or as ``python -m`` (no daemon): either way the
    # module that calls DataSource.reader is the filter-pushdown worker.
    mod = types.ModuleType(PUSHDOWN_PLANNER_MODULE)
    exec("def call(f):\n    return f()", mod.__dict__)
    assert mod.call(in_pushdown_planner) is True


def test_the_plain_reader_keeps_the_base_pushfilters():
    # PySpark refuses a reader whose pushFilters is not DataSourceReader's while pushdown is off.
    from connector.spark._batch import BatchReader, PushdownBatchReader

    assert BatchReader.pushFilters is DataSourceReader.pushFilters
    assert PushdownBatchReader.pushFilters is not DataSourceReader.pushFilters


def test_planner_started_as_main_module(monkeypatch):
    # Without the daemon Spark starts the worker as ``python -m <module>``: its frames run in
    # ``__main__``, whose spec names the module.
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name=PUSHDOWN_PLANNER_MODULE)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", main)
    scope = {"__name__": "__main__", "check": in_pushdown_planner}
    exec("RESULT = check()", scope)
    assert scope["RESULT"] is True
