"""Broken documents: each gives its own error and document path."""
from __future__ import annotations

import copy
import pathlib

import pytest
import yaml

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError, ConfigError


DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "asyncapi"


def skeleton() -> dict:
    """A fresh copy of the minimal valid 3.0 document."""
    return yaml.safe_load((DATA / "skeleton-3.0.yml").read_text())


def test_skeleton_is_valid():
    plan = plan_read(load_document(skeleton()), channel="c")
    assert plan.group_id == "g" and plan.framing() == "confluent"


def _set(doc, dotted, value):
    *head, last = dotted
    node = doc
    for k in head:
        node = node[k]
    if value is _DEL:
        del node[last]
    else:
        node[last] = value


_DEL = object()
CH_KAFKA = ("channels", "c", "bindings", "kafka")
MSG = ("components", "messages", "M")

# (id, [(key path, value)], stage, error path, message fragment)
CASES = [
    ("partitions-0", [(CH_KAFKA + ("partitions",), 0)], "load",
     "channels.c.bindings.kafka.partitions", "positive integer"),
    ("partitions-string", [(CH_KAFKA + ("partitions",), "3")], "load",
     "channels.c.bindings.kafka.partitions", "positive integer"),
    ("replicas-negative", [(CH_KAFKA + ("replicas",), -1)], "load",
     "channels.c.bindings.kafka.replicas", "positive integer"),
    ("cleanup-policy-bad", [(CH_KAFKA + ("topicConfiguration",), {"cleanup.policy": ["delete", "archive"]})],
     "load", "channels.c.bindings.kafka.topicConfiguration.cleanup.policy", "'archive'"),
    ("retention-ms-bad", [(CH_KAFKA + ("topicConfiguration",), {"retention.ms": -5})],
     "load", "channels.c.bindings.kafka.topicConfiguration.retention.ms", ">= -1"),
    ("unknown-binding-field", [(CH_KAFKA + ("partition",), 3)], "load",
     "channels.c.bindings.kafka.partition", "unknown field 'partition'"),
    ("vendor-without-url", [(("servers", "k", "bindings", "kafka"), {"schemaRegistryVendor": "confluent"})],
     "load", "servers.k.bindings.kafka.schemaRegistryVendor", "MUST NOT"),
    ("schema-id-location-bad", [(MSG + ("bindings", "kafka", "schemaIdLocation"), "body")], "load",
     "channels.c.messages.m.bindings.kafka.schemaIdLocation", "'payload' or 'header'"),
    # registry-only message fields without a server registry: a warning now (issue 18), see
    # test_asyncapi_layouts.py::test_registry_fields_without_server_registry_warn
    ("missing-pointer", [(MSG + ("payload",), {"$ref": "#/components/schemas/Nope"})], "plan",
     "channels.c.messages.m.payload", "nothing at /components/schemas/Nope"),
    ("ref-cycle-schema", [(("components", "schemas", "P"), {"$ref": "#/components/schemas/Q"}),
                          (("components", "schemas", "Q"), {"$ref": "#/components/schemas/P"})], "plan",
     "channels.c.messages.m.payload", "cycle"),
    ("ref-cycle-message", [(MSG, {"$ref": "#/components/messages/M"})], "load",
     "channels.c.messages.m", "cycle"),
    ("remote-ref-structural", [(("channels", "c", "messages", "m"), {"$ref": "https://example.com/m.yaml"})],
     "load", "channels.c.messages.m", "allow_remote_refs=True"),
    ("remote-ref-payload", [(MSG + ("payload",), {"$ref": "http://example.com/p.json#/P"})], "plan",
     "channels.c.messages.m.payload", "'http://example.com/p.json#/P' is not fetched"),
    ("absolute-file-ref", [(MSG + ("payload",), {"$ref": "/etc/passwd"})], "plan",
     "channels.c.messages.m.payload", "needs the document's directory"),
    ("bad-version", [(("asyncapi",), "1.2.0")], "load", "asyncapi", "unsupported"),
    ("server-without-protocol", [(("servers", "k", "protocol"), _DEL)], "load", "servers.k.protocol", "required"),
    ("operation-channel-not-ref", [(("operations", "recv", "channel"), "c")], "load",
     "operations.recv.channel", "$ref"),
    ("operation-bad-action", [(("operations", "recv", "action"), "consume")], "load",
     "operations.recv.action", "'send' or 'receive'"),
    ("unsupported-schema-format", [(MSG + ("payload",), {"schemaFormat": "application/raml+yaml;version=1.0",
                                                         "schema": {"type": "string"}})], "plan",
     "channels.c.messages.m.payload.schemaFormat", "unsupported schemaFormat"),
    ("http-security-scheme", [(("servers", "k", "security"), [{"type": "httpApiKey", "name": "x", "in": "header"}])],
     "plan", "servers.k.security[0].type", "not usable with Kafka"),
    ("pulsar-persistence-missing", [(("channels", "c", "bindings", "pulsar"), {"namespace": "n"})], "load",
     "channels.c.bindings.pulsar.persistence", "required"),
    ("pulsar-retention-half", [(("channels", "c", "bindings", "pulsar"),
                                {"persistence": "persistent", "retention": {"time": 7}})], "load",
     "channels.c.bindings.pulsar.retention.size", "both time and size"),
    ("pulsar-persistence-bad", [(("channels", "c", "bindings", "pulsar"), {"persistence": "durable"})], "load",
     "channels.c.bindings.pulsar.persistence", "'persistent' or 'non-persistent'"),
    ("pulsar-operation-binding-not-empty", [(("operations", "recv", "bindings", "pulsar"), {"x": 1})], "load",
     "operations.recv.bindings.pulsar.x", "must not contain"),
    ("address-not-a-topic", [(("channels", "c", "address"), "a/b/{id}")], "plan",
     "channels.c.address", "not a valid Kafka topic name"),
    ("x-security-protocol-bad", [(("servers", "k", "x-security.protocol"), "TLS")], "plan",
     "servers.k.x-security.protocol", "SASL_SSL"),
]


