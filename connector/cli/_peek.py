"""``asyncapi-kafka peek DOC --channel C``: a few decoded records of a channel, without Spark.

It runs :func:`connector.read.peek` — the source's own read (options, schemas, registry client,
decoders), limited to ``-n`` records — and prints each record's Kafka metadata, schema id,
headers and value (or its error) as a table, or one JSON object per line with ``--json``.

Values print as JSON: binary as base64 (as Spark's ``to_json``), timestamps as ISO 8601 UTC,
decimals as strings. In the table, keys that are UTF-8 text print as text, other bytes as hex.
Exit codes: 0 the records were shown (also none), 2 usage, document, broker or registry errors.

pyspark is never imported; the formats' decoders load only when a record needs them.
"""
from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import math
import sys
from typing import Any

from connector.cli._common import add_option_argument, add_ref_root_argument, option_pairs

__all__ = ["add_peek_arguments", "peek_command", "render_records", "json_lines"]


def add_peek_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``peek`` arguments on ``parser`` (a sub-command parser)."""
    parser.add_argument("document", metavar="DOC", help="AsyncAPI 2.x/3.x document (YAML or JSON file)")
    parser.add_argument("--channel", metavar="NAME", help="the channel (key, address or topic)")
    parser.add_argument("-n", dest="n", type=int, default=10, metavar="N", help="how many records (default 10)")
    parser.add_argument("--from-end", action="store_true", help="the newest N records instead of the first")
    parser.add_argument("--partition", metavar="P", type=int, action="append", dest="partitions",
                        help="only this partition (repeatable)")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--offset", metavar="OFFSET", type=int, help="start each partition at this offset")
    start.add_argument("--timestamp", metavar="TIME",
                       help="start at the first record at or after TIME (epoch ms or ISO 8601, UTC by default)")
    parser.add_argument("--server", metavar="NAME", help="the document's server (when several Kafka servers match)")
    parser.add_argument("--json", action="store_true", help="one JSON object per record instead of a table")
    parser.add_argument("--allow-remote-refs", action="store_true",
                        help="fetch http(s) $refs (TLS verified, size-capped); off by default")
    add_option_argument(parser, "any option of the source, e.g. kafka.bootstrap.servers=HOST:PORT, "
                                "schema.registry.url=URL, kafka.security.protocol=SASL_SSL, mode=FAILFAST")
    add_ref_root_argument(parser)


def peek_command(args: argparse.Namespace, out=None) -> int:
    """Run ``peek``; returns 0, or 2 on errors (printed to stderr)."""
    from connector.errors import AsyncApiKafkaError

    out = out or sys.stdout
    try:
        options = option_pairs(args.options)
        if args.server:
            options["server"] = args.server
        if args.allow_remote_refs:
            options["asyncapi.allowRemoteRefs"] = "true"
        if args.ref_root:
            options["asyncapi.refRoot"] = args.ref_root
        from connector.read import peek

        table = peek(args.document, args.channel, n=args.n, from_end=args.from_end, partition=args.partitions,
                     offset=args.offset, timestamp=args.timestamp, options=options)
    except (AsyncApiKafkaError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    try:
        if args.json:
            for line in json_lines(table):
                print(line, file=out)
        elif table.num_rows:
            print(render_records(table), file=out)
        out.flush()
    except BrokenPipeError:
        # `peek ... --json | head -1`: the reader has gone, which is not an error. Point stdout at
        # nothing so the interpreter's own flush at exit does not complain again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if not table.num_rows:
        print("no records", file=sys.stderr)
    return 0


# -- output -----------------------------------------------------------------------------------------
_NOT_SHOWN = {"topic", "partition", "offset", "timestamp", "timestampType", "headers", "_error", "_raw_value"}


def render_records(table) -> str:
    """The records as an aligned table: metadata first, the value (or the error) last.

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"key": [b"k1"], "value": [{"id": 7}], "topic": ["t"], "partition": pa.array([0], pa.int32()),
    ...               "offset": [5], "timestamp": pa.array([0], pa.timestamp("us", tz="UTC")), "schemaId": [3]})
    >>> print(render_records(t))
      partition  offset  timestamp                key  schemaId  value
      0          5       1970-01-01 00:00:00.000  k1   3         {"id":7}
    """
    from connector.cli._table import render_table

    schema = table.schema
    names = schema.names
    value_cols = names[1:names.index("topic")]  # "value", or the value's fields (valueShape=flatten)
    rows = table.to_pylist()
    several_topics = len({r["topic"] for r in rows}) > 1
    extra = [c for c in names[names.index("topic"):] if c not in _NOT_SHOWN]  # schemaId, parameters
    headers = "headers" in names and any(r["headers"] for r in rows)
    head = (["topic"] if several_topics else []) + ["partition", "offset", "timestamp", "key", *extra]
    head += (["headers"] if headers else []) + ["value"]
    body = []
    for r in rows:
        cells: list[object] = [r["topic"]] if several_topics else []
        cells += [r["partition"], r["offset"], _time_cell(r["timestamp"]), _key_cell(r["key"], schema.field("key").type)]
        cells += [_value_cell(r[c], schema.field(c).type) for c in extra]
        if headers:
            cells.append(_headers_cell(r["headers"]))
        if r.get("_error"):
            cells.append(f"ERROR: {r['_error']}")
        elif value_cols == ["value"]:
            cells.append(_value_cell(r["value"], schema.field("value").type))
        else:
            cells.append(_dumps({c: _plain(r[c], schema.field(c).type) for c in value_cols}))
        body.append(cells)
    return render_table(body, headers=head)


def json_lines(table):
    """One compact JSON object per record (every column; binary as base64)."""
    schema = table.schema
    for r in table.to_pylist():
        yield _dumps({name: _plain(r[name], schema.field(name).type) for name in schema.names})


def _plain(v: Any, t) -> Any:
    """A Python value of Arrow type ``t`` as JSON-ready data (type-directed: maps become objects)."""
    import pyarrow as pa

    if v is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _plain(v.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return {str(k): _plain(x, t.item_type) for k, x in v}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [_plain(x, t.value_type) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, dt.datetime):
        return _iso(v)
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    return v


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _iso(v: dt.datetime) -> str:
    if v.tzinfo is not None:
        v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return v.isoformat(timespec="microseconds" if v.microsecond % 1000 else "milliseconds") + "Z"
    return v.isoformat()


def _time_cell(v: dt.datetime | None) -> str | None:
    if v is None:
        return None
    return _iso(v).replace("T", " ").rstrip("Z")


def _value_cell(v: Any, t) -> str | None:
    if v is None:
        return None
    plain = _plain(v, t)
    return plain if isinstance(plain, str) else _dumps(plain)


def _key_cell(v: Any, t) -> str | None:
    return _bytes_cell(v) if isinstance(v, bytes) else _value_cell(v, t)


def _bytes_cell(v: bytes, limit: int = 32) -> str:
    """UTF-8 text as itself, other bytes as hex (cut after ``limit`` bytes)."""
    try:
        text = v.decode("utf-8")
        if text.isprintable():
            return text
    except UnicodeDecodeError:
        pass
    return "0x" + v[:limit].hex() + ("…" if len(v) > limit else "")


def _headers_cell(headers: list | None) -> str | None:
    if not headers:
        return None
    return ", ".join(f"{h['key']}={_bytes_cell(h['value']) if h['value'] is not None else 'null'}" for h in headers)
