"""Orchestration: one Arrow column of a schema's type → one unframed payload per row.

The encoder is built on the driver from the channel's message schema (or a registry
schema) and shipped to executors: it holds the schema text and options only; compiled
schemas and encoders live in a per-process cache, built on first use.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats._registry import payload_format, schema_format
from connector.formats.core import (
    EncodeError,
    EncodeOptions,
    EncodeResult,
    EncoderModel,
    ProcessCache,
    SchemaBound,
    ValueFitError,
    coerce,
    refs_of,
)

__all__ = ["Encoder", "build_encoder"]

_NONE = np.array(None, object)  # compares like None; numpy's stubs refuse a bare None operand


def _model(e: "Encoder") -> EncoderModel:
    return payload_format(e.fmt).encoder(e.text, e.refs, e.message, e.options)


_STATES = ProcessCache()


class Encoder(SchemaBound):
    """Encodes one Arrow column (of :attr:`arrow_type`) into Avro / JSON / Protobuf payloads.

    Build with :func:`build_encoder`. Picklable: holds the schema text and options only.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from connector.formats import build_encoder
    >>> class Spec:  # e.g. connector.asyncapi.SchemaSpec
    ...     format = "avro"
    ...     text = '{"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}'
    >>> enc = build_encoder(Spec())
    >>> enc.encode(pa.array([{"n": 1}, None], enc.arrow_type)).payloads.to_pylist()
    [b'\\x02', None]
    """

    options: EncodeOptions

    def __repr__(self):
        return f"Encoder({self.fmt}, message={self.message!r})"

    def _state(self) -> EncoderModel:
        return _STATES.get(self._key, lambda: _model(self))

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type :meth:`encode` expects: the decoder's type for the same schema."""
        return self._state().arrow_type

    @property
    def full_name(self) -> str | None:
        """Full name of the written record / message type (JSON: the schema ``title``), for
        the record-name subject strategies."""
        return self._state().full_name

    @property
    def message_indexes(self) -> list[int] | None:
        """Protobuf: the Confluent message-index path of the written message; else None."""
        return self._state().message_indexes

    def coerce(self, values: pa.Array, column: str = "value") -> pa.Array:
        """Cast a Spark-produced Arrow column to :attr:`arrow_type`.

        Structs are matched by field name; ``large_string``, other int widths, timestamp
        units and decimal scales are cast safely.

        Raises
        ------
        EncodeError
            A field the schema has is missing, the input has fields the schema lacks, a
            column's type cannot be written as the schema's, or a value does not fit (the
            message names the column path).
        """
        return coerce(values, self.arrow_type, column)

    def encode(self, values: pa.Array, column: str = "value", prefix: bytes = b"") -> EncodeResult:
        """Encode every row; never raises for bad values (those rows get error text).

        ``values`` of another type than :attr:`arrow_type` are coerced first; values that do
        not fit the schema's types become row errors, structural mismatches raise
        :class:`EncodeError`. A null input row gives a null payload (a tombstone), no error.
        Every payload starts with ``prefix`` (a framing header: see
        :func:`wireformat.frame_prefix`), written in the same pass.
        """
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        st = self._state()
        n = len(values)
        pre_errors = None
        if not values.type.equals(st.arrow_type):
            values, pre_errors = _coerce_rows(values, st.arrow_type, column)
        payloads, errors = st.encode(values, self.options.fast_path, prefix)
        return _result(n, payloads, errors, pre_errors)


def _result(n: int, payloads: pa.Array, errors, pre_errors) -> EncodeResult:
    if errors is None and pre_errors is None:  # every row encoded (the common case)
        return EncodeResult(payloads, pa.nulls(n, pa.string()))
    errs = np.full(n, None, object) if errors is None else \
        errors if isinstance(errors, np.ndarray) else np.asarray(errors, object)
    if pre_errors is not None:
        bad = np.not_equal(pre_errors, _NONE)
        errs = errs.copy()
        errs[bad] = pre_errors[bad]
    bad = np.not_equal(errs, _NONE).astype(bool)
    if not bad.any():
        return EncodeResult(payloads, pa.nulls(n, pa.string()))
    payloads = pc.if_else(pa.array(bad), pa.nulls(n, pa.binary()), payloads)
    return EncodeResult(payloads, pa.array(errs, pa.string()))


def _coerce_rows(values: pa.Array, target: pa.DataType, column: str):
    """Coerce, turning values that do not fit into per-row errors (rows then null)."""
    try:
        return coerce(values, target, column), None
    except ValueFitError:
        pass
    n = len(values)
    errors = np.full(n, None, object)
    good = np.ones(n, bool)

    def bisect(lo: int, hi: int) -> None:  # only failing halves are split: O(bad rows * log n)
        try:
            coerce(values.slice(lo, hi - lo), target, column)
        except ValueFitError as e:
            if hi - lo == 1:
                errors[lo] = str(e)
                good[lo] = False
                return
            mid = (lo + hi) // 2
            bisect(lo, mid)
            bisect(mid, hi)

    bisect(0, n)
    kept = coerce(values.filter(pa.array(good)), target, column)
    idx = np.full(n, -1, np.int64)
    idx[good] = np.arange(int(good.sum()))
    return kept.take(pa.array(idx, mask=~good)), errors


def build_encoder(schema: Any, *, fmt: str | None = None, message: str | None = None,
                  options: EncodeOptions = EncodeOptions()) -> Encoder:
    """Build an encoder for a message schema, on the driver.

    Parameters
    ----------
    schema : SchemaSpec-like or registry.Schema
        Anything with ``.text`` and ``.format`` (``"avro"``/``"json"``/``"protobuf"``) or
        ``.schema_type``, optionally ``.message_name`` (Protobuf) and
        ``.resolved_references`` — the same duck typing as
        :func:`connector.formats.build_decoder`.
    fmt : str, optional
        Format when ``schema`` does not say it.
    message : str, optional
        Protobuf: the message to write (full or simple name); else the schema's
        ``.message_name``, else its only top-level message.
    options : EncodeOptions

    Raises
    ------
    SchemaMappingError
        The schema cannot be mapped (recursion, unknown names, does not compile).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from connector.formats import build_encoder
    >>> class Spec:
    ...     format, text = "protobuf", 'syntax = "proto3"; message M { int64 n = 1; }'
    >>> enc = build_encoder(Spec())
    >>> enc.arrow_type, enc.message_indexes
    (StructType(struct<n: int64>), [0])
    >>> enc.encode(pa.array([{"n": 150}], enc.arrow_type)).payloads.to_pylist()
    [b'\\x08\\x96\\x01']
    """
    if schema is None:
        raise EncodeError("an encoder needs a schema")
    e = Encoder(schema_format(schema, fmt), getattr(schema, "text", None), refs_of(schema),
                message or getattr(schema, "message_name", None), options)
    _ = e.arrow_type  # compile now so schema problems surface on the driver
    return e
