"""The vectorized JSON decode path: one compiled pass over every payload of a group.

1. Guards on every payload (``_guard``): null, size, UTF-8 (one Arrow cast for the group).
2. The kernel (``_kernel``, numba, compiled once and cached on disk) parses each payload
   strictly against the schema's node tables (``_program``) and writes values straight into
   per-column buffers: struct validity, list and map counts, unescaped strings, int64s,
   booleans, number texts, and JSON-text leaves re-encoded compactly as msgspec writes them.
3. The columns become Arrow arrays (``_jassemble``): number texts and date/time strings are cast
   once per column; a value that does not cast fails its row.
4. Rows the kernel leaves to the reference (a key repeated in one object; a number in a
   JSON-text leaf whose shortest form it cannot confirm) are decoded one by one with msgspec and
   the same conversions, then put back in place.

Measured against the per-record ``json.loads`` loop in ``benchmarks/corpus_bench.py``. The
previous engine (msgspec typed decode of the fields pyarrow's JSON reader cannot express, and
``pyarrow.json.read_json`` for the rest) built a Python object per value and parsed most text
twice: about as fast as ``json.loads`` itself on event envelopes (issue 27).
"""
from __future__ import annotations

import gc
import json
from decimal import Decimal
from contextlib import contextmanager
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.formats.core import ColumnBuffers, DecodeOptions, payload_view
from connector.formats.json_schema._guard import MAX_NESTING, bad_utf8, structure_errors
from connector.formats.json_schema._jassemble import JAssembly, slow_values
from connector.formats.json_schema import _kstate as C
from connector.formats.json_schema._kstate import SKIP, TYPE_ERRORS, JLimits, JRows, work_for
from connector.formats.json_schema._program import JsonProgram
from connector.formats.json_schema._reference import Reference
from connector.formats.json_schema._valid import plan_validation
from connector.formats.json_schema._schema import JNode

__all__ = ["JsonEngine"]

_EXACT = msgspec.json.Decoder(float_hook=Decimal)

def _messages(cap_items: int, cap_bytes: int) -> dict[int, str]:
    return {C.E_SYNTAX: "invalid JSON", C.E_TRUNC: "truncated JSON",
            C.E_CTRL: "control character in a JSON string", C.E_ESCAPE: "invalid escape in a JSON string",
            C.E_SURROGATE: "lone surrogate in a JSON string",
            C.E_TRAILING: "trailing bytes after the JSON value",
            C.E_DEEP: f"JSON nested deeper than {MAX_NESTING} levels",
            C.E_CAP: f"record holds more than max_collection_items={cap_items} items, entries and members",
            C.E_BIG: f"payload exceeds max_record_bytes={cap_bytes}",
            C.E_INT_RANGE: "integer out of the 64-bit range",
            C.E_EXPECT_OBJECT: "expected an object", C.E_EXPECT_ARRAY: "expected an array",
            C.E_EXPECT_STRING: "expected a string", C.E_EXPECT_INT: "expected a 64-bit integer",
            C.E_EXPECT_NUMBER: "expected a number", C.E_EXPECT_BOOL: "expected a boolean",
            C.E_EXPECT_NULL: "expected null", C.E_JSON_TYPE: "value of a JSON type the schema does not allow"}


