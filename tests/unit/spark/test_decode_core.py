"""The source's pipeline and the column functions share one decode core: pin that they
agree on tombstones, errors and FAILFAST (Arrow only, no JVM)."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from registry import Schema, SchemaType
from wireformat import DEFAULT_LIMITS, Framing, encode_frame

from connector.formats import Mode, build_decoder
from connector.errors import ConfigError, DecodeError
from connector.options import ValueShape
from connector.read._pipeline import ERROR_COLUMN, RAW_VALUE_COLUMN, Pipeline
from connector.spark._column_jobs import DecodeJob as _DecodeJob, HeaderJob as _HeaderJob

SCHEMA = Schema(schema_type=SchemaType.JSON,
                text=json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))
DECODER = build_decoder(SCHEMA)
VALUE_T = DECODER.arrow_type
GOOD = encode_frame("confluent", 7, b'{"n": 1}')
BAD = encode_frame("confluent", 7, b"{broken")
META = [pa.field("topic", pa.string()), pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32())]


def _raw(values):
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.nulls(n, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": pa.array(["t"] * n), "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()), "timestamp": pa.array([0] * n, pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0] * n, pa.int32())})


def _pipeline(mode):
    mode = Mode.parse(mode)
    fields = [pa.field("key", pa.binary()), pa.field("value", VALUE_T)] + META + [pa.field("schemaId", pa.int64())]
    if mode is Mode.PERMISSIVE:
        fields += [pa.field(ERROR_COLUMN, pa.string()), pa.field(RAW_VALUE_COLUMN, pa.binary())]
    return Pipeline(arrow_schema=pa.schema(fields), value_decoder=DECODER, key_decoder=None, framing=Framing.CONFLUENT,
                    key_framing=Framing.NONE, key_as_string=False, mode=mode, include_headers=False,
                    value_shape=ValueShape.STRUCT, schema_id_kind="long", param_pattern=None, param_names=(),
                    limits=DEFAULT_LIMITS)


def _job(mode, with_errors=False):
    mode = Mode.parse(mode)
    out = pa.struct([pa.field("value", VALUE_T), pa.field("error", pa.string())]) if with_errors else VALUE_T
    return _DecodeJob(decoder=DECODER, framing=Framing.CONFLUENT, registry_config=None, mode=mode,
                      with_errors=with_errors, protobuf_indexes=False, out_type=out)


@pytest.mark.parametrize("mode", list(Mode))
def test_a_tombstone_is_a_null_value_without_error_in_the_source(mode):
    out = _pipeline(mode).process(_raw([GOOD, None]), lambda key: None)
    assert out.column("value").to_pylist() == [{"n": 1}, None]
    assert out.column("schemaId").to_pylist() == [7, None]
    if mode is Mode.PERMISSIVE:
        assert out.column(ERROR_COLUMN).to_pylist() == [None, None]
        assert out.column(RAW_VALUE_COLUMN).to_pylist() == [None, None]


@pytest.mark.parametrize("mode", [Mode.FAILFAST, Mode.PERMISSIVE])
def test_a_tombstone_is_a_null_value_without_error_in_from_registry(mode):
    assert _job(mode).run(pa.array([GOOD, None], pa.binary())).to_pylist() == [{"n": 1}, None]
    out = _job(Mode.PERMISSIVE, with_errors=True).run(pa.array([GOOD, None, BAD], pa.binary()))
    assert out.field("value").to_pylist() == [{"n": 1}, None, None]
    errors = out.field("error").to_pylist()
    assert errors[:2] == [None, None] and "json decode failed for schema id 7" in errors[2]


def test_both_callers_report_the_same_error_text_and_failfast_row():
    values = [GOOD, None, BAD]
    source = _pipeline("PERMISSIVE").process(_raw(values), lambda key: None).column(ERROR_COLUMN).to_pylist()
    column = _job(Mode.PERMISSIVE, with_errors=True).run(pa.array(values, pa.binary())).field("error").to_pylist()
    assert source == column and source[2] is not None
    with pytest.raises(DecodeError, match="offset=2") as src_err:
        _pipeline("FAILFAST").process(_raw(values), lambda key: None)
    with pytest.raises(DecodeError, match="row 2 of the batch") as fn_err:
        _job(Mode.FAILFAST).run(pa.array(values, pa.binary()))
    assert src_err.value.schema_id == fn_err.value.schema_id == 7


def test_dropmalformed_keeps_tombstones_and_drops_bad_rows():
    out = _pipeline(Mode.DROPMALFORMED).process(_raw([None, BAD, GOOD]), lambda key: None)
    assert out.column("offset").to_pylist() == [0, 2] and out.column("value").to_pylist() == [None, {"n": 1}]
    assert out.column("schemaId").to_pylist() == [None, 7]


def test_pipeline_fields_are_typed():
    p = _pipeline("permissive")
    assert p.mode is Mode.PERMISSIVE and p.framing is Framing.CONFLUENT and p.key_framing is Framing.NONE
    with pytest.raises(ConfigError):
        _pipeline("LENIENT")
    assert not hasattr(Pipeline, "__post_init__")  # no string shim: callers pass the enums


def test_strip_header_null_input_is_a_null_struct_and_ids_are_typed():
    guid = "00000000-0000-0000-0000-00000000000a"
    out = _HeaderJob(Framing.AUTO).run(pa.array([GOOD, None, encode_frame("glue", guid, b"x"), b"\x09"],
                                                pa.binary()))
    rows = out.to_pylist()
    assert rows[1] is None
    assert rows[0] == {"framing": "confluent", "schema_id": 7, "schema_guid": None, "payload": b'{"n": 1}',
                       "error": None}
    assert rows[2]["framing"] == "glue" and rows[2]["schema_guid"] == guid and rows[2]["schema_id"] is None
    assert rows[3]["error"].startswith("unknown magic byte") and rows[3]["payload"] is None


def test_typed_pipeline_and_job_survive_pickling():
    """Spark ships both to executors by pickle: the enums must come back as themselves."""
    import pickle

    p = pickle.loads(pickle.dumps(_pipeline(Mode.PERMISSIVE)))
    assert p.mode is Mode.PERMISSIVE and p.framing is Framing.CONFLUENT
    job = pickle.loads(pickle.dumps(_job(Mode.FAILFAST)))
    assert job.mode is Mode.FAILFAST and job.run(pa.array([GOOD], pa.binary())).to_pylist() == [{"n": 1}]
