"""The writer objects Spark pickles: small to unpickle, because Spark unpickles them in every
process that touches a write, including the driver's commit worker.

A :class:`BatchWriter` / :class:`StreamWriter` carries its :class:`WriteSetup` as pickled bytes
and the channel's name. Unpickling the writer (the driver's commit and abort, each executor
task) imports this module and ``pyspark.sql.datasource`` only; the setup - and with it the
options, the document's plan, the encoders and the Kafka client - is unpickled in
:meth:`write`, on executors, where it is needed. A fresh commit worker then does not import
the whole connector (about a second per process) to log one line.
"""
from __future__ import annotations

import logging
import pickle

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter

__all__ = ["BatchWriter", "StreamWriter"]

log = logging.getLogger("asyncapi_kafka")


class _Setup:
    """The pickled setup and the channel it writes to (for the driver's log lines)."""

    def __init__(self, setup) -> None:
        self.channel: str = setup.plan.channel
        self.exactly_once: bool = setup.options.delivery_guarantee == "exactly-once"
        self._setup_bytes = pickle.dumps(setup, protocol=pickle.HIGHEST_PROTOCOL)
        self._repr = repr(setup)

    @property
    def setup(self):
        """The :class:`connector.spark._write_types.WriteSetup` (unpickled on first use)."""
        cached = self.__dict__.get("_setup")
        if cached is None:
            cached = self.__dict__["_setup"] = pickle.loads(self._setup_bytes)
        return cached

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_setup"}

    def _write(self, iterator):
        if self.exactly_once:
            from connector.spark._write_txn import task_identity, write_exactly_once

            return write_exactly_once(self.setup, iterator, task_identity(self.setup))
        from connector.spark._write_task import write_batches

        return write_batches(self.setup, iterator)

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
