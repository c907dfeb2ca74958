"""``asyncapi-kafka sandbox DOC`` in a subprocess, as a user runs it: read the printed options,
read back every produced message with Spark (no row with a decode error), then interrupt it.

Runs on the demo document and the three shared AsyncAPI examples. The Adeo document's
payloads are remote ``$ref``s (not fetched offline): the sandbox still creates its templated
topic with the binding's 3 partitions and says why it produced nothing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path("/work/shared/asyncapi-examples")
SHOP = Path(__file__).resolve().parents[3] / "examples" / "shop.yaml"
DOCS = [SHOP, EXAMPLES / "streetlights-kafka-3.1.yml", EXAMPLES / "streetlights-kafka-2.6.yml",
        EXAMPLES / "adeo-kafka-request-reply-3.1.yml"]

pytestmark = [pytest.mark.slow, pytest.mark.kafka]


def _start(doc: Path, messages: int):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "connector", "sandbox", str(doc), "--messages", str(messages)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=Path(__file__).resolve().parents[3])
    channels, seen = [], []
    for line in proc.stdout:  # blocks until the sandbox prints; ends if it exits
        seen.append(line)
        if line.startswith("SANDBOX "):
            channels.append(json.loads(line[len("SANDBOX "):]))
        if line.startswith("READY"):
            return proc, channels
    proc.wait(30)
    raise AssertionError(f"sandbox exited ({proc.returncode}) before READY:\n{''.join(seen)[-4000:]}")


def _stop(proc) -> str:
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, rest
    return rest


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_sandbox_options_read_back_every_produced_message(doc, spark):
    if not doc.exists():
        pytest.skip(f"{doc} not present")
    from connector.spark import AsyncApiKafkaDataSource

    spark.dataSource.register(AsyncApiKafkaDataSource)
    proc, channels = _start(doc, messages=5)
    try:
        produced = [c for c in channels if c["messages"]]
        if doc.name.startswith("adeo"):
            request = next(c for c in channels if c["channel"] == "costingRequestChannel")
            assert request["partitions"] == 3 and "remote $ref" in request["skipped"]
            assert not produced
        else:
            assert produced and len(produced) == len(channels), channels
        for c in produced:
            reader = spark.read.format("asyncapi-kafka")
            for k, v in c["options"].items():
                reader = reader.option(k, v)
            # PERMISSIVE: a record that did not decode would show as a row with an _error.
            rows = [r.asDict() for r in reader.option("mode", "PERMISSIVE").load().collect()]
            assert len(rows) == c["messages"], c
            assert all(r["_error"] is None for r in rows), [r["_error"] for r in rows][:3]
            assert all(r["value"] is not None for r in rows)
            if c["channel"] == "orders":  # the binding asks for 4 partitions
                assert c["partitions"] == 4 and {r["partition"] for r in rows} <= set(range(4))
    finally:
        out = _stop(proc)
    assert "stopping" in out


def test_embedded_kafka_creates_topics_with_the_partitions_asked_for():
    from connector.testing import EmbeddedKafka

    with EmbeddedKafka() as kafka:
        assert kafka.create_topic("seven", 7) == list(range(7))
        assert kafka.create_topic("auto") == list(range(4))
