"""Protobuf round trip over every corpus schema (``benchmarks/corpus/protobuf``) and every
message of ``fulfilment_shapes.proto`` (the first, second and third top-level messages and a
nested one), three ways:

1. our write (``encode_column``, Confluent framing with message indexes) → confluent-kafka's
   ``ProtobufDeserializer`` gives back the value;
2. confluent-kafka's ``ProtobufSerializer`` (which registers the file descriptor and its
   imports) → our read (``decode_column``, writer schema fetched from the registry) gives
   back the row;
3. our write → our read gives back the row.

The Glue package has no Protobuf codec. Values are Hypothesis batches (``protobuf_values.rows``).
"""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given

from benchmarks.corpus._gen import Spec, cases
from connector.formats import EncodeOptions, build_decoder, build_encoder, decode_column, encode_column
from connector.formats.protobuf._schema import compile_proto
from tests.roundtrip import protobuf_values as pv
from tests.roundtrip.common import PROPERTY, batches, first_difference
from wireformat import Framing

pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.serialization import MessageField, SerializationContext

CTX = SerializationContext("roundtrip", MessageField.VALUE)
_SHAPES = "protobuf/fulfilment_shapes"
_MORE = ["corpus.fulfilment.v1.OrderPlaced", "corpus.fulfilment.v1.OrderShipped",
         "corpus.fulfilment.v1.OrderPlaced.Line"]


def _params():
    out = []
    for c in cases():
        if c.fmt != "protobuf":
            continue
        out.append(pytest.param(c, c.message, id=c.name))
        if c.name == _SHAPES:
            out += [pytest.param(c, m, id=f"{c.name}:{m.rpartition('.')[2]}") for m in _MORE]
    return out


class Setup:
    """Everything one message's property needs, built once per message."""

    def __init__(self, case, message, registry, client):
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

        spec = Spec(case.fmt, case.text, message)
        depth = case.options.max_recursion_depth
        self.encoder = build_encoder(spec, options=EncodeOptions(max_recursion_depth=depth))
        self.decoder = build_decoder(spec, options=case.options)
        self.type = self.encoder.arrow_type
        assert self.type == self.decoder.arrow_type
        compiled = compile_proto(case.text, ())
        self.pool = compiled.pool
        self.desc = compiled.find(message)
        self.cls = compiled.message_class(self.desc)
        subject = f"rt-{case.name.replace('/', '-')}-{message}"
        self.sid = registry.register(f"{subject}-ours-value", case.text, "PROTOBUF")
        self.deserialize = ProtobufDeserializer(self.cls, {"use.deprecated.format": False})
        self.serialize = ProtobufSerializer(self.cls, client, {
            "use.deprecated.format": False, "auto.register.schemas": True,
            "subject.name.strategy": lambda ctx, name: subject})

    def strategy(self):
        return batches(pv.rows(self.desc, self.type), pv.rows(self.desc, self.type, large=True))

    def normal(self, rows):
        return [pv.normal(self.desc, self.type, r) for r in rows]


@pytest.mark.parametrize("case, message", _params())
def test_protobuf_round_trip(case, message, setup_for, our_lookup):
    s = setup_for(case, message)

    @PROPERTY
    @given(s.strategy())
    def prop(rows):
        want = s.normal(rows)
        values = pa.array(rows, s.type)
        ours = encode_column(values, encoder=s.encoder, framing=Framing.CONFLUENT, schema_id=s.sid,
                             message_indexes=tuple(s.encoder.message_indexes))
        assert ours.error_count == 0, ours.errors.drop_null()[:1].to_pylist()
        framed = ours.values.to_pylist()

        # 1. our write -> the reference reader
        got = s.normal([pv.arrow_form(s.deserialize(v, CTX), s.type, s.pool) for v in framed])
        assert (d := first_difference(got, want, "our write -> ProtobufDeserializer")) is None, d

        # 2. the reference writer -> our read
        theirs = [s.serialize(pv.message(s.cls, r, s.pool), CTX) for r in rows]
        back = decode_column(pa.array(theirs, pa.binary()), framing=Framing.CONFLUENT, decoder=s.decoder,
                             lookup=our_lookup, protobuf_indexes=True)
        assert back.errors.null_count == len(rows), back.errors.drop_null()[:1].to_pylist()
        assert (d := first_difference(s.normal(back.values.to_pylist()), want, "ProtobufSerializer -> our read")) \
            is None, d

        # 3. our write -> our read
        back = decode_column(ours.values, framing=Framing.CONFLUENT, decoder=s.decoder, lookup=None,
                             protobuf_indexes=True)
        assert back.errors.null_count == len(rows), back.errors.drop_null()[:1].to_pylist()
        assert (d := first_difference(s.normal(back.values.to_pylist()), want, "our write -> our read")) is None, d

    prop()
