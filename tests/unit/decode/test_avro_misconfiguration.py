"""An Avro reader schema that cannot be compiled where the task runs is the job's fault: with no
writer schema (framing ``none``) the reader's own schema is the records' writer, so its failure
must fail the job, never turn every record into a row error. A writer schema of the registry that
cannot be resolved stays its records' row error."""
from __future__ import annotations

import pyarrow as pa
import pytest

from connector.errors import SchemaCompileError
from connector.formats import Decoder, DecodeOptions
from tests.unit.decode.decode_helpers import Registry, avro_bytes, framed
from wireformat import parse_frames

READER = {"type": "record", "name": "Order", "fields": [{"name": "n", "type": "long"}]}
WRITER = {"type": "record", "name": "Order", "fields": [{"name": "n", "type": "int"}]}


@pytest.fixture
def codecs_fail(monkeypatch):
    """Building a codec fails as a compile that runs out of memory would (a limit of the worker)."""
    import connector.formats.avro._format as fmt

    def fail(*a, **k):
        raise MemoryError("cannot allocate the program")

    monkeypatch.setattr(fmt, "AvroCodec", fail)


def test_the_readers_own_schema_failing_fails_the_job(codecs_fail):
    import json

    d = Decoder("avro", json.dumps(READER), (), None, DecodeOptions())
    parsed = parse_frames(pa.array([avro_bytes(READER, {"n": 1})], pa.binary()), "none")
    with pytest.raises(SchemaCompileError, match="avro reader schema 'Order' does not compile"):
        d.decode(parsed, lambda key: None)


def test_a_writer_schema_that_fails_is_its_records_error(codecs_fail):
    import json

    d = Decoder("avro", json.dumps(READER), (), None, DecodeOptions())
    reg = Registry()
    reg.add(5, WRITER)
    res = d.decode(framed([(5, avro_bytes(WRITER, {"n": 1}))]), reg.lookup)
    errors = [e for e in res.errors if e]
    assert len(errors) == 1 and "cannot allocate the program" in str(errors[0])
