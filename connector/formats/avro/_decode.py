"""Avro payloads of one writer schema → one Arrow array of the reader's type.

Engine (chosen after measuring; see ``benchmarks/avro_engine_bench.py`` and
``benchmarks/corpus_bench.py``): a plan resolved once per (writer, reader) pair
(:mod:`connector.formats.avro._plan`) is compiled into a small program of node tables
(:mod:`connector.formats.avro._program`) that one compiled interpreter
(:mod:`connector.formats.avro._vm`, numba, cached on disk: no compile per schema) runs over
every payload of the group in one call, appending values to a tape; the tape becomes Arrow
arrays column by column (:mod:`connector.formats.avro._assemble`). A batch holding rows of
several writers (a writer changed mid-partition) runs one program holding each writer's code,
in one call and one assembly in row order (:class:`MixedCodecs`). Recursive values, unions
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

import threading
from typing import Any

import numpy as np
import pyarrow as pa

from connector.formats.avro._graph import parse_graph
from connector.formats.avro._opcodes import E_CUSTOM, messages
from connector.formats.avro._plan import resolve
from connector.formats.avro._program import Program, Rows, Work
from connector.formats.avro._walk import MAX_NESTING
from connector.formats.avro._schema import Node, arrow_type_of, parse_avro
from connector.formats.core import ColumnBuffers, DecodeOptions, payload_view, refs_of, refs_texts, struct_array

__all__ = ["AvroCodec", "MixedCodecs"]

_MAX_MIXED = 64  # cached codecs of writer combinations per reader


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
                 options: DecodeOptions, writer_refs: tuple = (), reader_refs: tuple = (),
                 more_writers: tuple[tuple[str, tuple], ...] = ()):
        self.options = options
        if reader is None:
            reader, _ = parse_avro(writer_text, max_depth=options.max_recursion_depth,
                                   refs=writer_refs)
        self.reader = reader
        self.arrow_type = arrow_type_of(reader)
        # writer 0, then ``more_writers`` (text, refs): one program decodes rows of any of them
        self.writers = [parse_graph(t, r) for t, r in ((writer_text, writer_refs), *more_writers)]
        self.writer = self.writers[0]
        self.plans = [resolve(w, reader) for w in self.writers]
        self.plan = self.plans[0]
        self.program = Program(self.plans, reader)
        lim = options.limits
        self._tables = self.program.tables(lim.max_collection_items, lim.max_record_bytes)
        self._messages = messages(lim.max_collection_items, lim.max_record_bytes, MAX_NESTING)
        for i, why in enumerate(self.program.messages):
            self._messages[E_CUSTOM + i] = why
        self._learnt = ColumnBuffers.initial([c.kind == "bin" for c in self.program.cols])

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        """Decode a null-free binary array; returns (values, per-row error or None)."""
        return self.decode_rows(payloads, None, [label])

    def decode_rows(self, payloads: pa.BinaryArray, writer_of: np.ndarray | None,
                    labels: list[str]) -> tuple[pa.Array, list]:
        """Decode rows of several writers in one pass, in row order.

        ``writer_of`` gives each row's writer (an index into this codec's writers; -1: the
        row has no payload to decode and is null, its payload is not read), None: every row
        is writer 0's. ``labels``: each writer's schema id, for the error text.
        """
        from connector.formats.avro import _vm
        from connector.formats.avro._assemble import Assembly

        V: Any = _vm  # numba dispatchers: mypy cannot see their signatures

        n = len(payloads)
        if n == 0:
            return pa.array([], self.arrow_type), []
        offs, data = payload_view(payloads)
        starts = np.ascontiguousarray(offs[:-1], np.int64)
        prog = self.program
        if writer_of is None:
            ends = np.ascontiguousarray(offs[1:], np.int64)
            entry = np.full(n, prog.entries[0], np.int64)
        else:
            none = writer_of < 0
            ends = np.where(none, starts, offs[1:])  # no bytes: nothing read, a null value
            entry = prog.entry_pcs[writer_of]  # -1: the last entry, a null row
        bufs = ColumnBuffers(self._learnt, n)
        codes = np.zeros(n, np.int32)
        batch = Rows(data, starts, ends, entry, codes)
        work = Work.new(len(prog.cols))
        r = 0
        while True:
            r, over, overb = V.rows(self._tables, batch, bufs.named(), work, r)
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
        prefix = [f"avro decode failed for schema id {label}: " for label in labels]
        who = np.zeros(n, np.int64) if writer_of is None else writer_of
        errors = [None if w is None else prefix[k] + w for w, k in zip(why.tolist(), who.tolist())]
        return _null_rows(vals, dead), errors


class MixedCodecs:
    """One reader's codecs over the several writers of one batch (writers change
    mid-partition: a batch holds the old writer's rows, then the new one's).

    Decoding them together is one kernel call and one assembly in row order, where group by
    group is one per writer, plus a take of each group's payloads, a concatenation and the
    reader defaults filled per group.
    """

    def __init__(self, reader: Node, text: str, refs: tuple, options: DecodeOptions):
        self.reader, self.text, self.refs, self.options = reader, text, refs, options
        self._codecs: dict[tuple, AvroCodec] = {}
        self._lock = threading.Lock()

    def decode(self, payloads: pa.BinaryArray, groups: list) -> tuple[pa.Array, list] | None:
        """``groups``: (writer schema or None, rows, label); rows in no group are null.

        Returns (values, per-row error or None) for every row, or None when a writer cannot be
        compiled: the caller then decodes group by group, so that only that group's rows fail.
        """
        keys = tuple((w.text, refs_texts(refs_of(w))) if w is not None else (self.text, self.refs)
                     for w, _, _ in groups)
        codec = self._codecs.get(keys)
        if codec is None:
            try:
                codec = AvroCodec(keys[0][0], self.reader, self.text, self.options,
                                  writer_refs=keys[0][1], reader_refs=self.refs,
                                  more_writers=keys[1:])
            except Exception:  # noqa: BLE001 - group by group, each group gets its own error
                return None
            with self._lock:
                if len(self._codecs) >= _MAX_MIXED:  # combinations come from the data: bounded
                    self._codecs.clear()
                self._codecs[keys] = codec
        writer_of = np.full(len(payloads), -1, np.int64)
        for i, (_, rows, _) in enumerate(groups):
            writer_of[rows] = i
        return codec.decode_rows(payloads, writer_of, [label for _, _, label in groups])


def _null_rows(vals: pa.Array, dead: np.ndarray) -> pa.Array:
    """``vals`` with the failed rows null."""
    if pa.types.is_struct(vals.type) and vals.offset == 0:
        valid = ~dead
        if vals.null_count:
            valid &= vals.is_valid().to_numpy(zero_copy_only=False)
        kids = [vals.field(i) for i in range(vals.type.num_fields)]
        return struct_array(vals.type, kids, valid, len(valid) - int(np.count_nonzero(valid)))
    ix = np.arange(len(vals), dtype=np.int64)
    return vals.take(pa.array(ix, mask=dead))
