"""A few decoded records of a channel, without Spark: :func:`peek`.

The same read as ``spark.read.format("asyncapi-kafka")`` — the same option table, the same
setup (:func:`connector.read.build_setup`: document, plan, reader schemas from the schema
layer, registry client, librdkafka settings), the same offset resolution
(:class:`connector.kafka.KafkaOffsetReader`) and the same :class:`~connector.read.Pipeline` —
limited to ``n`` records and returned as a ``pyarrow.Table``:

================  ==========================================================================
which records     the ``n`` earliest (by record timestamp; ties by topic, partition, offset)
                  of the partitions' first records from where the read starts, or with
                  ``from_end`` the ``n`` newest before where it ends; in timestamp order
where it starts   ``offset`` (each partition), ``timestamp`` (first record at or after it),
                  else the options ``startingOffsets`` ... (default earliest)
where it ends     the options ``endingOffsets`` ... (default latest, when peek starts)
partitions        ``partition`` (one number or several), else all of the channel's topics
errors            ``mode`` PERMISSIVE unless given: a record that does not decode is a row
                  with ``_error`` and ``_raw_value``, not a failure (the records are chosen
                  first, then decoded: with DROPMALFORMED fewer than ``n`` may remain)
headers           ``includeHeaders`` true unless given
================  ==========================================================================

At most ``n`` records of each partition are read, in parallel over a few consumers.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from connector.errors import ConfigError
from connector.read._offsets import plan_offsets
from connector.read._setup import ReadSetup, build_setup

if TYPE_CHECKING:
    from connector.kafka import Pushdown
    from connector.options import SourceOptions

__all__ = ["peek", "peek_options", "parse_time", "read", "PEEK_DEFAULTS"]

log = logging.getLogger("asyncapi_kafka")

TP = tuple[str, int]
#: Options peek sets unless the caller does: show bad records and the headers.
PEEK_DEFAULTS = {"mode": "PERMISSIVE", "includeHeaders": "true"}
_STARTING = ("startingoffsets", "startingtimestamp", "startingoffsetsbytimestamp")
_MAX_CONSUMERS = 8
_ORDER = [("timestamp", "ascending"), ("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]


def peek(asyncapi: str, channel: str | None = None, *, n: int = 10, from_end: bool = False,
         partition: int | Sequence[int] | None = None, offset: int | None = None,
         timestamp: int | str | dt.datetime | dt.date | None = None,
         options: Mapping[str, Any] | None = None, **more: Any) -> pa.Table:
    """Decode ``n`` records of a channel without Spark, as a ``pyarrow.Table``.

    Parameters
    ----------
    asyncapi : str
        Path of the AsyncAPI document (or its text), as the option ``asyncapi``.
    channel : str, optional
        The channel (key, address or topic); or give ``operation``/``message`` in ``options``.
    n : int
        How many records (default 10).
    from_end : bool
        The newest ``n`` records instead of the first ones.
    partition : int or sequence of int, optional
        Only these partition numbers.
    offset : int, optional
        Start each partition at this offset.
    timestamp : int, str, datetime or date, optional
        Start at the first record whose timestamp is at or after this time: epoch
        milliseconds, ISO 8601 text (UTC unless it names a zone) or a ``datetime``.
    options : mapping, optional
        Options of the source, named as in ``spark.read.option(...)``: ``kafka.*``,
        ``schema.registry.*``, ``server``, ``startingOffsets``, ``mode`` ...
    **more
        More options, as keywords (``mode="FAILFAST"``; use ``options`` for dotted names).

    Returns
    -------
    pyarrow.Table
        The columns of the source's read with these options (``key``, ``value``, ``topic``,
        ``partition``, ``offset``, ``timestamp``, ``timestampType``, ``headers``, ``schemaId``,
        parameters, ``_error``, ``_raw_value``), at most ``n`` rows in timestamp order.

    Examples
    --------
    >>> import connector
    >>> t = connector.peek("examples/shop.yaml", "orders", n=5,                 # doctest: +SKIP
    ...                    options={"kafka.bootstrap.servers": "localhost:9092"})
    >>> t.to_pandas()                                                             # doctest: +SKIP
    >>> import duckdb; duckdb.sql("select value.* from t")                        # doctest: +SKIP
    """
    raw = dict(options or {})
    raw.update(more)
    raw["asyncapi"] = asyncapi
    if channel is not None:
        raw["channel"] = channel
    if n < 1:
        raise ConfigError(f"n must be at least 1, got {n}")
    if offset is not None and offset < 0:
        raise ConfigError(f"offset must not be negative, got {offset}; use from_end for the newest records")
    since = None if timestamp is None else parse_time(timestamp)
    opts = peek_options(raw, offset=offset, timestamp=since, from_end=from_end)
    return read(build_setup(opts), n=n, from_end=from_end, partitions=partition, offset=offset, since=since)


def peek_options(raw: Mapping[str, Any], *, offset: int | None = None, timestamp: Any = None,
                 from_end: bool = False) -> SourceOptions:
    """The options of a peek, typed by the option table for a batch read, with
    :data:`PEEK_DEFAULTS` where the caller gave nothing; refuses start flags that conflict."""
    from connector.options import parse_any

    given = {str(k).lower() for k in raw}
    merged = {k: v for k, v in PEEK_DEFAULTS.items() if k.lower() not in given}
    merged.update({str(k): v for k, v in raw.items() if v is not None})
    flags = [name for name, on in (("offset", offset is not None), ("timestamp", timestamp is not None),
                                   ("from_end", from_end)) if on]
    if len(flags) > 1:
        raise ConfigError(f"{' and '.join(flags)} each say where to start: give one")
    starting = sorted(k for k in given if k in _STARTING)
    if starting and (offset is not None or timestamp is not None):
        raise ConfigError(f"{flags[0]} and the option {starting[0]!r} both say where to start: give one")
    return parse_any(merged).for_scope(streaming=False)


def parse_time(value: int | str | dt.datetime | dt.date) -> int:
    """Milliseconds since the epoch of a time given as epoch milliseconds, ISO 8601 text (UTC
    unless it names an offset) or a ``datetime``/``date``.

    Examples
    --------
    >>> parse_time("2026-01-02T03:04:05Z"), parse_time("1767323045000"), parse_time("2026-01-02")
    (1767323045000, 1767323045000, 1767312000000)
    """
    if isinstance(value, bool):
        raise ConfigError(f"not a time: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        when = value
    elif isinstance(value, dt.date):
        when = dt.datetime(value.year, value.month, value.day)
    else:
        text = str(value).strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        try:
            when = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError as e:
            raise ConfigError(f"not a time: {text!r}; give epoch milliseconds or ISO 8601 such as "
                              "2026-01-02T03:04:05Z") from e
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


def read(setup: ReadSetup, *, n: int = 10, from_end: bool = False, partitions: int | Sequence[int] | None = None,
         offset: int | None = None, since: int | None = None) -> pa.Table:
    """Plan, read and decode up to ``n`` records with ``setup`` (see :func:`peek`; ``since``:
    epoch milliseconds)."""
    pushdown = None
    if since is not None:
        from connector.kafka import Predicate, Pushdown

        # The broker's offsets-for-times bounds where the first such record can be; the row
        # mask keeps exactly the records at or after the time (timestamps need not grow).
        pushdown = Pushdown((Predicate("timestamp", ">=", since * 1000),))
    ranges = plan(setup, n=n, from_end=from_end, partitions=partitions, offset=offset, since=since)
    raw = _read_ranges(setup, ranges, n, pushdown)
    raw = raw.sort_by(_ORDER)
    raw = raw.slice(max(raw.num_rows - n, 0)) if from_end else raw.slice(0, n)
    return decode(setup, raw)


def decode(setup: ReadSetup, raw: pa.Table) -> pa.Table:
    """Raw records (:data:`connector.kafka.RAW_ARROW_SCHEMA`) → the read's output table."""
    schema = setup.pipeline.arrow_schema
    if not raw.num_rows:
        return schema.empty_table()
    batch = raw.combine_chunks().to_batches()[0]
    out = setup.pipeline.process(batch, setup.lookup())
    return pa.Table.from_batches([out] if out is not None else [], schema=schema)


