"""connector.testing: local stand-ins for tests, the demo and ``asyncapi-kafka sandbox``; not for production.

Nothing in the product packages (``wireformat``, ``registry``, ``connector`` except
``connector.cli``) imports this package (tests/unit/test_import_boundaries.py). It ships in the
wheel because the ``demo`` and ``sandbox`` commands start these servers at run time.

- :class:`RegistryServer`: an in-memory Confluent-compatible schema registry (REST, Apicurio
  ``ids`` endpoints, fault injection, request counters) on 127.0.0.1. Standard library only.
- :class:`EmbeddedKafka`: librdkafka's in-process mock cluster (:data:`MOCK_PARTITIONS` per
  auto-created topic, no admin APIs).
- :class:`TansuBroker`: a tansu broker subprocess for admin-API scenarios (CreateTopics with a
  partition count, DeleteTopics, DescribeConfigs); :func:`find_tansu` locates its binary.
- :class:`TokenServer`: an OAuth 2.0 token endpoint (client credentials) for registry OAuth.
- :class:`KarapaceServer`: Karapace, a real Confluent-compatible schema registry, as a subprocess
  from its own virtual environment (``.karapace-venv``, built by ``.ci/run``), its storage on a
  tansu broker it starts too.
- :class:`NoidaBroker`: a noida-db Kafka broker subprocess, the local peer that looks offsets
  up by timestamp (ListOffsets by time and ``MAX_TIMESTAMP``), which neither of the others does.

Examples
--------
>>> from connector.testing import EmbeddedKafka, RegistryServer
>>> with RegistryServer() as registry, EmbeddedKafka() as kafka:
...     sid = registry.register("orders-value", '"string"')
...     kafka.produce("orders", b"\\x00\\x00\\x00\\x00\\x01\\x02hi", partition=0)
...     kafka.flush()
...     sid, kafka.watermarks("orders", 0)
(1, (0, 1))
"""
from ._embedded import MOCK_PARTITIONS, EmbeddedKafka
from ._karapace import KarapaceServer, find_karapace
from ._registry_server import RegistryServer
from ._token_server import TokenServer
from ._noida import NoidaBroker, find_noida
from ._tansu import TansuBroker, find_tansu

__all__ = ["RegistryServer", "KarapaceServer", "find_karapace", "TokenServer", "EmbeddedKafka", "MOCK_PARTITIONS",
           "TansuBroker", "find_tansu", "NoidaBroker", "find_noida"]
