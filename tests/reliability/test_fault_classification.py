"""Whose fault is it? A record's fault is a row error; the environment's fails the job in every mode.

Hostile peers on loopback: an HTML page answering 200 or 404 for every path (a wrong
``schema.registry.url``: a web app, a proxy, the registry's UI port), a closed port, a
registry refusing credentials, and the real HTTP registry (``RegistryServer``) that does
not know one id. Mirrors h11's split of errors by whose fault they are and Spark's
``FailureSafeParser`` (parse modes cover malformed input only): before this, a wrong
registry with DROPMALFORMED silently returned 0 of 20 records.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fastavro
import pyarrow as pa
import pytest

from connector.errors import DecodeError, KafkaReadError
from registry import (RegistryAuthError, RegistryConfigError, RegistryError, RegistryProtocolError,
                      RegistryTLSError, RegistryUnavailable, SchemaNotFound, SchemaParseError, client_for,
                      is_records_fault)
from wireformat import encode_frame

from tests.reliability.conftest import REGISTRY_PASSWORD, closed_port, fast_registry_config

MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]}


class HtmlServer:
    """A web server that is not a registry: every path answers ``status`` with an HTML page."""

    def __init__(self, status: int):
        outer = self
        self.paths: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.paths.append(self.path)
                body = b"<!doctype html><html><body><h1>Welcome</h1></body></html>"
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True, name="HtmlServer").start()

    def stop(self):
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(params=[200, 404], ids=["html200", "html404"])
def html_registry(request):
    srv = HtmlServer(request.param)
    yield srv
    srv.stop()


def _avro(record: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(ORDER), record)
    return buf.getvalue()


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://alice:{REGISTRY_PASSWORD}@")


# ------------------------------------------------------------------ the classification itself
def test_not_a_registry_is_the_environments_fault_and_names_no_credential(html_registry):
    """HTML 200 (non-JSON on a known endpoint) or HTML 404 for every path (the id *and* the
    subject listing): ``RegistryProtocolError``, never the records' fault, URL redacted."""
    config = fast_registry_config(_with_userinfo(html_registry.url), max_retries=0)
    with pytest.raises(RegistryProtocolError) as ei:
        client_for(config).get_schema_by_id(7)
    e = ei.value
    assert not e.is_records_fault and not is_records_fault(e) and e.fault == "environment"
    text = f"{e} {e!r} {e.url} {e.__notes__ if hasattr(e, '__notes__') else ''} {e.__cause__!r}"
    assert REGISTRY_PASSWORD not in text and "alice" not in str(e)
    assert f"127.0.0.1:{html_registry.port}" in str(e)
    if "/subjects" in html_registry.paths:  # 404 case: checked against the subject listing
        assert "not a schema registry" in str(e)


def test_html_404_registry_is_probed_once_per_client():
    """The known-good check runs once per client: later 404s are judged without asking again."""
    srv = HtmlServer(404)
    try:
        client = client_for(fast_registry_config(srv.url, max_retries=0, cache_notfound_ttl_s=0))
        for sid in (1, 2, 3):
            with pytest.raises(RegistryProtocolError):
                client.get_schema_by_id(sid)
        # a failed check is not remembered as "verified": every 404 is re-judged (and fails)
        assert srv.paths.count("/subjects") == 3
    finally:
        srv.stop()


def test_unknown_id_with_a_typed_answer_is_the_records_fault_without_a_check(registry_server):
    """The real registry answers 40403 for an unknown id: only a registry speaks that, so the 404
    is believed (a row error) at once, even where ACLs forbid the subject listing."""
    registry_server.fail_next(10, 403, path_prefix="/subjects")
    client = client_for(fast_registry_config(registry_server.url, cache_notfound_ttl_s=0))
    for sid in (900, 901, 902):
        with pytest.raises(SchemaNotFound) as ei:
            client.get_schema_by_id(sid)
        assert ei.value.is_records_fault and ei.value.error_code == 40403
    assert registry_server.request_count("/subjects") == 0


def test_bare_404_on_a_registry_is_believed_after_one_check(registry_server):
    """A 404 without the registry's error code (a proxy in front, an old registry) is checked
    against the subject listing, once per client."""
    registry_server.fail_next(3, 404, path_prefix="/schemas/ids/")
    client = client_for(fast_registry_config(registry_server.url, cache_notfound_ttl_s=0, max_retries=0))
    for sid in (900, 901, 902):
        with pytest.raises(SchemaNotFound) as ei:
            client.get_schema_by_id(sid)
        assert ei.value.is_records_fault and ei.value.error_code not in (40401, 40402, 40403)
    assert registry_server.request_count("/subjects") == 1