@pytest.mark.parametrize("case_id,edits,stage,path,fragment", CASES, ids=[c[0] for c in CASES])
def test_broken_document(case_id, edits, stage, path, fragment):
    doc = skeleton()
    for keys, value in edits:
        _set(doc, keys, copy.deepcopy(value) if value is not _DEL else value)
    if stage == "load":
        with pytest.raises(AsyncApiDocumentError) as e:
            load_document(doc)
    else:
        loaded = load_document(doc)
        with pytest.raises(AsyncApiDocumentError) as e:
            plan_read(loaded, channel="c")
    assert e.value.path == path
    assert fragment in str(e.value)


def test_missing_channel_lists_and_suggests():
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(load_document(skeleton()), channel="cc")
    assert e.value.path == "channels"
    assert "channels: 'c'" in str(e.value) and "did you mean 'c'" in str(e.value)


def test_pulsar_server_requested():
    doc = skeleton()
    doc["servers"]["p"] = {"host": "pulsar.example.com:6650", "protocol": "pulsar",
                           "bindings": {"pulsar": {"tenant": "t"}}}
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(load_document(doc), channel="c", server="p")
    assert e.value.path == "servers.p.protocol"
    assert "'p' uses protocol 'pulsar': not a Kafka server" in str(e.value)


def test_ref_depth_cap():
    doc = skeleton()
    schemas = doc["components"]["schemas"]
    for i in range(40):
        schemas[f"S{i}"] = {"$ref": f"#/components/schemas/S{i + 1}"}
    schemas["S40"] = {"type": "string"}
    doc["components"]["messages"]["M"]["payload"] = {"$ref": "#/components/schemas/S0"}
    loaded = load_document(doc, max_ref_depth=8)
    with pytest.raises(AsyncApiDocumentError, match="deeper than"):
        plan_read(loaded, channel="c")
    # the same chain below the cap resolves
    assert plan_read(load_document(doc, max_ref_depth=64), channel="c").value_messages[0].payload.text == \
        '{"type":"string"}'


def test_ref_dag_explosion_is_capped(monkeypatch):
    import connector.asyncapi._refs as refs
    monkeypatch.setattr(refs, "MAX_INLINED_NODES", 20_000)  # same code path, smaller cap: fast test
    doc = skeleton()
    schemas = doc["components"]["schemas"]
    for i in range(30):  # each level refers to the next twice: 2**30 nodes once inlined
        nxt = {"$ref": f"#/components/schemas/L{i + 1}"}
        schemas[f"L{i}"] = {"type": "array", "items": [nxt, nxt]}
    schemas["L30"] = {"type": "string"}
    doc["components"]["messages"]["M"]["payload"] = {"$ref": "#/components/schemas/L0"}
    loaded = load_document(doc)
    with pytest.raises(AsyncApiDocumentError, match="expands to more than"):
        plan_read(loaded, channel="c")


