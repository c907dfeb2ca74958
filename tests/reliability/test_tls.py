"""TLS verification is on by default, for the registry and for Kafka; turning it off is
explicit and warns every time.

Mirrors confluent-kafka's ``ssl.endpoint.identification.algorithm=https`` default (librdkafka
>= 2.0), Spark's Kafka source passing ``kafka.ssl.*`` through unchanged, and requests'
``verify=True`` default for the schema registry client.
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import logging
import ssl

import pytest

from registry import RegistryTLSError, client_for
from connector.testing import RegistryServer

from tests.reliability.conftest import fast_registry_config

pytest.importorskip("cryptography")

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]})


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (its own CA)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    d = tmp_path_factory.mktemp("tls")
    cert_path, key_path = d / "cert.pem", d / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


@pytest.fixture()
def https_registry(self_signed):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*self_signed)
    with RegistryServer(ssl_context=ctx) as srv:
        yield srv


def test_self_signed_registry_is_refused_by_default(https_registry, self_signed):
    """requests/urllib3 ``verify=True``: an unknown CA fails the handshake with a typed
    ``RegistryTLSError``; trusting the CA (``schema.registry.ssl.ca.location``) makes it work."""
    sid = https_registry.register("r-value", SCHEMA)
    with pytest.raises(RegistryTLSError) as ei:
        client_for(fast_registry_config(https_registry.url, max_retries=3)).get_schema_by_id(sid)
    assert "certificate verify failed" in str(ei.value)
    trusted = fast_registry_config(https_registry.url, ca_location=self_signed[0])
    assert json.loads(client_for(trusted).get_schema_by_id(sid).text) == json.loads(SCHEMA)


def test_self_signed_registry_fails_the_read_setup(https_registry):
    """The Spark source on an HTTPS registry with an untrusted certificate fails at ``load()``
    (driver), not with rows of garbage later."""
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    sid = https_registry.register("r-value", SCHEMA)
    doc = {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "servers": {"k": {"host": "127.0.0.1:9", "protocol": "kafka"}},
           "channels": {"c": {"address": "t", "messages": {"m": {"name": "M"}}}}}
    with pytest.raises(RegistryTLSError):
        build_setup(parse_options({"asyncapi": json.dumps(doc), "channel": "c", "schema.id": str(sid),
                                   "schema.registry.url": https_registry.url}))


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_registry_verify_off_warns_every_time(https_registry, caplog):
    """Turning registry verification off is explicit and logged for every client created."""
    from registry._cache import clear_clients

    sid = https_registry.register("r-value", SCHEMA)
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            clear_clients()
            client_for(fast_registry_config(https_registry.url, verify=False)).get_schema_by_id(sid)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "verif" in r.getMessage().lower()]
    assert len(warnings) >= 2


def _secure_doc(extra_server: dict | None = None) -> dict:
    server = {"host": "broker.example:9093", "protocol": "kafka-secure"}
    server.update(extra_server or {})
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": {"k": server},
            "channels": {"c": {"address": "t", "messages": {"m": {"name": "M"}}}}}


def _conf(doc: dict, **options) -> dict:
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    return build_setup(parse_options({"asyncapi": json.dumps(doc), "channel": "c", **options})).kafka_conf()


@pytest.mark.parametrize("extra", [None, {"x-ssl.endpoint.identification.algorithm": "none"}],
                         ids=["plain", "document-tries-to-disable"])
def test_kafka_tls_keeps_hostname_verification(extra, caplog):
    """A ``kafka-secure`` server gives ``security.protocol=SSL``; the source never sets
    ``ssl.endpoint.identification.algorithm=none`` itself, and a document cannot either (an
    AsyncAPI file is less trusted than the job's options) — the librdkafka default ``https``
    stays in force, and certificate verification is not turned off."""
    conf = _conf(_secure_doc(extra))
    assert conf["security.protocol"] == "SSL"
    assert conf.get("ssl.endpoint.identification.algorithm", "https") == "https"
    assert conf.get("enable.ssl.certificate.verification", "true") == "true"
    from connector.kafka._consume import _consumer_conf

    consumer_conf = _consumer_conf(conf, "read_committed")
    assert consumer_conf.get("ssl.endpoint.identification.algorithm", "https") == "https"


def test_kafka_hostname_verification_off_is_explicit_and_warns_each_time(caplog):
    """``kafka.ssl.endpoint.identification.algorithm=none`` is the user's explicit choice: it
    is honoured and a warning is logged for every read that sets it."""
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            conf = _conf(_secure_doc(), **{"kafka.ssl.endpoint.identification.algorithm": "none"})
            assert conf["ssl.endpoint.identification.algorithm"] == "none"
    warnings = [r for r in caplog.records
                if r.levelno == logging.WARNING and "ssl.endpoint.identification.algorithm" in r.getMessage()]
    assert len(warnings) >= 3
