"""Avro round trip over every corpus schema (``benchmarks/corpus/avro``), three ways:

1. our write (``encode_column``) → confluent-kafka's ``AvroDeserializer`` and the Glue package's
   codec + ``AvroSchema`` give back the value;
2. confluent-kafka's ``AvroSerializer`` → our read (``decode_column``, writer schema fetched from
   the registry) gives back the row, and our payload is byte for byte the serializer's;
3. our write → our read gives back the row.

Values are Hypothesis batches of rows valid for the schema (``avro_values.rows``).
"""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest
from hypothesis import given

from benchmarks.corpus._gen import cases
from connector.formats import build_decoder, build_encoder, decode_column, encode_column
from connector.formats.avro._schema import parse_avro
from tests.roundtrip import avro_values as av
from tests.roundtrip.common import PROPERTY, batches, first_difference
from wireformat import Framing

pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.serialization import MessageField, SerializationContext

CASES = [c for c in cases() if c.fmt == "avro"]
CTX = SerializationContext("roundtrip", MessageField.VALUE)


class Setup:
    """Everything one schema's property needs, built once per schema."""

    def __init__(self, case, registry, client):
        from aws_schema_registry.avro import AvroSchema
        from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

        self.case = case
        depth = case.options.max_recursion_depth
        self.node, _ = parse_avro(case.text, max_depth=depth, keep_cuts=True)  # as writers parse
        self.encoder = build_encoder(case.spec, options=_encode_options(depth))
        self.decoder = build_decoder(case.spec, options=case.options)
        assert self.encoder.arrow_type == self.decoder.arrow_type
        subject = f"rt-{case.name.replace('/', '-')}"
        self.sid = registry.register(f"{subject}-ours-value", case.text)
        self.deserialize = AvroDeserializer(client, return_record_name=True)
        self.serialize = AvroSerializer(client, case.text, conf={"auto.register.schemas": True,
                                                                  "subject.name.strategy": lambda ctx, name: subject})
        self.glue = AvroSchema(case.text, return_record_name=True)

    def strategy(self):
        top = self.node
        if top.kind == "union" and len(top.nonnull) == 1:  # a null row is a tombstone, not a value
            top = top.nonnull[0]
        return batches(av.rows(top), av.rows(top, True))


def _encode_options(depth):
    from connector.formats import EncodeOptions

    return EncodeOptions(max_recursion_depth=depth)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_avro_round_trip(case, setup_for, our_lookup):
    s = setup_for(case)

    @PROPERTY
    @given(s.strategy())
    def prop(rows):
        values = pa.array(rows, s.encoder.arrow_type)
        ours = encode_column(values, encoder=s.encoder, framing=Framing.CONFLUENT, schema_id=s.sid)
        assert ours.error_count == 0, ours.errors.drop_null()[:1].to_pylist()
        framed = ours.values.to_pylist()
        want_read = [av.read_form(s.node, r) for r in rows]

        # 1. our write -> the reference readers
        got = [s.deserialize(v, CTX) for v in framed]
        assert (d := first_difference(got, want_read, "our write -> AvroDeserializer")) is None, d
        glue = encode_column(values, encoder=s.encoder, framing=Framing.GLUE, schema_id=str(uuid.UUID(int=s.sid)))
        from aws_schema_registry.codec import decode as glue_decode
        got = [s.glue.read(glue_decode(v)[0]) for v in glue.values.to_pylist()]
        assert (d := first_difference(got, want_read, "our write -> Glue codec + AvroSchema")) is None, d

        # 2. the reference writer -> our read, and the same bytes as ours
        theirs = [s.serialize(av.datum(s.node, r), CTX) for r in rows]
        back = decode_column(pa.array(theirs, pa.binary()), framing=Framing.CONFLUENT, decoder=s.decoder,
                             lookup=our_lookup)
        assert back.errors.null_count == len(rows), back.errors.drop_null()[:1].to_pylist()
        assert (d := first_difference(back.values.to_pylist(), rows, "AvroSerializer -> our read")) is None, d
        for i, (t, o) in enumerate(zip(theirs, framed)):
            assert t[5:] == o[5:], f"row {i}: our payload differs from AvroSerializer's\n{o[5:]!r}\n{t[5:]!r}"

        # 3. our write -> our read
        back = decode_column(ours.values, framing=Framing.CONFLUENT, decoder=s.decoder, lookup=None)
        assert back.errors.null_count == len(rows), back.errors.drop_null()[:1].to_pylist()
        assert (d := first_difference(back.values.to_pylist(), rows, "our write -> our read")) is None, d

    prop()


def test_every_avro_corpus_schema_is_covered():
    assert len(CASES) >= 20, [c.name for c in CASES]
    json.dumps([c.name for c in CASES])
