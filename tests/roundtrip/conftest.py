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


_SETUPS: dict = {}


@pytest.fixture
def setup_for(request, registry, confluent_client):
    """``setup_for(case, *args)``: the test module's ``Setup(case, *args, registry, client)``, made once
    per session (schemas registered, encoders built) and shared by every test of that case."""
    cls = request.module.Setup

    def get(case, *args):
        key = (request.module.__name__, case.name, *args)
        if key not in _SETUPS:
            _SETUPS[key] = cls(case, *args, registry, confluent_client)
        return _SETUPS[key]
    return get
