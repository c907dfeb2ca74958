"""``asyncapi-kafka demo``: the whole idea on one machine, with nothing but Python and Java.

Starts an embedded Kafka (the librdkafka mock cluster, a real Kafka protocol peer on
loopback) and an embedded Confluent-compatible schema registry, produces events for every
channel of ``examples/shop.yaml`` (Avro, JSON Schema and Protobuf in Confluent framing, Avro in
AWS Glue framing resolved from a ``file://`` snapshot), reads them back with
``spark.read.format("asyncapi-kafka")`` and a ``Trigger.AvailableNow`` stream, and prints
typed tables and a summary. Everything it starts is stopped and removed before it exits.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import importlib.resources
import io
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from typing import Any, TypeVar

from connector.errors import AsyncApiDocumentError

__all__ = ["run_demo", "demo_document_path"]

UTC = dt.timezone.utc
WAREHOUSES = ("berlin", "paris")
_T = TypeVar("_T")


def demo_document_path() -> str:
    """Path of the shipped demo document (``examples/shop.yaml``)."""
    return str(importlib.resources.files("connector") / "examples" / "shop.yaml")


class _Progress:
    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.t0 = time.monotonic()

    def step(self, text: str) -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.t0:6.1f}s] {text}", flush=True)


def _payload_schema(doc: dict, name: str, kind: type[_T]) -> _T:
    """The payload schema of message ``name``: an object (Avro, JSON Schema) or ``.proto`` text."""
    path = f"components.messages.{name}.payload.schema"
    schema = doc["components"]["messages"][name]["payload"]["schema"]
    if not isinstance(schema, kind):
        raise AsyncApiDocumentError(f"the demo needs a {kind.__name__} here", path=path)
    return schema


def _produce_all(kafka, registry, snapshot_dir: str, doc: dict, n: int) -> dict[str, int]:
    """Produce ``n`` events per channel; returns records per topic."""
    import fastavro
    import orjson
    from google.protobuf import message_factory

    from connector.formats.protobuf import compile_proto
    from wireformat import encode_frame

    counts: dict[str, int] = {}
    base = dt.datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

    # orders: Avro, Confluent framing, schema registered under the TopicName strategy.
    order_schema = doc["components"]["schemas"]["Order"]
    order_id = registry.register("shop.orders-value", json.dumps(order_schema), "AVRO")
    parsed = fastavro.parse_schema(order_schema)
    for i in range(n):
        rec = {"id": i, "customer": f"customer-{i % 97}", "amount": dt_decimal(i),
               "status": ("NEW", "PAID", "SHIPPED")[i % 3], "placed_at": base + dt.timedelta(seconds=i),
               "lines": [{"sku": f"sku-{(i + j) % 50}", "qty": 1 + j} for j in range(i % 3 + 1)],
               "coupon": "WELCOME" if i % 10 == 0 else None}
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, rec)
        kafka.produce("shop.orders", encode_frame("confluent", order_id, buf.getvalue()), key=f"order-{i}".encode())
    counts["shop.orders"] = n

    # payments: JSON Schema, Confluent framing.
    pay_schema = _payload_schema(doc, "PaymentReceived", dict)
    pay_id = registry.register("shop.payments-value", json.dumps(pay_schema), "JSON")
    for i in range(n):
        rec = {"paymentId": str(uuid.UUID(int=i)), "orderId": i, "amount": round(10 + i * 0.25, 2),
               "currency": ("EUR", "USD", "GBP")[i % 3],
               "receivedAt": (base + dt.timedelta(seconds=i, minutes=5)).isoformat().replace("+00:00", "Z"),
               "card": None if i % 4 == 0 else {"brand": "visa", "last4": f"{i % 10000:04d}"}}
        kafka.produce("shop.payments", encode_frame("confluent", pay_id, orjson.dumps(rec)), key=f"order-{i}".encode())
    counts["shop.payments"] = n

    # shipments: Protobuf compiled from the document's .proto text (no generated classes),
    # Confluent framing with the message-index array.
    proto_text = _payload_schema(doc, "ShipmentDispatched", str)
    ship_id = registry.register("shop.shipments-value", proto_text, "PROTOBUF")
    compiled = compile_proto(proto_text)
    # a class built at run time from the .proto text: its fields are invisible to a type checker
    Shipment: Any = message_factory.GetMessageClass(compiled.find("shop.Shipment"))
    for i in range(n):
        msg = Shipment(shipment_id=f"shp-{i}", order_id=i, carrier=1 + i % 3,
                       items=[f"sku-{i % 50}", f"sku-{(i + 1) % 50}"],
                       labels={"priority": "high" if i % 5 == 0 else "normal"})
        msg.dispatched_at.FromDatetime(base + dt.timedelta(hours=1, seconds=i))
        kafka.produce("shop.shipments", encode_frame("confluent", ship_id, msg.SerializeToString(),
                                                     message_indexes=[0]))
    counts["shop.shipments"] = n

    # stock: Avro in AWS Glue framing (every other record zlib-compressed), schema version
    # resolved from an offline file:// snapshot laid out like an exported registry.
    stock_schema = _payload_schema(doc, "StockLevel", dict)
    version_id = str(uuid.uuid5(uuid.NAMESPACE_URL, "asyncapi-kafka-demo/StockLevel/1"))
    os.makedirs(os.path.join(snapshot_dir, "guids"), exist_ok=True)
    with open(os.path.join(snapshot_dir, "guids", f"{version_id}.json"), "w", encoding="utf-8") as f:
        json.dump({"schemaType": "AVRO", "schema": json.dumps(stock_schema), "guid": version_id}, f)
    parsed = fastavro.parse_schema(stock_schema)
    for w, warehouse in enumerate(WAREHOUSES):
        topic = f"shop.stock.{warehouse}"
        for i in range(n):
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, {"sku": f"sku-{i % 50}", "quantity": (i * 7 + w) % 500,
                                                     "updated_at": base + dt.timedelta(minutes=i)})
            frame = encode_frame("glue", version_id, buf.getvalue(), compression="zlib" if i % 2 else None)
            kafka.produce(topic, frame, key=f"sku-{i % 50}".encode())
        counts[topic] = n
    kafka.flush()
    return counts


def dt_decimal(i: int):
    import decimal

    return decimal.Decimal(f"{10 + (i % 500) * 1.25:.2f}")


def _spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("asyncapi-kafka-demo")
             .config("spark.ui.enabled", "false")
             # Python workers forked from a daemon that already imported the connector (and
             # numba's compiler context): each new worker starts warm (connector/spark/daemon.py)
             .config("spark.python.daemon.module", "connector.spark.daemon")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.log.level", "ERROR")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.pyspark.python", sys.executable)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


#: channel -> what it shows; the JSON channel's decoder, the largest kernel, compiles in a process
#: of its own (numba compiles one kernel at a time per process: two processes use both cores)
_WARM_APART = ("payments",)


class _WarmUp:
    """Each channel decoded once without Spark (``connector.peek``, the same read), while the JVM
    starts: on a first run this compiles the numba kernels the channel needs, once, into the
    on-disk cache, instead of in every Spark worker that needs them at the same moment; later
    runs only load them. Spark's read of a channel waits for its warm-up (:meth:`wait`)."""

    def __init__(self, doc_path: str, options: dict[str, dict[str, str]], records: int):
        import subprocess
        import threading

        self._done = {c: threading.Event() for c in options}
        self._procs = {}
        here = [c for c in options if c not in _WARM_APART]
        for channel in options:
            if channel in _WARM_APART:
                args = [sys.executable, "-m", "connector", "peek", doc_path, "--channel", channel,
                        "-n", str(records), "--json"]
                for k, v in options[channel].items():
                    args += ["-o", f"{k}={v}"]
                self._procs[channel] = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        self._thread = threading.Thread(target=self._run, args=(doc_path, options, here, records), daemon=True)
        self._thread.start()

    def _run(self, doc_path: str, options: dict, channels: list[str], records: int) -> None:
        from connector.read import peek

        for channel in channels:
            try:
                peek(doc_path, channel, n=records, options=options[channel])
            except Exception as e:  # noqa: BLE001 - Spark's read then compiles (and reports) itself
                print(f"warm-up of {channel} failed ({e}); Spark's workers will compile", file=sys.stderr)
            finally:
                self._done[channel].set()

    def wait(self, channel: str) -> None:
        proc = self._procs.pop(channel, None)
        if proc is not None:
            proc.wait()
        event = self._done.get(channel)
        if event is not None and channel not in _WARM_APART:
            event.wait()

    def close(self) -> None:
        for proc in self._procs.values():
            proc.kill()
            proc.wait()


