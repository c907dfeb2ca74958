"""Registry faults against a real HTTP peer on loopback: down, slow, wrong, refusing, hostile.

Mirrors confluent-kafka-python's ``test_schema_registry_client`` (retries only on 408/429/5xx,
401/403 never retried, typed errors) and Spark's ``from_avro`` with a registry
(``AvroFunctionsSuite``): a registry outage fails the job clearly instead of hanging.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from connector.asyncapi import load_document, plan_read
from connector.formats import DecodeOptions, build_decoder
from connector.errors import AsyncApiDocumentError
from registry import (
    RegistryAuthError, RegistryConfig, RegistryConfigError, RegistryError, RegistryUnavailable, client_for,
)
from connector.testing import RegistryServer
from wireformat import encode_frame, parse_frames

from tests.reliability.conftest import KillableProxy, REGISTRY_PASSWORD, closed_port, fast_registry_config

V1 = {"type": "record", "name": "Order", "namespace": "shop",
      "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]}
V2 = {"type": "record", "name": "Order", "namespace": "shop",
      "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None},
                 {"name": "qty", "type": "int", "default": 1}]}


class _Spec:
    def __init__(self, fmt, text, message_name=None):
        self.format, self.text, self.message_name = fmt, text, message_name


def _avro(schema: dict, record: dict) -> bytes:
    import io

    import fastavro

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()


# ------------------------------------------------------------------ down at start
def test_registry_down_at_start_names_the_url_without_credentials():
    """Registry unreachable when the job starts (confluent ``SchemaRegistryClient`` on a dead
    URL): ``RegistryUnavailable`` after the retries, naming host:port, never the password."""
    port = closed_port()
    config = fast_registry_config(f"http://alice:{REGISTRY_PASSWORD}@127.0.0.1:{port}", max_retries=2)
    with pytest.raises(RegistryUnavailable) as ei:
        client_for(config).get_schema_by_id(1)
    text = f"{ei.value} {ei.value.url} {ei.value!r} {ei.value.__cause__!r} {ei.value.__context__!r}"
    assert f"127.0.0.1:{port}" in str(ei.value)
    assert REGISTRY_PASSWORD not in text and "alice" not in str(ei.value)
    assert "3 attempt" in str(ei.value)  # 1 + max_retries


@pytest.mark.timeout(60)
def test_registry_down_at_start_fails_the_read_setup_on_the_driver():
    """The driver resolves a pinned reader schema at ``load()`` (Spark ``from_avro`` with
    ``schema.registry`` fails at analysis): the typed error surfaces, with no credential."""
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    port = closed_port()
    opts = parse_options({
        "asyncapi": json.dumps(_doc()), "channel": "c", "schema.id": "1",
        "schema.registry.url": f"http://127.0.0.1:{port}",
        "schema.registry.basic.auth.username": "alice",
        "schema.registry.basic.auth.password": REGISTRY_PASSWORD,
        "schema.registry.max.retries": "1", "schema.registry.retry.backoff.ms": "1",
        "schema.registry.connect.timeout.ms": "500"})
    with pytest.raises(RegistryUnavailable) as ei:
        build_setup(opts)
    assert f"127.0.0.1:{port}" in str(ei.value) and REGISTRY_PASSWORD not in repr(ei.value)


def _doc(registry_url: str | None = None, payload: dict | None = None) -> dict:
    server = {"host": "127.0.0.1:9", "protocol": "kafka"}
    if registry_url:
        server["bindings"] = {"kafka": {"schemaRegistryUrl": registry_url, "schemaRegistryVendor": "confluent"}}
    msg = {}
    if registry_url:
        msg["bindings"] = {"kafka": {"schemaIdLocation": "payload", "schemaIdPayloadEncoding": "confluent"}}
    if payload is not None:
        msg["payload"] = {"schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": payload}
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": {"k": server},
            "channels": {"c": {"address": "orders", "messages": {"m": msg}}}}


# ------------------------------------------------------------------ down mid-job
def _frames(*rows):
    return parse_frames(pa.array([encode_frame("confluent", sid, _avro(schema, rec)) for sid, schema, rec in rows],
                                 pa.binary()), "confluent")


@pytest.mark.parametrize("how", ["503", "stopped"])
def test_registry_down_mid_job_cached_ids_keep_decoding_new_ids_fail_typed(how):
    """Registry outage mid-read (confluent's client cache; Spark task retry semantics): ids
    already cached decode without a request; a new id is retried with backoff, then its rows
    carry ``RegistryUnavailable`` naming the schema id."""
    server = RegistryServer().start()
    proxy = KillableProxy(server.port)  # "stopped" = the registry host goes away
    try:
        id1 = server.register("orders-value", json.dumps(V1))
        id2 = server.register("orders-value", json.dumps(V2))
        config = fast_registry_config(f"http://127.0.0.1:{proxy.port}", max_retries=2)
        lookup = client_for(config).lookup
        dec = build_decoder(_Spec("avro", json.dumps(V2)), options=DecodeOptions())
        first = dec.decode(_frames((id1, V1, {"id": 1, "note": None})), lookup)
        assert first.errors.to_pylist() == [None]
        before = server.request_count()
        if how == "503":
            server.fail_next(1000, 503)
        else:
            proxy.kill()
        res = dec.decode(_frames((id1, V1, {"id": 2, "note": "x"}), (id1, V1, {"id": 3, "note": None})), lookup)
        assert res.errors.to_pylist() == [None, None]  # cached id: no registry needed
        assert [v["id"] for v in res.values.to_pylist()] == [2, 3]
        try:
            res = dec.decode(_frames((id2, V2, {"id": 4, "note": None, "qty": 4})), lookup)
        except RegistryUnavailable:
            pass  # also acceptable: an infrastructure error fails the task
        else:
            err = res.errors[0].as_py()
            assert err is not None and f"schema id {id2}" in err and "RegistryUnavailable" in err
        if how == "503":
            assert server.request_count() - before == 3  # first try + 2 retries, id1 never re-asked
        with pytest.raises(RegistryUnavailable):
            client_for(config).get_schema_by_id(id2 + 100)
    finally:
        proxy.kill()
        server.stop()


@pytest.mark.timeout(30)
def test_slow_registry_times_out_then_unavailable(registry_server):
    """A registry that accepts connections but never answers in time (confluent's
    ``request.timeout.ms``): each attempt times out, the retries run, then
    ``RegistryUnavailable`` — never a hang (the test's timeout bounds the wall time)."""
    sid = registry_server.register("s-value", json.dumps(V1))
    registry_server.set_delay(2.0)
    config = fast_registry_config(registry_server.url, max_retries=1, request_timeout_s=0.2)
    with pytest.raises(RegistryUnavailable) as ei:
        client_for(config).get_schema_by_id(sid)
    assert "2 attempt" in str(ei.value) and "Timeout" in str(ei.value)
    assert registry_server.wait_for_requests(2, timeout=5)
    registry_server.set_delay(0)


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_registry_outage_is_not_mistaken_for_malformed_records(registry_server, mode):
    """Spark's parse modes (``FailureSafeParser``) only cover *malformed input*; an
    infrastructure failure (registry down) must fail the task — Spark retries it — rather
    than turning valid records into ``_error`` rows (PERMISSIVE) or dropping them
    (DROPMALFORMED): that would be silent, permanent data loss."""
    import datetime as dt

    from connector.kafka import RAW_ARROW_SCHEMA
    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    wid = registry_server.register("orders-value", json.dumps(V1))
    setup = build_setup(parse_options({
        "asyncapi": json.dumps(_doc(registry_server.url, payload=V1)), "channel": "c", "mode": mode,
        "schema.registry.max.retries": "0"}))
    value = encode_frame("confluent", wid, _avro(V1, {"id": 1, "note": None}))
    raw = pa.RecordBatch.from_pylist([{
        "key": None, "value": value, "topic": "orders", "partition": 0, "offset": 0,
        "timestamp": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), "timestampType": 0, "headers": []}],
        schema=RAW_ARROW_SCHEMA)
    registry_server.fail_next(100, 503)
    with pytest.raises(RegistryUnavailable):
        setup.pipeline.process(raw, setup.lookup())


# ------------------------------------------------------------------ wrong answers
@pytest.mark.parametrize("text", ["not json {", '{"type": "record", "name": "X"}', '{"type": "nope"}', "[]"])
def test_unparseable_writer_schema_is_a_row_error_naming_the_schema_id(registry_server, text):
    """The registry answers with schema text that does not parse (confluent's
    ``SchemaParseException`` path): the rows of that id fail with its id, the others decode."""
    good = registry_server.register("a-value", json.dumps(V1))
    bad = registry_server.register("b-value", text)
    lookup = client_for(fast_registry_config(registry_server.url)).lookup
    dec = build_decoder(_Spec("avro", json.dumps(V1)), options=DecodeOptions())
    frames = parse_frames(pa.array([encode_frame("confluent", bad, b"\x02\x00"),
                                    encode_frame("confluent", good, _avro(V1, {"id": 5, "note": None}))],
                                   pa.binary()), "confluent")
    res = dec.decode(frames, lookup)
    errs = res.errors.to_pylist()
    assert errs[0] is not None and f"schema id {bad}" in errs[0]
    assert errs[1] is None and res.values[1].as_py() == {"id": 5, "note": None}


def test_wrong_shaped_200_answer_is_a_typed_error(registry_server):
    """A proxy or a misconfigured registry answers 200 with a body that is not a schema
    document: a typed ``RegistryError``, not a ``KeyError``/``TypeError``."""
    registry_server.fail_next(1, 200)  # 200 with {"error_code": .., "message": ..}
    with pytest.raises(RegistryError):
        client_for(fast_registry_config(registry_server.url)).get_schema_by_id(1)


# ------------------------------------------------------------------ auth
@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_not_retried(registry_server, status):
    """401/403 are never retried (confluent's client, Kafka ``SaslAuthenticationException``):
    exactly one request, ``RegistryAuthError``, no credential in the message."""
    sid = registry_server.register("s-value", json.dumps(V1))
    if status == 401:
        registry_server.require_basic_auth("alice", "right-password")
    else:
        registry_server.fail_next(5, 403)
    config = fast_registry_config(registry_server.url, max_retries=5, basic_auth=f"alice:{REGISTRY_PASSWORD}")
    registry_server.reset_counts()
    with pytest.raises(RegistryAuthError) as ei:
        client_for(config).get_schema_by_id(sid)
    assert registry_server.request_count() == 1
    assert ei.value.status == status and REGISTRY_PASSWORD not in repr(ei.value) + str(ei.value)


# ------------------------------------------------------------------ SSRF
@pytest.mark.parametrize("url", ["http://169.254.169.254/", "http://169.254.169.254:80/latest",
                                 "http://metadata.google.internal/", "http://[fe80::1]:8081/"])
def test_registry_url_to_metadata_address_is_refused_unless_allowed(url):
    """SSRF guard (confluent's ``schema.registry.url`` is user input in notebooks): link-local
    and cloud-metadata targets are refused before any request, unless explicitly allowed."""
    with pytest.raises(RegistryConfigError):
        RegistryConfig(urls=(url,))
    assert RegistryConfig(urls=(url,), allow_private_addresses=True).urls == (url.rstrip("/"),)


def test_remote_ref_to_metadata_address_is_refused_even_when_remote_refs_are_allowed():
    """A document ``$ref`` to the metadata endpoint (json-schema-ref-parser's ``resolve.http``
    SSRF): refused without ``allow_remote_refs``; still refused with it (link-local)."""
    doc = _doc(payload={"$ref": "http://169.254.169.254/latest/meta-data/iam"})
    with pytest.raises(AsyncApiDocumentError, match="allow_remote_refs"):
        plan_read(load_document(doc), channel="c")
    with pytest.raises(AsyncApiDocumentError, match="link-local|metadata"):
        plan_read(load_document(doc, allow_remote_refs=True), channel="c")


def test_remote_ref_redirect_to_metadata_address_is_refused(registry_server):
    """An allowed remote ``$ref`` whose server redirects to the metadata endpoint: every
    redirect hop is re-checked (requests' default would follow it)."""
    registry_server.register("orders-value", json.dumps(V1))
    url = f"{registry_server.url}/subjects/orders-value/versions/1/schema"
    doc = _doc(payload={"$ref": url})
    plan = plan_read(load_document(doc, allow_remote_refs=True), channel="c")  # loopback is fine
    assert json.loads(plan.value_messages[0].payload.text)["name"] in ("Order", "shop.Order")
    registry_server.redirect_next(1, "http://169.254.169.254/latest/meta-data/")
    with pytest.raises(AsyncApiDocumentError, match="169.254.169.254"):
        plan_read(load_document(doc, allow_remote_refs=True), channel="c")


def test_cross_host_redirect_from_the_registry_is_refused(registry_server):
    """A registry answer redirecting to another host (credential-forwarding SSRF, requests'
    CVE-2018-18074 class): refused after one request, the credentials never leave."""
    sid = registry_server.register("s-value", json.dumps(V1))
    other = RegistryServer().start()
    try:
        registry_server.redirect_next(1, f"http://localhost:{other.port}{{path}}")
        config = fast_registry_config(registry_server.url, basic_auth=f"alice:{REGISTRY_PASSWORD}")
        with pytest.raises(RegistryError, match="another host") as ei:
            client_for(config).get_schema_by_id(sid)
        assert other.request_count() == 0 and REGISTRY_PASSWORD not in str(ei.value)
    finally:
        other.stop()


# ------------------------------------------------------------------ end to end
@pytest.mark.slow
@pytest.mark.kafka
def test_spark_read_fails_with_registry_unavailable_when_the_registry_dies_mid_read(
        spark, kafka, registry_server, write_doc):
    """Spark batch read, FAILFAST, registry down after planning (``AvroFunctionsSuite`` with a
    registry that disappears): the driver resolved the reader schema (pinned ``schema.id``),
    then every lookup of the NEW writer id fails; the job fails with ``RegistryUnavailable``
    in its message instead of hanging or returning rows."""
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JJavaError

    from tests.integration.spark.helpers import unique_topic

    topic = unique_topic("reg-down")
    reader_id = registry_server.register(f"{topic}-value", json.dumps(V1))
    writer_id = registry_server.register(f"{topic}-other", json.dumps(V2))
    for i in range(5):
        kafka.produce(topic, encode_frame("confluent", writer_id, _avro(V2, {"id": i, "note": None, "qty": i})),
                      partition=0)
    kafka.flush()
    doc = _doc(registry_server.url)
    doc["servers"]["k"]["host"] = kafka.bootstrap_servers
    doc["channels"]["c"]["address"] = topic
    path = write_doc(json.dumps(doc))
    registry_server.fail_next(10_000, 503, path_prefix=f"/schemas/ids/{writer_id}")
    df = (spark.read.format("asyncapi-kafka").option("asyncapi", path).option("channel", "c")
          .option("schema.id", str(reader_id)).option("mode", "FAILFAST")
          .option("schema.registry.max.retries", "1").option("schema.registry.retry.backoff.ms", "1")
          .load())
    assert df.schema["value"].dataType.simpleString() == "struct<id:bigint,note:string>"
    with pytest.raises((PySparkException, Py4JJavaError)) as ei:
        df.collect()
    assert "RegistryUnavailable" in str(ei.value)
    assert f"schema id {writer_id}" in str(ei.value)
    assert registry_server.request_count(f"/schemas/ids/{writer_id}") >= 2  # retried before failing


# ------------------------------------------------------------------ the write's look-up
def test_the_look_up_never_takes_an_outage_or_a_wrong_url_for_not_registered(registry_server):
    """The write's default mode asks the registry whether its schema is registered (issue 34). Only a
    registry's own answer (40401/40403, or a bare 404 from a peer whose subject listing works) means
    "not registered"; an outage is ``RegistryUnavailable`` and a web page answering 404 everywhere a
    ``RegistryProtocolError`` — each fails the job as the environment's fault, not as a missing
    registration."""
    import http.server
    import threading

    from registry import RegistryProtocolError
    from registry._confluent import ConfluentRegistry

    registry_server.register("orders-value", json.dumps(V1))
    client = ConfluentRegistry(fast_registry_config(registry_server.url, max_retries=1))
    assert client.lookup_schema("orders-value", json.dumps(V1)).version == 1
    assert client.lookup_schema("orders-value", json.dumps(V2)) is None  # 40403
    registry_server.fail_next(5, 503)
    with pytest.raises(RegistryUnavailable):
        client.lookup_schema("orders-value", json.dumps(V1))

    class _Html(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            body = b"<html>not found</html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        site = ConfluentRegistry(fast_registry_config(f"http://127.0.0.1:{web.server_address[1]}"))
        with pytest.raises(RegistryProtocolError, match="not a schema registry"):
            site.lookup_schema("orders-value", json.dumps(V1))
    finally:
        web.shutdown()
        web.server_close()
