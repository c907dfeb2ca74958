"""The vectorized JSON decode path: strict, and without a Python loop over records' fields.

1. Guards on every payload (``_json_guard``): null, size, UTF-8.
2. msgspec decodes each payload (C calls mapped over chunks of payloads) against a type
   holding only the fields pyarrow cannot read (maps, unions, free-form): this validates the
   whole text (syntax, ``NaN``/``Infinity``, trailing bytes, control characters, surrogates),
   the types of those fields (no coercion, int64 range) and that the top level is an object.
   Depth and collection caps are then checked on the rows that passed.
3. The other fields of the rows that passed are read by one ``pyarrow.json.read_json`` call
   with an explicit schema (strict on types). Every row given to it is one valid JSON object,
   so its rows line up with the payloads; a block it refuses is re-read in chunks, then row
   by row, so only the bad rows fail.
4. The msgspec fields become Arrow arrays with one ``pyarrow.array`` call per field
   (JSON-text leaves are re-encoded compactly by msgspec first).
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from connector.decode._avro import _payload_view
from connector.decode._json_guard import bad_utf8, structure_errors
from connector.decode._json_schema import JNode
from connector.decode._json_types import (arrow_readable, finish, has_text, py_type, read_type,
                                          to_text)
from connector.decode._options import DecodeOptions

__all__ = ["JsonEngine"]

_CHUNK = 2048  # payloads per msgspec map() call; a failing chunk is redone row by row
_ARROW_CHUNK = 512  # rows per re-read when pyarrow refuses a block
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError,
                  UnicodeDecodeError, ValueError, OverflowError)
_ARROW_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError, UnicodeDecodeError)
_NULL_ROW = object()


def _arrow_read_type(t: pa.DataType) -> pa.DataType:
    """The explicit-schema type for pyarrow's JSON reader: dates are read as text."""
    if pa.types.is_date32(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _arrow_read_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _arrow_read_type(t.value_type)))
    return t


