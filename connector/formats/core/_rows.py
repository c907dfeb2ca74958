"""Row bookkeeping every decoder shares: writer groups scattered back into row order, and the
per-row error text of one batch (bad rows never raise; misconfiguration does)."""
from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wireformat import add_note

from connector.errors import SchemaMappingError
from connector.formats.core._options import DecodeResult

__all__ = ["label_of", "scatter", "row_groups", "raise_unless_records_fault", "payloads_of", "fault_text",
           "RowBook"]

_NONE = np.array(None, object)  # compares like None; numpy's stubs refuse a bare None operand


def label_of(key) -> str:
    ident = key[1]
    if isinstance(ident, (bytes, bytearray)) and len(ident) == 16:
        return str(uuid.UUID(bytes=bytes(ident)))
    return str(ident)


def scatter(n: int, parts: list[tuple[np.ndarray, pa.Array]], arrow_type: pa.DataType) -> pa.Array:
    """Place each part's values at its row indices; rows no part covers are null."""
    if not parts:
        return pa.nulls(n, arrow_type)
    if len(parts) == 1 and len(parts[0][0]) == n and len(parts[0][1]) == n:
        return parts[0][1]  # one group holding every row: indices are sorted, so 0..n-1
    parts = sorted(parts, key=lambda p: int(p[0][0]) if len(p[0]) else n)
    idx = np.concatenate([p[0] for p in parts]).astype(np.int64)
    if len(idx) == n and n and idx[0] == 0 and bool((np.diff(idx) == 1).all()):
        # groups in runs one after another (a writer changed mid-batch): no take needed
        return pa.concat_arrays([p[1] for p in parts])
    vals = pa.concat_arrays([p[1] for p in parts] + [pa.nulls(1, arrow_type)])
    perm = np.full(n, len(idx), np.int64)  # default: the trailing null
    perm[idx] = np.arange(len(idx), dtype=np.int64)
    return vals.take(pa.array(perm))


def row_groups(parsed, rows: np.ndarray, protobuf: bool) -> list[tuple[tuple, np.ndarray]]:
    """Split a schema group by Protobuf message-index path (``()`` when not Protobuf)."""
    mi = getattr(parsed, "message_indexes", None)
    if not protobuf or mi is None:
        return [((), rows)]
    sub = mi.take(pa.array(rows))
    lens = pc.list_value_length(sub).fill_null(0).to_numpy(zero_copy_only=False)
    if len(lens) and lens.max() <= 1:
        # common case (Confluent's [0] shorthand): one top-level index per row, vectorized
        first = np.zeros(len(rows), np.int64)
        flat = pc.list_flatten(sub).to_numpy(zero_copy_only=False)
        first[lens == 1] = flat
        return [((int(u),), rows[first == u]) for u in np.unique(first)]
    groups: dict[tuple, list] = {}
    for r, p in zip(rows.tolist(), sub.to_pylist()):
        groups.setdefault(tuple(p) if p else (0,), []).append(r)
    return [(k, np.asarray(v, np.int64)) for k, v in groups.items()]


def raise_unless_records_fault(e: Exception, label: str) -> None:
    """Re-raise lookup failures that are not the record's fault.

    Spark's parse modes cover malformed input only. A registry that is down, refuses our
    credentials or TLS, is not a registry at all, or is not configured must fail the task
    in every mode (Spark retries it): turning valid records into PERMISSIVE error rows or
    DROPMALFORMED drops would lose them silently. The error types say whose fault they are
    (``registry.is_records_fault``): only an id a *verified* registry does not know, or a
    schema it returns that cannot be used, marks the record itself as bad.
    """
    from registry import RegistryError, is_records_fault

    from connector.errors import ConfigError

    if is_records_fault(e):
        return
    # Other errors (a writer of the wrong format, SchemaMappingError) stay row errors.
    if isinstance(e, (RegistryError, ConfigError)):
        add_note(e, f"while looking up writer schema id {label}")
        raise e


def payloads_of(parsed, rows: np.ndarray) -> pa.Array:
    """The payloads of ``rows``; no copy when the group is every row in order (common)."""
    payload = parsed.payload
    if len(rows) == len(payload) and payload.null_count == 0 and \
            (len(rows) == 0 or (rows[0] == 0 and rows[-1] == len(rows) - 1)):
        return payload  # rows are sorted and distinct, so this is 0..n-1
    return payload.take(pa.array(rows))


def fault_text(e: Exception) -> str:
    """How a failed writer group is described in its rows' error text."""
    return str(e) if isinstance(e, SchemaMappingError) else f"{type(e).__name__}: {e}"


class RowBook:
    """Per-row error text and schema ids of one batch, kept in a numpy object array made on the
    first failing row (a batch with none, the common case, builds no per-row Python objects)."""

    def __init__(self, parsed):
        self.n = len(parsed)
        self._errors: np.ndarray | None = None
        if (parsed.error != 0).any():
            from wireformat import error_messages
            self.errors[:] = error_messages(parsed.error).to_numpy(zero_copy_only=False)
        self.parsed = parsed
        self.rescued: list[tuple[np.ndarray, pa.Array]] | None = None

    @property
    def errors(self) -> np.ndarray:
        if self._errors is None:
            self._errors = np.full(self.n, None, object)
        return self._errors

    def rescue(self, rows: np.ndarray, values: pa.Array | None) -> None:
        """Record rescued JSON for ``rows`` (``None``: the group had nothing to rescue)."""
        if values is not None:
            self.rescued = (self.rescued or []) + [(rows, values)]

    def fail(self, rows: np.ndarray, msg: str) -> None:
        self.errors[rows] = msg

    def add_errors(self, rows: np.ndarray, errs: list) -> None:
        if errs.count(None) != len(errs):
            arr = np.array(errs, object)
            bad = np.not_equal(arr, _NONE)
            self.errors[rows[bad]] = arr[bad]

    def result(self, values: pa.Array) -> DecodeResult:
        rescued = None if self.rescued is None else scatter(self.n, self.rescued, pa.string())
        if self._errors is None:
            return DecodeResult(values, pa.nulls(self.n, pa.string()), self.parsed, rescued)
        bad = np.not_equal(self._errors, _NONE).astype(bool)
        if not bad.any():
            return DecodeResult(values, pa.nulls(self.n, pa.string()), self.parsed, rescued)
        errors = pa.array(self.errors, pa.string())
        values = pc.if_else(pa.array(bad), pa.nulls(self.n, values.type), values)
        if rescued is not None:
            rescued = pc.if_else(pa.array(bad), pa.nulls(self.n, pa.string()), rescued)
        return DecodeResult(values, errors, self.parsed, rescued)


