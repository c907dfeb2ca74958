"""Fixtures the Spark suites share: a moto Glue endpoint and a client with the matrix's registry."""
from __future__ import annotations

import pytest

from tests.integration.spark import matrix_helpers as mh


@pytest.fixture(scope="module")
def moto_url():
    pytest.importorskip("boto3")
    moto_server = pytest.importorskip("moto.server")
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=mh.free_port(), verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    yield f"http://{host}:{port}"
    srv.stop()


@pytest.fixture(scope="module")
def glue_client(moto_url):
    import boto3

    # Explicit dummy credentials: the test process's environment is not the Spark workers' one
    # (the JVM was started before), so the source gets them as options instead (see glue_options).
    client = boto3.client("glue", endpoint_url=moto_url, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    try:  # moto keeps its backends per process, not per server: another suite may have made it
        client.create_registry(RegistryName=mh.GLUE_REGISTRY)
    except client.exceptions.AlreadyExistsException:
        pass
    return client