@contextmanager
def _no_gc():
    """Pause the cyclic GC while the reference path builds values (they hold no cycles)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class JsonEngine:
    """Vectorized strict decoder of JSON payloads for one JSON Schema tree."""

    def __init__(self, node: JNode, options: DecodeOptions, reference: Reference | None = None):
        self.node, self.options = node, options
        self.arrow_type = node.arrow
        # validation: the reference judges the rows the plan's cheap checks flag (_valid)
        self.reference = reference
        rules = plan_validation(node.schemas[0], node) if reference is not None else None
        root_rule = rules.get(id(node)) if rules is not None and node.kind == "json" else None
        # a JSON-text root: its null is judged (V_NULL), its values by their check
        self._root_check = root_rule.leaf if root_rule is not None else None
        self._root_null = root_rule is not None and root_rule.null
        self.program = JsonProgram(node if node.kind != "json" else JNode("null"), rules)
        lim = options.limits
        self._messages = _messages(lim.max_collection_items, lim.max_record_bytes)
        self._learnt = ColumnBuffers.initial([c.kind == "bin" for c in self.program.cols])
        # json: validate the JSON only (the payload's own text is the value)
        self._tables = self.program.tables(SKIP if node.kind == "json" else None)

    def decode(self, payloads: pa.BinaryArray, prefix: str) -> tuple[pa.Array, list]:
        if pa.types.is_large_binary(payloads.type):
            payloads = payloads.cast(pa.binary())
        n = len(payloads)
        offs, data = payload_view(payloads)
        starts = offs[:-1].astype(np.int64)
        ends = offs[1:].astype(np.int64)
        errs: dict[int, str] = {}
        if payloads.null_count:
            nulls = payloads.is_null().to_numpy(zero_copy_only=False)
            errs.update((int(i), "null payload") for i in np.flatnonzero(nulls))
            ends[nulls] = starts[nulls]
        bad = bad_utf8(payloads, offs, data)
        if bad.any():
            errs.update((int(i), "payload is not valid UTF-8") for i in np.flatnonzero(bad)
                        if int(i) not in errs)
            ends[bad] = starts[bad]
        vals, codes, slow, failed, check = self._run(data, starts, ends, n, payloads)
        for code in np.unique(codes[codes != 0]).tolist():
            why = self._messages.get(code, "invalid JSON")
            for i in np.flatnonzero(codes == code).tolist():
                errs.setdefault(i, why)
        for i, why in failed.items():
            errs.setdefault(i, why)
        if self.reference is not None:
            self._judge(payloads, codes, slow, check, errs, failed)
        slow_rows = np.flatnonzero(slow)
        if errs:
            slow_rows = slow_rows[~np.isin(slow_rows, np.fromiter(errs, np.int64, len(errs)))]
        if len(slow_rows):
            vals = self._slow(payloads, slow_rows, vals, errs)
        errors: list[str | None] = [None] * n
        if errs:
            for i, m in errs.items():
                errors[i] = f"{prefix}: {m}"
            dead = np.zeros(n, bool)
            dead[list(errs)] = True
            vals = _null_rows(vals, dead)
        return vals, errors

    # -- the kernel ------------------------------------------------------------------------
    def _run(self, data, starts, ends, n, payloads):
        from connector.formats.json_schema import _kernel

        K: Any = _kernel  # numba dispatchers: mypy cannot see their signatures
        prog, lim = self.program, self.options.limits
        bufs = ColumnBuffers(self._learnt, n)
        work = work_for(prog.nfields, len(prog.cols), ends - starts)
        rows = JRows(data=data, starts=starts, ends=ends, codes=np.zeros(n, np.int32), slow=np.zeros(n, np.uint8),
                     check=np.zeros(n, np.uint8))
        limits = JLimits(cap_items=lim.max_collection_items, max_bytes=lim.max_record_bytes)
        r, vn = 0, 0
        while True:
            r, over, overb, vn = K.rows(self._tables, bufs.named(), work, rows, limits, vn, r)
            if over < 0 and overb < 0:
                break
            bufs.grow(over, overb, int(ends[r] - starts[r]))
        self._learnt = bufs.learn()
        codes, slow = rows.codes, rows.slow
        for i in _not_shortest(data, work.vrow[:vn], work.vs[:vn], work.ve[:vn]):
            slow[i] = 1
        if self.node.kind == "json":  # the payload's own text, as validated
            keep = pa.array((codes == 0) & (slow == 0))
            text = pc.if_else(keep, payloads, pa.scalar(None, pa.binary())).cast(pa.string())
            check = rows.check != 0
            if self._root_check is not None:
                check |= self._root_check.failing(text)
            if self._root_null:
                check |= pc.equal(pc.utf8_trim_whitespace(text), "null").fill_null(False).to_numpy(
                    zero_copy_only=False)
            return text.fill_null(""), codes, slow, {}, check
        asm = JAssembly(prog, bufs, n)
        vals = asm.build(prog.root_col)
        return vals, codes, slow, asm.failed, (rows.check != 0) | asm.flagged

    # -- validation: the reference judges the rows the cheap checks flag ---------------------
    def _judge(self, payloads: pa.BinaryArray, codes: np.ndarray, slow: np.ndarray, check: np.ndarray,
               errs: dict, failed: dict) -> None:
        """Rows flagged (or decided by the reference path) that the reference finds invalid get
        its reason; so do rows whose value their column cannot hold (a type, a 64-bit range, a
        date that does not parse: the schema may refuse the record too, and then its reason is
        the one to give)."""
        typed = (codes >= TYPE_ERRORS[0]) & (codes <= TYPE_ERRORS[1])
        if failed:
            typed[np.fromiter(failed, np.int64, len(failed))] = True
        todo = np.flatnonzero(((check | (slow != 0)) & (codes == 0)) | typed)
        if errs and len(todo):
            keep = [i for i in todo.tolist() if i not in errs or typed[i]]
            todo = np.asarray(keep, np.int64)
        if not len(todo):
            return
        assert self.reference is not None  # called only when validating
        why = self.reference.why
        with _no_gc():
            for i, blob in zip(todo.tolist(), payloads.take(pa.array(todo)).to_pylist()):
                try:
                    doc = json.loads(blob)
                except (ValueError, RecursionError):
                    continue  # not JSON after all: the error it has (or the reference path) says so
                reason = why(doc)
                if reason is not None:
                    errs[i] = f"not valid against its schema: {reason}"

    # -- the reference path for the rows the kernel leaves --------------------------------
    def _slow(self, payloads, rows: np.ndarray, vals: pa.Array, errs: dict) -> pa.Array:
        blobs = payloads.take(pa.array(rows)).to_pylist()
        caps = structure_errors(rows, blobs, self.options.limits.max_collection_items)
        errs.update(caps)
        good, values = [], []
        with _no_gc():
            for i, b in zip(rows.tolist(), blobs):
                if i in errs:
                    continue
                try:  # numbers with a fraction or exponent as Decimal: exact (is 2.0 an integer?)
                    v = _EXACT.decode(b)
                except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, ValueError) as e:
                    errs[i] = f"{type(e).__name__}: {e}"
                    continue
                good.append(i)
                values.append(v)
        if not good:
            return vals
        sub, bad = slow_values(self.node, values)
        for j, why in bad.items():
            errs[good[j]] = why
        n = len(vals)
        perm = np.arange(n, dtype=np.int64)
        perm[good] = n + np.arange(len(good))
        return pa.concat_arrays([vals, sub]).take(pa.array(perm))


def _not_shortest(data: np.ndarray, rows, starts, ends) -> list[int]:
    """Rows with a 16-17 digit number the kernel wrote as given in a JSON-text leaf that is
    not the shortest form of its value (msgspec would write the shortest)."""
    out = []
    for r, s, e in zip(rows.tolist(), starts.tolist(), ends.tolist()):
        tok = data[s:e].tobytes().decode()
        if _digits(tok) != _digits(repr(float(tok))):
            out.append(r)
    return out


def _digits(t: str) -> tuple[str, int]:
    """(significant digits, decimal exponent of the first one) of a number text."""
    t = t.lstrip("-")
    mant, _, exp = t.lower().partition("e")
    ip, _, fp = mant.partition(".")
    ds = (ip + fp).lstrip("0")
    lead = len(ip + fp) - len(ds)
    return ds.rstrip("0"), len(ip) - 1 - lead + int(exp or 0)


def _null_rows(vals: pa.Array, dead: np.ndarray) -> pa.Array:
    """``vals`` with the failed rows null."""
    ix = np.arange(len(vals), dtype=np.int64)
    return vals.take(pa.array(ix, mask=dead))
