"""Confluent REST client against a real HTTP registry on loopback: retries, errors, failover, auth."""
from __future__ import annotations

import logging
import pickle
import socket

import pytest

from registry import (
    RegistryAuthError, RegistryConfig, RegistryConfigError, RegistryError, RegistryUnavailable, Schema,
    SchemaNotFound, SchemaType, client_for
)
from registry._confluent import ConfluentRegistry
from registry._types import SchemaReference

# as registries store it (Karapace, the stand-in): compact, keys sorted
ORDER = '{"fields":[{"name":"id","type":"long"}],"name":"Order","namespace":"acme","type":"record"}'


def _closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here now: connections are refused
    return f"http://127.0.0.1:{port}"


def test_get_by_id_guid_subject_version(server, fast_config):
    sid = server.register("orders-value", ORDER)
    proto = server.register("p-value", 'syntax = "proto3"; message M { int64 a = 1; }', "PROTOBUF")
    c = ConfluentRegistry(fast_config(server.url))
    s = c.get_schema_by_id(sid)
    assert (s.schema_type, s.text, s.id) == (SchemaType.AVRO, ORDER, sid)
    assert s.guid == server.guid_of(sid)
    assert c.get_schema_by_id(proto).schema_type is SchemaType.PROTOBUF
    assert c.get_schema_by_guid(server.guid_of(proto)).id == proto
    latest = c.get_latest("orders-value")
    assert (latest.subject, latest.version, latest.id) == ("orders-value", 1, sid)
    assert c.get_version("orders-value", 1).text == ORDER
    assert sorted(c.list_subjects()) == ["orders-value", "p-value"]
    assert c.list_versions("orders-value") == [1]
    assert pickle.loads(pickle.dumps(s)) == s


def test_lookup_dispatches_by_framing(server, fast_config):
    sid = server.register("orders-value", ORDER)
    guid = server.guid_of(sid)
    import uuid
    c = client_for(fast_config(server.url))
    assert c.lookup(("confluent", sid)).id == sid
    assert c.lookup(("confluent-guid", uuid.UUID(guid).bytes)).id == sid
    assert c.lookup(("header-confluent", uuid.UUID(guid).bytes)).id == sid
    assert c.lookup(("apicurio-new", sid)).id == sid  # ccompat ids are content ids
    with pytest.raises(RegistryConfigError):
        c.lookup(("none", 0))


def test_lookup_accepts_wireformat_framing_enum(server, fast_config):
    wireformat = pytest.importorskip("wireformat")
    framing = getattr(wireformat, "Framing", None)
    if framing is None:
        pytest.skip("wireformat.Framing not written yet")
    sid = server.register("orders-value", ORDER)
    assert client_for(fast_config(server.url)).lookup((framing("confluent"), sid)).text == ORDER


def test_references_resolved_recursively_and_deduplicated(server, fast_config):
    money = '{"fields":[{"name":"c","type":"long"}],"name":"Money","namespace":"acme","type":"record"}'
    server.register("money", money)
    line = '{"fields":[{"name":"p","type":"acme.Money"}],"name":"Line","namespace":"acme","type":"record"}'
    server.register("line", line, references=[SchemaReference("acme.Money", "money", 1)])
    order = ('{"type":"record","name":"Order","namespace":"acme","fields":'
             '[{"name":"l","type":"acme.Line"},{"name":"t","type":"acme.Money"}]}')
    sid = server.register("order-value", order, references=[SchemaReference("acme.Line", "line", 1),
                                                           SchemaReference("acme.Money", "money", 1)])
    s = ConfluentRegistry(fast_config(server.url)).get_schema_by_id(sid)
    names = [n for n, _ in s.resolved_references]
    assert names == ["acme.Money", "acme.Line"]  # dependency order, Money once
    assert dict(s.resolved_references)["acme.Line"].text == line
    fastavro = pytest.importorskip("fastavro")
    named: dict = {}
    for _, ref in s.resolved_references:
        fastavro.parse_schema(__import__("json").loads(ref.text), named_schemas=named)
    fastavro.parse_schema(__import__("json").loads(s.text), named_schemas=named)


def test_reference_cycle_is_a_typed_error(server, fast_config):
    from registry import SchemaParseError
    server.register("a", '"string"', references=[SchemaReference("b", "b", 1)])
    server.register("b", '"long"', references=[SchemaReference("a", "a", 1)])
    with pytest.raises(SchemaParseError, match="cycle"):
        ConfluentRegistry(fast_config(server.url)).get_latest("a")


