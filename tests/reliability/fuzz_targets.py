"""Coverage-guided fuzz targets (atheris/libFuzzer) for the parsers of hostile bytes.

Run by ``test_fuzz_atheris.py`` in a subprocess (libFuzzer ends the process when done)::

    python tests/reliability/fuzz_targets.py <target> -runs=2000 -seed=1

Targets: ``wireformat`` (every framing, header framings, Protobuf message indexes),
``avro``, ``protobuf``, ``json`` (decoders behind a Confluent frame with a fixed writer
schema) and ``loader`` (AsyncAPI YAML/JSON text). Only our error types (or per-row errors)
may come out; anything else is a crash that libFuzzer reports with the input.
"""
from __future__ import annotations

import json
import sys

import atheris

with atheris.instrument_imports(include=["wireformat", "connector.formats", "connector.asyncapi"]):
    import pyarrow as pa

    from connector.asyncapi import load_document
    from connector.formats import DecodeOptions, build_decoder
    from connector.errors import AsyncApiKafkaError
    from registry import Schema, SchemaType
    from wireformat import Framing, Limits, WireFormatError, parse_frames

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
FRAMINGS = list(Framing)
HEADER_NAMES = ["__value_schema_id", "__key_schema_id", "apicurio.value.globalId",
                "apicurio.key.contentId", "x"]
LIMITS = Limits(max_decompressed_bytes=10_000, max_message_indexes=16)

AVRO = json.dumps({"type": "record", "name": "W", "fields": [
    {"name": "id", "type": "long"}, {"name": "s", "type": "string"},
    {"name": "xs", "type": {"type": "array", "items": ["null", "int"]}},
    {"name": "m", "type": {"type": "map", "values": "double"}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "n", "type": {"type": "array", "items": "null"}}]})
PROTO = ('syntax = "proto3"; package f; message M { message I { string s = 1; } int64 id = 1; '
         'repeated I is = 2; map<string, int32> m = 3; oneof o { string a = 4; bytes b = 5; } }')
JSON = json.dumps({"type": "object", "properties": {"id": {"type": "integer"},
                                                    "xs": {"type": "array", "items": {"type": "number"}}}})


class _Spec:
    def __init__(self, fmt, text, message_name=None):
        self.format, self.text, self.message_name = fmt, text, message_name


def _decoder(fmt):
    opts = DecodeOptions(limits=Limits(max_collection_items=10_000))
    if fmt == "avro":
        return build_decoder(_Spec("avro", AVRO), options=opts), Schema(SchemaType.AVRO, AVRO, id=7)
    if fmt == "protobuf":
        return (build_decoder(_Spec("protobuf", PROTO, "f.M"), options=opts),
                Schema(SchemaType.PROTOBUF, PROTO, id=7))
    return build_decoder(_Spec("json", JSON), options=opts), Schema(SchemaType.JSON, JSON, id=7)


def wireformat_target(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    framing = FRAMINGS[fdp.ConsumeIntInRange(0, len(FRAMINGS) - 1)]
    n = fdp.ConsumeIntInRange(0, 4)
    values = [fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 48)) if fdp.ConsumeBool() else None
              for _ in range(n)]
    headers = [[{"key": HEADER_NAMES[fdp.ConsumeIntInRange(0, len(HEADER_NAMES) - 1)],
                 "value": fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 20))}
                for _ in range(fdp.ConsumeIntInRange(0, 2))] for _ in range(n)]
    try:
        pf = parse_frames(pa.array(values, pa.binary()), framing, headers=pa.array(headers, HEADERS_TYPE),
                          is_key=fdp.ConsumeBool(), protobuf_indexes=fdp.ConsumeBool(), limits=LIMITS)
    except WireFormatError:
        return
    if len(pf) != n:
        raise AssertionError("row count changed")
    pf.group_by_schema()


def decoder_target(fmt: str):
    dec, writer = _decoder(fmt)
    proto = fmt == "protobuf"

    def target(data: bytes) -> None:
        rows = [b"\x00\x00\x00\x00\x07" + chunk for chunk in data.split(b"|")[:6]]
        frames = parse_frames(pa.array(rows, pa.binary()), "confluent", protobuf_indexes=proto)
        res = dec.decode(frames, lambda key: writer)
        if len(res) != len(rows):
            raise AssertionError("row count changed")

    return target


def loader_target(data: bytes) -> None:
    try:
        load_document(data)
    except AsyncApiKafkaError:
        pass


def main() -> None:
    name = sys.argv.pop(1)
    target = {"wireformat": wireformat_target, "loader": loader_target}.get(name) or decoder_target(name)
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
