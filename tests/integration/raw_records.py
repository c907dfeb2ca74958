"""Every record of a topic as confluent-kafka itself reads it: the reference the integration
tests compare the connector's rows and writes with."""
from __future__ import annotations

import uuid


def raw_records(bootstrap: str, topic: str) -> list:
    """Every record of ``topic`` (all partitions, from offset 0 to the high watermark) as
    confluent-kafka ``Message`` objects; fails when a poll returns nothing for 10 s."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"raw-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        tps = [TopicPartition(topic, p, 0) for p in parts]
        want = sum(c.get_watermark_offsets(tp, timeout=10)[1] for tp in tps)
        c.assign(tps)
        out: list = []
        while len(out) < want:
            m = c.poll(10)
            assert m is not None, f"read {len(out)} of {want}"
            if not m.error():
                out.append(m)
        return out
    finally:
        c.close()
