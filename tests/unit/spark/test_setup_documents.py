"""Driver setup from documents as people write them (issue 18): options that reach the
planner (``asyncapi.refRoot``, ``topic``), binding warnings, Glue settings from the document.
No Spark session: ``build_setup`` runs on the driver before any task."""
from __future__ import annotations

import logging
import pathlib

import pytest
import yaml

from connector.errors import AsyncApiDocumentError, ConfigError
from connector.options._parse import parse_options
from connector.spark._setup import build_setup, spark_schema

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "asyncapi"


def _doc(tmp_path, mutate=None) -> str:
    doc = yaml.safe_load((DATA / "skeleton-3.0.yml").read_text())
    if mutate:
        mutate(doc)
    path = tmp_path / "api" / "doc.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _setup(**options):
    return build_setup(parse_options({k.replace("_", "."): v for k, v in options.items()}))


def test_ref_root_option_reaches_shared_files(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "payload.yml").write_text(yaml.safe_dump(
        {"type": "object", "properties": {"sku": {"type": "string"}}}))
    path = _doc(tmp_path, lambda d: d["components"]["messages"]["M"].update(
        payload={"$ref": "../shared/payload.yml"}))
    with pytest.raises(AsyncApiDocumentError, match="asyncapi.refRoot"):
        build_setup(parse_options({"asyncapi": path, "channel": "c"}))
    setup = build_setup(parse_options({"asyncapi": path, "channel": "c", "asyncapi.refroot": str(tmp_path)}))
    assert "sku" in spark_schema(setup).simpleString()


def test_topic_option_reads_a_channel_without_address(tmp_path):
    def null_address(d):
        d["channels"]["c"]["address"] = None
        del d["channels"]["c"]["parameters"]

    path = _doc(tmp_path, null_address)
    with pytest.raises(AsyncApiDocumentError, match="option topic="):
        build_setup(parse_options({"asyncapi": path, "channel": "c"}))
    setup = build_setup(parse_options({"asyncapi": path, "channel": "c", "topic": "replies.7"}))
    assert setup.topics == ("replies.7",)


def test_registry_binding_fields_need_a_registry_from_somewhere(tmp_path, caplog):
    path = _doc(tmp_path, lambda d: d["servers"]["k"].pop("bindings"))
    with pytest.raises(ConfigError) as e:
        build_setup(parse_options({"asyncapi": path, "channel": "c"}))
    assert "channels.c.messages.m.bindings.kafka.schemaIdLocation" in str(e.value)
    with caplog.at_level(logging.WARNING, logger="asyncapi_kafka"):
        setup = build_setup(parse_options({"asyncapi": path, "channel": "c",
                                           "schema.registry.url": "http://127.0.0.1:8081"}))
    assert setup.registry_config is not None
    assert any("schemaIdLocation" in r.getMessage() and "channels.c.messages.m" in r.getMessage()
               for r in caplog.records)


def test_glue_endpoint_and_registry_name_come_from_the_document(tmp_path):
    def glue(d):
        d["servers"]["k"]["bindings"]["kafka"] = {
            "schemaRegistryUrl": "http://127.0.0.1:4566", "schemaRegistryVendor": "aws-glue",
            "x-registryName": "shop", "x-region": "eu-west-1"}

    setup = build_setup(parse_options({"asyncapi": _doc(tmp_path, glue), "channel": "c",
                                       "schema.registry.allow.private.addresses": "true"}))
    cfg = setup.registry_config
    assert cfg.vendor == "aws-glue"
    assert (cfg.glue_endpoint_url, cfg.glue_registry_name, cfg.glue_region) == (
        "http://127.0.0.1:4566", "shop", "eu-west-1")
    assert not cfg.urls  # the endpoint is not a REST registry base URL
    # options still win over the document
    setup = build_setup(parse_options({"asyncapi": _doc(tmp_path, glue), "channel": "c",
                                       "schema.registry.allow.private.addresses": "true",
                                       "schema.registry.glue.registry.name": "other"}))
    assert setup.registry_config.glue_registry_name == "other"


def test_unknown_evolution_mode_fails_at_parse():
    with pytest.raises(ConfigError, match="schemaEvolutionMode"):
        parse_options({"asyncapi": "x.yaml", "channel": "c", "schemaevolutionmode": "merge"})
    assert parse_options({"asyncapi": "x.yaml", "channel": "c",
                          "schemaEvolutionMode": "RESCUE"}).evolution_mode == "rescue"


@pytest.mark.parametrize("name, value, fragment", [
    ("startingOffsets", '{"t": {"0": "x"}}', "startingOffsets"),
    ("startingOffsets", "sometime", "startingoffsets"),
    ("endingOffsets", "{not json", "endingoffsets"),
    ("startingTimestamp", "yesterday", "startingtimestamp"),
])
def test_bad_offset_options_fail_when_options_are_parsed(name, value, fragment):
    """Issue 13: a bad offset option fails at load() (option parsing), not at the first action."""
    with pytest.raises(ConfigError) as e:
        parse_options({"asyncapi": "x.yaml", "channel": "c", name: value}, streaming=None)
    assert fragment.lower() in str(e.value).lower()


def test_latest_start_refused_for_batch_reads_at_parse():
    with pytest.raises(ConfigError, match="latest"):
        parse_options({"asyncapi": "x.yaml", "channel": "c", "startingOffsets": "latest"}, streaming=False)
    assert parse_options({"asyncapi": "x.yaml", "channel": "c", "startingOffsets": "latest"}, streaming=True)