def test_a_good_answer_proves_the_registry_so_no_check_is_needed(registry_server):
    """The reader schema fetched at ``load()`` is a known-good call: no extra request."""
    sid = registry_server.register("orders-value", json.dumps(ORDER))
    client = client_for(fast_registry_config(registry_server.url))
    client.get_schema_by_id(sid)
    with pytest.raises(SchemaNotFound) as ei:
        client.get_schema_by_id(sid + 50)
    assert ei.value.is_records_fault and registry_server.request_count("/subjects") == 0


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_the_environments_fault(registry_server, status):
    registry_server.fail_next(10, status)
    with pytest.raises(RegistryAuthError) as ei:
        client_for(fast_registry_config(registry_server.url)).get_schema_by_id(1)
    assert not ei.value.is_records_fault


@pytest.mark.parametrize("exc,records", [
    (SchemaParseError("reference cycle"), True),
    (SchemaNotFound("HTTP 404"), False),  # not believed until the registry is verified
    (SchemaNotFound("HTTP 404", fault="record"), True),
    (RegistryProtocolError("non-JSON"), False),
    (RegistryUnavailable("refused"), False),
    (RegistryAuthError("403"), False),
    (RegistryTLSError("certificate verify failed"), False),
    (RegistryConfigError("bad URL"), False),
    (KafkaReadError("broker unreachable"), False),
    (ValueError("anything else"), False),
])
def test_the_types_own_the_classification(exc, records):
    assert is_records_fault(exc) is records


def test_kafka_read_errors_are_the_environments_fault_and_redacted():
    e = KafkaReadError(f"metadata failed against alice:{REGISTRY_PASSWORD}@127.0.0.1:9092")
    assert not is_records_fault(e) and REGISTRY_PASSWORD not in str(e) and "127.0.0.1:9092" in str(e)


