"""``connector.peek`` against real peers (the librdkafka mock cluster, the embedded registry), no
Spark: which records each flag selects, the columns, errors, options, a secured registry.
The data: :mod:`tests.integration.peek_data` (time order is record order; record 20 is bad)."""
from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest

import connector
from connector.errors import ConfigError, DecodeError, KafkaReadError
from connector.read import peek
from tests.integration.peek_data import BAD, BASE, DOC, SCHEMA, framed, make_topic

pytestmark = pytest.mark.kafka



@pytest.fixture(scope="module")
def registry():
    from connector.testing import RegistryServer

    with RegistryServer() as server:
        yield server


@pytest.fixture(scope="module")
def topic(kafka, registry, tmp_path_factory):
    return make_topic(kafka, registry, tmp_path_factory.mktemp("peek"))


def _ids(table) -> list[int]:
    """The record number k of each row (from the key, so error rows count too)."""
    return [int(k[1:]) for k in table.column("key").to_pylist()]


def _peek(topic, **kw):
    path, options, _ = topic
    return peek(path, "events", options={**options, **kw.pop("options", {})}, **kw)


def test_default_is_the_first_ten_records_in_time_order(topic):
    table = _peek(topic)
    assert _ids(table) == list(range(10))
    assert table.column("timestamp").to_pylist() == sorted(table.column("timestamp").to_pylist())


def test_n(topic):
    assert _ids(_peek(topic, n=3)) == [0, 1, 2]
    assert len(_peek(topic, n=100)) == BAD + 1
    with pytest.raises(ConfigError, match="at least 1"):
        _peek(topic, n=0)


def test_from_end_is_the_newest_records_and_shows_a_bad_one_as_an_error_row(topic):
    table = _peek(topic, n=3, from_end=True)
    assert _ids(table) == [18, 19, BAD]
    rows = table.to_pylist()
    assert rows[0]["value"] == {"id": 18, "name": "n18"} and rows[0]["_error"] is None
    bad = rows[-1]
    assert bad["value"] is None and bad["_error"] and bad["_raw_value"].startswith(b"\x00")
    assert bad["schemaId"] == rows[0]["schemaId"] is not None  # the id parses; the payload does not


def test_partition_selects_partitions(topic):
    _, _, model = topic
    assert _ids(_peek(topic, partition=1)) == [k for k, p, _, _ in model if p == 1]
    assert _ids(_peek(topic, partition=[1, 2], n=3)) == [1, 2, 5]
    with pytest.raises(ConfigError, match="no partition 9"):
        _peek(topic, partition=9)


def test_offset_starts_every_partition_there(topic):
    _, _, model = topic
    assert _ids(_peek(topic, offset=3, n=100)) == [k for k, _, off, _ in model if off >= 3]
    assert _ids(_peek(topic, offset=4, partition=0)) == [k for k, p, off, _ in model if p == 0 and off >= 4]
    assert _peek(topic, offset=1000).num_rows == 0
    with pytest.raises(ConfigError, match="negative"):
        _peek(topic, offset=-1)


@pytest.mark.parametrize("when", [BASE + 7500, "2026-01-01T00:00:07.500Z", str(BASE + 7500),
                                  dt.datetime(2026, 1, 1, 0, 0, 7, 500000, tzinfo=dt.timezone.utc)],
                         ids=["ms", "iso", "text-ms", "datetime"])
def test_timestamp_starts_at_the_first_record_at_or_after_it(topic, when):
    # The mock cluster answers "no match" to offsets-for-times: the rows are selected by the
    # same row mask the pushdown uses, so this holds on every broker.
    assert _ids(_peek(topic, timestamp=when, n=5)) == [8, 9, 10, 11, 12]


def test_start_flags_conflict(topic):
    with pytest.raises(ConfigError, match="give one"):
        _peek(topic, offset=1, from_end=True)
    with pytest.raises(ConfigError, match="give one"):
        _peek(topic, timestamp=BASE, options={"startingOffsets": "earliest"})


