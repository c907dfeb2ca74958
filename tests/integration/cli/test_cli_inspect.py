"""``asyncapi-kafka inspect`` on the shared example documents and the demo document.

No network: remote ``$ref``\\s stay unresolved (the report shows why), and everything else
is read from the files. The commands are called through their own argparse declarations.
"""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

import pytest

from connector.cli._inspect import add_inspect_arguments, inspect_command

EXAMPLES = Path("/work/shared/asyncapi-examples")
SHOP = Path(__file__).resolve().parents[3] / "examples" / "shop.yaml"
STREETLIGHTS_3 = EXAMPLES / "streetlights-kafka-3.1.yml"
STREETLIGHTS_2 = EXAMPLES / "streetlights-kafka-2.6.yml"
ADEO = EXAMPLES / "adeo-kafka-request-reply-3.1.yml"


def run(capsys, *argv) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="asyncapi-kafka inspect")
    add_inspect_arguments(parser)
    code = inspect_command(parser.parse_args([str(a) for a in argv]))
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, *argv) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def channel(report: dict, name: str) -> dict:
    return next(c for c in report["channels"] if c["name"] == name)


def test_streetlights_31_text_lists_patterns_and_spark_types(capsys):
    code, out, err = run(capsys, STREETLIGHTS_3)
    assert code == 0, err
    assert "Streetlights Kafka API  (AsyncAPI 3.1.0)" in out
    assert "lightingMeasured" in out and "lightsDim" in out
    assert r"^smartylighting\.streetlights\.1\.0\.event\.(?P<streetlightId>[A-Za-z0-9_-]+)\.lighting\.measured$" in out
    assert "struct<lumens:bigint,sentAt:timestamp>" in out
    assert "struct<percentage:bigint,sentAt:timestamp>" in out
    # servers table: aligned columns, security scheme types, no secrets to show
    assert "scram-connections  kafka-secure  test.mykafkacluster.org:18092" in out
    assert "scramSha256" in out and "X509" in out


def test_streetlights_26_json(capsys):
    report = run_json(capsys, STREETLIGHTS_2)
    assert report["asyncapi"] == "2.6.0"
    names = [c["name"] for c in report["channels"]]
    assert "smartylighting.streetlights.1.0.action.{streetlightId}.turn.on" in names
    ch = channel(report, "smartylighting.streetlights.1.0.event.{streetlightId}.lighting.measured")
    assert ch["topic"] is None
    assert ch["topic_pattern"].startswith(r"^smartylighting\.streetlights")
    assert list(ch["parameters"]) == ["streetlightId"]
    assert ch["client_id"] == "my-app-id"
    assert ch["framing"] == "none"
    (msg,) = ch["messages"]
    assert msg["format"] == "json"
    assert msg["payload"]["spark_type"] == "struct<lumens:bigint,sentAt:timestamp>"
    security = {s["name"]: s["security"] for s in report["servers"]}
    assert security == {"scram-connections": ["scramSha256"], "mtls-connections": ["X509"]}


def test_adeo_bindings_and_unresolved_remote_schemas(capsys):
    report = run_json(capsys, ADEO)
    req = channel(report, "costingRequestChannel")
    assert "(?P<env>dev|sit|uat1|preprod|prod)" in req["topic_pattern"]
    assert req["parameters"]["env"]["enum"] == ["dev", "sit", "uat1", "preprod", "prod"]
    assert req["parameters"]["version"]["default"] == "V1"
    assert (req["partitions"], req["replicas"]) == (3, 3)
    assert req["topic_configuration"] == {"cleanup.policy": ["delete"], "retention.ms": 60000000}
    assert req["server"] == "production"
    (msg,) = req["messages"]
    assert msg["payload"] is None
    assert "CostingRequestPayload.avsc" in msg["error"] and "allow_remote_refs" in msg["error"]
    resp = channel(report, "costingResponseChannel")
    assert "has no address" in resp["error"]
    assert resp["messages"][0]["name"] == "costingResponse"
    assert report["servers"][0]["registry_url"] == "https://schema-registry.prod.url/"
    assert report["servers"][0]["security"] == ["plain"]

    code, out, _ = run(capsys, ADEO)
    assert code == 0
    assert "schema not resolved: remote $ref" in out
    assert "--allow-remote-refs" in out
    assert "env (one of dev|sit|uat1|preprod|prod), version (default V1)" in out
    assert "topic config   cleanup.policy=delete, retention.ms=60000000" in out