def test_retries_on_503_then_succeeds(server, fast_config):
    sid = server.register("orders-value", ORDER)
    server.fail_next(2, 503)
    c = ConfluentRegistry(fast_config(server.url, max_retries=3))
    assert c.get_schema_by_id(sid).id == sid
    assert server.request_count("/schemas/ids") == 3


@pytest.mark.parametrize("status", [408, 429, 500, 502])
def test_retryable_statuses(server, fast_config, status):
    sid = server.register("orders-value", ORDER)
    server.fail_next(1, status)
    assert ConfluentRegistry(fast_config(server.url)).get_schema_by_id(sid).id == sid
    assert server.request_count() == 2


def test_unavailable_after_retries_exhausted(server, fast_config):
    sid = server.register("orders-value", ORDER)
    server.fail_next(10, 503)
    with pytest.raises(RegistryUnavailable) as e:
        ConfluentRegistry(fast_config(server.url, max_retries=2)).get_schema_by_id(sid)
    assert server.request_count() == 3
    assert e.value.status == 503 and e.value.error_code == 50301
    assert e.value.url == f"{server.url}/schemas/ids/{sid}"


def test_not_found_is_not_retried(server, fast_config):
    c = ConfluentRegistry(fast_config(server.url, max_retries=5))
    with pytest.raises(SchemaNotFound) as e:
        c.get_schema_by_id(99)
    assert (e.value.status, e.value.error_code) == (404, 40403)
    with pytest.raises(SchemaNotFound) as e:
        c.get_latest("nope")
    assert e.value.error_code == 40401
    server.register("s", '"int"')
    with pytest.raises(SchemaNotFound) as e:
        c.get_version("s", 7)
    assert e.value.error_code == 40402
    assert server.request_count() == 3


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_not_retried(server, fast_config, status):
    server.fail_next(5, status)
    with pytest.raises(RegistryAuthError) as e:
        ConfluentRegistry(fast_config(server.url, max_retries=5)).get_schema_by_id(1)
    assert e.value.status == status
    assert server.request_count() == 1


def test_other_4xx_not_retried(server, fast_config):
    server.fail_next(5, 400)
    with pytest.raises(RegistryError) as e:
        ConfluentRegistry(fast_config(server.url)).get_schema_by_id(1)
    assert type(e.value) is RegistryError and e.value.status == 400
    assert server.request_count() == 1


def test_failover_to_second_url(server, fast_config):
    sid = server.register("orders-value", ORDER)
    c = ConfluentRegistry(fast_config(_closed_port_url(), server.url, max_retries=0))
    assert c.get_schema_by_id(sid).id == sid
    assert c.get_latest("orders-value").id == sid  # sticks to the URL that answered
    assert server.request_count() == 2


def test_unreachable_registry_raises_unavailable(fast_config):
    url = _closed_port_url()
    with pytest.raises(RegistryUnavailable, match="unreachable") as e:
        ConfluentRegistry(fast_config(url, max_retries=1)).get_schema_by_id(1)
    assert e.value.url.startswith(url)


def test_basic_auth_from_url_userinfo_and_redaction(server, fast_config, caplog):
    sid = server.register("orders-value", ORDER)
    password = "s3cr3t-Pa55"
    server.require_basic_auth("alice", password)
    host = server.url.split("//", 1)[1]
    cfg = RegistryConfig.from_options({"schema.registry.url": f"http://alice:{password}@{host}",
                                       "schema.registry.retry.backoff.ms": "1"})
    assert cfg.urls == (server.url,)
    assert ConfluentRegistry(cfg).get_schema_by_id(sid).id == sid
    wrong = RegistryConfig.from_options({"schema.registry.url": server.url,
                                         "schema.registry.basic.auth.user.info": "alice:wrong-" + password})
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RegistryAuthError) as e:
        ConfluentRegistry(wrong).get_schema_by_id(sid)
    for text in (str(e.value), repr(e.value), repr(cfg), str(cfg), repr(wrong), e.value.url, caplog.text):
        assert password not in text
    assert password.encode() not in pickle.dumps(cfg)
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert pickle.loads(pickle.dumps(cfg)).basic_auth.get() == f"alice:{password}"


