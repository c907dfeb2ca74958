"""References across files and registries, through Spark (issue 26).

* The multi-service repository (``tests/data/asyncapi/multi-service``: three services, shared
  server and bindings under ``common/``, channels ``$ref``ed between services' documents,
  payload files relative to each service): each service writes its own events with the sink
  from its own document, and the rides service's document reads all three channels back (JSON
  Schema split over three files, Avro with a ``$ref``ed record, Protobuf).
* One JSON Schema three ways: split over several files of a document (a relative file and an
  ``$id`` declared elsewhere under the reference root), bundled in one document, and registered
  with references by confluent-kafka's ``JSONSerializer`` (the records are its output; the
  reader schema comes from the registry with ``schema.subject``). All three read to the same
  typed rows.
"""
from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest

from tests.repos import MULTI_SERVICE, copy_repo

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


def _read(spark, doc, channel: str, **options):
    r = spark.read.format("asyncapi-kafka").option("asyncapi", str(doc)).option("channel", channel)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


# -- the multi-service repository -------------------------------------------------------------------
RIDES = [("r1", 7, dt.datetime(2026, 5, 1, 8, 30, tzinfo=UTC), (45.76, 4.84), (200, "EUR")),
         ("r2", 9, None, None, (150, "GBP")),
         ("r3", 11, dt.datetime(2026, 5, 1, 9, 0, 0, 250000, tzinfo=UTC), (45.75, 4.85), None)]
CHARGES = [("r1", (340, "EUR"), dt.datetime(2026, 5, 1, 8, 52, tzinfo=UTC)),
           ("r2", (90, "GBP"), dt.datetime(2026, 5, 1, 9, 3, tzinfo=UTC))]
DOCKS = [(7, "Bellecour", 3, 0.82), (9, "Part-Dieu", 12, 0.4), (11, "Bellecour", 4, 1.0)]

WRITES = {  # channel -> (service writing it, its rows, the value type)
    "rideStarted": ("rides", RIDES, "struct<rideId: string, bikeId: bigint, startedAt: timestamp, "
                                    "`from`: struct<lat: double, lon: double>, "
                                    "deposit: struct<minor: bigint, currency: string>>"),
    "rideCharged": ("payments", CHARGES, "struct<rideId: string, charged: struct<minor: bigint, currency: string>, "
                                         "chargedAt: timestamp>"),
    "bikeDocked": ("fleet", DOCKS, "struct<bike_id: bigint, station: string, slot: int, battery: double>"),
}
TOPICS = {"rideStarted": "rides.started", "rideCharged": "payments.ride-charged",
          "bikeDocked": "fleet.bike-docked"}


def _as_tuple(row):
    from pyspark.sql import Row

    if isinstance(row, Row):
        return tuple(_as_tuple(v) for v in row)
    return row


def _naive_utc(value):
    """What Spark gives back (session time zone UTC) for what was written."""
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, tuple):
        return tuple(_naive_utc(v) for v in value)
    return value


def test_multi_service_repository_every_channel_writes_and_reads(spark, kafka, registry, tmp_path):
    repo = copy_repo(MULTI_SERVICE, tmp_path / "repo", bootstrap=kafka.bootstrap_servers, registry=registry.url)
    suffix = uuid.uuid4().hex[:8]  # the mock cluster lives for the whole session: topics of our own
    for path in repo.rglob("asyncapi.yml"):
        text = path.read_text()
        for topic in TOPICS.values():
            text = text.replace(f"address: {topic}", f"address: {topic}.{suffix}")
        path.write_text(text)
    root = str(repo)
    for channel, (service, rows, ddl) in WRITES.items():
        df = spark.createDataFrame([(f"k{i}", r) for i, r in enumerate(rows)], f"key string, value {ddl}")
        (df.write.format("asyncapi-kafka").mode("append")
         .option("asyncapi", str(repo / "services" / service / "asyncapi.yml")).option("asyncapi.refRoot", root)
         .option("channel", channel).option("auto.register.schemas", "true").save())
    rides = repo / "services" / "rides" / "asyncapi.yml"
    for channel, (_, rows, ddl) in WRITES.items():
        df = _read(spark, rides, channel, **{"asyncapi.refRoot": root})
        assert df.schema["value"].dataType.simpleString() == ddl.replace(": ", ":").replace(", ", ",").replace("`", "")
        got = sorted(_as_tuple(r.value) for r in df.select("value").collect())
        assert got == sorted(_naive_utc(r) for r in rows), channel


# -- one JSON Schema three ways -------------------------------------------------------------------------
MONEY = {"title": "Money", "type": "object",
         "properties": {"minor": {"type": "integer"}, "currency": {"$ref": "#/definitions/Currency"}},
         "required": ["minor", "currency"],
         "definitions": {"Currency": {"type": "string", "enum": ["EUR", "GBP", "USD"]}}}
RIDER = {"$id": "https://bikes.example/schemas/rider.json", "title": "Rider", "type": "object",
         "properties": {"name": {"type": "string"}, "plan": {"$ref": "#/$defs/Plan"},
                        "cards": {"type": "array", "items": {"$ref": "#/$defs/Card"}}},
         "$defs": {"Plan": {"type": "string", "enum": ["casual", "member"]},
                   "Card": {"type": "object", "properties": {"last4": {"type": "string"},
                                                             "expires": {"type": "string", "format": "date"}}}}}
