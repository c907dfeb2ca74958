"""RegistryConfig parsing, secrets, URL hygiene and the SSRF literal checks (no network)."""
from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry import RegistryConfig, RegistryConfigError, Secret
from registry._config import REGISTRY_OPTION_NAMES, SECRET_OPTION_NAMES
from registry._config import redact_url, split_credentials


def test_all_documented_options_parse():
    opts = {
        "schema.registry.url": "https://a.example:8081, https://b.example:8081/",
        "schema.registry.vendor": "Confluent",
        "schema.registry.basic.auth.user.info": "u:SECRET-PW1",
        "schema.registry.bearer.auth.credentials.source": "static_token",
        "schema.registry.bearer.auth.token": "SECRET-TOK2",
        "schema.registry.bearer.auth.logical.cluster": "lsrc-1",
        "schema.registry.bearer.auth.identity.pool.id": "pool-1",
        "schema.registry.ssl.ca.location": "/ca.pem",
        "schema.registry.ssl.certificate.location": "/c.pem",
        "schema.registry.ssl.key.location": "/k.pem",
        "schema.registry.ssl.key.password": "SECRET-KP3",
        "schema.registry.ssl.verify": "TRUE",
        "schema.registry.connect.timeout.ms": "1500",
        "schema.registry.request.timeout.ms": "2500",
        "schema.registry.max.retries": "5",
        "schema.registry.retry.backoff.ms": "20",
        "schema.registry.retry.backoff.max.ms": "400",
        "schema.registry.cache.max.entries": "1000",
        "schema.registry.cache.latest.ttl.sec": "5",
        "schema.registry.cache.notfound.ttl.sec": "0",
        "schema.registry.allow.private.addresses": "false",
        "schema.registry.apicurio.api.version": "v2",
        "schema.registry.glue.region": "eu-west-1",
        "schema.registry.glue.registry.name": "r",
        "schema.registry.glue.endpoint.url": "http://127.0.0.1:5000",
        "schema.registry.glue.access.key.id": "SECRET-AK4",
        "schema.registry.glue.secret.access.key": "SECRET-SK5",
        "schema.registry.glue.session.token": "SECRET-ST6",
        "schema.registry.file.path": "/snap",
        "kafka.bootstrap.servers": "ignored",
    }
    # the username/password spelling is the other way to give basic auth (tested below); the OAuth
    # client-credentials options go with OAUTHBEARER (tests/integration/registry/test_registry_oauth.py)
    assert set(opts) - {"kafka.bootstrap.servers"} == REGISTRY_OPTION_NAMES - {
        "schema.registry.basic.auth.username", "schema.registry.basic.auth.password",
        "schema.registry.bearer.auth.issuer.endpoint.url", "schema.registry.bearer.auth.client.id",
        "schema.registry.bearer.auth.client.secret", "schema.registry.bearer.auth.scope"}
    c = RegistryConfig.from_options(opts)
    assert c.urls == ("https://a.example:8081", "https://b.example:8081")
    assert (c.connect_timeout_s, c.request_timeout_s, c.max_retries) == (1.5, 2.5, 5)
    assert (c.retry_backoff_s, c.retry_backoff_max_s, c.cache_max_entries) == (0.02, 0.4, 1000)
    assert (c.cache_latest_ttl_s, c.cache_notfound_ttl_s, c.apicurio_api_version) == (5.0, 0.0, "2")
    assert c.bearer_token.get() == "SECRET-TOK2" and c.glue_secret_access_key.get() == "SECRET-SK5"
    assert (c.bearer_source, c.bearer_logical_cluster, c.bearer_identity_pool) == ("STATIC_TOKEN", "lsrc-1", "pool-1")
    assert "SECRET" not in repr(c) + str(c)
    assert b"SECRET" not in pickle.dumps(c)
    assert pickle.loads(pickle.dumps(c)) == c
    assert hash(c) == hash(pickle.loads(pickle.dumps(c)))


def test_secret_option_names():
    assert SECRET_OPTION_NAMES == {
        "schema.registry.basic.auth.user.info", "schema.registry.bearer.auth.token",
        "schema.registry.ssl.key.password", "schema.registry.glue.access.key.id",
        "schema.registry.glue.secret.access.key", "schema.registry.glue.session.token",
        "schema.registry.basic.auth.password", "schema.registry.bearer.auth.client.secret"}


def test_unknown_option_lists_valid_ones():
    with pytest.raises(RegistryConfigError, match="schema.registry.basic.auth.user.info") as e:
        RegistryConfig.from_options({"schema.registry.url": "http://x", "Schema.Registry.Pasword": "x"})
    assert "schema.registry.pasword" in str(e.value)


