"""``groupIdPrefix`` reaches the consumers the source creates (driver and executors)."""
from __future__ import annotations

from connector.kafka import KafkaOffsetReader
from connector.kafka._consume import _consumer_conf


def test_executor_group_id_uses_the_prefix_and_a_user_group_id_wins():
    conf = _consumer_conf({"bootstrap.servers": "b:9092"}, "read_committed", "team-a")
    assert conf["group.id"].startswith("team-a-") and conf["group.id"].endswith("-executor")
    # one throwaway group per process, whatever the range
    assert _consumer_conf({}, "read_committed", "team-a")["group.id"] == conf["group.id"]
    assert _consumer_conf({"group.id": "fixed"}, "read_committed", "team-a")["group.id"] == "fixed"
    assert _consumer_conf({}, "read_committed")["group.id"].startswith("asyncapi-kafka-")


def test_driver_group_id_uses_the_prefix():
    reader = KafkaOffsetReader({"bootstrap.servers": "127.0.0.1:1"}, timeout_s=0.5, group_prefix="team-b")
    try:
        assert reader.group_id.startswith("team-b-") and reader.group_id.endswith("-driver")
    finally:
        reader.close()
