"""One real HTTP registry for the whole round-trip suite, and the clients that talk to it."""
from __future__ import annotations

import pytest

from connector.testing import RegistryServer


@pytest.fixture(scope="session")
def registry():
    """The embedded Confluent-compatible registry (``connector.testing``) on loopback."""
    with RegistryServer() as srv:
        yield srv


@pytest.fixture(scope="session")
def confluent_client(registry):
    """confluent-kafka's own registry client, against :func:`registry`."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": registry.url})


@pytest.fixture(scope="session")
def our_lookup(registry):
    """The project's registry client: ``SchemaKey -> registry.Schema`` for ``decode_column``."""
    from registry import RegistryConfig, client_for

    return client_for(RegistryConfig(urls=(registry.url,))).lookup
