"""Subject name strategies: every spelling in the Confluent, Apicurio and AsyncAPI worlds."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry import RegistryConfigError, subject_name
from registry._strategy import SubjectNameStrategy

S = SubjectNameStrategy


@pytest.mark.parametrize("name,expected", [
    ("TopicNameStrategy", S.TOPIC), ("io.confluent.kafka.serializers.subject.TopicNameStrategy", S.TOPIC),
    ("RecordNameStrategy", S.RECORD), ("io.confluent.kafka.serializers.subject.RecordNameStrategy", S.RECORD),
    ("TopicRecordNameStrategy", S.TOPIC_RECORD),
    ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", S.TOPIC_RECORD),
    ("TopicIdStrategy", S.TOPIC), ("RecordIdStrategy", S.RECORD), ("TopicRecordIdStrategy", S.TOPIC_RECORD),
    ("io.apicurio.registry.serde.strategy.TopicIdStrategy", S.TOPIC),
    ("SimpleTopicIdStrategy", S.SIMPLE_TOPIC), ("topic_record", S.TOPIC_RECORD), ("topic", S.TOPIC),
    ("record-name", S.RECORD), (S.RECORD, S.RECORD),
])
def test_parse(name, expected):
    assert S.parse(name) is expected


def test_subject_names():
    assert subject_name("TopicNameStrategy", "t") == "t-value"
    assert subject_name("TopicIdStrategy", "t", is_key=True) == "t-key"
    assert subject_name("RecordNameStrategy", "t", "a.B") == "a.B"
    assert subject_name("TopicRecordIdStrategy", "t", "a.B") == "t-a.B"
    assert subject_name("SimpleTopicIdStrategy", "t") == "t"
    with pytest.raises(RegistryConfigError, match="record name"):
        subject_name("RecordNameStrategy", "t")


@given(st.text(max_size=40))
def test_parse_raises_only_config_errors(text):
    try:
        S.parse(text)
    except RegistryConfigError:
        pass
