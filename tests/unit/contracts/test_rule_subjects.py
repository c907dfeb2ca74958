"""The subject a data-contract rule's keys belong to is named in one place (RuleScope.subject_of),
for the read's rules and the write's alike: the given subject, else the subject name strategy's."""
from __future__ import annotations

import pytest

from registry import RegistryConfig, Schema, SchemaType

from connector.errors import ConfigError
from connector.schema.rules import ContractSettings, ReadRules, WriteRules

ORDER = Schema(SchemaType.AVRO, '{"type": "record", "name": "Order", "namespace": "shop", "fields": []}', id=1)


def _rules(kind, **kw):
    base = dict(registry=RegistryConfig(urls=("http://registry.invalid",)), settings=ContractSettings(), fmt="avro")
    return WriteRules(target=ORDER, **base, **kw) if kind == "write" else ReadRules(**base, **kw)


@pytest.mark.parametrize("kind", ["read", "write"])
@pytest.mark.parametrize(("kw", "topic", "subject"), [
    ({}, "orders", "orders-value"),
    ({"is_key": True}, "orders", "orders-key"),
    ({"strategy": "RecordNameStrategy"}, "orders", "shop.Order"),
    ({"strategy": "TopicRecordNameStrategy"}, "orders", "orders-shop.Order"),
    ({"subject": "pinned"}, None, "pinned"),
])
def test_read_and_write_rules_name_the_same_subject(kind, kw, topic, subject):
    rules = _rules(kind, **kw)
    assert rules.subject_of(topic, ORDER) == subject
    if kind == "write":
        assert rules.subjects(topic, 2) == [subject, subject]


def test_the_write_names_each_records_subject_by_its_topic():
    rules = _rules("write", strategy="TopicRecordNameStrategy")
    assert rules.subjects(["a", "b", "a"], 3) == ["a-shop.Order", "b-shop.Order", "a-shop.Order"]


@pytest.mark.parametrize(("kind", "hint"), [("read", "pass subject= or topic= (from_registry)"),
                                            ("write", "name the subject (subject=) or the topic")])
def test_an_unknown_topic_is_a_configuration_error_saying_what_to_pass(kind, hint):
    with pytest.raises(ConfigError, match="record's topic is unknown") as info:
        _rules(kind).subject_of(None, ORDER)
    assert hint in str(info.value)
    if kind == "write":
        with pytest.raises(ConfigError):
            _rules(kind).subjects(None, 1)