def plan(setup: ReadSetup, *, n: int, from_end: bool, partitions: int | Sequence[int] | None,
         offset: int | None, since: int | None) -> list[tuple[TP, int, int]]:
    """``((topic, partition), start, end)`` to read: where the read starts and ends, per partition
    (:func:`connector.read._offsets.plan_offsets`, as the Spark source plans)."""
    _, start, end = plan_offsets(setup, select=lambda every: _select(every, partitions), since_ms=since,
                                 first_offset=offset)
    out = []
    for tp in sorted(start):
        lo, hi = start[tp], end[tp]
        if from_end:
            lo = max(lo, hi - n)
        if hi > lo:
            out.append((tp, lo, hi))
    return out


def _select(every: list[TP], partitions: int | Sequence[int] | None) -> list[TP]:
    if partitions is None:
        return every
    wanted = {partitions} if isinstance(partitions, int) else set(partitions)
    tps = [tp for tp in every if tp[1] in wanted]
    missing = sorted(wanted - {p for _, p in tps})
    if missing:
        have = sorted({p for _, p in every})
        raise ConfigError(f"no partition {', '.join(map(str, missing))} in the channel's topics "
                          f"(partitions: {', '.join(map(str, have)) or 'none'})")
    return tps


def _read_ranges(setup: ReadSetup, ranges: list[tuple[TP, int, int]], n: int,
                 pushdown: Pushdown | None) -> pa.Table:
    """Up to ``n`` records of each range (after the row mask), one consumer per partition."""
    from connector.kafka import RAW_ARROW_SCHEMA, RAW_ARROW_SCHEMA_NO_HEADERS

    schema = RAW_ARROW_SCHEMA if setup.pipeline.needs_headers() else RAW_ARROW_SCHEMA_NO_HEADERS
    if not ranges:
        return schema.empty_table()
    conf = setup.kafka_conf(warn=False)
    if len(ranges) == 1:
        batches = _read_one(setup, conf, ranges[0], n, pushdown)
    else:
        # librdkafka waits without the GIL: partitions are read side by side.
        with ThreadPoolExecutor(max_workers=min(len(ranges), _MAX_CONSUMERS)) as pool:
            batches = [b for got in pool.map(lambda r: _read_one(setup, conf, r, n, pushdown), ranges)
                       for b in got]
    return pa.Table.from_batches(batches, schema=schema)


def _read_one(setup: ReadSetup, conf: dict[str, str], rng: tuple[TP, int, int], n: int,
              pushdown: Pushdown | None) -> list[pa.RecordBatch]:
    from connector.kafka import OffsetRange, read_range

    opts = setup.options
    (topic, part), lo, hi = rng
    out: list[pa.RecordBatch] = []
    have = 0
    for raw in read_range(conf, OffsetRange(topic, part, lo, hi), batch_size=min(n, opts.max_batch_rows),
                          include_headers=setup.pipeline.needs_headers(),
                          fail_on_data_loss=opts.fail_on_data_loss, poll_timeout_s=opts.poll_timeout_ms / 1000.0,
                          group_prefix=opts.group_id_prefix):
        mask = pushdown.row_mask(raw) if pushdown is not None else None
        if mask is not None:
            raw = raw.filter(mask)
        out.append(raw.slice(0, n - have))
        have += min(raw.num_rows, n - have)
        if have >= n:
            break  # closes the consumer
    return out