# ------------------------------------------------------------------ through the source's pipeline
def _doc(registry_url: str) -> dict:
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "servers": {"k": {"host": "127.0.0.1:9", "protocol": "kafka",
                              "bindings": {"kafka": {"schemaRegistryUrl": registry_url}}}},
            "channels": {"c": {"address": "orders", "messages": {"m": {
                "bindings": {"kafka": {"schemaIdLocation": "payload", "schemaIdPayloadEncoding": "confluent"}},
                "payload": {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": ORDER}}}}}}


def _setup(registry_url: str, mode: str, **extra):
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    opts = {"asyncapi": json.dumps(_doc(registry_url)), "channel": "c", "mode": mode,
            "schema.registry.max.retries": "1", "schema.registry.retry.backoff.ms": "1",
            "schema.registry.connect.timeout.ms": "500", "schema.registry.request.timeout.ms": "1000"}
    opts.update(extra)
    return build_setup(parse_options(opts))


def _raw(values: list) -> pa.RecordBatch:
    from connector.kafka import RAW_ARROW_SCHEMA

    ts = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return pa.RecordBatch.from_pylist([
        {"key": None, "value": v, "topic": "orders", "partition": 0, "offset": i, "timestamp": ts,
         "timestampType": 0, "headers": []} for i, v in enumerate(values)], schema=RAW_ARROW_SCHEMA)


def _twenty(sid: int) -> list[bytes]:
    return [encode_frame("confluent", sid, _avro({"id": i, "note": None})) for i in range(20)]


@pytest.mark.parametrize("mode", MODES)
def test_wrong_registry_fails_the_batch_in_every_mode(html_registry, mode):
    """The issue's case: 20 good records, a registry URL pointing at a web page. Before: 0 rows
    with DROPMALFORMED, 20 error rows with PERMISSIVE. Now the batch fails in every mode."""
    setup = _setup(html_registry.url, mode)
    with pytest.raises(RegistryProtocolError) as ei:
        setup.pipeline.process(_raw(_twenty(1)), setup.lookup())
    assert "schema id 1" in " ".join(getattr(ei.value, "__notes__", []))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("peer", ["closed-port", "blackhole", "401", "403"])
def test_unreachable_slow_or_refusing_registry_fails_within_its_timeouts_in_every_mode(
        registry_server, mode, peer):
    """Unreachable (closed port), accepting but never answering, refusing credentials: the
    job fails in every mode, within the configured timeouts and retries (never a hang, never
    an empty result), and names no credential."""
    url = registry_server.url
    if peer == "closed-port":
        url = f"http://127.0.0.1:{closed_port()}"
    elif peer == "blackhole":
        registry_server.set_delay(5.0)
    else:
        registry_server.fail_next(100, int(peer))
    # the credentials come from the user's option (a document's would be ignored)
    setup = _setup(url, mode, **{"schema.registry.url": _with_userinfo(url)})
    start = time.monotonic()
    with pytest.raises(RegistryError) as ei:
        setup.pipeline.process(_raw(_twenty(1)), setup.lookup())
    elapsed = time.monotonic() - start
    registry_server.set_delay(0)
    expected = {"closed-port": RegistryUnavailable, "blackhole": RegistryUnavailable,
                "401": RegistryAuthError, "403": RegistryAuthError}[peer]
    assert isinstance(ei.value, expected) and not ei.value.is_records_fault
    # 2 attempts x (1 s request timeout) plus backoff, with slack for a loaded machine
    assert elapsed < 10, elapsed
    assert REGISTRY_PASSWORD not in f"{ei.value} {ei.value!r} {ei.value.url}"


try:  # the self-signed HTTPS registry of the TLS suite (needs `cryptography`)
    from tests.reliability.test_tls import https_registry, self_signed  # noqa: F401 - fixtures
except (ImportError, pytest.skip.Exception):  # importorskip("cryptography") in that module
    https_registry = None


@pytest.mark.skipif(https_registry is None, reason="needs cryptography for a self-signed certificate")
@pytest.mark.parametrize("mode", MODES)
def test_tls_failure_fails_the_batch_in_every_mode(https_registry, mode):
    """A registry whose certificate does not verify: the environment's fault in every mode."""
    from registry import RegistryTLSError

    setup = _setup(https_registry.url, mode)
    with pytest.raises(RegistryTLSError) as ei:
        setup.pipeline.process(_raw(_twenty(1)), setup.lookup())
    assert not ei.value.is_records_fault


@pytest.mark.parametrize("mode", MODES)
def test_unknown_id_on_a_real_registry_is_a_row_error_per_mode(registry_server, mode):
    """The records' own fault: one record names an id the (verified) registry does not know.
    FAILFAST fails naming it; PERMISSIVE keeps it as an error row; DROPMALFORMED drops it alone."""
    sid = registry_server.register("orders-value", json.dumps(ORDER))
    setup = _setup(registry_server.url, mode)
    values = _twenty(sid)
    values[3] = encode_frame("confluent", 4040, _avro({"id": 3, "note": None}))
    if mode == "FAILFAST":
        with pytest.raises(DecodeError, match="schema id 4040"):
            setup.pipeline.process(_raw(values), setup.lookup())
        return
    out = setup.pipeline.process(_raw(values), setup.lookup()).to_pylist()
    if mode == "PERMISSIVE":
        assert len(out) == 20 and out[3]["value"] is None and "schema id 4040" in out[3]["_error"]
        assert [r["value"]["id"] for i, r in enumerate(out) if i != 3] == [i for i in range(20) if i != 3]
    else:
        assert [r["value"]["id"] for r in out] == [i for i in range(20) if i != 3]


# ------------------------------------------------------------------ through Spark
@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", MODES)
def test_datasource_with_a_wrong_registry_fails_in_every_mode(spark, kafka, html_registry, write_doc, mode):
    """Through ``spark.read.format("asyncapi-kafka")``: 20 good records, the registry URL a web
    page. The query fails (never 0 rows, never 20 error rows), the error says why, no secret."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("wrong-registry")
    for v in _twenty(1):
        kafka.produce(topic, v, partition=0)
    kafka.flush()
    doc = _doc(_with_userinfo(html_registry.url))
    doc["servers"]["k"]["host"] = kafka.bootstrap_servers
    doc["channels"]["c"]["address"] = topic
    path = write_doc(json.dumps(doc))
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "c")
          .option("mode", mode).option("schema.registry.max.retries", "0")
          .option("schema.registry.connect.timeout.ms", "1000").load())
    start = time.monotonic()
    with pytest.raises((PySparkException, Py4JJavaError)) as ei:
        df.collect()
    text = str(ei.value)
    assert "RegistryProtocolError" in text and "schema id 1" in text
    assert REGISTRY_PASSWORD not in text
    assert time.monotonic() - start < 200  # bounded by the registry timeouts, not a hang


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.parametrize("mode", MODES)
def test_datasource_unknown_id_is_a_row_error_per_mode(spark, kafka, registry_server, write_doc, mode):
    """Through Spark: one record of 20 names an id the real registry does not know."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("unknown-id")
    sid = registry_server.register(f"{topic}-value", json.dumps(ORDER))
    values = _twenty(sid)
    values[5] = encode_frame("confluent", 4040, _avro({"id": 5, "note": None}))
    for v in values:
        kafka.produce(topic, v, partition=0)
    kafka.flush()
    doc = _doc(registry_server.url)
    doc["servers"]["k"]["host"] = kafka.bootstrap_servers
    doc["channels"]["c"]["address"] = topic
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", write_doc(json.dumps(doc)))
          .option("channel", "c").option("mode", mode).load())
    if mode == "FAILFAST":
        with pytest.raises((PySparkException, Py4JJavaError)) as ei:
            df.collect()
        assert "schema id 4040" in str(ei.value)
        return
    rows = sorted(df.collect(), key=lambda r: r.offset)
    if mode == "PERMISSIVE":
        assert len(rows) == 20 and rows[5].value is None and "schema id 4040" in rows[5]._error
        assert all(r._error is None for i, r in enumerate(rows) if i != 5)
    else:
        assert [r.value.id for r in rows] == [i for i in range(20) if i != 5]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE"])
def test_column_function_with_a_wrong_registry_fails_in_every_mode(spark, html_registry, mode):
    """``from_registry`` over a DataFrame of framed bytes, registry URL a web page: fails in
    FAILFAST and PERMISSIVE (and with ``with_errors``) instead of nulls."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from connector.spark.functions import from_registry

    df = spark.createDataFrame([(v,) for v in _twenty(1)], "value binary")
    col = from_registry("value", schema=json.dumps(ORDER), registry_url=_with_userinfo(html_registry.url),
                        options={"schema.registry.max.retries": "0"}, mode=mode,
                        with_errors=(mode == "PERMISSIVE"))
    with pytest.raises((PySparkException, Py4JJavaError)) as ei:
        df.select(col.alias("v")).collect()
    assert "RegistryProtocolError" in str(ei.value) and REGISTRY_PASSWORD not in str(ei.value)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE"])
def test_column_function_unknown_id_is_a_row_error_per_mode(spark, registry_server, mode):
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from connector.spark.functions import from_registry

    sid = registry_server.register("orders-value", json.dumps(ORDER))
    values = _twenty(sid)
    values[2] = encode_frame("confluent", 4040, _avro({"id": 2, "note": None}))
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, value binary")
    col = from_registry("value", schema_id=sid, registry_url=registry_server.url, mode=mode,
                        with_errors=(mode == "PERMISSIVE"))
    if mode == "FAILFAST":
        with pytest.raises((PySparkException, Py4JJavaError)) as ei:
            df.select(col.alias("v")).collect()
        assert "4040" in str(ei.value)
        return
    rows = sorted(df.select("i", col.alias("v")).collect(), key=lambda r: r.i)
    assert rows[2].v.value is None and "schema id 4040" in rows[2].v.error
    assert [r.v.value.id for r in rows if r.i != 2] == [i for i in range(20) if i != 2]


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", MODES)
def test_datasource_with_an_unreachable_broker_fails_in_every_mode(spark, registry_server, write_doc, mode):
    """Broker unreachable: the environment's fault whatever the mode (never an empty result)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    port = closed_port()
    doc = _doc(registry_server.url)
    doc["servers"]["k"]["host"] = f"alice:{REGISTRY_PASSWORD}@127.0.0.1:{port}"
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", write_doc(json.dumps(doc)))
          .option("channel", "c").option("mode", mode).option("fetchOffset.timeoutMs", "1500").load())
    with pytest.raises((PySparkException, Py4JJavaError)) as ei:
        df.collect()
    assert "KafkaReadError" in str(ei.value) and f"127.0.0.1:{port}" in str(ei.value)
    assert REGISTRY_PASSWORD not in str(ei.value)


def test_check_reports_a_wrong_registry_instead_of_missing_subjects(html_registry):
    """``asyncapi-kafka check`` against a web page: one error saying it is not a schema
    registry (before: every subject reported "missing from the registry"), URL redacted."""
    import argparse
    import io as _io

    from connector.cli._check import _Registry, _Report

    class Plan:
        registry_url = _with_userinfo(html_registry.url)
        registry_vendor = None

    out = _io.StringIO()
    report = _Report(out)
    got = _Registry.build(Plan(), argparse.Namespace(registry_url=None),
                          {"schema.registry.max.retries": "0"}, 2.0, report)
    text = out.getvalue()
    assert got is None and report.counts["error"] == 1, text
    assert ("not a schema registry" in text or "non-JSON" in text) and REGISTRY_PASSWORD not in text
