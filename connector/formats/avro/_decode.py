"""Avro payloads of one writer schema → one Arrow array of the reader's type.

Engine (chosen after measuring; see ``benchmarks/avro_engine_bench.py``): a plan compiled once
per (writer, reader) pair (:mod:`connector.formats.avro._plan`) and run *in lockstep* over all
payloads of the group with numpy — one cursor per row advanced field by field, varints decoded
vectorized and validated, strings gathered into Arrow buffers, unions split by the *encoded*
branch index, array/map items decoded per block (fixed-width and varint items) or in waves.
Every malformed row becomes a row error with a reason, never a value, and never shifts its
neighbours (each row is bounded by its own payload end; trailing bytes are an error).

Alternatives: polars/arrow-avro (fast on flat schemas, but no maps or multi-type unions, and
arrow-avro loops forever on a block whose record count runs out before its bytes: it was this
module's fast path until issue 14); fastavro per record (the reference in the tests; about 6×
slower than this engine on a flat record, 4× on a wide one, in ``avro_engine_bench``). numba
was not tried: a compile per schema in every Spark worker process, and the numpy plan already
meets the ≥ 10× goal against the confluent loop on the benchmark shapes. The engine covers the
whole spec, so there is no fallback path and ``DecodeOptions.fast_path`` has no effect on Avro.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from connector.formats.avro._graph import parse_graph
from connector.formats.avro._plan import resolve
from connector.formats.avro._read import Ctx
from connector.formats.avro._schema import Node, arrow_type_of, parse_avro
from connector.formats.core import DecodeOptions, payload_view

__all__ = ["AvroCodec"]


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

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        """Decode a null-free binary array; returns (values, per-row error or None)."""
        n = len(payloads)
        if n == 0:
            return pa.array([], self.arrow_type), []
        offs, data = payload_view(payloads)
        ctx = Ctx(offs, data, self.options.limits.max_collection_items)
        rid = np.arange(n, dtype=np.int64)
        pos = ctx.start.copy()
        cap = self.options.limits.max_record_bytes
        big = (ctx.end - ctx.start) > cap
        if big.any():
            ctx.fail(rid[big], f"payload exceeds max_record_bytes={cap}")
            pos[big] = ctx.zero
        vals, end = self.plan.decode(ctx, pos, rid, 0)
        ctx.check(end, rid, (end != ctx.end) & ~ctx.dead, "trailing bytes after the record")
        if not ctx.dead.any():
            return vals, [None] * n
        prefix = f"avro decode failed for schema id {label}: "
        errors = [None if w is None else prefix + w for w in ctx.why.tolist()]
        return _null_rows(vals, ctx.dead), errors


def _null_rows(vals: pa.Array, dead: np.ndarray) -> pa.Array:
    """``vals`` with the failed rows null."""
    if pa.types.is_struct(vals.type) and vals.offset == 0 and vals.null_count == 0:
        kids = [vals.field(i) for i in range(vals.type.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(vals.type), mask=pa.array(dead)) \
            if kids else pa.Array.from_buffers(vals.type, len(vals), [pa.array(~dead).buffers()[1]],
                                               children=[])
    ix = np.arange(len(vals), dtype=np.int64)
    return vals.take(pa.array(ix, mask=dead))