INVOICE = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Invoice", "type": "object",
           "properties": {"invoiceId": {"type": "string"},
                          "issuedAt": {"type": "string", "format": "date-time"},
                          "rider": {"$ref": "https://bikes.example/schemas/rider.json"},
                          "total": {"$ref": "common/money.json"},
                          "fees": {"type": "object", "additionalProperties": {"$ref": "common/money.json"}}},
           "required": ["invoiceId"]}


def _bundled() -> dict:
    """The same invoice written in one document, its parts under definitions."""
    rider = {k: v for k, v in RIDER.items() if k not in ("$id", "$defs")}
    rider["properties"] = {"name": {"type": "string"}, "plan": {"$ref": "#/definitions/Plan"},
                           "cards": {"type": "array", "items": {"$ref": "#/definitions/Card"}}}
    money = {k: v for k, v in MONEY.items() if k != "definitions"}
    return {**{k: v for k, v in INVOICE.items() if k != "properties"},
            "properties": {**INVOICE["properties"], "rider": {"$ref": "#/definitions/Rider"},
                           "total": {"$ref": "#/definitions/Money"},
                           "fees": {"type": "object", "additionalProperties": {"$ref": "#/definitions/Money"}}},
            "definitions": {"Rider": rider, "Money": money, "Currency": MONEY["definitions"]["Currency"],
                            **RIDER["$defs"]}}


def _json_doc(path, *, bootstrap: str, registry_url: str, topic: str, payload) -> str:
    doc = {"asyncapi": "3.0.0", "info": {"title": "Invoices", "version": "1"},
           "servers": {"k": {"host": bootstrap, "protocol": "kafka",
                             "bindings": {"kafka": {"schemaRegistryUrl": registry_url}}}},
           "channels": {"invoices": {"address": topic, "messages": {"invoice": {
               "payload": payload, "bindings": {"kafka": {"schemaIdLocation": "payload"}}}}}},
           "operations": {"read": {"action": "receive", "channel": {"$ref": "#/channels/invoices"}}}}
    path.write_text(json.dumps(doc))
    return str(path)


def _records() -> list[dict]:
    return [
        {"invoiceId": "i-1", "issuedAt": "2026-05-01T10:00:00Z",
         "rider": {"name": "Ada", "plan": "member", "cards": [{"last4": "4242", "expires": "2028-01-31"}]},
         "total": {"minor": 430, "currency": "EUR"}, "fees": {"unlock": {"minor": 100, "currency": "EUR"}}},
        {"invoiceId": "i-2", "rider": {"name": "Bo", "plan": "casual", "cards": []},
         "total": {"minor": 90, "currency": "GBP"}},
        {"invoiceId": "i-3"},
    ]


def test_json_schema_split_bundled_and_registered_with_references_read_the_same(spark, kafka, registry, tmp_path):
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = f"invoices.{uuid.uuid4().hex[:8]}"
    # the records, written by confluent-kafka's serializer with the schema's references registered
    client = SchemaRegistryClient({"url": registry.url})
    money_v = client.register_schema(f"{topic}-money", Schema(json.dumps(MONEY), "JSON"))
    rider_v = client.register_schema(f"{topic}-rider", Schema(json.dumps(RIDER), "JSON"))
    assert money_v and rider_v
    refs = [SchemaReference("common/money.json", f"{topic}-money", 1),
            SchemaReference("https://bikes.example/schemas/rider.json", f"{topic}-rider", 1)]
    ser = JSONSerializer(Schema(json.dumps(INVOICE), "JSON", refs), client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    for i, rec in enumerate(_records()):
        kafka.produce(topic, ser(rec, ctx), key=f"k{i}".encode())
    kafka.flush()

    # the same schema split over files of a document: a relative file, an $id found under the root
    (tmp_path / "schemas" / "common").mkdir(parents=True)
    (tmp_path / "schemas" / "people").mkdir()
    (tmp_path / "schemas" / "invoice.json").write_text(json.dumps(INVOICE))
    (tmp_path / "schemas" / "common" / "money.json").write_text(json.dumps(MONEY))
    (tmp_path / "schemas" / "people" / "rider.json").write_text(json.dumps(RIDER))
    peers = {"bootstrap": kafka.bootstrap_servers, "registry_url": registry.url, "topic": topic}
    split = _json_doc(tmp_path / "split.json", payload={"$ref": "schemas/invoice.json"}, **peers)
    (tmp_path / "schemas" / "invoice.bundled.json").write_text(json.dumps(_bundled()))
    bundled = _json_doc(tmp_path / "bundled.json", payload={"$ref": "schemas/invoice.bundled.json"}, **peers)

    frames = {
        "split": _read(spark, split, "invoices"),
        "bundled": _read(spark, bundled, "invoices"),
        "registered": _read(spark, split, "invoices", **{"schema.subject": f"{topic}-value"}),
    }
    types = {k: df.schema["value"].dataType for k, df in frames.items()}
    assert types["split"] == types["bundled"] == types["registered"]
    assert types["split"].simpleString() == (
        "struct<invoiceId:string,issuedAt:timestamp,rider:struct<name:string,plan:string,"
        "cards:array<struct<last4:string,expires:date>>>,total:struct<minor:bigint,currency:string>,"
        "fees:map<string,struct<minor:bigint,currency:string>>>")
    rows = {k: sorted(df.select("value.*").collect()) for k, df in frames.items()}
    assert rows["split"] == rows["bundled"] == rows["registered"]
    first = rows["split"][0]
    assert first.invoiceId == "i-1" and first.rider.cards[0].expires == dt.date(2028, 1, 31)
    assert first.fees == {"unlock": (100, "EUR")}
    assert [r.invoiceId for r in rows["split"]] == ["i-1", "i-2", "i-3"]
