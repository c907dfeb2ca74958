"""A Spark driver for the exactly-once fault tests, in a process of its own so that the test can
kill it with SIGKILL (the restart runs the same :func:`start_query` in the test's own session): a stream from topic ``in`` to topic ``out`` (one task per input partition),
``deliveryGuarantee=exactly-once``, until the file named ``stop`` appears.

``python -m tests.reliability.eos_driver '{"doc": ..., "checkpoint": ..., "stop": ...}'`` with
``EOS_FAULTS`` / ``EOS_SIGNALS`` in the environment for the daemon (``eos_daemon``)."""
from __future__ import annotations

import json
import os
import sys
import time


def main() -> int:
    cfg = json.loads(sys.argv[1])
    from pyspark.sql import SparkSession

    from pyspark_asyncapi_kafka import DefaultSource

    t_start = time.monotonic()
    spark = (SparkSession.builder.master("local[2,4]")  # a failed task is retried (up to 4 attempts)
             .config("spark.python.daemon.module", "tests.reliability.eos_daemon")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(DefaultSource)
    q = start_query(spark, cfg)
    print(f"STARTED {q.id} after {time.monotonic() - t_start:.1f}s", flush=True)
    t0, seen = time.monotonic(), None
    while not os.path.exists(cfg["stop"]):
        p = q.lastProgress
        if p is not None and p.get("batchId") != seen:
            seen = p.get("batchId")
            print(f"[{time.monotonic() - t0:.1f}s] batch {seen} done: {p.get('numInputRows')} rows, "
                  f"{p.get('durationMs')}", flush=True)
        if q.exception() is not None:
            print("QUERY FAILED", q.exception(), flush=True)
            return 1
        time.sleep(0.1)
    q.stop()
    spark.stop()
    return 0


def start_query(spark, cfg: dict):
    """The stream ``in`` -> ``out``, exactly-once, one task per input partition."""
    src = (spark.readStream.format("asyncapi-kafka").option("asyncapi", cfg["doc"]).option("channel", "in")
           .option("startingOffsets", "earliest").option("minRecordsPerPartition", "0")
           .option("maxOffsetsPerTrigger", str(cfg.get("per_trigger", 100000))).load())
    return (src.select("value").writeStream.format("asyncapi-kafka").option("asyncapi", cfg["doc"])
            .option("channel", "out").option("deliveryGuarantee", "exactly-once")
            .option("checkpointLocation", cfg["checkpoint"]).trigger(processingTime="300 milliseconds").start())


if __name__ == "__main__":
    sys.exit(main())
