"""JSON Schema round trip over every corpus schema (``benchmarks/corpus/json``), three ways:

1. our write (``encode_column``) → confluent-kafka's ``JSONDeserializer`` (which validates
   against the registered schema) and the Glue package's codec + ``JsonSchema`` (which
   validates with fastjsonschema) give back the document's value;
2. confluent-kafka's ``JSONSerializer`` → our read (``decode_column``, writer schema fetched
   from the registry) gives back the row;
3. our write → our read gives back the row.

Documents are Hypothesis draws valid for the schema (``json_values.documents``).
"""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest
from hypothesis import given

from benchmarks.corpus._gen import cases
from connector.formats import EncodeOptions, build_decoder, build_encoder, decode_column, encode_column
from connector.formats.json_schema._schema import parse_json_schema
from tests.roundtrip import json_values as jv
from tests.roundtrip.common import PROPERTY, batches, first_difference
from wireformat import Framing

pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.serialization import MessageField, SerializationContext

CASES = [c for c in cases() if c.fmt == "json"]
CTX = SerializationContext("roundtrip", MessageField.VALUE)


class Setup:
    """Everything one schema's property needs, built once per schema."""

    def __init__(self, case, registry, client):
        from aws_schema_registry.jsonschema import JsonSchema
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

        self.case = case
        depth = case.options.max_recursion_depth
        self.schema = json.loads(case.text)
        self.node = parse_json_schema(case.text, max_depth=depth)
        self.encoder = build_encoder(case.spec, options=EncodeOptions(max_recursion_depth=depth))
        self.decoder = build_decoder(case.spec, options=case.options)
        assert self.encoder.arrow_type == self.decoder.arrow_type
        subject = f"rt-{case.name.replace('/', '-')}"
        self.sid = registry.register(f"{subject}-ours-value", case.text, "JSON")
        self.deserialize = JSONDeserializer(None, schema_registry_client=client)
        self.serialize = JSONSerializer(case.text, client, conf={"auto.register.schemas": True,
                                                                 "subject.name.strategy": lambda ctx, n: subject})
        self.glue = JsonSchema(case.text)

    def strategy(self):
        return batches(jv.documents(self.schema), jv.documents(self.schema, large=True))

    def normal(self, rows):
        return [jv.normal(self.node, r) for r in rows]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_json_round_trip(case, setup_for, our_lookup):
    s = setup_for(case)

    @PROPERTY
    @given(s.strategy())
    def prop(docs):
        rows = [jv.arrow_form(s.node, d) for d in docs]
        want = s.normal(rows)
        values = pa.array(rows, s.encoder.arrow_type)
        ours = encode_column(values, encoder=s.encoder, framing=Framing.CONFLUENT, schema_id=s.sid)
        assert ours.error_count == 0, ours.errors.drop_null()[:1].to_pylist()
        framed = ours.values.to_pylist()

        # 1. our write -> the reference readers (both validate against the schema)
        got = s.normal([jv.arrow_form(s.node, s.deserialize(v, CTX)) for v in framed])
        assert (d := first_difference(got, want, "our write -> JSONDeserializer")) is None, d
        glue = encode_column(values, encoder=s.encoder, framing=Framing.GLUE, schema_id=str(uuid.UUID(int=s.sid)))
        from aws_schema_registry.codec import decode as glue_decode
        got = s.normal([jv.arrow_form(s.node, s.glue.read(glue_decode(v)[0])) for v in glue.values.to_pylist()])
        assert (d := first_difference(got, want, "our write -> Glue codec + JsonSchema")) is None, d

        # 2. the reference writer -> our read
        theirs = [s.serialize(doc, CTX) for doc in docs]
        back = decode_column(pa.array(theirs, pa.binary()), framing=Framing.CONFLUENT, decoder=s.decoder,
                             lookup=our_lookup)
        assert back.errors.null_count == len(rows), back.errors.drop_null()[:1].to_pylist()
        assert (d := first_difference(s.normal(back.values.to_pylist()), want, "JSONSerializer -> our read")) \
            is None, d

        # 3. our write -> our read
        back = decode_column(ours.values, framing=Framing.CONFLUENT, decoder=s.decoder, lookup=None)
        assert back.errors.null_count == len(rows), back.errors.drop_null()[:1].to_pylist()
        assert (d := first_difference(s.normal(back.values.to_pylist()), want, "our write -> our read")) is None, d

    prop()