def test_bearer_token(server, fast_config):
    sid = server.register("orders-value", ORDER)
    server.require_bearer("tok-123456")
    with pytest.raises(RegistryAuthError):
        ConfluentRegistry(fast_config(server.url)).get_schema_by_id(sid)
    c = ConfluentRegistry(fast_config(server.url, bearer_token="tok-123456"))
    assert c.get_schema_by_id(sid).id == sid


def test_same_host_redirect_followed_cross_host_refused(server, fast_config):
    sid = server.register("orders-value", ORDER)
    server.redirect_next(1, server.url + "{path}")
    assert ConfluentRegistry(fast_config(server.url)).get_schema_by_id(sid).id == sid
    server.redirect_next(1, f"http://localhost:{server.port}" + "{path}")
    with pytest.raises(RegistryError, match="another host"):
        ConfluentRegistry(fast_config(server.url)).get_schema_by_id(sid)


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest", "http://metadata.google.internal",
                                 "http://[fe80::1]:8081", "http://100.100.100.200", "http://[fd00:ec2::254]"])
def test_ssrf_guard_refuses_metadata_hosts(url):
    with pytest.raises(RegistryConfigError, match="allow.private.addresses"):
        RegistryConfig.from_options({"schema.registry.url": url})
    RegistryConfig.from_options({"schema.registry.url": url, "schema.registry.allow.private.addresses": "true"})


def test_ssrf_guard_checks_resolved_addresses(monkeypatch, fast_config):
    real = socket.getaddrinfo

    def fake(host, *a, **kw):
        if host == "sneaky.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", 0))]
        return real(host, *a, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    with pytest.raises(RegistryConfigError, match="resolves"):
        ConfluentRegistry(fast_config("http://sneaky.example:8081"))
    ConfluentRegistry(fast_config("http://127.0.0.1:1"))  # loopback is fine


def test_register_through_client(server, fast_config):
    c = ConfluentRegistry(fast_config(server.url))
    a = c.register("x-value", '"string"')
    assert c.register("y-value", '"string"') == a  # same text, same id
    assert c.get_schema_by_id(a).text == '"string"'


def test_read_timeout_is_retried_then_unavailable(server, fast_config):
    sid = server.register("orders-value", ORDER)
    server.set_delay(0.5)
    with pytest.raises(RegistryUnavailable, match="ReadTimeout"):
        ConfluentRegistry(fast_config(server.url, request_timeout_s=0.05, max_retries=1)).get_schema_by_id(sid)
    assert server.request_count() == 2


def test_oversized_answer_is_refused(server, fast_config):
    sid = server.register("big-value", '"' + "x" * 5000 + '"')
    with pytest.raises(RegistryError, match="larger than"):
        ConfluentRegistry(fast_config(server.url, max_response_bytes=1024)).get_schema_by_id(sid)


def test_subject_look_up_and_compatibility_go_through_the_transport(server, fast_config):
    """``lookup_schema`` / ``test_compatibility`` (the write's default mode, ``check``): registered
    → its id and version, unknown schema or subject → None; retried and authenticated like every
    other call."""
    server.register("orders-value", ORDER)
    password = "s3cr3t-Pa55"
    server.require_basic_auth("alice", password)
    host = server.url.split("//", 1)[1]
    c = ConfluentRegistry(RegistryConfig.from_options({
        "schema.registry.url": f"http://alice:{password}@{host}", "schema.registry.retry.backoff.ms": "1"}))
    server.fail_next(1, 503)
    found = c.lookup_schema("orders-value", ORDER)
    assert found is not None and (found.version, found.subject, found.id) == (1, "orders-value", 1)
    assert c.lookup_schema("orders-value", '"string"') is None
    assert c.lookup_schema("no-such-value", ORDER) is None
    json_order = Schema(SchemaType.JSON, ORDER)
    assert c.lookup_schema("orders-value", json_order) is None  # type is part of identity
    assert c.test_compatibility("orders-value", ORDER) == (True, [])
    wrong = ConfluentRegistry(RegistryConfig.from_options({
        "schema.registry.url": server.url, "schema.registry.basic.auth.user.info": "alice:wrong"}))
    with pytest.raises(RegistryAuthError) as e:
        wrong.test_compatibility("orders-value", ORDER)
    assert password not in str(e.value)
