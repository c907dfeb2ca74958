"""The writer objects Spark pickles: small to unpickle, because Spark unpickles them in every
process that touches a write, including the driver's commit worker.

A :class:`BatchWriter` / :class:`StreamWriter` carries its :class:`connector.write.WriteSetup`
as pickled bytes and the channel's name. Unpickling the writer (the driver's commit and abort,
each executor task) imports this module and ``pyspark.sql.datasource`` only; the setup - and with
it the options, the document's plan, the encoders and the Kafka client - is unpickled in
:meth:`write`, on executors, where it is needed, and the write itself is
:func:`connector.write.write_batches` / :func:`connector.write.write_exactly_once`. A fresh commit
worker then does not import the whole connector (about a second per process) to log one line:
the commit messages (:class:`WriteCommit`) are defined here too.
"""
from __future__ import annotations

import dataclasses
import logging
import pickle

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

__all__ = ["BatchWriter", "StreamWriter", "WriteCommit", "task_identity"]

log = logging.getLogger("asyncapi_kafka")


@dataclasses.dataclass
class WriteCommit(WriterCommitMessage):
    """What one write task delivered: :class:`connector.write.WriteResult` as the message Spark
    hands the driver's commit (every record acknowledged by the brokers)."""

    rows: int
    topics: tuple[str, ...]
    pid: int
    replayed: int = 0
    mismatch: str | None = None

    @classmethod
    def of(cls, result) -> WriteCommit:
        return cls(rows=result.rows, topics=result.topics, pid=result.pid, replayed=result.replayed,
                   mismatch=result.mismatch)


def task_identity(setup) -> tuple[str, int]:
    """(transactional id, batch id) of the running exactly-once task: a stream's persistent query id
    (kept in its checkpoint, so a restart has the same) and micro-batch id, from the local
    properties Spark gives its tasks; a batch write's ``writeId`` and batch 0."""
    from pyspark import TaskContext

    from connector.errors import ConfigError
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


class _Setup:
    """The pickled setup and the channel it writes to (for the driver's log lines)."""

    def __init__(self, setup) -> None:
        self.channel: str = setup.plan.channel
        self.exactly_once: bool = setup.options.delivery_guarantee == "exactly-once"
        self._setup_bytes = pickle.dumps(setup, protocol=pickle.HIGHEST_PROTOCOL)
        self._repr = repr(setup)

    @property
    def setup(self):
        """The :class:`connector.write.WriteSetup` (unpickled on first use)."""
        cached = self.__dict__.get("_setup")
        if cached is None:
            cached = self.__dict__["_setup"] = pickle.loads(self._setup_bytes)
        return cached

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_setup"}

    def _write(self, iterator) -> WriteCommit:
        from connector.write import write_batches, write_exactly_once

        if self.exactly_once:
            return WriteCommit.of(write_exactly_once(self.setup, iterator, task_identity(self.setup)))
        return WriteCommit.of(write_batches(self.setup, iterator))

    def _log_commit(self, messages, what: str) -> None:
        done = [m for m in messages if m is not None]
        rows = sum(m.rows for m in done)
        replayed = sum(getattr(m, "replayed", 0) for m in done)
        again = f"; {replayed} row(s) of tasks whose transaction an earlier attempt had committed were not written " \
                "again" if replayed else ""
        log.info("asyncapi-kafka: %s wrote %d record(s) to channel %s%s", what, rows, self.channel, again)
        for m in done:
            if getattr(m, "mismatch", None):
                log.warning("asyncapi-kafka: %s to channel %s: %s (see docs/exactly-once.md, 'replays')", what,
                            self.channel, m.mismatch)


class BatchWriter(_Setup, DataSourceArrowWriter):
    """``df.write``: one task per DataFrame partition, each producing its rows and waiting for
    every delivery report before returning (a failed delivery fails the task)."""

    def write(self, iterator):
        return self._write(iterator)

    def commit(self, messages) -> None:
        self._log_commit(messages, "the write")

    def abort(self, messages) -> None:
        rows = sum(m.rows for m in messages if m is not None)
        if self.exactly_once:
            log.warning("asyncapi-kafka: write to channel %s failed; the transactions of %d record(s) of successful "
                        "tasks are committed (visible to read_committed readers): a re-run with the same writeId "
                        "writes only the other partitions", self.channel, rows)
            return
        log.warning("asyncapi-kafka: write to channel %s failed; %d record(s) of successful tasks were "
                    "delivered and stay in Kafka (Kafka has no rollback: at-least-once)", self.channel, rows)

    def __repr__(self) -> str:
        return f"BatchWriter({self._repr})"


class StreamWriter(_Setup, DataSourceStreamArrowWriter):
    """``df.writeStream``: each micro-batch as a batch write. A micro-batch whose tasks failed is
    re-run by Spark after a restart, so its records may be written twice (at-least-once), unless
    ``deliveryGuarantee=exactly-once``: each task then commits its rows in one transaction with a
    marker of (batch, partition), and a re-run writes nothing a committed task wrote."""

    def write(self, iterator):
        return self._write(iterator)

    def commit(self, messages, batchId) -> None:
        self._log_commit(messages, f"micro-batch {batchId}")

    def abort(self, messages, batchId) -> None:
        if self.exactly_once:
            log.warning("asyncapi-kafka: micro-batch %s to channel %s failed; it is retried from the checkpoint, "
                        "and its tasks that committed write nothing again", batchId, self.channel)
            return
        log.warning("asyncapi-kafka: micro-batch %s to channel %s failed; it is retried from the "
                    "checkpoint (records already delivered are written again)", batchId, self.channel)

    def __repr__(self) -> str:
        return f"StreamWriter({self._repr})"