def _why(e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return "JSON nested too deep"
    return f"{type(e).__name__}: {e}"


def _rowwise(fn: Callable[[pa.Array], pa.Array], arr: pa.Array, target: pa.DataType,
             errs: dict[int, str]) -> pa.Array:
    """``fn(arr)``; when it raises, apply it row by row and record the rows that fail."""
    try:
        return fn(arr)
    except _ARROW_ERRORS:
        pass
    parts = []
    for i in range(len(arr)):
        try:
            parts.append(fn(arr.slice(i, 1)))
        except _ARROW_ERRORS as e:
            errs[i] = f"{type(e).__name__}: {e}"
            parts.append(pa.nulls(1, target))
    return pa.concat_arrays(parts) if parts else pa.array([], target)


class JsonEngine:
    """Vectorized strict decoder of JSON payloads for one JSON Schema tree."""

    def __init__(self, node: JNode, options: DecodeOptions):
        self.node, self.options = node, options
        self.arrow_type = node.arrow
        self.struct = node.kind == "struct"
        if self.struct:
            self.arrow_fields = [(name, t) for name, t in node.fields if arrow_readable(t)]
            self.narrow = [(f"f{j}", name, t) for j, (name, t) in enumerate(node.fields)
                           if not arrow_readable(t)]
            row = msgspec.defstruct("JsonRow", [(a, py_type(t), None) for a, _, t in self.narrow],
                                    rename={a: name for a, name, _ in self.narrow})
            self.dec = msgspec.json.Decoder(row | None)
            self.read_schema = pa.schema([pa.field(name, _arrow_read_type(t.arrow))
                                          for name, t in self.arrow_fields])
            self.convert = {a: to_text(t) for a, _, t in self.narrow if has_text(t)}
        else:
            self.dec = msgspec.json.Decoder(py_type(node))
            self.convert = to_text(node) if has_text(node) else None

    # -- whole group ------------------------------------------------------------------
    def decode(self, payloads: pa.BinaryArray, prefix: str) -> tuple[pa.Array, list]:
        n = len(payloads)
        errs: dict[int, str] = {}
        if pa.types.is_large_binary(payloads.type):
            payloads = payloads.cast(pa.binary())
        offs, data = _payload_view(payloads)
        ok = np.ones(n, bool)
        if payloads.null_count:
            nulls = payloads.is_null().to_numpy(zero_copy_only=False)
            ok &= ~nulls
            errs.update((int(i), "null payload") for i in np.flatnonzero(nulls))
        cap = self.options.max_record_bytes
        big = np.diff(offs) > cap
        if big.any():
            errs.update((int(i), f"payload exceeds max_record_bytes={cap}")
                        for i in np.flatnonzero(big & ok))
            ok &= ~big
        bad = bad_utf8(payloads, offs, data) & ok
        errs.update((int(i), "payload is not valid UTF-8") for i in np.flatnonzero(bad))
        ok &= ~bad

        rows = np.flatnonzero(ok)
        values = self._validate(payloads, rows, errs)
        parsed = rows[[int(r) not in errs for r in rows]] if errs else rows
        errs.update(structure_errors(parsed, offs, data, self.options.max_collection_items))
        good = np.array([r for r in rows.tolist() if r not in errs], np.int64)
        if len(good) != len(rows):
            pos = {int(r): j for j, r in enumerate(rows)}
            values = [values[pos[r]] for r in good.tolist()]
        if self.struct:
            out = self._struct(payloads, good, values, errs)
        else:
            out = self._other(payloads, good, values, errs)
        return self._place(n, good, out, errs, prefix)

    def _validate(self, payloads, rows: np.ndarray, errs: dict) -> list | None:
        """msgspec values of ``rows`` (None where the row failed; errors into ``errs``)."""
        if len(rows) == len(payloads):
            blobs = payloads.to_pylist()
        else:
            blobs = payloads.take(pa.array(rows, pa.int64())).to_pylist()
        dec = self.dec.decode
        out: list = []
        for s in range(0, len(blobs), _CHUNK):
            chunk = blobs[s:s + _CHUNK]
            try:
                out += list(map(dec, chunk))
                continue
            except _DECODE_ERRORS:
                pass
            for j, b in enumerate(chunk):
                try:
                    out.append(dec(b))
                except _DECODE_ERRORS as e:
                    out.append(None)
                    errs[int(rows[s + j])] = _why(e)
        return out

    def _place(self, n, good, out, errs, prefix) -> tuple[pa.Array, list]:
        """Scatter the values of ``good`` rows to ``n`` rows; failed rows are null."""
        errors = [None] * n
        for i, m in errs.items():
            errors[i] = f"{prefix}: {m}"
        if len(good) == n and not errs:
            return out, errors
        perm = np.full(n, len(good), np.int64)
        perm[good] = np.arange(len(good), dtype=np.int64)
        if errs:
            perm[np.fromiter(errs, np.int64, len(errs))] = len(good)
        vals = pa.concat_arrays([out, pa.nulls(1, self.arrow_type)])
        return vals.take(pa.array(perm)), errors

    # -- top level not an object ------------------------------------------------------
    def _other(self, payloads, good, values, errs) -> pa.Array:
        if self.node.kind == "json":  # the payload's own text, as validated
            sub = payloads if len(good) == len(payloads) else payloads.take(pa.array(good))
            return sub.cast(pa.string())
        return self._column(values, self.node, good, errs, self.convert)

    def _column(self, values: list, node: JNode, good, errs, convert) -> pa.Array:
        """Python values of ``py_type(node)`` for the rows ``good`` → ``node.arrow``."""
        if convert is not None:
            values = list(map(convert, values))
        rt = read_type(node)
        local: dict[int, str] = {}
        try:
            arr = pa.array(values, rt)
        except _ARROW_ERRORS:
            parts = []
            for i, v in enumerate(values):
                try:
                    parts.append(pa.array([v], rt))
                except _ARROW_ERRORS as e:
                    local[i] = f"{type(e).__name__}: {e}"
                    parts.append(pa.nulls(1, rt))
            arr = pa.concat_arrays(parts)
        arr = _rowwise(lambda a: finish(a, node), arr, node.arrow, local)
        for i, m in local.items():
            errs[int(good[i])] = m
        return arr

    # -- top level object -------------------------------------------------------------
    def _struct(self, payloads, good, values, errs) -> pa.Array:
        m = len(good)
        none_rows = [i for i, v in enumerate(values) if v is None]
        cols: dict[str, pa.Array] = {}
        if self.arrow_fields:
            arr = self._arrow(payloads, good, none_rows, errs)
            for name, _ in self.arrow_fields:
                cols[name] = arr.field(name)
        for attr, name, t in self.narrow:
            if none_rows:  # JSON null payloads: null rows
                vals = [None if v is None else getattr(v, attr) for v in values]
            else:
                vals = list(map(attrgetter(attr), values))
            cols[name] = self._column(vals, t, good, errs, self.convert.get(attr))
        children = [cols[name] if name in cols else pa.nulls(m, t.arrow)
                    for name, t in self.node.fields]
        mask = None
        if none_rows:
            mask = np.zeros(m, bool)
            mask[none_rows] = True
            mask = pa.array(mask)
        return pa.StructArray.from_arrays(children, fields=list(self.arrow_type), mask=mask)

    def _arrow(self, payloads, good, none_rows, errs) -> pa.StructArray:
        """The pyarrow-readable fields of rows ``good`` (all valid JSON, one value each)."""
        sub = payloads if len(good) == len(payloads) else payloads.take(pa.array(good))
        if none_rows:  # a JSON null payload reads as a row of nulls; its mask comes later
            sub = pc.if_else(pa.array(np.isin(np.arange(len(good)), none_rows)),
                             pa.scalar(b"{}", pa.binary()), sub)
        joined = pc.binary_join_element_wise(sub, pa.scalar(b"", pa.binary()),
                                             pa.scalar(b"\n", pa.binary()))
        buf = joined.buffers()[2]
        ends = np.frombuffer(joined.buffers()[1], np.int32, len(sub) + 1, joined.offset * 4)
        target = pa.struct([pa.field(name, t.arrow) for name, t in self.arrow_fields])
        local: dict[int, str] = {}
        arr = self._read_rows(buf, ends, 0, len(sub), local, top=True)
        arr = _rowwise(lambda a: a.cast(target) if a.type != target else a, arr, target, local)
        for i, msg in local.items():
            errs[int(good[i])] = msg
        return arr

    def _read_rows(self, buf, ends, a: int, b: int, errs: dict, top=False) -> pa.StructArray:
        """Rows [a, b) of the joined buffer; refused blocks are re-read smaller."""
        try:
            return self._read(buf.slice(int(ends[a]), int(ends[b] - ends[a])), b - a,
                              int(np.diff(ends[a:b + 1]).max()))
        except _ARROW_ERRORS as e:
            if b - a == 1:
                errs[a] = f"{type(e).__name__}: {e}"
                return pa.nulls(1, pa.struct(list(self.read_schema)))
        step = _ARROW_CHUNK if top and b - a > _ARROW_CHUNK else 1
        return pa.concat_arrays([self._read_rows(buf, ends, s, min(s + step, b), errs)
                                 for s in range(a, b, step)])

    def _read(self, buf: pa.Buffer, rows: int, longest: int) -> pa.StructArray:
        # each row is one valid JSON value ending in the separator: a newline count equal to
        # the row count means no payload has a newline inside, and the fast chunker is exact
        inner = int(np.count_nonzero(np.frombuffer(buf, np.uint8) == 0x0A)) != rows
        table = pj.read_json(
            pa.BufferReader(buf),
            read_options=pj.ReadOptions(block_size=max(4 << 20, 2 * longest + 2)),
            parse_options=pj.ParseOptions(explicit_schema=self.read_schema,
                                          unexpected_field_behavior="ignore",
                                          newlines_in_values=inner))
        if table.num_rows != rows:
            raise ValueError(f"JSON reader returned {table.num_rows} rows for {rows} payloads")
        return table.to_struct_array().combine_chunks() if table.num_rows else \
            pa.array([], pa.struct(list(self.read_schema)))
