"""What a Python worker runs for one batch of a column function: picklable jobs over Arrow, each
a thin shell around the read core (:func:`connector.formats.decode_column`) or the write core
(:func:`connector.formats.encode_column`). The jobs are fixed on the driver; registry clients
and compiled schemas are created lazily in each worker and cached there."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from wireformat import DEFAULT_LIMITS, Framing, Limits, uuid_strings

from connector.errors import DecodeError
from connector.formats import EncodeError, Mode, decode_column, encode_column, first_error_row

if TYPE_CHECKING:
    from registry import RegistryConfig

    from connector.formats import Decoder, MultiDecoder
    from connector.schema import WriterSchema

__all__ = ["DecodeJob", "HeaderJob", "EncodeJob", "HEADER_TYPE"]

HEADER_TYPE = pa.struct([("framing", pa.string()), ("schema_id", pa.int64()), ("schema_guid", pa.string()),
                         ("payload", pa.binary()), ("error", pa.string())])


def _lookup_for(config: RegistryConfig | None) -> Callable[[Any], Any] | None:
    """The worker's cached registry client (``registry.client_for`` caches per configuration and
    process); ``None`` config means every row is read with the reader schema."""
    if config is None:
        return None
    from registry import client_for

    return client_for(config).lookup


def _cast(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr if arr.type.equals(typ) else arr.cast(typ)


@dataclasses.dataclass(frozen=True)
class DecodeJob:
    """``from_registry`` on one batch."""

    decoder: Decoder | MultiDecoder
    framing: Framing
    registry_config: RegistryConfig | None  # None: every row is read with the reader schema
    mode: Mode
    with_errors: bool
    protobuf_indexes: bool
    out_type: pa.DataType  # the Arrow type Spark expects back
    limits: Limits = DEFAULT_LIMITS
    rules: Any = None        # connector.schema.rules.ReadRules
    topic: str | None = None  # the records' topic, when given as a name

    def run(self, values: pa.Array, headers: pa.Array | None = None, topics: pa.Array | None = None) -> pa.Array:
        res = decode_column(values, framing=self.framing, decoder=self.decoder,
                            lookup=_lookup_for(self.registry_config), headers=headers,
                            limits=self.limits, protobuf_indexes=self.protobuf_indexes, rules=self.rules,
                            topics=topics if topics is not None else self.topic)
        if self.mode is Mode.FAILFAST:
            i = first_error_row(res.errors)
            if i is not None:
                raise DecodeError(
                    f"from_registry: malformed record at row {i} of the batch: {res.errors[i].as_py()}. "
                    "Use mode='PERMISSIVE' (null on bad rows) or with_errors=True (error text per row)",
                    schema_id=res.parsed.schema_id_at(i))
        if self.with_errors:
            value_type = self.out_type.field(0).type
            return pa.StructArray.from_arrays([_cast(res.values, value_type), res.errors],
                                              fields=list(self.out_type))
        return _cast(res.values, self.out_type)


@dataclasses.dataclass(frozen=True)
class HeaderJob:
    """``strip_header`` / ``schema_id`` on one batch: the framing parsed, nothing decoded."""

    framing: Framing
    out_type: pa.DataType = HEADER_TYPE

    def run(self, values: pa.Array, headers: pa.Array | None = None) -> pa.Array:
        res = decode_column(values, framing=self.framing, decoder=None, headers=headers)
        parsed = res.parsed
        cols = [parsed.framing_names(), parsed.int_id, uuid_strings(parsed.guid), res.values, res.errors]
        return pa.StructArray.from_arrays(cols, fields=list(self.out_type), mask=pc.is_null(res.raw))


@dataclasses.dataclass(frozen=True)
class EncodeJob:
    """``to_registry`` on one batch."""

    writer: WriterSchema
    compression: str | None
    mode: Mode
    with_errors: bool
    topic: str | None = None

    def run(self, values: pa.Array) -> pa.Array:
        w = self.writer
        out = encode_column(values, encoder=w.encoder, framing=w.framing, schema_id=w.wire_id,
                            message_indexes=w.message_indexes, compression=self.compression, rules=w.rules,
                            topics=self.topic)
        i = first_error_row(out.errors) if self.mode is Mode.FAILFAST and out.error_count else None
        if i is not None:
            raise EncodeError(f"to_registry: row {i} of the batch cannot be encoded: {out.errors[i].as_py()}. "
                              "Use mode='PERMISSIVE' (null on bad rows) or with_errors=True (error text per row)")
        if self.with_errors:
            return pa.StructArray.from_arrays([out.values, out.errors.cast(pa.string())],
                                              fields=[pa.field("value", pa.binary()), pa.field("error", pa.string())])
        return out.values
