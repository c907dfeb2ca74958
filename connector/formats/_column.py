"""One column of framed Kafka bytes ⇄ one typed Arrow column: the read core and the write core.

:func:`decode_column` is shared by the ``asyncapi-kafka`` source (``read/_pipeline.py``) and
``from_registry``; :func:`encode_column` by the sink's tasks and ``to_registry``. Pure Arrow,
no pyspark.

Steps: coerce the input to ``binary``, parse the framing (``wireformat.parse_frames``), decode
grouped by writer schema (or pass the payload through when there is no decoder) — through the
schema's data-contract rules when the schema layer gave some (``rules``: decryption, migrations,
conditions, see ``connector.schema.rules``) — and apply the tombstone rule: a null input is a null value with no error in every mode, as Spark's own
Kafka source gives a delete marker. What a caller does with the errors (FAILFAST,
PERMISSIVE, DROPMALFORMED, an error struct) stays with the caller.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wireformat import (
    DEFAULT_LIMITS,
    ErrorCode,
    Framing,
    Limits,
    ParsedFrames,
    error_messages,
    frame_payloads,
    frame_prefix,
    parse_frames,
)

if TYPE_CHECKING:
    from connector.formats._decoder import Decoder
    from connector.formats._encoder import Encoder
    from connector.formats._multi import MultiDecoder

__all__ = ["ColumnResult", "decode_column", "EncodedColumn", "encode_column", "as_binary", "first_error_row"]


def as_binary(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous ``binary`` array (chunks combined; ``large_binary``/``string`` cast)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr if pa.types.is_binary(arr.type) else arr.cast(pa.binary())


@dataclass(frozen=True)
class ColumnResult:
    """Output of :func:`decode_column`; one entry per input row.

    Attributes
    ----------
    values : pa.Array
        The decoder's ``arrow_type`` (the payload, ``binary``, without a decoder); null on
        bad rows and null inputs.
    errors : pa.StringArray
        The reason per bad row; null on good rows and on null inputs (tombstones).
    parsed : wireformat.ParsedFrames
        The parsed framing (schema ids, framing per row).
    raw : pa.BinaryArray
        The input as one ``binary`` array (for a caller that keeps bad rows' bytes).
    framing : wireformat.Framing
        The framing the column was parsed with.
    rescued : pa.StringArray or None
        ``DecodeResult.rescued`` (``evolution="rescue"``); None otherwise.
    """

    values: pa.Array
    errors: pa.Array
    parsed: ParsedFrames
    raw: pa.Array
    framing: Framing
    rescued: pa.Array | None = None

    @property
    def schema_ids(self) -> pa.Array:
        """Schema id per row: UUID/decimal text when the framing shows ids as text
        (:attr:`Framing.id_text`), else ``int64``."""
        return self.parsed.schema_id_column(text=self.framing.id_text)


def decode_column(values: pa.Array | pa.ChunkedArray, *, framing: Framing,
                  decoder: "Decoder | MultiDecoder | None", lookup: Callable[[Any], Any] | None = None,
                  headers: pa.Array | None = None, limits: Limits = DEFAULT_LIMITS,
                  protobuf_indexes: bool = False, is_key: bool = False, rules: Any = None,
                  topics: Any = None, keys: pa.Array | None = None) -> ColumnResult:
    """Parse and decode one column of Kafka values (or keys).

    Parameters
    ----------
    values : pa.Array or pa.ChunkedArray
        ``binary`` (or castable to it) Kafka values or keys; nulls are tombstones.
    framing : wireformat.Framing
    decoder : Decoder, MultiDecoder or None
        None keeps the payload (bytes after the framing header) as ``binary``.
    lookup : callable, optional
        ``SchemaKey -> registry.Schema`` for the decoder (see :meth:`Decoder.decode`).
    headers : pa.ListArray, optional
        Kafka headers, for the ``header-*`` framings and for routing records of several
        message types that carry no schema id (``MultiDecoder``: ``__TypeId__``, ``ce_type``...).
    limits : wireformat.Limits
    protobuf_indexes : bool
        Parse Confluent's Protobuf message indexes after the id.
    is_key : bool
        Read the key header names of the ``header-*`` framings.
    rules : connector.schema.rules.ReadRules, optional
        The data-contract rules to apply (the schema layer's ``value_reading``); a rule's failure
        is the row's error.
    topics : str or pa.StringArray, optional
        The topic of every row (or of each): the rules' subjects (DEKs, migrations).
    keys : pa.Array, optional
        The record keys (sent along when a rule routes a record to a dead-letter topic).

    Returns
    -------
    ColumnResult
        Bad rows never raise; misconfiguration (and registry faults that are not the
        record's, see ``raise_unless_records_fault``) does.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from wireformat import Framing, encode_frame
    >>> from connector.formats import build_decoder, decode_column
    >>> class Spec:
    ...     format, text = "json", '{"type": "object", "properties": {"n": {"type": "integer"}}}'
    >>> res = decode_column(pa.array([encode_frame("confluent", 1, b'{"n": 5}'), None, b"junk"]),
    ...                     framing=Framing.CONFLUENT, decoder=build_decoder(Spec()), lookup=lambda key: None)
    >>> res.values.to_pylist(), res.errors.to_pylist()[:2], res.schema_ids.to_pylist()
    ([{'n': 5}, None, None], [None, None], [1, None, None])
    """
    raw = as_binary(values)
    parsed = parse_frames(raw, framing, headers=headers, is_key=is_key, limits=limits,
                          protobuf_indexes=protobuf_indexes)
    rescued = None
    if decoder is not None and rules is not None:
        result = rules.decode(parsed, decoder, lookup if lookup is not None else _no_registry, raw=raw,
                              topics=topics, keys=keys, headers=headers)
        out, errors, rescued = result.values, result.errors, result.rescued
    elif decoder is not None:
        result = decoder.decode(parsed, lookup if lookup is not None else _no_registry, headers=headers)
        out, errors, rescued = result.values, result.errors, result.rescued
    else:
        out, errors = parsed.payload, error_messages(parsed.error)
    tombstones = parsed.error == ErrorCode.NULL_VALUE
    if tombstones.any():
        errors = pc.if_else(pa.array(tombstones), pa.nulls(len(errors), pa.string()), errors)
    return ColumnResult(out, errors, parsed, raw, framing, rescued)


def _no_registry(key: Any) -> None:
    return None  # every row is read with the reader schema as its writer


def first_error_row(errors: pa.Array) -> int | None:
    """Index of the first non-null error (the row FAILFAST reports), None when all are null."""
    if errors.null_count == len(errors):
        return None
    return int(np.flatnonzero(pc.is_valid(errors).to_numpy(zero_copy_only=False))[0])


@dataclass(frozen=True)
class EncodedColumn:
    """Output of :func:`encode_column`; one entry per input row.

    Attributes
    ----------
    values : pa.BinaryArray
        The framed Kafka bytes; null for null inputs (tombstones) and for rows that failed.
    errors : pa.StringArray
        The reason per failed row (a value the schema cannot hold); null elsewhere.
    headers : list of (str, bytes) or None
        The schema-id header every record must carry (``header-*`` framings), else None.
    dropped : numpy bool array or None
        Rows a data-contract rule sent to its dead-letter topic: not written, not errors.
    """

    values: pa.Array
    errors: pa.Array
    headers: list | None = None
    dropped: np.ndarray | None = None

    @property
    def error_count(self) -> int:
        return len(self.errors) - self.errors.null_count


def encode_column(values: pa.Array | pa.ChunkedArray, *, encoder: "Encoder | None", framing: Framing,
                  schema_id: Any = None, message_indexes: tuple[int, ...] | None = None,
                  compression: str | None = None, is_key: bool = False, column: str = "value",
                  rules: Any = None, topics: Any = None, keys: Any = None) -> EncodedColumn:
    """Encode and frame one column of values (or keys): the write core of the sink and ``to_registry``.

    Parameters
    ----------
    values : pa.Array or pa.ChunkedArray
        Values of the encoder's ``arrow_type`` (or castable to it: Spark's Arrow types);
        nulls are tombstones. Without an encoder: ``binary`` or ``string``, written as given.
    encoder : Encoder or None
        None writes the bytes as they are, unframed.
    framing : wireformat.Framing
        Any framing but ``auto``; ``none`` writes the bare payloads.
    schema_id : int or str
        The id to frame with (GUID text for the GUID framings and Glue).
    message_indexes : tuple of int, optional
        Confluent Protobuf message indexes, for the framings that carry them.
    compression : {None, "zlib"}
        Glue only.
    is_key : bool
        Header framings: the key's header names.
    column : str
        Named in structural errors (a missing field of ``value``...).
    rules : connector.schema.rules.WriteRules, optional
        The data-contract rules of the schema framed with (``WriterSchema.rules``), applied
        before framing.
    topics, keys : optional
        Each row's topic (str or list; the rules' subjects) and key (dead-letter records).

    Returns
    -------
    EncodedColumn
        Values the schema cannot hold are row errors; a structural mismatch raises
        :class:`connector.formats.EncodeError`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from wireformat import Framing
    >>> from connector.formats import build_encoder, encode_column
    >>> class Spec:
    ...     format, text = "json", '{"type": "object", "properties": {"n": {"type": "integer"}}}'
    >>> enc = build_encoder(Spec())
    >>> out = encode_column(pa.array([{"n": 5}, None]), encoder=enc, framing=Framing.CONFLUENT, schema_id=1)
    >>> out.values.to_pylist(), out.error_count
    ([b'\\x00\\x00\\x00\\x00\\x01{"n":5}', None], 0)
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if encoder is None:
        if not pa.types.is_binary(values.type):
            values = values.cast(pa.binary())
        return EncodedColumn(values, pa.nulls(len(values), pa.string()))
    if rules is not None:  # rules transform payloads after encoding: framed afterwards
        outcome = rules.encode(values, encoder, column, topics=topics, keys=keys)
        res, dropped = outcome.result, (outcome.dropped if outcome.dropped.any() else None)
        if framing is Framing.NONE:
            return EncodedColumn(res.payloads, res.errors, None, dropped)
        framed = frame_payloads(res.payloads, framing, schema_id, message_indexes=message_indexes,
                                compression=compression, is_key=is_key)
        return EncodedColumn(framed.values, res.errors, framed.headers, dropped)
    if framing is Framing.NONE:
        res = encoder.encode(values, column)
        return EncodedColumn(res.payloads, res.errors)
    prefix, headers = frame_prefix(framing, schema_id, message_indexes=message_indexes, compression=compression,
                                   is_key=is_key)
    if prefix is not None:  # the header written with the payloads, in the encoder's one pass
        res = encoder.encode(values, column, prefix=prefix)
        return EncodedColumn(res.payloads, res.errors, headers)
    res = encoder.encode(values, column)
    framed = frame_payloads(res.payloads, framing, schema_id, message_indexes=message_indexes,
                            compression=compression, is_key=is_key)
    return EncodedColumn(framed.values, res.errors, framed.headers)
