"""Executor side of a write, per task: every input batch encoded (:func:`encode_batch`) and produced,
and the task returns only when every record is acknowledged.

At-least-once (:func:`write_batches`): an idempotent producer, every delivery report checked.
Exactly-once (:func:`write_exactly_once`): the task's rows in one Kafka transaction
(:mod:`connector.kafka._txn`), committed with its (batch, partition) marker; its identity
(transactional id, batch id) is given by the caller — the Spark sink takes it from its task context.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from connector.write._pipeline import EncodedBatch, encode_batch, topic_namer
from connector.write._types import WriteResult, WriteSetup

if TYPE_CHECKING:
    from connector.kafka import BatchProducer

__all__ = ["write_batches", "write_exactly_once"]

log = logging.getLogger("asyncapi_kafka")


def write_batches(setup: WriteSetup, batches: Iterable[pa.RecordBatch]) -> WriteResult:
    """Produce every batch of one task; return only when every record is acknowledged
    (at-least-once)."""
    from connector.kafka import producer_for

    bp = producer_for(setup.kafka_conf(warn=False))
    rows = 0
    seen: set[str] = set()
    try:
        for n, out in _encoded(setup, batches):
            _produce(out, bp, bp.produce)
            rows += n
            seen.update(out.topic_names())
        bp.finish()
    except BaseException:
        bp.abandon()
        raise
    return WriteResult(rows=rows, topics=tuple(sorted(seen)), pid=os.getpid())


def write_exactly_once(setup: WriteSetup, batches: Iterable[pa.RecordBatch], identity: tuple[str, int]) -> WriteResult:
    """The task's rows in one Kafka transaction, committed with its (batch, partition) marker
    (:mod:`connector.kafka._txn`); an attempt that finds the marker committed writes nothing,
    and compares what it would have written with what was.

    Parameters
    ----------
    identity : (str, int)
        The task's transactional id (fenced per query and partition) and batch id.
    """
    from connector.kafka import Digest, Marker, Opening, TaskTransaction

    tid, batch_id = identity
    assert setup.topic is not None  # checked on the driver
    # fence older attempts and ask whether one of them committed, while the first batch comes
    opening = Opening(setup.kafka_conf(warn=False), tid, setup.topic, timeout_s=setup.options.fetch_timeout_ms / 1000)
    txn: TaskTransaction | None = None
    done: Marker | None = None  # the committed marker, when an earlier attempt wrote this batch
    digest = Digest()
    seen: set[str] = set()
    try:
        for _, out in _encoded(setup, batches):
            if txn is None:
                txn, done = opening.result()
                # a marker of an earlier batch: this one is new; of this batch (or a later one,
                # after a checkpoint was rolled back by hand): written already
                if done is not None and done.batch < batch_id:
                    done = None
                if done is None:
                    txn.begin()
            digest.update(out.values, out.keys, out.partitions)
            if done is None:
                _produce(out, txn.producer, txn.produce)
            seen.update(out.topic_names())
        if txn is None:
            return WriteResult(rows=0, topics=(), pid=os.getpid())
        if done is not None:
            return WriteResult(rows=0, topics=tuple(sorted(seen)), pid=os.getpid(), replayed=digest.rows,
                               mismatch=_replay_mismatch(done, digest, tid, batch_id))
        txn.commit(Marker(batch_id, digest.rows, digest.value))
    except BaseException:
        if txn is not None:
            txn.abort()
        raise
    finally:
        if txn is None:  # no rows, or failed before the first: do not wait for the fencing
            opening.abandon()
        else:
            opening.close()
    return WriteResult(rows=digest.rows, topics=tuple(sorted(seen)), pid=os.getpid())


def _encoded(setup: WriteSetup, batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, EncodedBatch]]:
    """(input rows, the batch encoded) for each non-empty input batch of a task."""
    for batch in batches:
        if batch.num_rows:
            yield batch.num_rows, encode_batch(setup, batch)


def _produce(out: EncodedBatch, producer: BatchProducer, produce: Callable[..., int]) -> None:
    """Refuse the batch if a record is over the producer's size limit, then queue it all with
    ``produce`` (the producer's own, or its transaction's)."""
    producer.check_sizes(topic_namer(out.topics), out.values, out.keys, out.header_sizes)
    produce(out.topics, out.values, out.keys, out.partitions, out.headers)


def _replay_mismatch(done, digest, tid: str, batch_id: int) -> str | None:
    """How this replay differs from the attempt that committed (None: the same, or unknown)."""
    if done.rows is None:  # a broker that keeps no offset metadata: nothing to compare with
        return None
    if done.rows == digest.rows and (done.digest is None or done.digest == digest.value):
        return None
    what = (f"batch {batch_id} of task {tid!r} was committed with {done.rows} row(s) (digest {done.digest}); this "
            f"replay produced {digest.rows} (digest {digest.value})")
    log.warning("%s: the plan is not deterministic (rand(), a shuffle without a total order, a source that does "
                "not replay the same rows); the committed rows stand and this attempt wrote nothing", what)
    return what