@pytest.mark.parametrize("opts,match", [
    ({"schema.registry.url": "http://x", "schema.registry.vendor": "nope"}, "vendor"),
    ({"schema.registry.url": "ftp://x"}, "http"),
    ({}, "required"),
    ({"schema.registry.url": "http://x", "schema.registry.max.retries": "many"}, "max.retries"),
    ({"schema.registry.url": "http://x", "schema.registry.ssl.verify": "maybe"}, "ssl.verify"),
    ({"schema.registry.vendor": "file"}, "file"),
    ({"schema.registry.url": "http://x", "schema.registry.apicurio.api.version": "9"}, "api.version"),
])
def test_bad_values(opts, match):
    with pytest.raises(RegistryConfigError, match=match):
        RegistryConfig.from_options(opts)


def test_url_credentials_move_to_basic_auth():
    c = RegistryConfig.from_options({"schema.registry.url": "https://me:p%40ss@h.example:8081/base"})
    assert c.urls == ("https://h.example:8081/base",)
    assert c.basic_auth.get() == "me:p@ss"
    explicit = RegistryConfig.from_options({"schema.registry.url": "https://me:old@h.example",
                                            "schema.registry.basic.auth.user.info": "me:new"})
    assert explicit.basic_auth.get() == "me:new" and explicit.urls == ("https://h.example",)


def test_file_url_selects_file_vendor():
    c = RegistryConfig.from_options({"schema.registry.url": "file:///tmp/my%20snap"})
    assert (c.vendor, c.file_path) == ("file", "/tmp/my snap")


def test_vendor_aliases():
    assert RegistryConfig(urls=("http://x",), vendor="karapace").vendor == "confluent"
    assert RegistryConfig(vendor="glue").vendor == "aws-glue"


def test_secret_behaviour():
    s = Secret("hunter2")
    assert (repr(s), str(s), f"{s}", s.get()) == ("Secret('***')", "***", "***", "hunter2")
    data = pickle.dumps(s)
    assert b"hunter2" not in data and pickle.loads(data) == s
    with pytest.raises(AttributeError):
        s._value = "x"


@given(st.text(min_size=1, max_size=40).filter(lambda t: "\x00" not in t))
def test_secret_pickle_round_trip(value):
    assert pickle.loads(pickle.dumps(Secret(value))).get() == value


_userinfo = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="@/?#[]%:"),
                    min_size=1, max_size=12)


@given(_userinfo, _userinfo)
def test_redact_and_split_never_leak_userinfo(user, pw):
    url = f"https://{user}:{pw}@host.example:8081/p"
    clean, creds = split_credentials(url)
    assert clean == "https://host.example:8081/p" and creds == f"{user}:{pw}"
    assert redact_url(url) == clean


def test_redact_query_secrets():
    assert "abc" not in redact_url("https://h/x?token=abc&a=1")
    assert "a=1" in redact_url("https://h/x?token=abc&a=1")


@given(st.text(max_size=60))
def test_redact_url_never_raises(text):
    assert isinstance(redact_url(text), str)


def test_username_password_spelling_is_one_parser_for_every_caller():
    """The README's basic-auth spelling works wherever registry options are parsed (the source,
    ``from_registry(options=...)``, the CLI), not only in the source's option parser."""
    from registry import RegistryConfig
    from registry._config import SECRET_OPTION_NAMES
    from registry.errors import RegistryConfigError

    cfg = RegistryConfig.from_options({"schema.registry.url": "http://127.0.0.1:8081",
                                       "schema.registry.basic.auth.username": "svc",
                                       "Schema.Registry.Basic.Auth.Password": "s3cret"})
    assert cfg.basic_auth.get() == "svc:s3cret"
    assert "s3cret" not in repr(cfg)
    assert "schema.registry.basic.auth.password" in SECRET_OPTION_NAMES
    with pytest.raises(RegistryConfigError, match="go together"):
        RegistryConfig.from_options({"schema.registry.url": "http://127.0.0.1:8081",
                                     "schema.registry.basic.auth.username": "svc"})
    with pytest.raises(RegistryConfigError, match="not both"):
        RegistryConfig.from_options({"schema.registry.url": "http://127.0.0.1:8081",
                                     "schema.registry.basic.auth.username": "svc",
                                     "schema.registry.basic.auth.password": "x",
                                     "schema.registry.basic.auth.user.info": "a:b"})
