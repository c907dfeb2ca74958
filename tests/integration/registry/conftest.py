"""Fixtures for registry integration tests: a fresh RegistryServer, fast-retry configs, TLS material."""
from __future__ import annotations

import datetime
import ipaddress
import ssl

import pytest

from registry import RegistryConfig
from registry._cache import clear_clients
from connector.testing import RegistryServer


@pytest.fixture()
def server():
    with RegistryServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fresh_clients():
    clear_clients()
    yield
    clear_clients()


def _fast_config(*urls: str, **kw) -> RegistryConfig:
    kw.setdefault("retry_backoff_s", 0.001)
    kw.setdefault("retry_backoff_max_s", 0.005)
    kw.setdefault("connect_timeout_s", 2.0)
    kw.setdefault("request_timeout_s", 5.0)
    return RegistryConfig(urls=tuple(urls), **kw)


@pytest.fixture()
def fast_config():
    """Build a RegistryConfig with millisecond backoffs so retry tests stay fast."""
    return _fast_config


def _cert(subject_cn, issuer_name, issuer_key, key, *, ca=False, server=False):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)])
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name or name)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        b = b.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                         x509.DNSName("localhost")]), critical=False)
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return b.sign(issuer_key or key, hashes.SHA256()), name


@pytest.fixture(scope="session")
def tls_material(tmp_path_factory):
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate (encrypted key)."""
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    d = tmp_path_factory.mktemp("tls")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert, ca_name = _cert("test-ca", None, None, ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv_cert, _ = _cert("127.0.0.1", ca_name, ca_key, srv_key, server=True)
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli_cert, _ = _cert("client", ca_name, ca_key, cli_key)
    pem = serialization.Encoding.PEM
    plain = serialization.NoEncryption()
    files = {
        "ca": (d / "ca.pem", ca_cert.public_bytes(pem)),
        "server_cert": (d / "server.pem", srv_cert.public_bytes(pem)),
        "server_key": (d / "server.key", srv_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, plain)),
        "client_cert": (d / "client.pem", cli_cert.public_bytes(pem)),
        "client_key": (d / "client.key", cli_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"key-pass-123"))),
    }
    files["client_key_plain"] = (d / "client-plain.key",
                                 cli_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, plain))
    for path, data in files.values():
        path.write_bytes(data)
    return {k: str(p) for k, (p, _) in files.items()} | {"client_key_password": "key-pass-123"}


@pytest.fixture()
def server_context():
    """Build a server-side SSLContext from ``tls_material``."""
    return _server_context


def _server_context(tls, *, require_client_cert=False) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls["server_cert"], tls["server_key"])
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(tls["ca"])
    return ctx
