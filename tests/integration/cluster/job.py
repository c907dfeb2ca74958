"""The job the cluster tests submit with ``spark-submit --master spark://…`` (README, "Running on
a cluster"): a batch read of one channel, then (``--stream-to``) an AvailableNow stream of it into
a parquet directory; prints the rows as ``BATCH``/``STREAM <json>`` and the interpreters the executors' Python workers run as
``WORKERS <json>`` (found in /proc: the test cluster runs on this machine)."""
import argparse
import json
import os

from pyspark.sql import SparkSession


def python_workers() -> list[list[str]]:
    """``[argv0, cwd]`` of every live ``pyspark.daemon`` (the executors' Python worker pools)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if b"pyspark.daemon" in argv:
                found.append([argv[0].decode(), os.readlink(f"/proc/{pid}/cwd")])
        except OSError:
            continue
    return sorted(found)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("doc")
    p.add_argument("channel")
    p.add_argument("--register", action="store_true", help="register the source explicitly")
    p.add_argument("--stream-to", help="AvailableNow stream into this parquet directory")
    p.add_argument("--checkpoint")
    a = p.parse_args()
    spark = SparkSession.builder.appName("asyncapi-kafka-cluster-job").getOrCreate()
    if a.register:
        from connector.spark import AsyncApiKafkaDataSource

        spark.dataSource.register(AsyncApiKafkaDataSource)
    batch = (spark.read.format("asyncapi-kafka").option("asyncapi", a.doc).option("channel", a.channel).load()
             .select("partition", "offset", "value.id").collect())
    print("BATCH " + json.dumps(sorted([list(r) for r in batch])), flush=True)
    if a.stream_to:
        df = (spark.readStream.format("asyncapi-kafka").option("asyncapi", a.doc).option("channel", a.channel)
              .option("startingOffsets", "earliest").load())
        q = (df.select("partition", "offset", "value.id").writeStream.format("parquet")
             .option("path", a.stream_to).option("checkpointLocation", a.checkpoint)
             .trigger(availableNow=True).start())
        q.awaitTermination()
        rows = spark.read.parquet(a.stream_to).collect()
        print("STREAM " + json.dumps(sorted([list(r) for r in rows])), flush=True)
    print("WORKERS " + json.dumps(python_workers()), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
