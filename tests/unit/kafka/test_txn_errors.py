"""What an exactly-once task says when its transaction fails (no broker needed: the producer's
handle is created against a closed port and never used)."""
from __future__ import annotations

import socket
import time

import pytest

from connector.errors import TransactionError
from connector.kafka import Marker, TaskTransaction
from connector.kafka._librdkafka import api


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def txn():
    t = TaskTransaction({"bootstrap.servers": f"127.0.0.1:{_closed_port()}", "log_level": "0",
                         "transaction.timeout.ms": "2000"}, "etl-q-3", "orders", timeout_s=1)
    yield t
    t.close()


def _code(name: str) -> int:
    lib = api()
    return next(c for c in range(-200, 120) if (lib.err2name(c) or b"").decode() == name)


def test_a_transaction_open_longer_than_its_timeout_says_which_setting_to_raise(txn):
    txn._began = time.monotonic() - 5  # the task wrote for 5 s, the transaction may last 2 s
    e = txn._error("committing the transaction", _code("PRODUCER_FENCED"), "Producer fenced", abortable=False,
                   fatal=True)
    assert isinstance(e, TransactionError) and e.fenced  # the coordinator aborted it and bumped the epoch
    msg = str(e)
    assert "'etl-q-3'" in msg and "transaction.timeout.ms=2000" in msg and "kafka.transaction.timeout.ms" in msg


def test_a_fenced_attempt_is_told_a_newer_one_writes_instead(txn):
    e = txn._error("adding the exactly-once marker to the transaction", _code("_FENCED"), "fenced", abortable=False,
                   fatal=True)
    assert e.fenced and e.code == "_FENCED" and "newer attempt of this task" in str(e)
    assert "transaction.timeout.ms" not in str(e)


@pytest.mark.parametrize("offset, metadata, want", [
    (-1001, None, None),                                   # nothing committed for this task
    (8, '{"batch":7,"rows":3,"digest":"0a0b0c0d"}\x00', Marker(7, 3, "0a0b0c0d")),
    (8, None, Marker(7)),                                  # a broker that keeps no metadata (tansu)
    (8, "not json", Marker(7)),
])
def test_markers_read_back(offset, metadata, want):
    assert Marker.parse(offset, metadata) == want
    if want is not None:
        assert Marker.parse(want.batch + 1, want.metadata()) == want