BILLION_LAUGHS = """\
asyncapi: 3.0.0
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_billion_laughs_refused():
    # would be ~10**9 nodes if expanded; refused from the composed graph (no timing assertion:
    # memory exhaustion or a hang would fail the run on its own)
    with pytest.raises(AsyncApiDocumentError, match="alias bomb"):
        load_document(BILLION_LAUGHS)


def test_recursive_alias_refused():
    with pytest.raises(AsyncApiDocumentError, match="recursive YAML alias"):
        load_document("asyncapi: 3.0.0\nx: &x [*x]\n")


def test_moderate_aliases_accepted():
    text = ("asyncapi: 3.0.0\ninfo: {title: t, version: '1'}\n"
            "components:\n  schemas:\n    A: &a {type: string}\n    B: *a\n")
    assert load_document(text).raw["components"]["schemas"]["B"] == {"type": "string"}


def test_size_cap(tmp_path):
    text = "asyncapi: 3.0.0\ninfo: {title: t, version: '1'}\n" + "# padding\n" * 200
    with pytest.raises(AsyncApiDocumentError, match="1000-byte cap"):
        load_document(text, max_bytes=1000)
    path = tmp_path / "big.yaml"
    path.write_text(text)
    with pytest.raises(AsyncApiDocumentError, match="1000-byte cap"):
        load_document(path, max_bytes=1000)
    assert load_document(path).version == "3.0.0"


def test_referenced_file_size_cap(tmp_path):
    (tmp_path / "big.json").write_text('{"type": "string", "description": "' + "x" * 5000 + '"}')
    doc = skeleton()
    doc["components"]["messages"]["M"]["payload"] = {"$ref": "big.json"}
    with pytest.raises(AsyncApiDocumentError, match="4000-byte cap"):
        plan_read(load_document(doc, base_dir=tmp_path, max_bytes=4000), channel="c")


@pytest.mark.parametrize("ref", ["../outside.avsc", "sub/../../outside.avsc", "%2E%2E/outside.avsc"])
def test_dotdot_escape_refused(tmp_path, ref):
    (tmp_path / "outside.avsc").write_text('"string"')
    docdir = tmp_path / "api"
    (docdir / "sub").mkdir(parents=True)
    doc = skeleton()
    doc["components"]["messages"]["M"]["payload"] = {"$ref": ref}
    (docdir / "doc.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(AsyncApiDocumentError) as e:
        plan_read(load_document(docdir / "doc.yaml"), channel="c")
    assert "outside the document's directory" in str(e.value)
    assert e.value.path == "channels.c.messages.m.payload"


def test_symlink_escape_refused(tmp_path):
    (tmp_path / "secret.json").write_text('{"type": "string"}')
    docdir = tmp_path / "api"
    docdir.mkdir()
    (docdir / "link.json").symlink_to(tmp_path / "secret.json")
    doc = skeleton()
    doc["components"]["messages"]["M"]["payload"] = {"$ref": "link.json"}
    with pytest.raises(AsyncApiDocumentError, match="outside the document's directory"):
        plan_read(load_document(doc, base_dir=docdir), channel="c")


def test_several_messages_disagreeing_on_binding():
    doc = skeleton()
    doc["channels"]["c"]["messages"]["n"] = {"payload": {"type": "string"},
                                             "bindings": {"kafka": {"schemaIdLocation": "header"}}}
    loaded = load_document(doc)
    with pytest.raises(AsyncApiDocumentError, match="disagree on schemaIdLocation"):
        plan_read(loaded, channel="c")
    plan = plan_read(loaded, channel="c", message="n")
    assert plan.schema_id_location == "header" and plan.framing() == "header-confluent"


def test_unknown_server_and_operation():
    loaded = load_document(skeleton())
    with pytest.raises(AsyncApiDocumentError, match="no server 'kk'.*did you mean 'k'"):
        plan_read(loaded, channel="c", server="kk")
    with pytest.raises(AsyncApiDocumentError, match="no operation 'rcv'.*did you mean 'recv'"):
        plan_read(loaded, operation="rcv")
    with pytest.raises(ConfigError, match="not found|only available"):
        doc = skeleton()
        doc["servers"]["k2"] = {"host": "h:1", "protocol": "kafka"}
        doc["channels"]["c"]["servers"] = [{"$ref": "#/servers/k"}]
        plan_read(load_document(doc), channel="c", server="k2")