def run_demo(*, records: int = 1000, keep: bool = False, quiet: bool = False) -> int:
    """Run the demo; returns the process exit code (0 when every check passed)."""
    import yaml

    from connector.testing import EmbeddedKafka, RegistryServer

    progress = _Progress(quiet)
    doc_path = demo_document_path()
    with open(doc_path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    workdir = tempfile.mkdtemp(prefix="asyncapi-kafka-demo-")
    snapshot_dir = os.path.join(workdir, "glue-snapshot")
    failures: list[str] = []
    summary: list[tuple[str, str, int, int]] = []
    spark = None
    try:
        with contextlib.ExitStack() as stack:
            progress.step("starting embedded Kafka (librdkafka mock cluster) and schema registry")
            kafka = stack.enter_context(EmbeddedKafka())
            registry = stack.enter_context(RegistryServer())
            progress.step(f"Kafka at {kafka.bootstrap_servers}, registry at {registry.url}")
            progress.step(f"producing {records} events per channel of {os.path.basename(doc_path)}")
            produced = _produce_all(kafka, registry, snapshot_dir, doc, records)
            confluent = {"schema.registry.url": registry.url}
            channels = [
                ("orders", "Avro, Confluent framing", confluent,
                 ["key", "value.id", "value.customer", "value.amount", "value.status", "value.placed_at",
                  "value.lines", "partition", "offset"]),
                ("payments", "JSON Schema, Confluent framing", confluent,
                 ["key", "value.paymentId", "value.amount", "value.currency", "value.receivedAt", "value.card"]),
                ("shipments", "Protobuf, Confluent framing", confluent,
                 ["value.shipment_id", "value.order_id", "value.carrier", "value.items", "value.dispatched_at",
                  "value.labels"]),
                ("stock", "Avro, AWS Glue framing (file:// snapshot), topic per warehouse",
                 {"schema.registry.url": "file://" + snapshot_dir},
                 ["warehouse", "value.sku", "value.quantity", "value.updated_at", "schemaId"]),
            ]
            progress.step("decoding each channel once without Spark (connector.peek) while Spark starts: "
                          "on a first run this compiles the decoders (numba, once per machine)")
            warm = _WarmUp(doc_path, {c: {"kafka.bootstrap.servers": kafka.bootstrap_servers, **opts}
                                      for c, _, opts, _ in channels}, records)
            stack.callback(warm.close)
            progress.step("starting Spark (local[2]); its Python workers fork from connector.spark.daemon")
            spark = _spark()
            from connector.spark import AsyncApiKafkaDataSource

            spark.dataSource.register(AsyncApiKafkaDataSource)
            progress.step("Spark is up")

            def read(channel: str, **extra):
                r = (spark.read.format("asyncapi-kafka").option("asyncapi", doc_path).option("channel", channel)
                     .option("kafka.bootstrap.servers", kafka.bootstrap_servers))
                for k, v in extra.items():
                    r = r.option(k, v)
                return r.load()

            for channel, what, opts, columns in channels:
                warm.wait(channel)
                progress.step(f"spark.read.format('asyncapi-kafka') channel={channel}: {what}")
                df = read(channel, **opts)
                expected = sum(v for k, v in produced.items() if k.startswith(f"shop.{channel}"))
                n = df.count()
                if not quiet:
                    df.select(*columns).orderBy("offset" if channel != "stock" else "value.sku").show(5, truncate=60)
                    if channel == "orders":
                        print("value schema:", df.schema["value"].dataType.simpleString(), "\n")
                summary.append((channel, what, expected, n))
                if n != expected:
                    failures.append(f"{channel}: read {n} rows, produced {expected}")

            progress.step("readStream channel=orders with Trigger.AvailableNow into a Parquet table")
            out_dir = os.path.join(workdir, "orders-parquet")
            query = (spark.readStream.format("asyncapi-kafka").option("asyncapi", doc_path)
                     .option("channel", "orders").option("startingOffsets", "earliest")
                     .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                     .option("schema.registry.url", registry.url)
                     .option("maxOffsetsPerTrigger", str(max(1, records // 2)))
                     .load().select("key", "value.*", "partition", "offset")
                     .writeStream.format("parquet").option("path", out_dir)
                     .option("checkpointLocation", os.path.join(workdir, "checkpoint"))
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            batches = len([p for p in query.recentProgress if p.get("numInputRows", 0) > 0])
            streamed = spark.read.parquet(out_dir)
            streamed_n = streamed.count()
            distinct = streamed.select("partition", "offset").distinct().count()
            summary.append(("orders (stream)", f"AvailableNow, {batches} micro-batch(es) of <= "
                            f"{max(1, records // 2)} records", records, streamed_n))
            if streamed_n != records or distinct != records:
                failures.append(f"stream: {streamed_n} rows ({distinct} distinct), expected {records}")
            requests = registry.request_count()
    finally:
        if spark is not None:
            spark.stop()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)

    elapsed = time.monotonic() - progress.t0
    print("\nSummary")
    print(f"  {'channel':<17} {'format':<62} {'produced':>8} {'read':>8}")
    for channel, what, expected, n in summary:
        mark = "ok" if expected == n else "MISMATCH"
        print(f"  {channel:<17} {what:<62} {expected:>8} {n:>8}  {mark}")
    print(f"  schema registry HTTP requests: {requests} (ids are cached per worker process)")
    print(f"  total time: {elapsed:.1f}s" + (f"; files kept in {workdir}" if keep else ""))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("demo OK")
    return 0
