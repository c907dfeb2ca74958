"""Registry OAuth (client credentials), configured as confluent-kafka's ``SchemaRegistryClient``: a
token endpoint and a registry on loopback that only accepts the tokens the endpoint issued."""
from __future__ import annotations

import logging
import pickle

import pytest

import registry._oauth as oauth
from connector.testing import RegistryServer, TokenServer
from registry import RegistryAuthError, RegistryConfig, RegistryConfigError, RegistryProtocolError, client_for
from registry._confluent import ConfluentRegistry

SECRET = "cs-Vq93LmX2pT"
ORDER = '{"fields":[{"name":"id","type":"long"}],"name":"Order","type":"record"}'


def _options(idp, srv, **extra) -> dict:
    return {"schema.registry.url": srv.url, "schema.registry.retry.backoff.ms": "1",
            "schema.registry.bearer.auth.credentials.source": "OAUTHBEARER",
            "schema.registry.bearer.auth.issuer.endpoint.url": idp.url,
            "schema.registry.bearer.auth.client.id": "spark-app",
            "schema.registry.bearer.auth.client.secret": SECRET,
            "schema.registry.bearer.auth.scope": "schema_registry",
            "schema.registry.bearer.auth.logical.cluster": "lsrc-123",
            "schema.registry.bearer.auth.identity.pool.id": "pool-1,pool-2", **extra}


@pytest.fixture()
def peers():
    oauth.clear_tokens()
    with TokenServer("spark-app", SECRET, expires_in=100) as idp, RegistryServer() as srv:
        srv.register("orders-value", ORDER)
        srv.require_bearer_from(idp.valid)
        yield idp, srv
    oauth.clear_tokens()


def test_token_fetched_once_per_process_with_confluent_headers(peers):
    idp, srv = peers
    config = RegistryConfig.from_options(_options(idp, srv))
    assert client_for(config).get_schema_by_id(1).text == ORDER
    other = ConfluentRegistry(RegistryConfig.from_options(_options(idp, srv)))  # another client, same settings
    assert other.get_latest("orders-value").id == 1 and other.list_versions("orders-value") == [1]
    assert idp.issued == 1 and idp.requests == [{"grant_type": "client_credentials", "scope": "schema_registry"}]
    headers = srv.headers_of(-1)
    assert headers["Authorization"].startswith("Bearer at-")
    assert headers["target-sr-cluster"] == "lsrc-123" and headers["Confluent-Identity-Pool-Id"] == "pool-1,pool-2"


def test_token_refreshed_before_it_expires(peers, monkeypatch):
    idp, srv = peers
    now = [1000.0]
    monkeypatch.setattr(oauth, "_now", lambda: now[0])
    c = ConfluentRegistry(RegistryConfig.from_options(_options(idp, srv)))
    c.get_schema_by_id(1)
    first = srv.headers_of(-1)["Authorization"]
    now[0] += 79.0  # under 80% of expires_in=100
    c.get_schema_by_id(1)
    assert idp.issued == 1 and srv.headers_of(-1)["Authorization"] == first
    now[0] += 2.0  # past 80%: a new token before the request, while the old one is still valid
    c.get_schema_by_id(1)
    assert idp.issued == 2 and srv.headers_of(-1)["Authorization"] != first
    assert srv.request_count() == 3  # no request was refused on the way


def test_a_401_fetches_a_new_token_once_and_retries(peers):
    idp, srv = peers
    c = ConfluentRegistry(RegistryConfig.from_options(_options(idp, srv)))
    c.get_schema_by_id(1)
    idp.revoke_all()  # rotated at the issuer: the cached token is refused
    assert c.get_latest("orders-value").id == 1
    assert idp.issued == 2 and srv.request_count() == 3  # the refused request, then its retry
    srv.require_bearer("never-issued")  # a registry that refuses every token: one retry, then the error
    srv.reset_counts()
    with pytest.raises(RegistryAuthError) as e:
        c.get_latest("orders-value")
    assert e.value.status == 401 and srv.request_count() == 2 and idp.issued == 3


