"""AWS Glue Schema Registry through boto3 against moto's real HTTP server on loopback."""
from __future__ import annotations

import socket
import uuid

import pytest

from registry import RegistryConfig, SchemaNotFound, SchemaType, client_for

pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

AVRO = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def moto_url():
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    yield f"http://{host}:{port}"
    srv.stop()


@pytest.fixture()
def glue(moto_url, monkeypatch):
    import boto3
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client = boto3.client("glue", endpoint_url=moto_url, region_name="us-east-1")
    name = "reg-" + uuid.uuid4().hex[:8]
    client.create_registry(RegistryName=name)
    return client, name


def _cfg(moto_url, registry, **kw):
    return RegistryConfig.from_options({"schema.registry.vendor": "aws-glue",
                                        "schema.registry.glue.region": "us-east-1",
                                        "schema.registry.glue.registry.name": registry,
                                        "schema.registry.glue.endpoint.url": moto_url, **kw})


def test_lookup_by_schema_version_id(glue, moto_url):
    client, registry = glue
    created = client.create_schema(RegistryId={"RegistryName": registry}, SchemaName="orders",
                                   DataFormat="AVRO", Compatibility="NONE", SchemaDefinition=AVRO)
    version_id = created["SchemaVersionId"]
    c = client_for(_cfg(moto_url, registry))
    s = c.lookup(("glue", uuid.UUID(version_id).bytes))
    assert (s.text, s.schema_type, s.guid, s.subject, s.version) == (AVRO, SchemaType.AVRO, version_id, "orders", 1)
    assert c.get_schema_by_guid(version_id) is s  # cached
    assert c.get_latest("orders").guid == version_id
    # list_subjects/list_versions use list_schemas/list_schema_versions, which moto lacks.
    with pytest.raises(SchemaNotFound):
        c.get_schema_by_guid(str(uuid.uuid4()))


def test_json_schema_and_explicit_credentials(glue, moto_url, monkeypatch):
    client, registry = glue
    text = '{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}'
    vid = client.create_schema(RegistryId={"RegistryName": registry}, SchemaName="j", DataFormat="JSON",
                               Compatibility="NONE", SchemaDefinition=text)["SchemaVersionId"]
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    cfg = _cfg(moto_url, registry, **{"schema.registry.glue.access.key.id": "AKIDEXAMPLE",
                                      "schema.registry.glue.secret.access.key": "very-secret-key"})
    assert "very-secret-key" not in repr(cfg)
    assert client_for(cfg).get_schema_by_guid(vid).schema_type is SchemaType.JSON


def test_look_up_asks_glue_by_definition(glue, moto_url):
    """The write's default mode asks Glue's GetSchemaByDefinition (issue 34), not a client-side scan
    of versions (moto, like some IAM policies, has no ListSchemaVersions)."""
    client, registry = glue
    vid = client.create_schema(RegistryId={"RegistryName": registry}, SchemaName="orders", DataFormat="AVRO",
                               Compatibility="NONE", SchemaDefinition=AVRO)["SchemaVersionId"]
    c = client_for(_cfg(moto_url, registry))
    found = c.lookup_schema("orders", AVRO)
    assert found is not None and (found.guid, found.subject, found.version) == (vid, "orders", 1)
    assert c.lookup_schema("orders", AVRO.replace("long", "int")) is None
    assert c.lookup_schema("no-such-schema", AVRO) is None
