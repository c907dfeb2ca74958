"""TLS against a real HTTPS registry on loopback: verification on by default, CA bundle, mTLS."""
from __future__ import annotations

import logging

import pytest

from registry import RegistryError, RegistryTLSError
from registry._confluent import ConfluentRegistry
from connector.testing import RegistryServer

# as registries store it (Karapace, the stand-in): compact, keys sorted
ORDER = '{"fields":[{"name":"id","type":"long"}],"name":"Order","type":"record"}'


@pytest.fixture()
def https_server(tls_material, server_context):
    with RegistryServer(ssl_context=server_context(tls_material)) as srv:
        yield srv


def test_self_signed_server_refused_by_default(https_server, fast_config):
    sid = https_server.register("orders-value", ORDER)
    with pytest.raises(RegistryTLSError, match="certificate verify failed") as e:
        ConfluentRegistry(fast_config(https_server.url, max_retries=3)).get_schema_by_id(sid)
    assert e.value.url.startswith("https://127.0.0.1:")


def test_ca_bundle_makes_it_work(https_server, fast_config, tls_material):
    sid = https_server.register("orders-value", ORDER)
    c = ConfluentRegistry(fast_config(https_server.url, ca_location=tls_material["ca"]))
    assert c.get_schema_by_id(sid).text == ORDER


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_verify_false_works_and_warns_every_time(https_server, fast_config, caplog):
    sid = https_server.register("orders-value", ORDER)
    caplog.set_level(logging.WARNING, logger="registry")
    for _ in range(2):
        assert ConfluentRegistry(fast_config(https_server.url, verify=False)).get_schema_by_id(sid).id == sid
    assert sum("verification is DISABLED" in r.getMessage() for r in caplog.records) == 2


def test_mutual_tls_with_encrypted_client_key(tls_material, server_context, fast_config):
    ctx = server_context(tls_material, require_client_cert=True)
    with RegistryServer(ssl_context=ctx) as srv:
        sid = srv.register("orders-value", ORDER)
        base = {"ca_location": tls_material["ca"]}
        with pytest.raises(RegistryError):  # handshake refused: TLS error or connection reset
            ConfluentRegistry(fast_config(srv.url, max_retries=0, **base)).get_schema_by_id(sid)
        c = ConfluentRegistry(fast_config(srv.url, cert_location=tls_material["client_cert"],
                                          key_location=tls_material["client_key"],
                                          key_password=tls_material["client_key_password"], **base))
        assert c.get_schema_by_id(sid).id == sid


def test_mutual_tls_with_plain_client_key(tls_material, server_context, fast_config):
    with RegistryServer(ssl_context=server_context(tls_material, require_client_cert=True)) as srv:
        sid = srv.register("orders-value", ORDER)
        c = ConfluentRegistry(fast_config(srv.url, ca_location=tls_material["ca"],
                                          cert_location=tls_material["client_cert"],
                                          key_location=tls_material["client_key_plain"]))
        assert c.get_schema_by_id(sid).id == sid
