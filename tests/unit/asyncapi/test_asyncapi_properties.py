"""Property tests: whatever the loader is given, it loads/plans or raises our error types only."""
from __future__ import annotations

import copy
import pathlib
import pickle

import yaml

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connector.asyncapi import load_document, plan_read
from connector.errors import AsyncApiDocumentError, ConfigError

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "asyncapi"


def skeleton() -> dict:
    return yaml.safe_load((DATA / "skeleton-3.0.yml").read_text())


def skeleton2() -> dict:
    return yaml.safe_load((DATA / "skeleton-2.6.yml").read_text())


KEYS = ["$ref", "type", "schemaFormat", "schema", "bindings", "kafka", "pulsar", "partitions", "replicas",
        "enum", "const", "default", "address", "messages", "traits", "payload", "channel", "action", "servers",
        "security", "oneOf", "parameters", "host", "protocol", "url", "publish", "subscribe", "message",
        "topic", "topicConfiguration", "cleanup.policy", "schemaRegistryUrl", "schemaRegistryVendor",
        "schemaIdLocation", "schemaIdPayloadEncoding", "key", "groupId", "clientId", "name", "fields",
        "persistence", "retention", "variables", "x-security.protocol", "x-sasl.mechanism"]
STRINGS = ["#/components/schemas/P", "#/components/messages/M", "#/channels/c", "#/servers/k", "#", "#/",
           "#/a~1b~0c", "other.yaml", "../x.avsc", "/etc/hosts", "http://example.com/x", "kafka",
           "kafka-secure", "pulsar", "payload", "header", "receive", "send", "x", "{id}", "a.{id}",
           "application/vnd.apache.avro;version=1.9.0", "application/vnd.google.protobuf;version=3",
           "message M { int32 a = 1; }", "record", "string", "apicurio", "SASL_SSL", "plain", "X509", ""]
scalars = (st.none() | st.booleans() | st.integers(-3, 5) | st.floats(allow_nan=True) | st.sampled_from(STRINGS)
           | st.text(max_size=6))
values = st.recursive(scalars, lambda ch: st.lists(ch, max_size=3)
                      | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), ch, max_size=4),
                      max_leaves=12)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _mutate(doc, data) -> dict:
    for _ in range(data.draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        op = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if op == "replace":
            parent[path[-1]] = data.draw(values)
        elif op == "delete":
            del parent[path[-1]]
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][data.draw(st.sampled_from(KEYS))] = data.draw(values)
    return doc


def _exercise(doc) -> None:
    try:
        loaded = load_document(doc)
    except AsyncApiDocumentError:
        return
    for name in list(loaded.channels):
        for server in [None, *loaded.servers]:
            for params in (None, {"id": "x"}):
                try:
                    plan = plan_read(loaded, channel=name, server=server, params=params)
                except (AsyncApiDocumentError, ConfigError):
                    continue
                assert pickle.loads(pickle.dumps(plan)) == plan
                try:
                    plan.framing()
                except ConfigError:
                    pass
                for topic in plan.topics:
                    plan.topic_params(topic)


PROPS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(st.data())
def test_mutated_30_document_only_raises_our_errors(data):
    _exercise(_mutate(skeleton(), data))


@PROPS
@given(st.data())
def test_mutated_26_document_only_raises_our_errors(data):
    _exercise(_mutate(skeleton2(), data))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | st.binary(max_size=200))
def test_arbitrary_text_only_raises_our_errors(text):
    try:
        load_document(text)
    except AsyncApiDocumentError:
        pass


@settings(max_examples=200, deadline=None)
@given(values)
def test_arbitrary_values_only_raise_our_errors(value):
    doc = {"asyncapi": "3.0.0", "channels": value} if not isinstance(value, dict) else \
        {"asyncapi": "3.0.0", **value}
    _exercise(doc)


def test_skeletons_are_valid():
    assert plan_read(load_document(skeleton2()), channel="a.{id}").group_id == "g"
    assert plan_read(load_document(copy.deepcopy(skeleton())), channel="c").group_id == "g"
