"""A multi-service repository (issue 26): three services, shared files under ``common/``,
channels ``$ref``ed between services' documents, payload files relative to each service.

Every ``$ref`` must resolve from the file that holds it, through any chain of files, and
nothing above the reference root may be read (checked with an audit hook on ``open``). The
repository is ``tests/data/asyncapi/multi-service`` (see its README); the Spark reads of the
same repository are in ``tests/integration/spark/test_references.py``.
"""
from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError
from connector.schema import decoder_for
from tests.repos import MULTI_SERVICE, copy_repo

CHANNELS = ("rideStarted", "rideCharged", "bikeDocked")

_opened: list[str] | None = None


def _audit(event: str, args) -> None:
    if event == "open" and _opened is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture()
def opened():
    """Every path opened while the test runs (an audit hook cannot be removed: it goes idle
    afterwards); a test clears it once its files are written."""
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


@pytest.fixture()
def repo(tmp_path):
    return copy_repo(MULTI_SERVICE, tmp_path / "repo")


def _rides(repo):
    return load_document(repo / "services" / "rides" / "asyncapi.yml", ref_root=repo)


def _edit_json(path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# -- every channel plans ---------------------------------------------------------------------------
def test_every_channel_plans_from_the_hub_service(repo):
    doc = _rides(repo)
    plans = {ch: plan_read(doc, channel=ch) for ch in CHANNELS}
    assert {ch: p.topics for ch, p in plans.items()} == {
        "rideStarted": ("rides.started",), "rideCharged": ("payments.ride-charged",),
        "bikeDocked": ("fleet.bike-docked",)}
    for p in plans.values():  # server and bindings shared from common/
        assert p.bootstrap_servers == "localhost:9092" and p.registry_url == "http://127.0.0.1:8081"
        assert (p.partitions, p.replicas) == (4, 1) and p.framing() == "confluent"
    fmts = {ch: p.value_messages[0].payload.format for ch, p in plans.items()}
    assert fmts == {"rideStarted": "json", "rideCharged": "avro", "bikeDocked": "protobuf"}
    assert plans["bikeDocked"].value_messages[0].payload.message_name == "BikeDocked"


def test_every_channel_maps_to_its_spark_type(repo):
    doc = _rides(repo)
    types = {ch: str(decoder_for(plan_read(doc, channel=ch).value_messages[0].payload).arrow_type)
             for ch in CHANNELS}
    assert types == {
        "rideStarted": "struct<rideId: string, bikeId: int64, startedAt: timestamp[us, tz=UTC], "
                       "from: struct<lat: double, lon: double>, deposit: struct<minor: int64, currency: string>>",
        "rideCharged": "struct<rideId: string, charged: struct<minor: int64, currency: string>, "
                       "chargedAt: timestamp[us, tz=UTC]>",
        "bikeDocked": "struct<bike_id: int64, station: string, slot: int32, battery: double>",
    }


def test_payload_files_resolve_from_the_service_that_holds_them(repo):
    # decoys where the old resolution looked (next to the first document): never read
    (repo / "services" / "rides" / "avro").mkdir()
    (repo / "services" / "rides" / "avro" / "RideCharged.avsc").write_text('"string"')
    (repo / "services" / "rides" / "proto").mkdir()
    (repo / "services" / "rides" / "proto" / "dock.proto").write_text("syntax = 'proto3'; message Decoy {}")
    doc = _rides(repo)
    avro = json.loads(plan_read(doc, channel="rideCharged").value_messages[0].payload.text)
    assert avro["name"] == "RideCharged" and avro["fields"][1]["type"]["name"] == "Money"
    proto = plan_read(doc, channel="bikeDocked").value_messages[0].payload
    assert proto.message_name == "BikeDocked" and "Decoy" not in proto.text


@pytest.mark.parametrize("service,channel,topic", [("payments", "rideCharged", "payments.ride-charged"),
                                                   ("fleet", "bikeDocked", "fleet.bike-docked")])
def test_each_service_document_plans_on_its_own(repo, service, channel, topic):
    doc = load_document(repo / "services" / service / "asyncapi.yml", ref_root=repo)
    plan = plan_read(doc, channel=channel)
    assert plan.topics == (topic,) and plan.partitions == 4 and plan.framing() == "confluent"


def test_a_borrowed_channel_keeps_the_servers_both_documents_share(repo):
    # payments' channel lists payments' server, which is the shared common/servers.yml#/cluster:
    # the rides document has the same server, so the restriction carries over by that file
    doc = _rides(repo)
    assert doc.channels["rideCharged"].servers == ("cluster",)
    raw = yaml.safe_load((repo / "services" / "payments" / "asyncapi.yml").read_text())
    raw["servers"]["own"] = {"host": "payments-only:9092", "protocol": "kafka"}
    raw["channels"]["rideCharged"]["servers"] = [{"$ref": "#/servers/own"}]
    (repo / "services" / "payments" / "asyncapi.yml").write_text(yaml.safe_dump(raw))
    doc = _rides(repo)  # a server only the other document has: not a restriction here
    assert doc.channels["rideCharged"].servers is None
    assert plan_read(doc, channel="rideCharged").bootstrap_servers == "localhost:9092"


def test_schemas_record_the_chain_of_files_they_came_from(repo):
    doc = _rides(repo)
    files = {ch: plan_read(doc, channel=ch).value_messages[0].payload.files for ch in CHANNELS}
    assert files == {
        "rideStarted": ("services/rides/asyncapi.yml", "services/rides/schemas/ride-started.json",
                        "services/rides/schemas/geo.json", "common/schemas/money.json"),
        "rideCharged": ("services/rides/asyncapi.yml", "services/payments/asyncapi.yml",
                        "services/payments/avro/RideCharged.avsc", "services/payments/avro/Money.avsc"),
        "bikeDocked": ("services/rides/asyncapi.yml", "services/fleet/asyncapi.yml",
                       "services/fleet/proto/dock.proto"),
    }


def test_a_trait_from_a_shared_file_resolves_its_payload_refs_there(repo):
    # the message takes its payload from a trait in common/: the payload's $ref is relative to
    # the trait's file, not to the message's (a refs-by-identity check: the merge loses the path)
    (repo / "common" / "traits.yml").write_text(yaml.safe_dump({"withMoney": {
        "payload": {"type": "object", "properties": {"fee": {"$ref": "./schemas/money.json"}}}}}))
    path = repo / "services" / "rides" / "asyncapi.yml"
    raw = yaml.safe_load(path.read_text())
    msg = raw["components"]["messages"]["RideStarted"]
    del msg["payload"]
    msg["traits"] = [{"$ref": "../../common/traits.yml#/withMoney"}]
    path.write_text(yaml.safe_dump(raw))
    spec = plan_read(_rides(repo), channel="rideStarted").value_messages[0].payload
    assert json.loads(spec.text)["properties"]["fee"]["properties"]["currency"]["enum"] == ["EUR", "GBP", "USD"]


def test_a_2x_document_borrowing_a_channel(repo):
    doc2 = {"asyncapi": "2.6.0", "info": {"title": "ops", "version": "1"},
            "servers": {"cluster": {"url": "localhost:9092", "protocol": "kafka"}},
            "channels": {"fleet.bike-docked": {"$ref": "../fleet/channels-2x.yml#/bikeDocked"}}}
    (repo / "services" / "fleet" / "channels-2x.yml").write_text(yaml.safe_dump({"bikeDocked": {
        "subscribe": {"message": {"name": "BikeDocked", "schemaFormat": "application/vnd.google.protobuf",
                                  "payload": {"$ref": "./proto/dock.proto"}}}}}))
    (repo / "services" / "ops").mkdir()
    (repo / "services" / "ops" / "asyncapi.yml").write_text(yaml.safe_dump(doc2))
    doc = load_document(repo / "services" / "ops" / "asyncapi.yml", ref_root=repo)
    plan = plan_read(doc, channel="fleet.bike-docked")
    assert plan.value_messages[0].payload.message_name == "BikeDocked"


# -- JSON Schema $id inside the reference root ---------------------------------------------------------
def test_json_payload_refs_resolve_by_id_within_the_reference_root(repo):
    # a schema anywhere under the root that declares the $id a payload refers to is that schema,
    # however the folders are laid out; relative refs under an $id resolve against it too
    (repo / "common" / "schemas" / "riders").mkdir()
    (repo / "common" / "schemas" / "riders" / "rider.yml").write_text(yaml.safe_dump({
        "$id": "https://schemas.bikeshare.example/rider.json", "type": "object",
        "properties": {"riderId": {"type": "string"}, "plan": {"$ref": "plans.json#/$defs/Plan"}}}))
    (repo / "common" / "schemas" / "riders" / "plans.json").write_text(json.dumps({
        "$id": "https://schemas.bikeshare.example/plans.json",
        "$defs": {"Plan": {"type": "string", "enum": ["casual", "member"]}}}))
    (repo / "common" / "schemas" / "unrelated-broken.json").write_text('{"$id": ')  # skipped by the scan
    _edit_json(repo / "services" / "rides" / "schemas" / "ride-started.json", lambda d: d["properties"].update(
        rider={"$ref": "https://schemas.bikeshare.example/rider.json"}))
    spec = plan_read(_rides(repo), channel="rideStarted").value_messages[0].payload
    rider = json.loads(spec.text)["properties"]["rider"]
    assert rider["properties"]["plan"] == {"type": "string", "enum": ["casual", "member"]}
    assert "common/schemas/riders/rider.yml" in spec.files


def test_unknown_id_is_refused_without_the_network(repo):
    _edit_json(repo / "services" / "rides" / "schemas" / "ride-started.json", lambda d: d["properties"].update(
        rider={"$ref": "https://schemas.bikeshare.example/nobody.json"}))
    with pytest.raises(AsyncApiDocumentError, match="is not fetched: no schema in the reference root") as e:
        plan_read(_rides(repo), channel="rideStarted")
    assert e.value.path == "channels.rideStarted.messages.rideStarted.payload"


# -- nothing above the reference root ------------------------------------------------------------------
def test_nothing_above_the_reference_root_is_read(repo, tmp_path, opened):
    (tmp_path / "above.json").write_text('{"$id": "https://schemas.bikeshare.example/secret.json"}')
    _edit_json(repo / "services" / "rides" / "schemas" / "ride-started.json", lambda d: d["properties"].update(
        secret={"$ref": "https://schemas.bikeshare.example/secret.json"}))
    opened.clear()  # from here on: what loading and planning open
    doc = _rides(repo)
    for ch in ("rideCharged", "bikeDocked"):
        plan_read(doc, channel=ch)
    with pytest.raises(AsyncApiDocumentError, match="is not fetched"):  # the $id scan stays in the root
        plan_read(doc, channel="rideStarted")
    ours = [p for p in opened if p.startswith(str(tmp_path))]
    assert ours and all(p.startswith(str(repo) + os.sep) for p in ours), ours


def test_a_dotdot_chain_through_a_second_file_cannot_leave_the_root(repo, tmp_path, opened):
    # rides -> ride-started.json (allowed) -> ../../../../outside.json (above the root): refused,
    # and the file above is never opened
    (tmp_path / "outside.json").write_text('{"type": "string"}')
    _edit_json(repo / "services" / "rides" / "schemas" / "ride-started.json", lambda d: d["properties"].update(
        leak={"$ref": "../../../../outside.json"}))
    opened.clear()
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(_rides(repo), channel="rideStarted")
    assert "points outside the reference root" in str(e.value)
    assert "../../../../outside.json" in str(e.value)
    assert str(tmp_path / "outside.json") not in opened


def test_a_dotdot_chain_through_a_borrowed_document_cannot_leave_the_root(repo, tmp_path, opened):
    (tmp_path / "outside.avsc").write_text('{"type": "record", "name": "X", "fields": []}')
    raw = yaml.safe_load((repo / "services" / "payments" / "asyncapi.yml").read_text())
    raw["components"]["messages"]["RideCharged"]["payload"]["schema"] = {"$ref": "../../../outside.avsc"}
    (repo / "services" / "payments" / "asyncapi.yml").write_text(yaml.safe_dump(raw))
    opened.clear()
    with pytest.raises(AsyncApiDocumentError, match="points outside the reference root"):
        plan_read(_rides(repo), channel="rideCharged")
    assert str(tmp_path / "outside.avsc") not in opened


def test_a_symlink_in_a_second_file_is_resolved_before_the_check(repo, tmp_path, opened):
    (tmp_path / "secret.json").write_text('{"type": "string"}')
    os.symlink(tmp_path / "secret.json", repo / "services" / "rides" / "schemas" / "link.json")
    _edit_json(repo / "services" / "rides" / "schemas" / "ride-started.json", lambda d: d["properties"].update(
        leak={"$ref": "link.json"}))
    opened.clear()
    with pytest.raises(AsyncApiDocumentError, match="points outside the reference root"):
        plan_read(_rides(repo), channel="rideStarted")
    assert str(tmp_path / "secret.json") not in opened


def test_absolute_paths_in_a_second_file_are_refused(repo):
    _edit_json(repo / "services" / "rides" / "schemas" / "ride-started.json", lambda d: d["properties"].update(
        leak={"$ref": "/etc/hostname"}))
    with pytest.raises(AsyncApiDocumentError, match="is an absolute path"):
        plan_read(_rides(repo), channel="rideStarted")


def test_a_cycle_of_files_is_refused(repo):
    schemas = repo / "services" / "rides" / "schemas"
    (schemas / "a.json").write_text(json.dumps({"$ref": "b.json"}))
    (schemas / "b.json").write_text(json.dumps({"$ref": "./a.json"}))
    _edit_json(schemas / "ride-started.json", lambda d: d["properties"].update(loop={"$ref": "a.json"}))
    with pytest.raises(AsyncApiDocumentError, match="cycle"):
        plan_read(_rides(repo), channel="rideStarted")


def test_recursion_across_files_stays_finite(repo):
    schemas = repo / "services" / "rides" / "schemas"
    (schemas / "route.json").write_text(json.dumps({
        "type": "object", "properties": {"stop": {"type": "string"},
                                         "next": {"$ref": "route.json"}}}))
    _edit_json(schemas / "ride-started.json", lambda d: d["properties"].update(route={"$ref": "route.json"}))
    spec = plan_read(_rides(repo), channel="rideStarted").value_messages[0].payload
    schema = json.loads(spec.text)
    assert schema["properties"]["route"] == {"$ref": "#/$defs/route"}
    assert schema["$defs"]["route"]["properties"]["next"] == {"$ref": "#/$defs/route"}
