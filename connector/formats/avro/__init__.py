"""Avro: the schema model (parse, named types, references, Arrow types), the vectorized decoder
(one numpy engine for the whole spec, with writer→reader resolution) and encoder, and the
per-record reference encoder the tests hold the vectorized one against.

Examples
--------
>>> from connector.formats.avro import AVRO, parse_avro, arrow_type_of
>>> node, recursive = parse_avro('{"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}')
>>> arrow_type_of(node), recursive, AVRO.name
(StructType(struct<n: int64>), False, 'avro')
"""
from connector.formats.avro._decode import AvroCodec
from connector.formats.avro._format import AVRO, AvroFormat, reader_aliases
from connector.formats.avro._schema import Node, arrow_type_of, parse_avro, union_kind

__all__ = ["AVRO", "AvroFormat", "AvroCodec", "Node", "arrow_type_of", "parse_avro", "union_kind", "reader_aliases"]
