"""Runs the docs' Spark examples in one child process whose working directory is the examples'.

Spark resolves relative paths (the document, a parquet path, a checkpoint) in the JVM and in the
Python workers it starts, against the JVM's working directory, which is fixed when the JVM starts.
So the examples run in a process started in their directory, with a ``local[2]`` session made
before the first one (their ``SparkSession.builder.getOrCreate()`` returns it).

Protocol: one JSON object per line on stdin (``{"id", "page", "code", "cont"}``), one per line on
stdout (``{"id", "ok", "error"}``); what the examples print goes to stderr.
"""
from __future__ import annotations

import json
import os
import sys
import traceback


def _session():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("asyncapi-kafka-docs")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.pyspark.python", sys.executable)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def _restore(spark, before: dict) -> None:
    """Undo what an example changed in the shared session: its settings and its streams."""
    for q in spark.streams.active:
        q.stop()
    for key, value in spark.conf.getAll.items():
        if key not in before:
            spark.conf.unset(key)
        elif before[key] != value:
            spark.conf.set(key, before[key])


def main() -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The protocol keeps the real stdout; everything else written to fd 1 (the JVM this process
    # starts inherits it) goes to stderr.
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    spark = _session()
    protocol.write(json.dumps({"ready": True}) + "\n")
    protocol.flush()
    namespaces: dict[str, dict] = {}
    for line in sys.stdin:
        ask = json.loads(line)
        before = dict(spark.conf.getAll)
        reply = {"id": ask["id"], "ok": True, "error": None}
        try:
            if ask["cont"]:
                if ask["page"] not in namespaces:
                    raise RuntimeError("the page's previous example did not run")
                namespace = namespaces[ask["page"]]
            else:
                namespace = {"__name__": "__main__"}
            exec(compile(ask["code"], ask["id"], "exec"), namespace)  # running the docs is the test
            namespaces[ask["page"]] = namespace
        except BaseException:  # reported to the test, which fails
            reply.update(ok=False, error=traceback.format_exc()[-6000:])
        finally:
            _restore(spark, before)
        protocol.write(json.dumps(reply) + "\n")
        protocol.flush()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
