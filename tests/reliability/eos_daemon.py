"""PySpark's worker daemon with faults planted in the exactly-once commit (tests only).

Started by Spark as ``spark.python.daemon.module``: it wraps
:meth:`connector.kafka.TaskTransaction.commit` before forking the Python workers, so every write
task of the test's Spark driver runs with it. ``EOS_FAULTS`` (JSON) lists the faults, each
``{"at": ..., "batch": b, "partition": p}`` for attempt 0 of that task (each one, when it fires,
leaves a file ``fired-<at>-<batch>-<partition>`` in ``EOS_SIGNALS``):

``fail-after-commit``   the commit went through, then the task fails (its commit message is lost)
``fail-before-commit``  every record delivered inside the transaction, then the task fails
``signal-after-commit`` the commit went through; a file ``committed-<batch>-<partition>`` appears
                        in ``EOS_SIGNALS`` (the test waits for it)
``hang-before-commit``  every record delivered inside the transaction, then the task waits for
                        good (the test kills the driver meanwhile)
"""
from __future__ import annotations

import json
import os
import time


def _plant() -> None:
    faults = json.loads(os.environ.get("EOS_FAULTS") or "[]")
    if not faults:
        return
    from connector.kafka import TaskTransaction

    real = TaskTransaction.commit
    signals = os.environ.get("EOS_SIGNALS", "")

    def commit(self, marker):
        from pyspark import TaskContext

        tc = TaskContext.get()
        here = [f["at"] for f in faults
                if tc is not None and tc.attemptNumber() == 0 and f["batch"] == marker.batch
                and f["partition"] == tc.partitionId()]
        for at in here:  # the test checks that each fault fired
            with open(os.path.join(signals, f"fired-{at}-{marker.batch}-{tc.partitionId()}"), "w"):
                pass
        if "fail-before-commit" in here or "hang-before-commit" in here:
            self.producer.finish()
            if "hang-before-commit" in here:
                time.sleep(3600)
            raise RuntimeError(f"injected: task of batch {marker.batch} failed before its commit")
        real(self, marker)
        if "signal-after-commit" in here:
            with open(os.path.join(signals, f"committed-{marker.batch}-{tc.partitionId()}"), "w"):
                pass
        if "fail-after-commit" in here:
            raise RuntimeError(f"injected: task of batch {marker.batch} failed after its commit")

    TaskTransaction.commit = commit  # type: ignore[method-assign]


if __name__ == "__main__":
    _plant()
    from pyspark.daemon import manager

    manager()
