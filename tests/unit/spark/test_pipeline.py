"""The executor-side pipeline (raw Kafka batch → output batch), tested on Arrow alone."""
import io
import json
import uuid

import fastavro
import pyarrow as pa
from wireformat import Framing
import pytest

from connector.formats import Mode, DecodeOptions, build_decoder
from connector.errors import DecodeError
from connector.options import ValueShape
from connector.read._pipeline import ERROR_COLUMN, RAW_VALUE_COLUMN, Pipeline
from wireformat import uuid_strings
from registry import Schema, SchemaType
from wireformat import DEFAULT_LIMITS, encode_frame

AVRO = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "string"}]}
VALUE_T = pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string())])


def _avro(rec):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(AVRO), rec)
    return buf.getvalue()


def _raw(values, topic="t.eu"):
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([b"k%d" % i for i in range(n)], pa.binary()),
        "value": pa.array(values, pa.binary()),
        "topic": pa.array([topic] * n, pa.string()),
        "partition": pa.array([3] * n, pa.int32()),
        "offset": pa.array(range(100, 100 + n), pa.int64()),
        "timestamp": pa.array([0] * n, pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0] * n, pa.int32()),
    })


def _pipeline(mode, *, params=(), spec=None, framing=Framing.CONFLUENT):
    mode = Mode.parse(mode)
    """A Pipeline over the Avro value (or ``spec``); a ``schemaId`` column unless unframed."""
    fields = [pa.field("key", pa.binary()), pa.field("value", VALUE_T), pa.field("topic", pa.string()),
              pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
              pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32())]
    if framing is not Framing.NONE:
        fields.append(pa.field("schemaId", pa.int64()))
    fields += [pa.field(p, pa.string()) for p in params]
    if mode is Mode.PERMISSIVE:
        fields += [pa.field(ERROR_COLUMN, pa.string()), pa.field(RAW_VALUE_COLUMN, pa.binary())]
    spec = spec or Schema(schema_type=SchemaType.AVRO, text=json.dumps(AVRO))
    return Pipeline(
        arrow_schema=pa.schema(fields), value_decoder=build_decoder(spec, options=DecodeOptions()),
        key_decoder=None, framing=framing, key_framing=Framing.NONE, key_as_string=False, mode=mode,
        include_headers=False, value_shape=ValueShape.STRUCT, schema_id_kind="none" if framing is Framing.NONE else "long",
        param_pattern=r"t\.(?P<region>[a-z]+)" if params else None, param_names=tuple(params),
        limits=DEFAULT_LIMITS, protobuf_indexes=False, key_protobuf_indexes=False)


def lookup(key):
    assert key[1] == 7
    return Schema(schema_type=SchemaType.AVRO, text=json.dumps(AVRO), id=7)


GOOD = [encode_frame("confluent", 7, _avro({"a": i, "b": f"x{i}"})) for i in range(3)]
BAD = b"\x09not a frame"


def test_good_rows_decode_in_order_with_metadata():
    out = _pipeline("FAILFAST").process(_raw(GOOD), lookup)
    assert out.column("value").to_pylist() == [{"a": i, "b": f"x{i}"} for i in range(3)]
    assert out.column("schemaId").to_pylist() == [7, 7, 7]
    assert out.column("offset").to_pylist() == [100, 101, 102]


def test_failfast_names_topic_partition_offset():
    with pytest.raises(DecodeError) as err:
        _pipeline("FAILFAST").process(_raw(GOOD + [BAD]), lookup)
    assert err.value.offset == 103 and err.value.partition == 3 and err.value.topic == "t.eu"
    assert "offset=103" in str(err.value)


def test_permissive_keeps_bad_rows_with_reason_and_bytes():
    out = _pipeline("PERMISSIVE").process(_raw([BAD] + GOOD), lookup)
    assert out.column("value").to_pylist()[0] is None
    assert out.column(ERROR_COLUMN).to_pylist()[0]
    assert out.column(ERROR_COLUMN).to_pylist()[1:] == [None] * 3
    assert out.column(RAW_VALUE_COLUMN).to_pylist() == [BAD, None, None, None]


def test_dropmalformed_drops_and_keeps_the_rest():
    out = _pipeline("DROPMALFORMED").process(_raw([GOOD[0], BAD, GOOD[2]]), lookup)
    assert out.column("offset").to_pylist() == [100, 102]
    assert _pipeline("DROPMALFORMED").process(_raw([BAD]), lookup) is None


def test_address_parameters_become_columns():
    out = _pipeline("FAILFAST", params=("region",)).process(_raw(GOOD, topic="t.eu"), lookup)
    assert out.column("region").to_pylist() == ["eu"] * 3


def test_uuid_strings_match_python_uuid_text_including_nulls_and_slices():
    ids = [uuid.uuid4() for _ in range(50)]
    arr = pa.array([u.bytes for u in ids] + [None], pa.binary(16))
    assert uuid_strings(arr).to_pylist() == [str(u) for u in ids] + [None]
    assert uuid_strings(arr.slice(7, 10)).to_pylist() == [str(u) for u in ids[7:17]]


JSON_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}


def _json_pipeline(mode):
    return _pipeline(mode, spec=Schema(schema_type=SchemaType.JSON, text=json.dumps(JSON_SCHEMA)), framing=Framing.NONE)


def test_unframed_read_of_framed_bytes_hints_at_the_wire_format():
    """Issue 17: a registry-framed record read as unframed says which framing its first byte shows."""
    plain = json.dumps({"a": 1, "b": "x"}).encode()
    confluent = encode_frame("confluent", 7, plain)
    glue = encode_frame("glue", str(uuid.UUID(int=5)), plain)
    out = _json_pipeline("PERMISSIVE").process(_raw([plain, confluent, glue, b"\x00\x01"]), lookup)
    errors = out.column(ERROR_COLUMN).to_pylist()
    assert errors[0] is None and out.column("value")[0].as_py() == {"a": 1, "b": "x"}
    assert "wireFormat=confluent" in errors[1] and "wireFormat=glue" in errors[2]
    assert errors[3] is not None and "hint" not in errors[3]  # too short to be a Confluent frame
    with pytest.raises(DecodeError, match="wireFormat=confluent"):
        _json_pipeline("FAILFAST").process(_raw([confluent]), lookup)
