"""The suites run against real peers when asked: ASYNCAPI_KAFKA_PEERS=testcontainers (Docker),
or KAFKA_BOOTSTRAP_SERVERS / SCHEMA_REGISTRY_URL (e.g. the docker-compose stack). Here there is
no Docker engine, so the testcontainers path must skip cleanly rather than fail."""
import pytest

import tests.conftest as shared


def test_testcontainers_path_skips_cleanly_without_docker():
    try:
        import docker

        docker.from_env().ping()
    except Exception:
        with pytest.raises(pytest.skip.Exception, match="no Docker engine"):
            shared._testcontainers_peers()
        return
    pytest.skip("a Docker engine is reachable here: the testcontainers path runs for real")


def test_external_registry_adapter_registers_over_rest(registry_server):
    """ExternalRegistry speaks plain Confluent REST: check it against our embedded server."""
    adapter = shared.ExternalRegistry(registry_server.url)
    schema_id = adapter.register("adapter-value", '{"type": "string"}')
    assert schema_id == registry_server.register("adapter-value", '{"type": "string"}')
    with pytest.raises(pytest.skip.Exception):
        adapter.fail_next(1)
