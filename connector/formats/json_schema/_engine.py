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

import gc
from collections.abc import Callable
from contextlib import contextmanager

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from connector.formats.json_schema._guard import bad_utf8, structure_errors
from connector.formats.json_schema._plan import Plan
from connector.formats.json_schema._schema import JNode
from connector.formats.json_schema._types import dec_hook, finish, py_type, read_type
from connector.formats.core import DecodeOptions, payload_view

__all__ = ["JsonEngine"]

_CHUNK = 2048  # payloads per msgspec map() call; a failing chunk is redone row by row
_ARROW_CHUNK = 512  # rows per re-read when pyarrow refuses a block
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError,
                  UnicodeDecodeError, ValueError, OverflowError)
_ARROW_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError, UnicodeDecodeError)
_NONE = np.array(None, object)  # compares like None; numpy's stubs refuse a bare None operand

@contextmanager
def _no_gc():
    """Pause the cyclic GC while JSON values are built: they hold no cycles (reference
    counting frees them), and collections triggered by millions of new dicts and lists kept
    alive in one list cost more than the decoding itself (measured: 3-8x on nested events)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
            self.plan = Plan(node)
            self.dec = msgspec.json.Decoder(self.plan.py_type(), dec_hook=dec_hook)
            self.read_schema = pa.schema(list(self.plan.arrow_type(final=False)))
            self.arrow_target = self.plan.arrow_type(final=True)
            self.narrow_node = self.plan.narrow_node()
        else:
            self.dec = msgspec.json.Decoder(py_type(node), dec_hook=dec_hook)

    # -- whole group ------------------------------------------------------------------
    def decode(self, payloads: pa.BinaryArray, prefix: str) -> tuple[pa.Array, list]:
        with _no_gc():
            return self._decode(payloads, prefix)

    def _decode(self, payloads: pa.BinaryArray, prefix: str) -> tuple[pa.Array, list]:
        n = len(payloads)
        errs: dict[int, str] = {}
        if pa.types.is_large_binary(payloads.type):
            payloads = payloads.cast(pa.binary())
        offs, data = payload_view(payloads)
        ok = np.ones(n, bool)
        if payloads.null_count:
            nulls = payloads.is_null().to_numpy(zero_copy_only=False)
            ok &= ~nulls
            errs.update((int(i), "null payload") for i in np.flatnonzero(nulls))
        cap = self.options.limits.max_record_bytes
        big = np.diff(offs) > cap
        if big.any():
            errs.update((int(i), f"payload exceeds max_record_bytes={cap}")
                        for i in np.flatnonzero(big & ok))
            ok &= ~big
        bad = bad_utf8(payloads, offs, data) & ok
        errs.update((int(i), "payload is not valid UTF-8") for i in np.flatnonzero(bad))
        ok &= ~bad

        rows = np.flatnonzero(ok)
        values, blobs = self._validate(payloads, rows, errs)
        if errs:  # only the rows msgspec parsed
            keep = np.flatnonzero(~np.isin(rows, np.fromiter(errs, np.int64, len(errs))))
            rows_p, blobs = rows[keep], [blobs[j] for j in keep.tolist()]
        else:
            rows_p = rows
        errs.update(structure_errors(rows_p, blobs, self.options.limits.max_collection_items))
        good = rows[~np.isin(rows, np.fromiter(errs, np.int64, len(errs)))] if errs else rows
        if len(good) != len(rows):
            pos = {int(r): j for j, r in enumerate(rows)}
            values = [values[pos[r]] for r in good.tolist()]
        if not len(good):
            out = pa.nulls(0, self.arrow_type)
        elif self.struct:
            out = self._struct(payloads, good, values, errs)
        else:
            out = self._other(payloads, good, values, errs)
        return self._place(n, good, out, errs, prefix)

    def _validate(self, payloads, rows: np.ndarray, errs: dict) -> tuple[list, list]:
        """msgspec values of ``rows`` (None where the row failed; errors into ``errs``), and
        the payloads as bytes."""
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
        return out, blobs

    def _place(self, n, good, out, errs, prefix) -> tuple[pa.Array, list]:
        """Scatter the values of ``good`` rows to ``n`` rows; failed rows are null."""
        errors: list[str | None] = [None] * n
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
        return self._column(values, self.node, good, errs)

    def _column(self, values: list, node: JNode, good, errs) -> pa.Array:
        """msgspec values of the rows ``good`` → ``node.arrow`` (C++ conversions)."""
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
        none_rows = np.flatnonzero(np.equal(np.array(values, object), _NONE)) \
            if values.count(None) else np.zeros(0, np.int64)
        plan = self.plan
        arrow = self._arrow(payloads, good, none_rows, errs) if plan.has_arrow else None
        narrow = self._column(values, self.narrow_node, good, errs) if plan.has_narrow else None
        mask = None
        if len(none_rows):  # a JSON null payload is a null row
            bits = np.zeros(m, bool)
            bits[none_rows] = True
            mask = pa.array(bits)
        return plan.merge(arrow, narrow, mask)

    def _arrow(self, payloads, good, none_rows, errs) -> pa.StructArray:
        """The pyarrow-readable fields of rows ``good`` (all valid JSON, one value each)."""
        sub = payloads if len(good) == len(payloads) else payloads.take(pa.array(good))
        if len(none_rows):  # a JSON null payload reads as a row of nulls; masked later
            sub = pc.if_else(pa.array(np.isin(np.arange(len(good)), none_rows)),
                             pa.scalar(b"{}", pa.binary()), sub)
        joined = pc.binary_join_element_wise(sub, pa.scalar(b"", pa.binary()),
                                             pa.scalar(b"\n", pa.binary()))
        buf = joined.buffers()[2]
        ends = np.frombuffer(joined.buffers()[1], np.int32, len(sub) + 1, joined.offset * 4)
        target = self.arrow_target
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
            # one thread: executors already run one task per core (measured no slower)
            read_options=pj.ReadOptions(block_size=max(4 << 20, 2 * longest + 2), use_threads=False),
            parse_options=pj.ParseOptions(explicit_schema=self.read_schema,
                                          unexpected_field_behavior="ignore",
                                          newlines_in_values=inner))
        if table.num_rows != rows:
            raise ValueError(f"JSON reader returned {table.num_rows} rows for {rows} payloads")
        return table.to_struct_array().combine_chunks() if table.num_rows else \
            pa.array([], pa.struct(list(self.read_schema)))
