"""``connector.peek`` returns what a Spark read of the same offsets returns, row for row.

Every channel of the demo document (Avro, JSON Schema, Protobuf, Avro framed for Glue, a
templated address) in the sandbox: its first records, and for one channel the newest records
and one partition's; then ``spark.read.format("asyncapi-kafka")`` with the same options and
``startingOffsets``/``endingOffsets`` naming exactly the offsets peek returned."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import connector

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

SHOP = Path(__file__).resolve().parents[3] / "connector" / "examples" / "shop.yaml"
CASES = [("orders", {"n": 5}), ("payments", {"n": 5}), ("shipments", {"n": 5}), ("stock", {"n": 5}),
         ("orders", {"n": 3, "from_end": True}), ("shipments", {"n": 2, "partition": 1})]


@pytest.fixture(scope="module")
def sandbox():
    from connector.cli._sandbox import Sandbox

    with Sandbox(str(SHOP), messages=8) as box:
        yield box


def _ranges(table, every: list[tuple[str, int]]) -> tuple[str, str]:
    """startingOffsets/endingOffsets JSON covering exactly the rows of ``table`` (each partition's
    rows are consecutive offsets); partitions without rows get an empty range."""
    start: dict = {}
    end: dict = {}
    for t, p in every:
        start.setdefault(t, {})[str(p)] = 0
        end.setdefault(t, {})[str(p)] = 0
    for r in table.select(["topic", "partition", "offset"]).to_pylist():
        t, p, off = r["topic"], str(r["partition"]), r["offset"]
        lo, hi = start[t][p], end[t][p]
        start[t][p], end[t][p] = (off, off + 1) if lo == hi else (min(lo, off), max(hi, off + 1))
    return json.dumps(start), json.dumps(end)


def _key(row):
    return row["topic"], row["partition"], row["offset"]


@pytest.mark.parametrize("channel, shape", CASES, ids=[f"{c}-{'-'.join(map(str, s.values()))}" for c, s in CASES])
def test_peek_equals_a_spark_read_of_the_same_offsets(spark, sandbox, channel, shape):
    from connector.kafka import KafkaOffsetReader
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)
    c = next(c for c in sandbox.channels if c["channel"] == channel)
    assert c["messages"], c
    options = {k: v for k, v in c["options"].items() if k not in ("asyncapi", "channel")}
    table = connector.peek(c["options"]["asyncapi"], channel, options=options, **shape)
    assert 0 < table.num_rows <= shape["n"]
    assert table.column("_error").null_count == table.num_rows
    with KafkaOffsetReader({"bootstrap.servers": sandbox.kafka.bootstrap_servers}) as r:
        every = r.partitions_for([c["topic"]])
    starting, ending = _ranges(table, every)
    reader = spark.read.format("asyncapi-kafka")
    for k, v in {**c["options"], "mode": "PERMISSIVE", "includeHeaders": "true",
                 "startingOffsets": starting, "endingOffsets": ending}.items():
        reader = reader.option(k, v)
    from_spark = reader.load().toArrow()
    assert from_spark.schema.names == table.schema.names
    assert sorted(from_spark.to_pylist(), key=_key) == sorted(table.to_pylist(), key=_key)