def test_adeo_server_choice(capsys):
    report = run_json(capsys, ADEO, "--server", "staging")
    assert [s["name"] for s in report["servers"]] == ["staging"]
    assert channel(report, "costingRequestChannel")["server"] == "staging"


def test_shop_demo_document(capsys):
    code, out, err = run(capsys, SHOP)
    assert code == 0, err
    assert "topic          shop.orders" in out
    assert "message orderPlaced  [avro]  subject shop.orders-value" in out
    assert "amount: decimal(10,2)," in out          # wrapped one field per line
    assert "lines: array<struct<sku:string,qty:int>>," in out
    assert "labels: map<string,string>" in out       # protobuf map
    assert "framing        glue (schema id in payload)" in out
    assert "group id       shop-analytics" in out

    report = run_json(capsys, SHOP)
    orders = channel(report, "orders")
    assert orders["framing"] == "confluent" and orders["lookup_strategy"] == "TopicIdStrategy"
    assert orders["key"]["spark_type"] == "string"
    assert orders["messages"][0]["payload"]["spark_type"].startswith("struct<id:bigint,customer:string,")
    payments = channel(report, "payments")
    assert "receivedAt:timestamp" in payments["messages"][0]["payload"]["spark_type"]
    shipments = channel(report, "shipments")
    assert shipments["messages"][0]["format"] == "protobuf"
    assert "carrier:string" in shipments["messages"][0]["payload"]["spark_type"]
    stock = channel(report, "stock")
    assert stock["topic"] is None and stock["topic_pattern"] == r"^shop\.stock\.(?P<warehouse>[A-Za-z0-9_-]+)$"
    assert stock["framing"] == "glue"


def test_one_channel_by_name_or_topic(capsys):
    assert [c["name"] for c in run_json(capsys, SHOP, "--channel", "payments")["channels"]] == ["payments"]
    assert [c["name"] for c in run_json(capsys, SHOP, "--channel", "shop.orders")["channels"]] == ["orders"]


def test_unknown_channel_exits_2_with_the_channel_list(capsys):
    code, out, err = run(capsys, SHOP, "--channel", "refunds")
    assert code == 2 and out == ""
    assert "no channel 'refunds'" in err
    assert "orders, payments, shipments, stock" in err


def test_unknown_server_exits_2(capsys):
    code, _, err = run(capsys, SHOP, "--server", "prod")
    assert code == 2 and "no server 'prod'" in err and "local, local-glue" in err


def test_broken_document_exits_2_with_its_path(capsys, tmp_path):
    doc = tmp_path / "broken.yaml"
    doc.write_text(textwrap.dedent("""\
        asyncapi: 3.0.0
        info: {title: broken, version: '1'}
        channels:
          orders:
            address: orders
            bindings:
              kafka:
                partitions: -3
        """))
    code, out, err = run(capsys, doc)
    assert code == 2 and out == ""
    assert "channels.orders.bindings.kafka.partitions" in err
    assert "Traceback" not in err


def test_missing_file_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, tmp_path / "nope.yaml")
    assert code == 2 and "nope.yaml" in err


def test_a_bad_schema_does_not_hide_the_others_and_secrets_are_not_printed(capsys, tmp_path):
    doc = tmp_path / "mixed.yaml"
    doc.write_text(textwrap.dedent("""\
        asyncapi: 3.0.0
        info: {title: mixed, version: '1'}
        servers:
          prod:
            host: broker:9092
            protocol: kafka
            bindings:
              kafka:
                schemaRegistryUrl: https://svc:hunter2@registry.example:8081
        channels:
          good:
            address: good
            messages:
              ok:
                payload:
                  schemaFormat: application/vnd.apache.avro;version=1.9.0
                  schema: {type: record, name: Ok, namespace: t, fields: [{name: n, type: int}]}
          bad:
            address: bad
            messages:
              broken:
                payload:
                  schemaFormat: application/vnd.apache.avro;version=1.9.0
                  schema: {type: record, name: Broken, fields: [{name: x, type: NoSuchType}]}
        """))
    code, out, err = run(capsys, doc)
    assert code == 0, err
    assert "struct<n:int>" in out
    assert "cannot map to Spark:" in out and "NoSuchType" in out
    assert "hunter2" not in out and "svc:" not in out
    assert "https://registry.example:8081" in out
    report = run_json(capsys, doc)
    bad = channel(report, "bad")["messages"][0]["payload"]
    assert bad["spark_type"] is None and "NoSuchType" in bad["error"]


