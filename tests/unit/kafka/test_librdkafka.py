"""The native binding finds confluent-kafka's own librdkafka and makes handles safely."""
from __future__ import annotations

import numpy as np
import pytest
from confluent_kafka import libversion

from connector.errors import ConfigError
from connector.kafka import _librdkafka as rd


def test_same_library_as_confluent_kafka():
    assert rd.api().version() == libversion()[1]
    assert rd.err_name(-191) == "_PARTITION_EOF"


def test_unknown_setting_is_a_config_error_without_the_secret():
    with pytest.raises(ConfigError, match="no.such.setting") as e:
        rd.new_handle(rd.RD_KAFKA_CONSUMER, {"sasl.password": "s3cr3t-value", "no.such.setting": "1"})
    assert "s3cr3t-value" not in str(e.value)


def test_bad_value_of_a_secret_setting_is_not_echoed():
    with pytest.raises(ConfigError) as e:
        rd.new_handle(rd.RD_KAFKA_PRODUCER, {"ssl.key.password": "hunter2-secret",
                                             "security.protocol": "hunter2-secret"})
    assert "hunter2-secret" not in str(e.value)


def test_a_handle_is_made_and_destroyed():
    rk = rd.new_handle(rd.RD_KAFKA_CONSUMER, {"group.id": "t", "bootstrap.servers": "127.0.0.1:9"})
    assert rk
    rd.api().destroy(rk)


def test_compiled_code_calls_librdkafka_and_reads_memory():
    import numba
    from numba import types

    version = rd.extern("rd_kafka_version", types.int32())
    from connector.formats.core.kernels import voidptr

    @numba.njit
    def first_plus_version(addr):
        return numba.carray(voidptr(addr), 1, np.int64)[0] + version()

    arr = np.array([5], np.int64)
    assert first_plus_version(arr.ctypes.data) == 5 + libversion()[1]
