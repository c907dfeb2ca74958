"""PySpark's Python worker daemon with the connector already imported.

PySpark does not start its Python workers from scratch: it forks them from a daemon process,
``python -m pyspark.daemon <worker module>`` (one daemon per kind of worker and Python: the
task worker ``pyspark.worker``, and the data source planners ``pyspark.sql.worker.*``). Each
forked worker then imports what its task needs — for a read of this source PySpark's worker
module, pyarrow, the connector and numba with its compiler context, about a second of CPU —
and every new worker pays it again. Spark starts new workers often: at the first task, for
each concurrent task, and after every query that stops reading early (``show()``,
``limit(n)``, ``take``: Spark then stops the worker rather than return it to the pool).

Setting ``spark.python.daemon.module`` to ``connector.spark.daemon`` runs this module instead.
It imports those modules once, in the daemon, then runs PySpark's own daemon loop
(``pyspark.daemon.manager``); every worker forked from it starts with them already loaded::

    spark = (SparkSession.builder
             .config("spark.python.daemon.module", "connector.spark.daemon")
             .getOrCreate())

What is loaded, by the kind of worker the daemon forks (its first argument):

* ``pyspark.worker`` (tasks: reads, writes, the column functions): PySpark's worker module,
  pandas (which pyarrow imports at a worker's first conversion of a value, whatever the task),
  the source and the sink with their pipelines, numba with its compiler context, and the
  kernels this machine has compiled already (from the on-disk cache: nothing compiles in the
  daemon; a kernel not yet compiled compiles in the worker that first needs it);
* a planner (``pyspark.sql.worker.*``, run at ``load()``, ``explain``, the start of a write):
  that planner module and the source's driver side (options, document, schema layer).

The daemon starts no thread before forking (it only imports). If an import fails, the error
is logged and the daemon runs anyway: workers then import what they need themselves, as under
``pyspark.daemon``. The setting needs the package importable by the executors' Python (as the
source itself does) and applies to every Python worker of the session; a session that never
reads this source pays the preload once per daemon.
"""
from __future__ import annotations

import gc
import importlib
import logging
import sys
import time

__all__ = ["preload", "main"]

log = logging.getLogger("asyncapi_kafka")

#: What every daemon loads: the source's driver side (what a planner runs).
PLANNER = ("pyarrow", "connector.spark._source", "connector.asyncapi", "connector.read", "connector.schema",
           "connector.formats.avro", "connector.formats.json_schema")
#: What the task worker's daemon loads on top: the executor side of reads and writes, and pandas:
#: pyarrow imports it at a worker's first conversion of a value (only to ask whether the value
#: is a pandas object), 0.4 s of CPU and more than a second on a busy machine, in every worker.
TASKS = ("pandas", "pyspark.sql.pandas.serializers", "pyspark.sql.datasource_internal",
         # where the functions a data source task unpickles live (reads, batch and stream writes)
         "pyspark.sql.worker.plan_data_source_read", "pyspark.sql.worker.write_into_data_source", "connector.spark._batch", "connector.spark._stream",
         "connector.spark._sink", "connector.write", "connector.spark.functions",
         "connector.kafka._native", "connector.formats.avro._vm", "connector.formats.avro._assemble_kernels",
         "connector.formats.json_schema._decode", "connector.formats.json_schema._kernel",
         "connector.formats.protobuf._decode", "connector.formats.protobuf._kernel", "registry._http", "requests")


def preload(worker_module: str | None = None) -> list[str]:
    """Import what a worker of ``worker_module`` needs (``pyspark.worker`` when None); returns the
    modules that failed to import (logged, not raised)."""
    worker_module = worker_module or "pyspark.worker"
    names = [worker_module, *PLANNER]
    if worker_module == "pyspark.worker":
        names += TASKS
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a worker imports what it needs anyway
            failed.append(name)
            log.warning("connector.spark.daemon: could not preload %s: %r", name, e)
    if worker_module == "pyspark.worker" and "numba" in sys.modules:
        try:
            # numba's compiler context (about 0.2 s of CPU), then the kernels this machine has
            # compiled already (loaded from the disk cache; nothing compiles here)
            from numba.core.registry import cpu_target

            from connector.formats.core import load_cached

            cpu_target.target_context.refresh()
            load_cached()
        except Exception as e:  # noqa: BLE001
            failed.append("numba")
            log.warning("connector.spark.daemon: could not set up numba's context: %r", e)
    return failed


def _forget_zip_subfinders() -> None:
    """Drop the import system's finders for packages inside zip archives (kept: the archives').

    Executors import PySpark from ``pyspark.zip``, and each package imported from it leaves a
    ``zipimporter`` in ``sys.path_importer_cache``. PySpark's worker calls
    ``importlib.invalidate_caches()`` at the start of every task, and each zipimporter then reads
    its archive's whole directory again: with the preloaded packages, 16 readings of
    ``pyspark.zip``, 75 ms of CPU per task (5 ms without them). The finders are a cache: an import
    of a package not loaded yet makes its own again."""
    import zipimport

    for path, finder in list(sys.path_importer_cache.items()):
        if isinstance(finder, zipimport.zipimporter) and finder.prefix:
            del sys.path_importer_cache[path]


def main() -> None:
    """``python -m connector.spark.daemon [worker module]``: preload, then PySpark's daemon."""
    started = time.perf_counter()
    preload(sys.argv[1] if len(sys.argv) > 1 else None)
    _forget_zip_subfinders()
    # The preloaded objects go to the collector's permanent generation: otherwise each forked
    # worker's first full collection walks them all, which writes to every page they live on and
    # so copies the daemon's heap into the worker (measured: 0.3 s of CPU per new worker).
    gc.collect()
    gc.freeze()
    log.debug("connector.spark.daemon: preloaded in %.2f s", time.perf_counter() - started)
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
