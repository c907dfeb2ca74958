"""Raw Kafka Arrow batches → the source's output batches. Pure Arrow, no pyspark.

One call per raw batch: vectorized header parse (``wireformat``), decode grouped by writer
schema (``connector.decode``), then the error mode, the metadata columns and a final cast to
the exact Arrow schema Spark expects. Runs on executors inside ``read()``.
"""
from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.errors import DecodeError

__all__ = ["Pipeline", "ERROR_COLUMN", "RAW_VALUE_COLUMN", "SCHEMA_ID_COLUMN"]

log = logging.getLogger("asyncapi_kafka")

ERROR_COLUMN = "_error"
RESCUED_COLUMN = "_rescued_data"
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
    value_decoder, key_decoder : connector.decode.Decoder or None
        ``None`` value decoder means the value stays binary (payload with the header stripped).
    framing, key_framing : str
        ``wireformat.Framing`` values for value and key.
    """

    arrow_schema: pa.Schema
    value_decoder: object | None
    key_decoder: object | None
    framing: str
    key_framing: str
    key_as_string: bool
    mode: str
    include_headers: bool
    value_shape: str
    schema_id_kind: str  # "long" | "string" | "none"
    param_pattern: str | None
    param_names: tuple[str, ...]
    limits: object
    protobuf_indexes: bool
    key_protobuf_indexes: bool
    # (topic, values in param_names order) when the topics are fixed (every parameter given).
    param_values: tuple[tuple[str, tuple[str | None, ...]], ...] = ()
    # (regex group, parameter name): group names differ from parameter names that are not
    # identifiers (``sales-region``); empty means "groups are named after the parameters".
    param_groups: tuple[tuple[str, str], ...] = ()
    # Parameters given as options while others stay open: constant columns.
    param_given: tuple[tuple[str, str], ...] = ()
    # schemaEvolutionMode=rescue: a _rescued_data column from DecodeResult.rescued.
    rescue: bool = False

    def needs_headers(self) -> bool:
        from wireformat import Framing

        return self.include_headers or Framing(self.framing).in_header or Framing(self.key_framing).in_header

    def process(self, raw: pa.RecordBatch, lookup: Callable) -> pa.RecordBatch | None:
        """Turn one raw batch into an output batch, applying the error mode.

        Returns ``None`` when every row was dropped (DROPMALFORMED).
        """
        from wireformat import error_messages, parse_frames

        n = raw.num_rows
        headers = raw.column("headers") if "headers" in raw.schema.names else None
        errors: list[pa.Array] = []

        parsed = parse_frames(raw.column("value"), self.framing, headers=headers, is_key=False,
                              limits=self.limits, protobuf_indexes=self.protobuf_indexes)
        rescued = pa.nulls(n, pa.string()) if self.rescue else None
        if self.value_decoder is not None:
            result = self.value_decoder.decode(parsed, lookup)
            value, value_err = result.values, result.errors
            if self.rescue and result.rescued is not None:
                rescued = result.rescued
        else:
            value = parsed.payload
            value_err = error_messages(parsed.error)
        errors.append(_tombstones_ok(value_err, raw.column("value")))

        key = raw.column("key")
        if self.key_decoder is not None:
            key_parsed = parse_frames(key, self.key_framing, headers=headers, is_key=True,
                                      limits=self.limits, protobuf_indexes=self.key_protobuf_indexes)
            key_result = self.key_decoder.decode(key_parsed, lookup)
            key = key_result.values
            errors.append(_prefix("key: ", key_result.errors, key_parsed, nulls_ok=True, raw=raw.column("key")))
        elif self.key_as_string:
            key = _utf8_or_error(key, errors)

        error = _first_error(errors, n)
        bad = ~pc.is_null(error).to_numpy(zero_copy_only=False) if error.null_count < n else np.zeros(n, bool)
        if self.framing == "none" and bad.any():
            error = _framing_hint(error, raw.column("value"), bad)

        if bad.any():
            if self.mode == "FAILFAST":
                i = int(np.flatnonzero(bad)[0])
                raise DecodeError(
                    f"malformed record: {error[i].as_py()}. Set mode to PERMISSIVE to keep such "
                    "records with an error column, or DROPMALFORMED to skip them",
                    topic=raw.column("topic")[i].as_py(), partition=raw.column("partition")[i].as_py(),
                    offset=raw.column("offset")[i].as_py(), schema_id=_id_at(parsed, i))
            if self.mode == "DROPMALFORMED":
                keep = pa.array(~bad)
                log.warning("DROPMALFORMED: dropped %d malformed record(s) of %s partition %s",
                            int(bad.sum()), raw.column("topic")[0].as_py(), raw.column("partition")[0].as_py())
                raw, value, key, error = (raw.filter(keep), value.filter(keep), key.filter(keep),
                                          error.filter(keep))
                rescued = rescued.filter(keep) if rescued is not None else None
                parsed_ids = _schema_ids(parsed, self.schema_id_kind).filter(keep)
                if raw.num_rows == 0:
                    return None
                return self._assemble(raw, key, value, parsed_ids, error, None, rescued)
        value_raw = None
        if self.mode == "PERMISSIVE":
            value_raw = pc.if_else(pa.array(bad), _as_binary(raw.column("value")), pa.nulls(n, pa.binary()))
        return self._assemble(raw, key, value, _schema_ids(parsed, self.schema_id_kind), error, value_raw,
                              rescued)

    def _assemble(self, raw, key, value, schema_ids, error, value_raw, rescued=None) -> pa.RecordBatch:
        cols: dict[str, pa.Array] = {"key": key}
        if self.value_shape == "flatten" and pa.types.is_struct(value.type):
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
            cols[SCHEMA_ID_COLUMN] = schema_ids
        if self.param_names:
            cols.update(_param_columns(raw.column("topic"), self.param_pattern, self.param_names,
                                       dict(self.param_values), self.param_groups, dict(self.param_given)))
        if self.mode == "PERMISSIVE":
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


def _tombstones_ok(errors: pa.Array, raw_value) -> pa.Array:
    """A null value is a tombstone (a delete marker in compacted and CDC topics): a row with
    ``value = null`` and no error in every mode, as Spark's own Kafka source gives it."""
    if raw_value.null_count == 0:
        return errors
    return pc.if_else(pc.is_null(raw_value), pa.nulls(len(errors), pa.string()), errors)