@pytest.mark.parametrize("doc", [STREETLIGHTS_2, STREETLIGHTS_3, ADEO, SHOP], ids=lambda p: p.name)
def test_json_report_is_complete_for_every_channel(capsys, doc):
    report = run_json(capsys, doc)
    assert report["channels"]
    for c in report["channels"]:
        assert {"name", "topic", "topic_pattern", "partitions", "replicas", "topic_configuration", "framing",
                "lookup_strategy", "group_id", "key", "messages"} <= set(c)


def _layout_doc(tmp_path, address: str) -> Path:
    path = tmp_path / "api" / "doc.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    address_yaml = "null" if address is None else f"'{address}'"
    path.write_text(textwrap.dedent(f"""\
        asyncapi: 3.0.0
        info: {{title: layouts, version: '1'}}
        channels:
          reply:
            address: {address_yaml}
            messages:
              m:
                payload: {{$ref: '../shared/payload.yml'}}
        """))
    (tmp_path / "shared").mkdir(exist_ok=True)
    (tmp_path / "shared" / "payload.yml").write_text("type: object\nproperties: {a: {type: string}}\n")
    return path


def test_null_address_and_illegal_topic_are_labelled_and_nothing_readable_exits_1(capsys, tmp_path):
    path = _layout_doc(tmp_path, None)
    code, out, err = run(capsys, path, "--ref-root", tmp_path)
    assert code == 1 and "no channel of this document can be read" in err
    assert "address is null; read it with the option topic=" in out
    path = _layout_doc(tmp_path, "user/signedup")
    code, out, err = run(capsys, path, "--ref-root", tmp_path)
    assert code == 1
    assert "not a legal Kafka topic name" in out and "user/signedup" in out


def test_ref_root_flag_reaches_shared_files(capsys, tmp_path):
    path = _layout_doc(tmp_path, "users.signedup")
    code, out, err = run(capsys, path)
    assert "outside the document's directory" in out and "--ref-root" in out
    report = run_json(capsys, path, "--ref-root", tmp_path)
    assert report["readable_channels"] == ["reply"]
    assert "a" in channel(report, "reply")["messages"][0]["payload"]["spark_type"]


def test_inspect_says_which_server_it_chose_and_why(capsys):
    """Issue 17: with two Kafka servers inspect describes the first, and says a read must choose."""
    if not STREETLIGHTS_3.exists():
        pytest.skip("shared examples not present")
    report = run_json(capsys, STREETLIGHTS_3)
    ch = channel(report, "lightingMeasured")
    assert ch["server"] == "scram-connections"
    assert "first of 2 Kafka servers" in ch["server_reason"] and 'option("server"' in ch["server_reason"]
    code, out, _ = run(capsys, STREETLIGHTS_3)
    assert code == 0 and "scram-connections (the first of 2 Kafka servers" in out
    assert channel(run_json(capsys, STREETLIGHTS_3, "--server", "mtls-connections"),
                   "lightingMeasured")["server_reason"] == "given with --server"
    assert channel(run_json(capsys, SHOP), "orders")["server_reason"].startswith("the only Kafka server")


def test_multi_service_repository_shows_the_chain_of_files(capsys):
    # issue 26: channels $ref'ed between services; each message says which files its schema came from
    from tests.repos import MULTI_SERVICE

    rides = MULTI_SERVICE / "services" / "rides" / "asyncapi.yml"
    report = run_json(capsys, rides, "--ref-root", MULTI_SERVICE)
    files = {c["name"]: c["messages"][0]["payload"]["files"] for c in report["channels"]}
    assert files["rideCharged"] == ["services/rides/asyncapi.yml", "services/payments/asyncapi.yml",
                                    "services/payments/avro/RideCharged.avsc", "services/payments/avro/Money.avsc"]
    assert files["bikeDocked"][-1] == "services/fleet/proto/dock.proto"
    assert files["rideStarted"][-1] == "common/schemas/money.json"
    assert report["readable_channels"] == ["rideStarted", "rideCharged", "bikeDocked"]
    code, out, err = run(capsys, rides, "--ref-root", MULTI_SERVICE)
    assert code == 0, err
    assert ("from services/rides/asyncapi.yml -> services/fleet/asyncapi.yml ->\n"
            "           services/fleet/proto/dock.proto") in out
    assert "struct<bike_id:bigint,station:string,slot:int,battery:double>" in out