def test_offset_options_of_the_source_apply(topic):
    path, _, model = topic
    name = open(path).read().split("address: ")[1].split()[0]
    start = {name: {"0": 2, "1": 0, "2": 0, "3": 0}}
    end = {name: {"0": 4, "1": 1, "2": 0, "3": 0}}
    table = _peek(topic, n=100, options={"startingOffsets": json.dumps(start), "endingOffsets": json.dumps(end)})
    assert _ids(table) == sorted(k for k, p, off, _ in model if (p == 0 and 2 <= off < 4) or (p == 1 and off < 1))


def test_columns_are_the_sources_with_headers_and_errors(topic):
    table = _peek(topic, n=2)
    assert table.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                  "headers", "schemaId", "_error", "_raw_value"]
    rows = table.to_pylist()
    assert rows[0]["key"] == "k0" and rows[0]["headers"] is None
    assert rows[1]["headers"] == [{"key": "trace", "value": b"t1"}]
    assert rows[1]["timestamp"] == dt.datetime(2026, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc)
    assert (rows[1]["partition"], rows[1]["offset"]) == (1, 0)
    # The source's own defaults when the caller says so.
    plain = _peek(topic, n=2, options={"mode": "DROPMALFORMED", "includeHeaders": "false"})
    assert "headers" not in plain.schema.names and "_error" not in plain.schema.names


def test_failfast_raises_like_the_source(topic):
    with pytest.raises(DecodeError, match="malformed record"):
        _peek(topic, n=1, from_end=True, mode="FAILFAST")


def test_options_go_through_the_option_table(topic):
    with pytest.raises(ConfigError, match="unknown option 'kafka_bootstrap'"):
        _peek(topic, options={"kafka_bootstrap": "x"})
    with pytest.raises(ConfigError, match="streaming reads only"):
        _peek(topic, options={"maxOffsetsPerTrigger": "10"})


def test_top_level_function_is_the_same(topic):
    path, options, _ = topic
    assert connector.peek(path, "events", n=4, options=options).equals(_peek(topic, n=4))


def test_kafka_security_settings_reach_the_client_and_no_secret_leaks(topic):
    """The mock cluster speaks no SASL: a read with SASL settings must fail at the handshake,
    which proves they reached librdkafka; the error names no password."""
    secret = "pw-" + uuid.uuid4().hex
    with pytest.raises(KafkaReadError) as ei:
        _peek(topic, options={"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
                              "kafka.sasl.username": "bob", "kafka.sasl.password": secret,
                              "fetchOffset.timeoutMs": "1500", "fetchOffset.numRetries": "0"})
    assert secret not in str(ei.value) + repr(ei.value.__cause__)


@pytest.fixture(scope="module")
def https_registry(tmp_path_factory):
    """The embedded registry behind TLS (a self-signed certificate for 127.0.0.1) and basic auth."""
    pytest.importorskip("cryptography")
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    from connector.testing import RegistryServer

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    d = tmp_path_factory.mktemp("tls")
    cert_path, key_path = d / "cert.pem", d / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert_path), str(key_path))
    with RegistryServer(ssl_context=ctx) as server:
        yield server, str(cert_path)


def test_secured_registry_with_the_sources_options(kafka, https_registry, tmp_path):
    """TLS verified against the given CA and basic auth, through the same schema.registry.*
    options as the source; without the CA the read fails with the registry's TLS error."""
    from registry import RegistryTLSError

    server, ca = https_registry
    name = f"peek-tls-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, 1)
    sid = server.register(f"{name}-value", json.dumps(SCHEMA))
    kafka.produce(name, framed(sid, {"id": 7, "name": "seven"}), key=b"k7", partition=0)
    kafka.flush()
    password = "reg-" + uuid.uuid4().hex
    server.require_basic_auth("alice", password)
    path = tmp_path / "doc.yaml"
    path.write_text(DOC.replace("TOPIC", name))
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "schema.registry.url": server.url,
               "schema.registry.basic.auth.username": "alice", "schema.registry.basic.auth.password": password}
    table = peek(str(path), "events", options={**options, "schema.registry.ssl.ca.location": ca})
    assert table.column("value").to_pylist() == [{"id": 7, "name": "seven"}]
    with pytest.raises(RegistryTLSError) as ei:
        peek(str(path), "events", options=options)
    assert password not in str(ei.value)
