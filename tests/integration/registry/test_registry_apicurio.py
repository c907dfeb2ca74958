"""Apicurio native lookups (global id / content id, v3 with v2 fallback) against the embedded server."""
from __future__ import annotations

import pytest

from registry import RegistryConfig, SchemaNotFound, SchemaType, client_for
from registry._apicurio import ApicurioRegistry
from registry._types import SchemaReference
from connector.testing import RegistryServer

# as registries store it (Karapace, the stand-in): compact, keys sorted
AVRO = '{"fields":[{"name":"id","type":"long"}],"name":"Order","type":"record"}'
PROTO = 'syntax = "proto3";\nmessage M { int64 a = 1; }\n'


def _cfg(url, **kw):
    return RegistryConfig(urls=(url,), vendor="apicurio", retry_backoff_s=0.001, **kw)


def test_global_and_content_ids(server):
    cid = server.register("orders-value", AVRO)
    server.register("other-value", AVRO)  # same content, new global id
    gid1 = server.global_id_of("orders-value", 1)
    gid2 = server.global_id_of("other-value", 1)
    assert gid1 != gid2
    c = client_for(_cfg(server.url))
    for key in (("apicurio-legacy", gid1), ("header-apicurio-global", gid2),
                ("apicurio-new", cid), ("header-apicurio-content", cid)):
        s = c.lookup(key)
        assert (s.text, s.schema_type) == (AVRO, SchemaType.AVRO)
    assert server.request_count("/apis/registry/v3/ids/globalIds") == 4  # 2 schemas + 2 references calls
    assert server.request_count("/apis/registry/v2") == 0
    with pytest.raises(SchemaNotFound):
        c.lookup(("apicurio-legacy", 999999))


def test_type_from_artifact_type_header(server):
    cid = server.register("p-value", PROTO, "PROTOBUF")
    assert ApicurioRegistry(_cfg(server.url)).get_schema_by_content_id(cid).schema_type is SchemaType.PROTOBUF


def test_falls_back_to_v2_and_sticks():
    with RegistryServer(apicurio_api_versions=("2",)) as srv:
        cid = srv.register("orders-value", AVRO)
        c = ApicurioRegistry(_cfg(srv.url + "/apis/registry/v2"))
        assert c.get_schema_by_content_id(cid).text == AVRO
        assert c.get_schema_by_global_id(srv.global_id_of("orders-value", 1)).text == AVRO
        assert srv.request_count("/apis/registry/v3") == 1  # only the first lookup tried v3
        with pytest.raises(SchemaNotFound):
            c.get_schema_by_content_id(4242)


def test_configured_api_version_is_used_directly():
    with RegistryServer(apicurio_api_versions=("2",)) as srv:
        cid = srv.register("orders-value", AVRO)
        c = ApicurioRegistry(_cfg(srv.url, apicurio_api_version="2"))
        assert c.get_schema_by_content_id(cid).id == cid
        assert srv.request_count("/apis/registry/v3") == 0


def test_subjects_and_references_via_ccompat(server):
    server.register("money", '{"type":"record","name":"Money","fields":[{"name":"c","type":"long"}]}')
    cid = server.register("o-value", '{"type":"record","name":"O","fields":[{"name":"m","type":"Money"}]}',
                          references=[SchemaReference("Money", "money", 1)])
    c = client_for(_cfg(server.url))  # cached: the reference is fetched once
    s = c.get_schema_by_global_id(server.global_id_of("o-value", 1))
    assert [n for n, _ in s.resolved_references] == ["Money"]
    assert c.get_latest("o-value").id == cid
    assert server.request_count("/apis/ccompat/v7/subjects/money/versions/1") == 1


@pytest.mark.parametrize("text,expected", [
    (AVRO, SchemaType.AVRO), ('"string"', SchemaType.AVRO), ('["null","long"]', SchemaType.AVRO),
    ('{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}', SchemaType.JSON),
    ('{"type":"object","properties":{"a":{"type":"integer"}}}', SchemaType.JSON),
    (PROTO, SchemaType.PROTOBUF), ("message A { string b = 1; }", SchemaType.PROTOBUF),
])
def test_sniffing(text, expected):
    from registry._apicurio import sniff_schema_type
    assert sniff_schema_type(text) is expected
