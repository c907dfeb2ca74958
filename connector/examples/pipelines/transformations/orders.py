"""The pipeline's definitions: a streaming table of every order, and a sink of the paid ones.

``spark-pipelines run`` imports this file with its ``spark`` session; the data source is found by
name (``format("asyncapi-kafka")``) in the pipeline's Spark Connect server, which must be able to
import this package (docs/pipelines.md).
"""
import os

from pyspark import pipelines as dp
from pyspark.sql import SparkSession

spark = SparkSession.active()

HERE = os.path.dirname(os.path.abspath(__file__))
DOCUMENT = os.path.normpath(os.path.join(HERE, "..", "orders.yaml"))
# The document $refs the shop's messages in ../shop.yaml: let references reach the examples folder.
CHANNELS = {"asyncapi": DOCUMENT, "asyncapi.refRoot": os.path.dirname(os.path.dirname(DOCUMENT))}


@dp.table(comment="Every order placed, decoded from the shop's orders channel.")
def orders():
    return (spark.readStream.format("asyncapi-kafka").options(**CHANNELS)
            .option("channel", "orders")
            .option("startingOffsets", "earliest")
            .load()
            .select("key", "value", "partition", "offset", "timestamp"))


dp.create_sink("paid_orders", format="asyncapi-kafka",
               options={**CHANNELS, "channel": "paidOrders",
                        "auto.register.schemas": "true"})  # else the subject must already hold the schema


@dp.append_flow(target="paid_orders")
def publish_paid_orders():
    return spark.readStream.table("orders").where("value.status = 'PAID'").select("key", "value")
