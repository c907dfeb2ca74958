"""Avro payloads of one writer schema → one Arrow array of the reader's type.

Engine (chosen after measuring; see ``benchmarks/avro_engine_bench.py`` and
``benchmarks/corpus_bench.py``): a plan resolved once per (writer, reader) pair
(:mod:`connector.formats.avro._plan`) is compiled into a small program of node tables
(:mod:`connector.formats.avro._program`) that one compiled interpreter
(:mod:`connector.formats.avro._vm`, numba, cached on disk: no compile per schema) runs over
every payload of the group in one call, appending values to a tape; the tape becomes Arrow
arrays column by column (:mod:`connector.formats.avro._assemble`). Recursive values, unions
of maps, arrays and records, and collections of small records cost one pass over their bytes.
Every malformed row becomes a row error with a reason, never a value, and never shifts its
neighbours (each row is bounded by its own payload end; trailing bytes are an error).

Alternatives measured: polars/arrow-avro (fast on flat schemas, but no maps or multi-type
unions, and arrow-avro loops forever on a block whose record count runs out before its bytes);
fastavro per record (the reference in the tests); the previous engine of this module, numpy
in lockstep over all payloads (one numpy call per field and per wave of collection items:
slower than fastavro on recursive values and arrays of records, issue 27). The engine covers
the whole spec, so there is no fallback path and ``DecodeOptions.fast_path`` has no effect on
Avro.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from connector.formats.avro._graph import parse_graph
from connector.formats.avro._plan import resolve
from connector.formats.avro._program import Program
from connector.formats.avro._schema import Node, arrow_type_of, parse_avro
from connector.formats.core import ColumnBuffers, DecodeOptions, payload_view

__all__ = ["AvroCodec"]


def _messages(cap_items: int, cap_bytes: int) -> dict[int, str]:
    from connector.formats.avro import _opcodes as V
    from connector.formats.avro._walk import MAX_NESTING

    return {V.E_TRUNC: "truncated payload",
            V.E_VARINT: "varint longer than 10 bytes or beyond 64 bits",
            V.E_INT32: "int varint beyond 32 bits",
            V.E_LENGTH: "negative length or length past the end of the payload",
            V.E_BOOL: "boolean byte is neither 0 nor 1",
            V.E_ENUM_RANGE: "enum index out of range",
            V.E_ENUM_UNKNOWN: "enum symbol unknown to the reader, which has no default",
            V.E_BRANCH: "union branch index out of range",
            V.E_COUNT: "collection block count larger than the payload",
            V.E_CAP: f"record declares more than max_collection_items={cap_items} items",
            V.E_DEEP: f"nesting deeper than {MAX_NESTING} levels",
            V.E_TRAILING: "trailing bytes after the record",
            V.E_MILLIS: "timestamp in milliseconds beyond the microsecond range",
            V.E_BIG: f"payload exceeds max_record_bytes={cap_bytes}"}


class AvroCodec:
    """Decoder of one (writer, reader) pair; build once per process and reuse.

    Examples
    --------
    >>> import io, json, fastavro, pyarrow as pa
    >>> schema = {"type": "record", "name": "R", "fields": [
    ...     {"name": "id", "type": "long"}, {"name": "v", "type": ["null", "int", "long"]}]}
    >>> buf = io.BytesIO()
    >>> fastavro.schemaless_writer(buf, schema, {"id": 7, "v": 5})
    >>> codec = AvroCodec(json.dumps(schema), None, None, DecodeOptions())
    >>> vals, errs = codec.decode(pa.array([buf.getvalue(), b"\\x02"], pa.binary()), "1")
    >>> vals.to_pylist()[0], errs[1]
    ({'id': 7, 'v': 5}, 'avro decode failed for schema id 1: truncated payload')
    """

    def __init__(self, writer_text: str, reader: Node | None, reader_text: str | None,
                 options: DecodeOptions, writer_refs: tuple = (), reader_refs: tuple = ()):
        self.options = options
        if reader is None:
            reader, _ = parse_avro(writer_text, max_depth=options.max_recursion_depth,
                                   refs=writer_refs)
        self.reader = reader
        self.arrow_type = arrow_type_of(reader)
        self.writer = parse_graph(writer_text, writer_refs)
        self.plan = resolve(self.writer, reader)
        self.program = Program(self.plan, reader)
        lim = options.limits
        self._messages = _messages(lim.max_collection_items, lim.max_record_bytes)
        for i, why in enumerate(self.program.messages):
            self._messages[100 + i] = why
        self._learnt = ColumnBuffers.initial([c.kind == "bin" for c in self.program.cols])

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        """Decode a null-free binary array; returns (values, per-row error or None)."""
        from connector.formats.avro import _vm
        from connector.formats.avro._assemble import Assembly

        V: Any = _vm  # numba dispatchers: mypy cannot see their signatures

        n = len(payloads)
        if n == 0:
            return pa.array([], self.arrow_type), []
        offs, data = payload_view(payloads)
        starts = np.ascontiguousarray(offs[:-1], np.int64)
        ends = np.ascontiguousarray(offs[1:], np.int64)
        prog, lim = self.program, self.options.limits
        bufs = ColumnBuffers(self._learnt, n)
        codes = np.zeros(n, np.int32)
        r = 0
        while True:
            r, over, overb = V.rows(data, starts, ends, *prog.tables(), lim.max_collection_items,
                                    lim.max_record_bytes, *bufs.args(), codes, r)
            if over < 0 and overb < 0:
                break
            bufs.grow(over, overb, int(ends[r] - starts[r]))
        self._learnt = bufs.learn()
        dead = codes != 0
        why = np.full(n, None, object)
        if dead.any():
            for code in np.unique(codes[dead]).tolist():
                why[codes == code] = self._messages[code]
        asm = Assembly(prog, bufs, dead, why)
        vals = asm.build(prog.root_col)
        if not dead.any():
            return vals, [None] * n
        prefix = f"avro decode failed for schema id {label}: "
        errors = [None if w is None else prefix + w for w in why.tolist()]
        return _null_rows(vals, dead), errors


def _null_rows(vals: pa.Array, dead: np.ndarray) -> pa.Array:
    """``vals`` with the failed rows null."""
    if pa.types.is_struct(vals.type) and vals.offset == 0:
        valid = ~dead
        if vals.null_count:
            valid &= vals.is_valid().to_numpy(zero_copy_only=False)
        kids = [vals.field(i) for i in range(vals.type.num_fields)]
        if kids:
            return pa.StructArray.from_arrays(kids, fields=list(vals.type), mask=pa.array(~valid))
        return pa.Array.from_buffers(vals.type, len(vals),
                                     [pa.py_buffer(np.packbits(valid, bitorder="little"))],
                                     children=[])
    ix = np.arange(len(vals), dtype=np.int64)
    return vals.take(pa.array(ix, mask=dead))
