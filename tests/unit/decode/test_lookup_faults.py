"""Lookup failures in the decoders: the records' faults are row errors, the environment's raise.

Table-driven over the single and the multi-message decoder (no network: the lookup raises).
"""
from __future__ import annotations

import pytest

from connector.formats import DecodeOptions, build_decoder, build_multi_decoder
from connector.errors import ConfigError
from registry import (RegistryAuthError, RegistryProtocolError, RegistryTLSError, RegistryUnavailable,
                      SchemaNotFound, SchemaParseError)

from tests.unit.decode.decode_helpers import framed

A = {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}
B = {"type": "record", "name": "B", "fields": [{"name": "y", "type": "string"}]}


class Spec:
    def __init__(self, fmt, schema):
        import json

        self.format, self.text = fmt, json.dumps(schema)


def _decoders():
    return [build_decoder(Spec("avro", A), options=DecodeOptions()),
            build_multi_decoder({"a": Spec("avro", A), "b": Spec("avro", B)})]


def _raising(exc):
    def lookup(key):
        raise exc
    return lookup


@pytest.mark.parametrize("exc", [SchemaNotFound("HTTP 404 error_code 40403", fault="record"),
                                 SchemaParseError("schema reference cycle")])
@pytest.mark.parametrize("which", [0, 1], ids=["single", "multi"])
def test_records_faults_are_row_errors(exc, which):
    res = _decoders()[which].decode(framed([(9, b"\x02")]), _raising(exc))
    assert res.values.null_count == 1 and "schema id 9" in res.errors[0].as_py()


@pytest.mark.parametrize("exc", [SchemaNotFound("HTTP 404 from a peer not yet verified"),
                                 RegistryProtocolError("non-JSON"), RegistryUnavailable("refused"),
                                 RegistryAuthError("401"), RegistryTLSError("verify failed"),
                                 ConfigError("no registry configured")])
@pytest.mark.parametrize("which", [0, 1], ids=["single", "multi"])
def test_environment_faults_raise_naming_the_schema_id(exc, which):
    with pytest.raises(type(exc)) as ei:
        _decoders()[which].decode(framed([(9, b"\x02")]), _raising(exc))
    assert any("schema id 9" in n for n in getattr(ei.value, "__notes__", []))


def test_multi_decoder_writer_of_another_format_stays_a_row_error(registry):
    registry.add(4, {"type": "object"}, schema_type="JSON")
    m = build_multi_decoder({"a": Spec("avro", A), "b": Spec("avro", B)})
    res = m.decode(framed([(4, b"{}")]), registry.lookup)
    assert "schema id 4" in res.errors[0].as_py()
