"""Subject name strategies: which subject a topic's key/value schema is registered under."""
from __future__ import annotations

import enum

from registry.errors import RegistryConfigError

__all__ = ["SubjectNameStrategy", "subject_name"]


class SubjectNameStrategy(str, enum.Enum):
    """How a subject name is derived (Confluent ``*NameStrategy``, Apicurio ``*IdStrategy``).

    ``TOPIC``: ``<topic>-key`` / ``<topic>-value``; ``RECORD``: the record's full name;
    ``TOPIC_RECORD``: ``<topic>-<record full name>``; ``SIMPLE_TOPIC`` (Apicurio
    ``SimpleTopicIdStrategy``): the topic name itself.

    :meth:`parse` accepts the Confluent class names (short or fully qualified), Apicurio's
    (``TopicIdStrategy``, ``RecordIdStrategy``, ``TopicRecordIdStrategy``, as the AsyncAPI Kafka
    binding's ``schemaLookupStrategy`` spells them) and snake-case spellings.

    Examples
    --------
    >>> SubjectNameStrategy.parse("io.confluent.kafka.serializers.subject.RecordNameStrategy")
    <SubjectNameStrategy.RECORD: 'record'>
    >>> SubjectNameStrategy.parse("TopicRecordIdStrategy")
    <SubjectNameStrategy.TOPIC_RECORD: 'topic_record'>
    """

    TOPIC = "topic"
    RECORD = "record"
    TOPIC_RECORD = "topic_record"
    SIMPLE_TOPIC = "simple_topic"

    @classmethod
    def parse(cls, name) -> "SubjectNameStrategy":
        """Accept any known spelling of a strategy; raise RegistryConfigError otherwise."""
        if isinstance(name, SubjectNameStrategy):
            return name
        raw = str(name or "").strip()
        key = raw.rsplit(".", 1)[-1].lower().replace("_", "").replace("-", "")
        for suffix in ("strategy", "name", "id"):
            if key.endswith(suffix) and key != suffix:
                key = key[: -len(suffix)]
        found = {"topic": cls.TOPIC, "record": cls.RECORD, "topicrecord": cls.TOPIC_RECORD,
                 "simpletopic": cls.SIMPLE_TOPIC}.get(key)
        if found is None:
            raise RegistryConfigError(
                f"unknown subject name strategy {raw!r}; use TopicNameStrategy, RecordNameStrategy, "
                "TopicRecordNameStrategy (or the Apicurio TopicIdStrategy, RecordIdStrategy, "
                "TopicRecordIdStrategy, SimpleTopicIdStrategy)")
        return found


def subject_name(strategy, topic: str, record_name: str | None = None, is_key: bool = False) -> str:
    """The subject under which the key or value schema of ``topic`` is registered.

    Parameters
    ----------
    strategy : SubjectNameStrategy or str
        Any spelling :meth:`SubjectNameStrategy.parse` accepts.
    topic : str
    record_name : str, optional
        Fully qualified record name; required by the record strategies.
    is_key : bool
        Key schema instead of value schema (topic strategy only).

    Examples
    --------
    >>> subject_name("TopicNameStrategy", "orders")
    'orders-value'
    >>> subject_name("TopicRecordNameStrategy", "orders", "com.acme.Order")
    'orders-com.acme.Order'
    """
    s = SubjectNameStrategy.parse(strategy)
    if s is SubjectNameStrategy.TOPIC:
        return f"{topic}-{'key' if is_key else 'value'}"
    if s is SubjectNameStrategy.SIMPLE_TOPIC:
        return topic
    if not record_name:
        raise RegistryConfigError(f"subject name strategy {s.name} needs the record name")
    if s is SubjectNameStrategy.RECORD:
        return record_name
    return f"{topic}-{record_name}"
