"""Documents as people lay them out (issue 18): shared files through ``../``, channels
without a usable address, binding rules that only warn, Glue settings in the document.

The documents are our own, shaped like public ones: Zilla/ZenWave-style repositories keep
bindings in a sibling ``master`` folder and reference another service's document; the
Adeo request/reply example has reply channels with ``address: null``; AsyncAPI's own
fixtures use ``user/signedup``-style addresses.
"""
from __future__ import annotations

import pathlib

import pytest
import yaml

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError, ConfigError

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "asyncapi"


def _skeleton() -> dict:
    return yaml.safe_load((DATA / "skeleton-3.0.yml").read_text())


def _monorepo(tmp_path: pathlib.Path) -> pathlib.Path:
    """repo/master/kafka-bindings.yml, repo/services/stock/asyncapi.yml (refs ../../master
    and ../replenishment), repo/services/replenishment/asyncapi.yml; returns the stock doc."""
    master = tmp_path / "repo" / "master"
    stock = tmp_path / "repo" / "services" / "stock"
    repl = tmp_path / "repo" / "services" / "replenishment"
    for d in (master, stock, repl):
        d.mkdir(parents=True)
    (master / "kafka-bindings.yml").write_text(yaml.safe_dump({
        "server": {"kafka": {"schemaRegistryUrl": "http://127.0.0.1:8081"}},
        "channel": {"kafka": {"partitions": 6, "replicas": 3}}}))
    (repl / "asyncapi.yml").write_text(yaml.safe_dump({
        "asyncapi": "3.0.0", "info": {"title": "replenishment", "version": "1"},
        "components": {"schemas": {"Replenish": {
            "type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}}}}))
    doc = {
        "asyncapi": "3.0.0", "info": {"title": "stock", "version": "1"},
        "servers": {"k": {"host": "localhost:9092", "protocol": "kafka",
                          "bindings": {"$ref": "../../master/kafka-bindings.yml#/server"}}},
        "channels": {"replenish": {
            "address": "stock.replenish",
            "bindings": {"$ref": "../../master/kafka-bindings.yml#/channel"},
            "messages": {"r": {"payload": {
                "$ref": "../replenishment/asyncapi.yml#/components/schemas/Replenish"}}}}},
        "operations": {"recv": {"action": "receive", "channel": {"$ref": "#/channels/replenish"}}},
    }
    (stock / "asyncapi.yml").write_text(yaml.safe_dump(doc))
    return stock / "asyncapi.yml"


def test_parent_directory_refs_refused_by_default_with_the_fix_named(tmp_path):
    path = _monorepo(tmp_path)
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(load_document(path), channel="replenish")
    assert "outside the document's directory" in str(e.value)
    assert "asyncapi.refRoot" in str(e.value)


def test_ref_root_widens_the_sandbox_and_refs_resolve_from_the_referring_file(tmp_path):
    path = _monorepo(tmp_path)
    doc = load_document(path, ref_root=tmp_path / "repo")
    plan = plan_read(doc, channel="replenish")
    assert plan.registry_url == "http://127.0.0.1:8081"
    assert plan.partitions == 6 and plan.replicas == 3
    assert '"sku"' in plan.value_messages[0].payload.text


def test_ref_root_still_stops_escapes_above_it(tmp_path):
    path = _monorepo(tmp_path)
    (tmp_path / "secret.yml").write_text("x: 1\n")
    raw = yaml.safe_load(path.read_text())
    raw["channels"]["replenish"]["messages"]["r"]["payload"] = {"$ref": "../../../secret.yml#/x"}
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(AsyncApiDocumentError, match="outside the reference root"):
        plan_read(load_document(path, ref_root=tmp_path / "repo"), channel="replenish")


def test_ref_root_must_contain_the_document(tmp_path):
    path = _monorepo(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    with pytest.raises(AsyncApiDocumentError, match="must contain the document's directory"):
        load_document(path, ref_root=other)


def test_ref_root_serves_as_base_for_text_documents(tmp_path):
    path = _monorepo(tmp_path)
    text = path.read_text().replace("../../master", "master").replace("../replenishment",
                                                                       "services/replenishment")
    plan = plan_read(load_document(text, ref_root=tmp_path / "repo"), channel="replenish")
    assert plan.partitions == 6


# -- channels without a usable address ------------------------------------------------------
def _reply_doc(address) -> dict:
    doc = _skeleton()
    doc["channels"]["reply"] = {"address": address, "messages": {"m": {"$ref": "#/components/messages/M"}}}
    return doc


def test_null_address_needs_the_topic_option():
    doc = load_document(_reply_doc(None))
    with pytest.raises(AsyncApiDocumentError, match="option topic="):
        plan_read(doc, channel="reply")
    plan = plan_read(doc, channel="reply", topic="replies.client-7")
    assert plan.topics == ("replies.client-7",) and plan.topic_pattern is None
    assert plan.param_names == ()


def test_illegal_topic_address_can_be_replaced_by_the_topic_option():
    doc = load_document(_reply_doc("user/signedup"))
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(doc, channel="reply")
    assert "'user/signedup'" in str(e.value) and "option topic=" in str(e.value)
    assert plan_read(doc, channel="reply", topic="user.signedup").topics == ("user.signedup",)


def test_templated_address_quoted_whole_in_errors():
    doc = load_document(_reply_doc("user/{id}/signedup"))
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(doc, channel="reply")
    assert "'user/{id}/signedup'" in str(e.value)


def test_topic_option_on_a_templated_address_fills_its_parameters():
    doc = load_document(_skeleton())
    plan = plan_read(doc, channel="c", topic="topic.eu-1")
    assert plan.topics == ("topic.eu-1",) and plan.topic_params("topic.eu-1") == {"id": "eu-1"}
    with pytest.raises(ConfigError, match="does not match the address"):
        plan_read(doc, channel="c", topic="other.eu-1")


def test_topic_option_cannot_redirect_a_fixed_address():
    doc = _skeleton()
    doc["channels"]["c"]["address"] = "orders"
    del doc["channels"]["c"]["parameters"]
    with pytest.raises(ConfigError, match="is not the address"):
        plan_read(load_document(doc), channel="c", topic="payments")
    assert plan_read(load_document(doc), channel="c", topic="orders").topics == ("orders",)


def test_topic_option_must_be_a_legal_topic():
    with pytest.raises(ConfigError, match="option topic"):
        plan_read(load_document(_reply_doc(None)), channel="reply", topic="a/b")


# -- binding rules that warn ----------------------------------------------------------------
def test_registry_fields_without_server_registry_warn():
    doc = _skeleton()
    del doc["servers"]["k"]["bindings"]
    plan = plan_read(load_document(doc), channel="c")
    assert plan.warnings and plan.warnings[0][0] == "channels.c.messages.m.bindings.kafka.schemaIdLocation"
    assert "MUST NOT" in plan.warnings[0][1]


def test_glue_vendor_without_url_is_accepted_and_takes_settings_from_the_document():
    doc = _skeleton()
    doc["servers"]["k"]["bindings"]["kafka"] = {"schemaRegistryVendor": "aws-glue",
                                                "x-registryName": "orders-registry"}
    plan = plan_read(load_document(doc), channel="c")
    assert plan.registry_vendor == "aws-glue" and plan.registry_name == "orders-registry"
    assert plan.warnings == ()
    assert str(plan.framing()) in ("glue", "Framing.GLUE")


def test_glue_url_gives_endpoint_region_and_registry_name():
    doc = _skeleton()
    doc["servers"]["k"]["bindings"]["kafka"] = {
        "schemaRegistryUrl": "https://glue.eu-west-1.amazonaws.com/?registryName=shop",
        "schemaRegistryVendor": "aws-glue"}
    plan = plan_read(load_document(doc), channel="c")
    assert (plan.registry_name, plan.registry_region) == ("shop", "eu-west-1")


def test_rest_vendor_without_url_still_refused():
    doc = _skeleton()
    doc["servers"]["k"]["bindings"]["kafka"] = {"schemaRegistryVendor": "confluent"}
    with pytest.raises(AsyncApiDocumentError, match="MUST NOT"):
        load_document(doc)
