"""Filters pushed into a batch read: which topics and partitions, which offsets, which rows.

The Spark side (``connector.spark._pushdown``) turns the filters Spark offers into
:class:`Predicate` objects; this module owns what they mean for a read, without pyspark:

==========================  ==============================================  ==================
column                      used to                                         exact by
==========================  ==============================================  ==================
``topic``, parameters       select topics before any partition is planned   planning
``partition``               select partitions                               planning
``offset``                  narrow each range to the offsets that can pass  the row mask
``timestamp``               start each range at the broker's first offset   the row mask
                            at or after the lowest time that can pass
==========================  ==============================================  ==================

Every pushed predicate is exact: rows of unselected topics and partitions are never read, and
the offset and timestamp predicates are applied again to each consumed batch
(:meth:`Pushdown.row_mask`) before decoding. That is needed because Kafka timestamps need not
grow with offsets: the broker's offsets-for-times answer bounds where the first matching
record can be, not where the last one is. For the same reason an upper bound on ``timestamp``
never shortens a range (a later record may carry an earlier time); ``endingTimestamp`` /
``endingOffsetsByTimestamp`` do, with Spark's semantics.

Logic is SQL's three-valued one: a predicate on a null value is unknown and the row is dropped,
``NOT`` of unknown stays unknown, ``<=>`` (null-safe equality) is never unknown.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Predicate", "Pushdown", "OPS", "ROW_COLUMNS", "merge_intervals"]

#: Operators a predicate may carry (``in``: ``value`` is a tuple; ``isnull``: no value).
OPS = ("=", "<=>", "<", "<=", ">", ">=", "in", "startswith", "endswith", "contains", "isnull", "isnotnull")
#: Columns whose predicates are checked on each row (the others decide what is planned).
ROW_COLUMNS = ("offset", "timestamp")

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

#: Two offset intervals closer than this are read as one range (the row mask drops the gap).
MERGE_GAP = 10_000

_Interval = tuple[int, int]


@dataclass(frozen=True)
class Predicate:
    """One pushed comparison on one output column.

    Attributes
    ----------
    column : str
        ``topic``, ``partition``, ``offset``, ``timestamp`` or an address parameter.
    op : str
        One of :data:`OPS`.
    value : object
        ``str`` for topic and parameter columns, ``int`` for ``partition`` and ``offset``,
        ``int`` microseconds since the epoch (UTC) for ``timestamp``; a tuple of those for ``in``.
    negated : bool
        ``NOT`` of the comparison.

    Examples
    --------
    >>> str(Predicate("partition", "in", (1, 3)))
    'partition IN (1, 3)'
    """

    column: str
    op: str
    value: Any = None
    negated: bool = False

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown operator {self.op!r}")

    def __str__(self) -> str:
        show = _show_time if self.column == "timestamp" else _show
        if self.op in ("isnull", "isnotnull"):
            text = f"{self.column} IS {'NOT ' if self.op == 'isnotnull' else ''}NULL"
        elif self.op == "in":
            text = f"{self.column} IN ({', '.join(map(show, self.value))})"
        elif self.op in ("startswith", "endswith", "contains"):
            text = f"{self.column} {self.op.upper()} {show(self.value)}"
        else:
            text = f"{self.column} {self.op} {show(self.value)}"
        return f"NOT ({text})" if self.negated else text

    def test(self, v) -> bool | None:
        """The predicate on one value: True, False or None (unknown)."""
        op, x = self.op, self.value
        if op == "isnull":
            out: bool | None = v is None
        elif op == "isnotnull":
            out = v is not None
        elif op == "<=>":
            out = v == x
        elif v is None:
            return None  # NOT of unknown stays unknown
        elif op == "in":
            out = v in x
        elif op == "startswith":
            out = v.startswith(x)
        elif op == "endswith":
            out = v.endswith(x)
        elif op == "contains":
            out = x in v
        else:
            out = {"=": v == x, "<": v < x, "<=": v <= x, ">": v > x, ">=": v >= x}[op]
        return (not out) if self.negated else out


def _show(v) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def _show_time(us) -> str:
    if us is None:
        return "None"
    t = _EPOCH + dt.timedelta(microseconds=us)
    return f"'{t.isoformat(timespec='microseconds' if us % 1000 else 'milliseconds')}'"


def merge_intervals(intervals: Sequence[_Interval], gap: int = 0) -> list[_Interval]:
    """Sorted, non-empty half-open intervals with those closer than ``gap`` joined.

    Examples
    --------
    >>> merge_intervals([(5, 6), (1, 2), (2, 3), (9, 9)])
    [(1, 3), (5, 6)]
    >>> merge_intervals([(1, 2), (5, 6)], gap=10)
    [(1, 6)]
    """
    out: list[list[int]] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _intersect(xs: list[_Interval], ys: list[_Interval]) -> list[_Interval]:
    out = []
    for a, b in xs:
        for c, d in ys:
            lo, hi = max(a, c), min(b, d)
            if hi > lo:
                out.append((lo, hi))
    return merge_intervals(out)


_UNBOUNDED: list[_Interval] = [(0, 2 ** 63 - 1)]


def _offset_intervals(p: Predicate) -> list[_Interval]:
    """Offsets that may pass ``p`` (a superset: the row mask is exact)."""
    if p.negated or p.op == "isnotnull":  # NOT (...) and IS NOT NULL rule out no offset here
        return _UNBOUNDED
    if p.op == "isnull" or p.value is None:  # offsets are never null
        return []
    v = p.value
    if p.op in ("=", "<=>"):
        return [(v, v + 1)] if v >= 0 else []
    if p.op == "in":
        return merge_intervals([(x, x + 1) for x in v if x >= 0])
    bounds = {">": (v + 1, _UNBOUNDED[0][1]), ">=": (v, _UNBOUNDED[0][1]), "<": (0, v), "<=": (0, v + 1)}
    lo, hi = bounds[p.op]
    return [(max(lo, 0), hi)] if hi > max(lo, 0) else []


def _lowest_us(p: Predicate) -> int | None:
    """The lowest timestamp (µs) a row passing ``p`` can have; None when ``p`` sets none."""
    if p.negated:
        return None
    if p.op in ("=", "<=>", ">="):
        return p.value if p.value is not None else None
    if p.op == ">":
        return p.value + 1
    if p.op == "in" and p.value:
        return min(p.value)
    return None


@dataclass(frozen=True)
class Pushdown:
    """The predicates a batch read took over from Spark (their AND), as picklable primitives.

    Examples
    --------
    >>> pd = Pushdown((Predicate("partition", "in", (0, 2)), Predicate("offset", ">=", 10),
    ...                Predicate("offset", "<", 20)))
    >>> [pd.selects_partition(p) for p in range(3)]
    [True, False, True]
    >>> pd.offset_intervals()
    [(10, 20)]
    """

    predicates: tuple[Predicate, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.predicates)

    def __str__(self) -> str:
        return " AND ".join(map(str, self.predicates)) or "(none)"

    def on(self, *columns: str) -> tuple[Predicate, ...]:
        return tuple(p for p in self.predicates if p.column in columns)

    def selects_topic(self, topic: str, params: Mapping[str, str | None] | None = None) -> bool:
        """Whether rows of ``topic`` (with these address parameter values) can pass."""
        params = params or {}
        for p in self.predicates:
            if p.column in ("partition",) + ROW_COLUMNS:
                continue
            value = topic if p.column == "topic" else params.get(p.column)
            if p.test(value) is not True:
                return False
        return True

    def selects_partition(self, partition: int) -> bool:
        """Whether rows of partition number ``partition`` can pass."""
        return all(p.test(partition) is True for p in self.on("partition"))

    def offset_intervals(self) -> list[_Interval] | None:
        """Half-open offset intervals rows may come from (None: no offset predicate).

        Intervals closer than :data:`MERGE_GAP` are joined so an ``IN`` list does not become
        one task per value; the row mask keeps only the offsets asked for."""
        preds = self.on("offset")
        if not preds:
            return None
        out = _UNBOUNDED
        for p in preds:
            out = _intersect(out, _offset_intervals(p))
        return merge_intervals(out, MERGE_GAP)

    def timestamp_start_ms(self) -> int | None:
        """The lowest Kafka timestamp (ms) a kept row can have: where each partition's range may
        start (the broker's first offset at or after it). None: no lower bound."""
        lows = [x for x in map(_lowest_us, self.on("timestamp")) if x is not None]
        return -(-max(lows) // 1000) if lows else None  # a row's µs value is its ms * 1000

    def row_mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        """Rows of a consumed batch (``offset`` int64, ``timestamp`` µs UTC) that pass every
        offset and timestamp predicate, with SQL's null semantics; None when there are none."""
        preds = self.on(*ROW_COLUMNS)
        if not preds:
            return None
        mask = None
        for p in preds:
            col = batch.column(p.column)
            if p.column == "timestamp":
                col = col.cast(pa.int64())
            m = _compute(p, col)
            mask = m if mask is None else pc.and_kleene(mask, m)
        return mask


def _compute(p: Predicate, col: pa.Array) -> pa.Array:
    op, v = p.op, p.value
    if op == "isnull" or op == "<=>" and v is None:
        m = pc.is_null(col)
    elif op == "isnotnull":
        m = pc.is_valid(col)
    elif op == "in":
        m = pc.is_in(col, value_set=pa.array(list(v), pa.int64()))
        m = pc.if_else(pc.is_null(col), pa.scalar(None, pa.bool_()), m)
    else:
        fn = {"=": pc.equal, "<=>": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
              ">=": pc.greater_equal}[op]
        m = fn(col, pa.scalar(v, pa.int64()))
        if op == "<=>":
            m = pc.fill_null(m, False)
    return pc.invert(m) if p.negated else m

