"""Raw Kafka Arrow batches → the source's output batches. Pure Arrow, no pyspark.

One call per raw batch: the decode core the column functions share
(``connector.formats.decode_column``: framing parse, decode grouped by writer schema,
tombstones) for value and key, then what only the source has: the error mode with its
columns, the metadata, schema-id and parameter columns, and a final cast to the exact Arrow
schema Spark expects. Runs on executors inside ``read()``.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats import RESCUED_COLUMN, ColumnResult, Decoder, Mode, MultiDecoder, as_binary, decode_column
from connector.errors import DecodeError
from connector.options import ValueShape
from wireformat import DEFAULT_LIMITS, Framing, Limits

__all__ = ["Pipeline", "ERROR_COLUMN", "RAW_VALUE_COLUMN", "SCHEMA_ID_COLUMN"]

log = logging.getLogger("asyncapi_kafka")

ERROR_COLUMN = "_error"
RAW_VALUE_COLUMN = "_raw_value"
SCHEMA_ID_COLUMN = "schemaId"
META_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestampType")


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """Everything an executor needs to turn raw batches into output batches (picklable).

    Attributes
    ----------
    arrow_schema : pa.Schema
        The exact output schema (``to_arrow_schema`` of the Spark schema).
    value_decoder : Decoder, MultiDecoder or None
        ``None`` means the value stays binary (payload with the header stripped).
    key_decoder : Decoder or None
    framing, key_framing : wireformat.Framing
        Framings of value and key.
    mode : connector.formats.Mode
        FAILFAST / PERMISSIVE / DROPMALFORMED.
    schema_id_kind : str
        Type of the ``schemaId`` column: ``"long"``, ``"string"`` or ``"none"`` (no column).
    limits : wireformat.Limits
    """

    arrow_schema: pa.Schema
    value_decoder: Decoder | MultiDecoder | None
    key_decoder: Decoder | None
    framing: Framing
    key_framing: Framing
    key_as_string: bool
    mode: Mode
    include_headers: bool
    value_shape: ValueShape
    schema_id_kind: Literal["long", "string", "none"]
    param_pattern: str | None
    param_names: tuple[str, ...]
    limits: Limits = DEFAULT_LIMITS
    protobuf_indexes: bool = False
    key_protobuf_indexes: bool = False
    # (topic, values in param_names order) when the topics are fixed (every parameter given).
    param_values: tuple[tuple[str, tuple[str | None, ...]], ...] = ()
    # (regex group, parameter name): group names differ from parameter names that are not
    # identifiers (``sales-region``); empty means "groups are named after the parameters".
    param_groups: tuple[tuple[str, str], ...] = ()
    # Parameters given as options while others stay open: constant columns.
    param_given: tuple[tuple[str, str], ...] = ()
    # schemaEvolutionMode=rescue: a _rescued_data column from DecodeResult.rescued.
    rescue: bool = False
    # data-contract rules of values and keys (connector.schema.rules.ReadRules), from the schema layer
    value_rules: Any = None
    key_rules: Any = None

    def needs_headers(self) -> bool:
        return (self.include_headers or self.framing.in_header or self.key_framing.in_header
                or bool(getattr(self.value_decoder, "routes_by_header", False)))

    def process(self, raw: pa.RecordBatch, lookup: Callable[[Any], Any]) -> pa.RecordBatch | None:
        """Turn one raw batch into an output batch, applying the error mode.

        Returns ``None`` when every row was dropped (DROPMALFORMED).
        """
        n = raw.num_rows
        headers = raw.column("headers") if "headers" in raw.schema.names else None
        res = decode_column(raw.column("value"), framing=self.framing, decoder=self.value_decoder,
                            lookup=lookup, headers=headers, limits=self.limits,
                            protobuf_indexes=self.protobuf_indexes, rules=self.value_rules,
                            topics=raw.column("topic"), keys=raw.column("key"))
        value = res.values
        rescued = None
        if self.rescue:
            rescued = res.rescued if res.rescued is not None else pa.nulls(n, pa.string())
        errors = [res.errors]

        key = raw.column("key")
        if self.key_decoder is not None:
            key_res = decode_column(key, framing=self.key_framing, decoder=self.key_decoder, lookup=lookup,
                                    headers=headers, limits=self.limits,
                                    protobuf_indexes=self.key_protobuf_indexes, is_key=True, rules=self.key_rules,
                                    topics=raw.column("topic"), keys=key)
            key = key_res.values
            errors.append(pc.binary_join_element_wise(pa.scalar("key: "), key_res.errors, ""))
        elif self.key_as_string:
            key = _utf8_or_error(key, errors)

        error = _first_error(errors, n)
        bad = ~pc.is_null(error).to_numpy(zero_copy_only=False) if error.null_count < n else np.zeros(n, bool)
        if not bad.any():
            value_raw = pa.nulls(n, pa.binary()) if self.mode is Mode.PERMISSIVE else None
            return self._assemble(raw, key, value, res, error, value_raw, rescued)
        if self.framing is Framing.NONE:
            error = _framing_hint(error, res.raw, bad)
        if self.mode is Mode.FAILFAST:
            i = int(np.flatnonzero(bad)[0])
            raise DecodeError(
                f"malformed record: {error[i].as_py()}. Set mode to PERMISSIVE to keep such "
                "records with an error column, or DROPMALFORMED to skip them",
                topic=raw.column("topic")[i].as_py(), partition=raw.column("partition")[i].as_py(),
                offset=raw.column("offset")[i].as_py(), schema_id=res.parsed.schema_id_at(i))
        if self.mode is Mode.DROPMALFORMED:
            keep = pa.array(~bad)
            log.warning("DROPMALFORMED: dropped %d malformed record(s) of %s partition %s",
                        int(bad.sum()), raw.column("topic")[0].as_py(), raw.column("partition")[0].as_py())
            if bad.all():
                return None
            return self._assemble(raw.filter(keep), key.filter(keep), value.filter(keep), res, error.filter(keep),
                                  None, rescued.filter(keep) if rescued is not None else None, keep=keep)
        value_raw = pc.if_else(pa.array(bad), res.raw, pa.nulls(n, pa.binary()))
        return self._assemble(raw, key, value, res, error, value_raw, rescued)

    def _assemble(self, raw: pa.RecordBatch, key: pa.Array, value: pa.Array, res: ColumnResult, error: pa.Array,
                  value_raw: pa.Array | None, rescued: pa.Array | None = None,
                  keep: pa.Array | None = None) -> pa.RecordBatch:
        cols: dict[str, pa.Array] = {"key": key}
        if self.value_shape is ValueShape.FLATTEN and pa.types.is_struct(value.type):
            flat = value.flatten() if hasattr(value, "flatten") else [value.field(i) for i in range(value.type.num_fields)]
            for field, arr in zip(value.type, flat):
                cols[field.name] = arr
        else:
            cols["value"] = value
        for name in META_COLUMNS:
            cols[name] = raw.column(name)
        if self.include_headers:
            cols["headers"] = raw.column("headers")
        if self.schema_id_kind != "none":
            ids = res.parsed.schema_id_column(text=self.schema_id_kind == "string")
            cols[SCHEMA_ID_COLUMN] = ids.filter(keep) if keep is not None else ids
        if self.param_names:
            cols.update(_param_columns(raw.column("topic"), self.param_pattern, self.param_names,
                                       dict(self.param_values), self.param_groups, dict(self.param_given)))
        if self.mode is Mode.PERMISSIVE:
            cols[ERROR_COLUMN] = error
            cols[RAW_VALUE_COLUMN] = value_raw
        if self.rescue:
            cols[RESCUED_COLUMN] = rescued
        arrays = []
        for field in self.arrow_schema:
            arr = cols[field.name]
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            if not arr.type.equals(field.type):
                arr = arr.cast(field.type)
            arrays.append(arr)
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)


# First bytes of registry-framed payloads, for the hint on records read with framing "none".
_MAGIC_HINTS = ((b"\x00", 5, "0x00, the Confluent wire-format magic byte: set the option wireFormat=confluent "
                              "(or schemaIdPayloadEncoding in the document's message binding)"),
                (b"\x03", 18, "0x03, the AWS Glue wire-format header: set the option wireFormat=glue"))


def _framing_hint(error: pa.Array, values: pa.Array, bad: np.ndarray) -> pa.Array:
    """Append a hint to the errors of records whose bytes look registry-framed while the read
    assumes unframed payloads (issue 17: a registry given as an option does not imply a framing)."""
    first = pc.binary_slice(values, 0, 1)
    lengths = pc.fill_null(pc.binary_length(values), 0)
    out = error
    for magic, min_len, text in _MAGIC_HINTS:
        hit = pc.and_(pc.and_(pc.equal(first, pa.scalar(magic, pa.binary())), pc.greater_equal(lengths, min_len)),
                      pa.array(bad))
        hit = pc.fill_null(hit, False)
        if pc.any(hit).as_py():
            hinted = pc.binary_join_element_wise(out, pa.scalar(f" (hint: the record starts with {text})"), "")
            out = pc.if_else(hit, hinted, out)
    return out


def _first_error(errors: list[pa.Array], n: int) -> pa.Array:
    out = pa.nulls(n, pa.string())
    for err in reversed(errors):
        if err is None:
            continue
        out = pc.coalesce(err.cast(pa.string()), out)
    return out


def _utf8_or_error(key: pa.Array, errors: list) -> pa.Array:
    key = as_binary(key)
    try:
        return key.cast(pa.string())
    except pa.ArrowInvalid:
        out: list[str | None] = []
        errs: list[str | None] = []
        for v in key.to_pylist():  # rare path: only batches holding a key that is not UTF-8
            try:
                out.append(None if v is None else v.decode("utf-8"))
                errs.append(None)
            except UnicodeDecodeError as e:
                out.append(None)
                errs.append(f"key: not valid UTF-8 ({e.reason} at byte {e.start})")
        errors.append(pa.array(errs, pa.string()))
        return pa.array(out, pa.string())


def _param_columns(topics: pa.Array, pattern: str | None, names: tuple[str, ...], fixed: dict | None = None,
                   groups: tuple[tuple[str, str], ...] = (), given: dict | None = None) -> dict[str, pa.Array]:
    """Address parameter columns: from ``fixed`` (topic → values) when the topics were fixed on
    the driver, else the ``given`` values plus the ``groups`` of ``pattern``; one match per
    distinct topic."""
    import re

    rx = re.compile(pattern) if pattern else None
    if rx is not None and not groups:
        groups = tuple((n, n) for n in names if n in rx.groupindex)
    encoded = pc.dictionary_encode(topics)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    out = {}
    dictionary = encoded.dictionary.to_pylist()
    rows = []
    for t in dictionary:
        if fixed and t in fixed:
            rows.append(tuple(fixed[t]))
            continue
        m = rx.fullmatch(t) if rx and t is not None else None
        if m is None:
            rows.append((None,) * len(names))
            continue
        values = dict(given or {})
        values.update((name, m.group(group)) for group, name in groups)
        rows.append(tuple(values.get(n) for n in names))
    for j, name in enumerate(names):
        values = pa.array([r[j] for r in rows], pa.string())
        out[name] = values.take(encoded.indices)
    return out
