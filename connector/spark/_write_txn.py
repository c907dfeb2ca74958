"""Executor side of an exactly-once write (``deliveryGuarantee=exactly-once``): the task's rows in
one Kafka transaction (:mod:`connector.kafka._txn`), its identity taken from Spark's task context."""
from __future__ import annotations

import logging
import os

import pyarrow.compute as pc

from connector.errors import ConfigError
from connector.spark._write_task import _topic_of, encode_batch
from connector.spark._write_types import WriteCommit, WriteSetup

__all__ = ["task_identity", "write_exactly_once"]

log = logging.getLogger("asyncapi_kafka")


def task_identity(setup: WriteSetup) -> tuple[str, int]:
    """(transactional id, batch id) of the running task: a stream's persistent query id (kept
    in its checkpoint, so a restart has the same) and micro-batch id, from the local properties
    Spark gives its tasks; a batch write's ``writeId`` and batch 0."""
    from pyspark import TaskContext

    from connector.kafka import transactional_id

    tc = TaskContext.get()
    if tc is None:
        raise ConfigError("an exactly-once write task runs outside a Spark task: no partition id to fence by")
    opts = setup.options
    if opts.streaming:
        query, batch = tc.getLocalProperty("sql.streaming.queryId"), tc.getLocalProperty("streaming.sql.batchId")
        if not query or batch is None:
            raise ConfigError("an exactly-once stream write found no query id or micro-batch id in its task "
                              "context (sql.streaming.queryId, streaming.sql.batchId)")
        return transactional_id(opts.transactional_id_prefix, query, tc.partitionId()), int(batch)
    return transactional_id(opts.transactional_id_prefix, str(opts.write_id), tc.partitionId()), 0


def write_exactly_once(setup: WriteSetup, iterator, identity: tuple[str, int]) -> WriteCommit:
    """The task's rows in one Kafka transaction, committed with its (batch, partition) marker
    (:mod:`connector.kafka._txn`); an attempt that finds the marker committed writes nothing,
    and compares what it would have written with what was."""
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
        for batch in iterator:
            if batch.num_rows == 0:
                continue
            topics, values, keys, partitions, headers, hsize = encode_batch(setup, batch)
            if txn is None:
                txn, done = opening.result()
                # a marker of an earlier batch: this one is new; of this batch (or a later one,
                # after a checkpoint was rolled back by hand): written already
                if done is not None and done.batch < batch_id:
                    done = None
                if done is None:
                    txn.begin()
            digest.update(values, keys, partitions)
            if done is None:
                txn.producer.check_sizes(_topic_of(topics), values, keys, hsize)
                txn.produce(topics, values, keys, partitions, headers)
            seen.update([topics] if isinstance(topics, str) else pc.unique(topics).to_pylist())
        if txn is None:
            return WriteCommit(rows=0, topics=(), pid=os.getpid())
        if done is not None:
            return WriteCommit(rows=0, topics=tuple(sorted(seen)), pid=os.getpid(), replayed=digest.rows,
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
    return WriteCommit(rows=digest.rows, topics=tuple(sorted(seen)), pid=os.getpid())


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
