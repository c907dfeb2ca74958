"""Issue 37's done-criterion: on springwolf's example document (13 channels, no registry, so framing
``none``), every record the sandbox writes to ``multi-payload-topic`` (three JSON messages whose
headers schemas name Spring's ``__TypeId__``) comes out of ``peek`` and of a Spark read as its own
type. The reference is the raw record as plain confluent-kafka reads it: its ``__TypeId__`` header
and its JSON payload. Before, 20 of 30 records came out as ``AnotherPayloadDto`` with null fields.

Also what ``inspect`` says about the channel's routing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from connector.cli import main
from tests.integration.cli.test_sandbox import _start, _stop
from tests.integration.raw_records import raw_records

DOC = Path("/work/shared/asyncapi-examples/springwolf-kafka-example-3.1.yaml")
CHANNEL = "multi-payload-topic"
DTOS = "io.github.springwolf.examples.kafka.dtos."
MESSAGES = (DTOS + "AnotherPayloadDto", DTOS + "ExamplePayloadDto", "javax.money.MonetaryAmount")

pytestmark = [pytest.mark.slow, pytest.mark.kafka,
              pytest.mark.skipif(not DOC.exists(), reason=f"{DOC} not present")]


@pytest.fixture(scope="module")
def sandbox():
    proc, channels = _start(DOC, messages=10)
    try:
        yield next(c for c in channels if c["channel"] == CHANNEL)
    finally:
        _stop(proc)


def _raw(bootstrap: str, topic: str) -> dict:
    """(partition, offset) -> (__TypeId__ value, payload as JSON) of every record, by confluent-kafka."""
    out: dict = {}
    for m in raw_records(bootstrap, topic):
        type_id = [v.decode() for k, v in (m.headers() or []) if k == "__TypeId__"]
        out[(m.partition(), m.offset())] = (type_id[-1] if type_id else None, json.loads(m.value()))
    return out


def _same(decoded: dict, raw: dict) -> bool:
    """A decoded struct equals the raw JSON object (properties it lacks are nulls)."""
    return all(decoded.get(k) == v for k, v in raw.items()) and \
        all(v is None for k, v in decoded.items() if k not in raw)


def _check(rows: list[dict], raw: dict) -> None:
    assert sorted((r["partition"], r["offset"]) for r in rows) == sorted(raw)
    seen = set()
    for r in rows:
        type_id, payload = raw[(r["partition"], r["offset"])]
        assert r["_error"] is None, r["_error"]
        filled = {k: v for k, v in r["value"].items() if v is not None}
        assert list(filled) == [type_id], (type_id, r["value"])  # its own type, and only that one
        assert _same(filled[type_id], payload), (filled[type_id], payload)
        seen.add(type_id)
    assert seen == set(MESSAGES)  # the sandbox wrote every type


def test_peek_gives_every_sandbox_record_as_its_own_type(sandbox, capsys):
    assert sandbox["messages"] == 30 and sandbox["options"]
    raw = _raw(sandbox["options"]["kafka.bootstrap.servers"], sandbox["topic"])
    assert {t for t, _ in raw.values()} == set(MESSAGES)
    argv = ["peek", str(DOC), "--channel", CHANNEL, "-n", "100", "--json"]
    for k, v in sandbox["options"].items():
        if k not in ("asyncapi", "channel"):
            argv += ["-o", f"{k}={v}"]
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    _check([json.loads(line) for line in out.splitlines()], raw)


def test_spark_read_gives_every_sandbox_record_as_its_own_type(sandbox, spark):
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)
    raw = _raw(sandbox["options"]["kafka.bootstrap.servers"], sandbox["topic"])
    reader = spark.read.format("asyncapi-kafka").option("mode", "PERMISSIVE")
    for k, v in sandbox["options"].items():
        reader = reader.option(k, v)
    _check([r.asDict(recursive=True) for r in reader.load().collect()], raw)


def test_inspect_says_how_the_channel_is_routed(capsys):
    assert main(["inspect", str(DOC), "--channel", CHANNEL, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (channel,) = report["channels"]
    routing = channel["routing"]
    assert routing["by"] == "header" and routing["otherwise"] == "validation"
    type_id = next(h for h in routing["headers"] if h["name"] == "__TypeId__")
    assert type_id["documented"]
    assert type_id["messages"][MESSAGES[1]] == {"values": [MESSAGES[1]], "how": "enum"}
    assert type_id["messages"][MESSAGES[0]]["how"] == "name"  # its headers schema leaves __TypeId__ free
    assert {m["name"]: m["type_header"] for m in channel["messages"]} == {m: ["__TypeId__", m] for m in MESSAGES}
    assert main(["inspect", str(DOC), "--channel", CHANNEL]) == 0
    text = capsys.readouterr().out
    assert "routing        by header __TypeId__:" in text and "records without a type header" in text