def test_endpoint_refusals_are_typed_errors_without_secrets(peers, caplog):
    idp, srv = peers
    caplog.set_level(logging.DEBUG)
    wrong = RegistryConfig.from_options(_options(idp, srv, **{"schema.registry.bearer.auth.client.secret":
                                                               SECRET + "-wrong"}))
    with pytest.raises(RegistryAuthError) as e:
        ConfluentRegistry(wrong).get_schema_by_id(1)
    assert "invalid_client" in str(e.value) and idp.url in str(e.value) and e.value.status == 401
    assert srv.request_count() == 0  # no token, no registry request
    with RegistryServer() as not_an_idp:
        bad = RegistryConfig.from_options(_options(idp, srv, **{
            "schema.registry.bearer.auth.issuer.endpoint.url": not_an_idp.url + "/subjects"}))
        with pytest.raises((RegistryProtocolError, RegistryAuthError)):
            ConfluentRegistry(bad).get_schema_by_id(1)
    config = RegistryConfig.from_options(_options(idp, srv))
    ConfluentRegistry(config).get_schema_by_id(1)
    token = srv.headers_of(-1)["Authorization"][7:]
    shown = " ".join([str(e.value), repr(e.value), repr(config), str(config), caplog.text,
                      repr(oauth.BearerAuth(config))])
    for secret in (SECRET, token):
        assert secret not in shown
        assert secret.encode() not in pickle.dumps(config)
    assert pickle.loads(pickle.dumps(config)).bearer_client_secret.get() == SECRET


@pytest.mark.parametrize("options, message", [
    ({"schema.registry.bearer.auth.credentials.source": "OAUTHBEARER"}, "needs .*issuer.endpoint.url"),
    ({"schema.registry.bearer.auth.client.id": "x"}, "credentials.source=OAUTHBEARER"),
    ({"schema.registry.bearer.auth.credentials.source": "CUSTOM"}, "STATIC_TOKEN or OAUTHBEARER"),
    ({"schema.registry.bearer.auth.credentials.source": "STATIC_TOKEN"}, "needs .*bearer.auth.token"),
    ({"schema.registry.bearer.auth.credentials.source": "OAUTHBEARER",
      "schema.registry.bearer.auth.issuer.endpoint.url": "https://idp.example/token",
      "schema.registry.bearer.auth.client.id": "x", "schema.registry.bearer.auth.client.secret": "y",
      "schema.registry.basic.auth.user.info": "u:p"}, "not both"),
    ({"schema.registry.bearer.auth.credentials.source": "OAUTHBEARER",
      "schema.registry.bearer.auth.issuer.endpoint.url": "https://id:pw@idp.example/token",
      "schema.registry.bearer.auth.client.id": "x", "schema.registry.bearer.auth.client.secret": "y"},
     "carries credentials"),
    ({"schema.registry.bearer.auth.credentials.source": "OAUTHBEARER",
      "schema.registry.bearer.auth.issuer.endpoint.url": "http://169.254.169.254/token",
      "schema.registry.bearer.auth.client.id": "x", "schema.registry.bearer.auth.client.secret": "y"},
     "link-local"),
])
def test_misconfiguration_is_refused_when_parsed(options, message):
    with pytest.raises(RegistryConfigError, match=message) as e:
        RegistryConfig.from_options({"schema.registry.url": "http://127.0.0.1:1", **options})
    assert "pw@" not in str(e.value)


def test_static_token_sends_the_logical_cluster_headers(peers):
    _, srv = peers
    srv.require_bearer("static-tok-1")
    c = ConfluentRegistry(RegistryConfig.from_options({
        "schema.registry.url": srv.url, "schema.registry.bearer.auth.token": "static-tok-1",
        "schema.registry.bearer.auth.logical.cluster": "lsrc-9"}))
    assert c.get_schema_by_id(1).id == 1
    assert srv.headers_of(-1) == {"Authorization": "Bearer static-tok-1", "target-sr-cluster": "lsrc-9"}