def _as_binary(arr):
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.cast(pa.binary()) if not pa.types.is_binary(arr.type) else arr


# First bytes of registry-framed payloads, for the hint on records read with framing "none".
_MAGIC_HINTS = ((b"\x00", 5, "0x00, the Confluent wire-format magic byte: set the option wireFormat=confluent "
                              "(or schemaIdPayloadEncoding in the document's message binding)"),
                (b"\x03", 18, "0x03, the AWS Glue wire-format header: set the option wireFormat=glue"))


def _framing_hint(error: pa.Array, values: pa.Array, bad: np.ndarray) -> pa.Array:
    """Append a hint to the errors of records whose bytes look registry-framed while the read
    assumes unframed payloads (issue 17: a registry given as an option does not imply a framing)."""
    values = _as_binary(values)
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


def _prefix(prefix: str, errors: pa.Array, parsed, *, nulls_ok: bool, raw) -> pa.Array:
    """Key errors get a prefix; a null key is not an error (Kafka keys are optional)."""
    if nulls_ok:
        errors = pc.if_else(pc.is_null(raw), pa.nulls(len(errors), pa.string()), errors)
    return pc.binary_join_element_wise(pa.scalar(prefix), errors.cast(pa.string()), "")


def _utf8_or_error(key: pa.Array, errors: list) -> pa.Array:
    key = _as_binary(key)
    try:
        return key.cast(pa.string())
    except pa.ArrowInvalid:
        out, errs = [], []
        for v in key.to_pylist():  # rare path: only batches holding a key that is not UTF-8
            try:
                out.append(None if v is None else v.decode("utf-8"))
                errs.append(None)
            except UnicodeDecodeError as e:
                out.append(None)
                errs.append(f"key: not valid UTF-8 ({e.reason} at byte {e.start})")
        errors.append(pa.array(errs, pa.string()))
        return pa.array(out, pa.string())


def _schema_ids(parsed, kind: str) -> pa.Array:
    if kind == "long":
        return parsed.int_id
    if kind == "string":
        guid = parsed.guid
        if guid.null_count == len(guid):
            return pc.cast(parsed.int_id, pa.string())
        return pc.coalesce(uuid_strings(guid), pc.cast(parsed.int_id, pa.string()))
    return pa.nulls(len(parsed.payload), pa.string())


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# Positions of the 32 hex digits inside the 36-character canonical UUID text.
_DIGIT_POS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def uuid_strings(guid: pa.FixedSizeBinaryArray) -> pa.StringArray:
    """Canonical UUID text for every row of a ``fixed_size_binary(16)`` array, vectorized."""
    n = len(guid)
    raw = np.frombuffer(guid.buffers()[1], dtype=np.uint8)[guid.offset * 16:(guid.offset + n) * 16].reshape(n, 16)
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[raw >> 4]
    digits[:, 1::2] = _HEX[raw & 0x0F]
    text[:, _DIGIT_POS] = digits
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * 36).tobytes())
    validity = guid.buffers()[0]
    if validity is not None and guid.offset:
        validity = pc.is_valid(guid).buffers()[1]
    return pa.StringArray.from_buffers(n, offsets, pa.py_buffer(text.tobytes()), validity, guid.null_count)


def _id_at(parsed, i: int):
    v = parsed.int_id[i].as_py()
    if v is not None:
        return v
    g = parsed.guid[i].as_py()
    return str(uuid.UUID(bytes=g)) if g else None


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
