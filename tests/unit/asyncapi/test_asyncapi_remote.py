"""Remote ``$ref``s: refused by default, fetched from a real loopback HTTP server on opt-in."""
from __future__ import annotations

import http.server
import json
import threading

import pytest

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError

USER = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "long"},
                                                     {"name": "home", "type": {"$ref": "address.avsc"}}]}
ADDRESS = {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}
    hits: list = []

    def do_GET(self):
        self.hits.append(self.path)
        status, headers, body = self.routes.get(self.path, (404, {}, b"not found"))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    _Handler.routes = {
        "/schemas/user.avsc": (200, {}, json.dumps(USER).encode()),
        "/schemas/address.avsc": (200, {}, json.dumps(ADDRESS).encode()),
        "/big.json": (200, {}, b'{"type": "string", "doc": "' + b"x" * 10_000 + b'"}'),
        "/to-metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data"}, b""),
    }
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(autouse=True)
def _reset_hits():
    _Handler.hits = []


def _doc(ref: str) -> dict:
    return {
        "asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
        "channels": {"users": {"address": "users", "messages": {"u": {"payload": {
            "schemaFormat": "application/vnd.apache.avro;version=1.9.0", "schema": {"$ref": ref}}}}}},
    }


def test_remote_ref_refused_without_opt_in(server):
    doc = load_document(_doc(server + "/schemas/user.avsc"))  # loading does not need the payload
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(doc, channel="users")
    assert e.value.path == "channels.users.messages.u.payload.schema"
    assert "/schemas/user.avsc" in str(e.value) and "allow_remote_refs=True" in str(e.value)
    assert _Handler.hits == []  # nothing was fetched


def test_remote_ref_fetched_with_opt_in_and_relative_refs_follow_the_url(server):
    doc = load_document(_doc(server + "/schemas/user.avsc"), allow_remote_refs=True)
    plan = plan_read(doc, channel="users")
    schema = json.loads(plan.value_messages[0].payload.text)
    assert schema["fields"][1]["type"] == ADDRESS
    assert _Handler.hits == ["/schemas/user.avsc", "/schemas/address.avsc"]
    plan_read(doc, channel="users")
    assert len(_Handler.hits) == 2  # cached per document


def test_remote_size_cap(server):
    doc = load_document(_doc(server + "/big.json"), allow_remote_refs=True, max_bytes=4096)
    with pytest.raises(AsyncApiDocumentError, match="4096-byte cap"):
        plan_read(doc, channel="users")


def test_remote_http_error(server):
    doc = load_document(_doc(server + "/missing.avsc"), allow_remote_refs=True)
    with pytest.raises(AsyncApiDocumentError, match="HTTP 404"):
        plan_read(doc, channel="users")


def test_redirect_to_metadata_refused(server):
    doc = load_document(_doc(server + "/to-metadata"), allow_remote_refs=True)
    with pytest.raises(AsyncApiDocumentError, match="169.254.169.254.*link-local"):
        plan_read(doc, channel="users")


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/x.avsc", "http://[fe80::1]/x.avsc",
                                 "http://0.0.0.0/x.avsc", "http://metadata.google.internal/x.avsc",
                                 "http://[::ffff:169.254.169.254]/x.avsc"])
def test_link_local_and_metadata_refused(url):
    doc = load_document(_doc(url), allow_remote_refs=True)
    with pytest.raises(AsyncApiDocumentError, match="link-local|metadata") as e:
        plan_read(doc, channel="users")
    assert e.value.path == "channels.users.messages.u.payload.schema"


def test_other_schemes_refused():
    doc = load_document(_doc("file:///etc/passwd"), allow_remote_refs=True)
    with pytest.raises(AsyncApiDocumentError, match="unsupported scheme 'file'"):
        plan_read(doc, channel="users")
