"""``register_schema`` (register-if-absent) on the Confluent client and the caching client."""
from __future__ import annotations

import pytest

from registry import (
    IncompatibleSchemaError, InvalidSchemaError, RegistryConfig, RegistryConfigError, RegistryUnavailable, Schema,
    SchemaType, client_for
)
from registry._confluent import ConfluentRegistry
from connector.testing import RegistryServer
from tests.unit.encode.encode_helpers import Spec


@pytest.fixture
def server():
    with RegistryServer() as srv:
        yield srv


def test_idempotent_cached_and_typed(server):
    c = client_for(RegistryConfig(urls=(server.url,), max_retries=0))
    a = c.register_schema("a-value", Spec("avro", '"string"'))
    assert c.register_schema("a-value", Spec("avro", '"string"')) == a
    assert server.request_count("/subjects/a-value/versions", method="POST") == 1  # cached
    b = c.register_schema("j-value", Spec("json", '{"type": "object"}'))
    p = c.register_schema("p-value", Schema(SchemaType.PROTOBUF, 'syntax = "proto3"; message M {}'))
    assert len({a, b, p}) == 3
    assert c.get_schema_by_id(b).schema_type is SchemaType.JSON
    assert c.get_schema_by_id(p).schema_type is SchemaType.PROTOBUF
    assert c.get_latest("a-value").id == a


def test_409_and_422_are_typed_and_not_cached(server):
    c = ConfluentRegistry(RegistryConfig(urls=(server.url,)))
    server.fail_next(1, 409, path_prefix="/subjects/x-value")
    with pytest.raises(IncompatibleSchemaError) as info:
        c.register_schema("x-value", '"long"')
    assert info.value.status == 409
    server.fail_next(1, 422, path_prefix="/subjects/x-value")
    with pytest.raises(InvalidSchemaError):
        c.register_schema("x-value", '"long"')
    assert isinstance(c.register_schema("x-value", '"long"'), int)  # nothing cached from the failures


def test_normalize_and_references_are_sent(server):
    from registry._types import SchemaReference

    c = ConfluentRegistry(RegistryConfig(urls=(server.url,)))
    calls = []
    orig = c._http.request

    def spy(method, path, **kw):
        calls.append((method, path, kw.get("params"), kw.get("body")))
        return orig(method, path, **kw)

    c._http.request = spy
    c.register_schema("dep-value", '{"type": "fixed", "name": "F", "size": 2}')
    ref = Schema(SchemaType.AVRO, '{"type": "record", "name": "R", "fields": [{"name": "f", "type": "F"}]}',
                 references=(SchemaReference("F", "dep-value", 1),))
    sid = c.register_schema("n-value", ref, normalize=True)
    assert calls[-1][2] == {"normalize": "true"}
    assert calls[-1][3]["references"] == [{"name": "F", "subject": "dep-value", "version": 1}]
    assert c.get_schema_by_id(sid).references == (SchemaReference("F", "dep-value", 1),)


def test_backend_without_registration():
    from registry._cache import CachingRegistry
    from registry._base import SchemaRegistry

    class ReadOnly(SchemaRegistry):
        def _fetch_by_id(self, schema_id):
            raise AssertionError

        def _fetch_version(self, subject, version):
            raise AssertionError

        def list_subjects(self):
            return []

        def list_versions(self, subject):
            return []

    c = CachingRegistry(ReadOnly(), RegistryConfig(urls=("http://127.0.0.1:1",)))
    with pytest.raises(RegistryConfigError, match="cannot register"):
        c.register_schema("s", '"int"')


def test_unavailable_registry_is_not_a_registration_error():
    c = ConfluentRegistry(RegistryConfig(urls=("http://127.0.0.1:9",), max_retries=0,
                                         connect_timeout_s=0.5, allow_private_addresses=True))
    with pytest.raises(RegistryUnavailable):
        c.register_schema("s", '"int"')
