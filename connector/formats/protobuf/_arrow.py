"""Protobuf payloads → Arrow in Rust (``ptars``), reshaped to this package's Arrow types.

ptars parses every payload of a group in one call, on a copy of the schema unrolled along
the output type (``_proto_unroll``), and returns Arrow; this module maps its output onto
the types of :mod:`connector.formats.protobuf._schema` with Arrow kernels (casts, offsets,
takes) walking the *schema* — never the data — so the work is bounded by the type's size,
whatever the nesting in the bytes.

Where ptars and protobuf's reference parser disagree on valid bytes, the rows are handed
back to the caller to be decoded by the reference path (``redo``):

- two members of one oneof on the wire (the reference keeps the last; ptars keeps both);
- a key repeated in one map (the reference keeps the last; ptars keeps both);
- a singular Timestamp/Duration/wrapper (or, on the per-level route, recursive) field sent
  twice: protobuf merges the two, ptars keeps the last;
- a panic inside ptars (a map entry without its message value).

Rows become errors (``errors``) when their values cannot be represented faithfully: a
Timestamp outside years 1..9999 or a Duration beyond ±10,000 years (ptars saturates
them), a collection longer than ``max_collection_items``, data below the
``max_recursion_depth`` cut. ptars refuses most malformed wire data itself (a refused batch
is split row by row); the caller also runs protobuf's own parser over the group, because
ptars accepts a few malformed inputs (mismatched group end tags).

Schemas too bushy to unroll take the per-level route: recursive fields come out of ptars
as serialized bytes and are decoded one level per call.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.formats.protobuf._unroll import unrolled_pool
from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS, is_map

__all__ = ["PtarsEngine", "engine_supports"]

TS_MIN, TS_MAX = -62135596800 * 10**6, 253402300800 * 10**6  # 0001-01-01 .. 10000-01-01
DUR_MAX = 315576000000 * 10**6 + 10**6  # ±10,000 years (google.protobuf.Duration's range)


def engine_supports(desc) -> bool:
    """True when every type reachable from ``desc`` is one this engine reproduces exactly.

    Refused: proto2 groups, extensions and editions files.
    """
    try:
        import ptars  # noqa: F401
    except ImportError:
        return False
    seen: set[str] = set()
    todo = [(desc, True)]
    while todo:
        d, top = todo.pop()
        if d.full_name in seen:
            continue
        seen.add(d.full_name)
        if _syntax(d.file) not in ("", "proto2", "proto3") or d.extension_ranges:
            return False
        for f in d.fields:
            if f.type == FD.TYPE_GROUP:
                return False
            if f.type == FD.TYPE_MESSAGE:
                name = f.message_type.full_name
                if name not in WKT_SCALARS and name not in WKT_JSON:
                    todo.append((f.message_type, False))
    return True


def _back_edges(desc):
    """Fields closing a recursion cycle in a depth-first walk from ``desc`` (a set of
    (message full name, field name)), or None when one of them cannot be cut.

    The engine hands ptars an acyclic copy of the schema in which these fields are
    ``repeated bytes``: nested levels are then decoded one step at a time, and a singular
    field sent twice (which protobuf merges) shows up as two items and goes to the
    reference path. A oneof member stays singular ``bytes`` (a oneof member cannot be
    repeated): the wire check flags one sent twice instead. Map values: not supported.
    """
    cut = set()
    state = {desc.full_name: 1}
    stack = [(desc, iter(desc.fields))]
    while stack:
        d, it = stack[-1]
        f = next(it, None)
        if f is None:
            state[d.full_name] = 2
            stack.pop()
            continue
        if f.type != FD.TYPE_MESSAGE or f.message_type.full_name in WKT_SCALARS or \
                f.message_type.full_name in WKT_JSON:
            continue
        m = f.message_type
        seen = state.get(m.full_name)
        if seen == 1:
            if d.GetOptions().map_entry or is_map(f):
                return None
            cut.add((d.full_name, f.name))
        elif seen is None:
            state[m.full_name] = 1
            stack.append((m, iter(m.fields)))
    return cut


def _acyclic_pool(desc, cut: set):
    """A descriptor pool holding copies of ``desc``'s files with the ``cut`` fields turned
    into ``repeated bytes`` (same numbers and names)."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    FDP = descriptor_pb2.FieldDescriptorProto
    files: dict[str, Any] = {}
    order: list[str] = []

    def visit(fd):
        if fd.name in files:
            return
        files[fd.name] = None
        for dep in fd.dependencies:
            visit(dep)
        files[fd.name] = descriptor_pb2.FileDescriptorProto.FromString(fd.serialized_pb)
        order.append(fd.name)

    visit(desc.file)
    pool = descriptor_pool.DescriptorPool()
    by_name = {}
    for fname in order:
        fdp = files[fname]
        prefix = fdp.package + "." if fdp.package else ""
        todo = [(prefix + m.name, m) for m in fdp.message_type]
        while todo:
            name, m = todo.pop()
            by_name[name] = m
            todo += [(f"{name}.{n.name}", n) for n in m.nested_type]
    for mname, fname in cut:
        for f in by_name[mname].field:
            if f.name == fname:
                f.type = FDP.TYPE_BYTES
                if not f.HasField("oneof_index"):
                    f.label = FDP.LABEL_REPEATED
                f.ClearField("type_name")
    for m in by_name.values():  # JSON-text types: read as their bytes (repeated: presence)
        for f in m.field:
            if f.type == FD.TYPE_MESSAGE and f.type_name.lstrip(".") in WKT_JSON:
                f.type = FDP.TYPE_BYTES
                f.ClearField("type_name")
                if f.label != FD.LABEL_REPEATED and not f.HasField("oneof_index") and \
                        not m.options.map_entry:
                    f.label = FDP.LABEL_REPEATED
    for m in by_name.values():  # singular wrappers/Timestamp/Duration: one item per occurrence
        for f in m.field:
            if f.type == FD.TYPE_MESSAGE and f.label != FD.LABEL_REPEATED and \
                    f.type_name.lstrip(".") in WKT_SCALARS and not f.HasField("oneof_index") \
                    and not m.options.map_entry:
                f.label = FDP.LABEL_REPEATED
    for fname in order:
        pool.Add(files[fname])
    return pool


def _syntax(file) -> str:
    from google.protobuf import descriptor_pb2
    return descriptor_pb2.FileDescriptorProto.FromString(file.serialized_pb).syntax


class _Ctx:
    def __init__(self, n: int, max_items: int):
        self.redo = np.zeros(n, bool)
        self.errors: dict[int, str] = {}
        self.max_items = max_items

    def error(self, rows: np.ndarray, msg: str) -> None:
        for r in np.unique(rows).tolist():
            self.errors.setdefault(r, msg)


class PtarsEngine:
    """Decoder of one message type with ptars; see the module docstring."""

    def __init__(self, desc, arrow_type: pa.DataType, enum_as: str, max_items: int):
        import ptars

        self.desc, self.arrow_type, self.max_items = desc, arrow_type, max_items
        cfg = ptars.PtarsConfig(timestamp_unit="us", duration_unit="us",
                                enum_repr="int32" if enum_as == "int" else "string")
        cut = _back_edges(desc)
        unrolled = unrolled_pool(desc, arrow_type)
        if unrolled is not None:  # one ptars call decodes every level
            self._cut: set = set()
            self._shadow, self._root = unrolled
            self._pool = ptars.HandlerPool(
                [self._shadow.FindMessageTypeByName(self._root).file], config=cfg)
        else:  # recursive fields as bytes, decoded one level per call
            if cut is None:
                raise NotImplementedError(f"{desc.full_name}: recursion through a map value or "
                                          "a oneof member")
            self._cut, self._root = cut, desc.full_name
            self._shadow = _acyclic_pool(desc, self._cut)
            self._pool = ptars.HandlerPool([self._shadow.FindFileByName(desc.file.name)], config=cfg)
        # fields ptars reads as singular bytes that protobuf merges when sent twice: the wire
        # check sends such rows to the reference path
        self.merged_fields = {(m, f) for m, f in self._cut
                              if desc.file.pool.FindMessageTypeByName(m).fields_by_name[f]
                              .containing_oneof is not None}
        self._handlers: dict[str, object] = {}
        self._panic = getattr(getattr(ptars, "_lib", None), "PanicException", None)
        try:
            from pyo3_runtime import PanicException  # type: ignore[import-not-found]  # PyO3's, no stubs
            self._panic = PanicException
        except ImportError:
            pass

    def _handler(self, desc):
        name = self._root if desc is self.desc else desc.full_name
        h = self._handlers.get(name)
        if h is None:
            h = self._handlers[name] = self._pool.get_for_message(
                self._shadow.FindMessageTypeByName(name))
        return h

    def _parse(self, desc, payloads: pa.BinaryArray):
        """ptars over ``payloads`` (no nulls): (StructArray or None, {row: reason}, redo rows).

        A refused batch is split row by row; a panic sends the row to the reference path."""
        h = self._handler(desc)
        try:
            return _as_struct(h.array_to_record_batch(payloads)), {}, []
        except ValueError:
            pass
        except BaseException as e:
            if not _is_panic(e):
                raise
        bad: dict[int, str] = {}
        redo: list[int] = []
        for i in range(len(payloads)):
            try:
                h.array_to_record_batch(payloads.slice(i, 1))
            except ValueError as e:
                bad[i] = str(e)
            except BaseException as e:
                if not _is_panic(e):
                    raise
                redo.append(i)
        if not bad and not redo:  # refused as a batch, accepted row by row: trust no value
            return None, {}, list(range(len(payloads)))
        skip = np.zeros(len(payloads), bool)
        skip[list(bad) + redo] = True
        keep = np.flatnonzero(~skip)
        if len(keep) == 0:
            return None, bad, redo
        try:
            part = _as_struct(h.array_to_record_batch(payloads.take(pa.array(keep))))
        except BaseException as e:
            if isinstance(e, ValueError) or _is_panic(e):
                return None, bad, [i for i in range(len(payloads)) if i not in bad]
            raise
        pos = np.full(len(payloads), -1, np.int64)
        pos[keep] = np.arange(len(keep))
        return part.take(pa.array(pos, mask=pos < 0)), bad, redo

    def decode(self, payloads: pa.BinaryArray):
        """(StructArray of ``arrow_type`` or None, {row: reason}, redo mask)."""
        n = len(payloads)
        ctx = _Ctx(n, self.max_items)
        arr, bad, redo = self._parse(self.desc, payloads)
        ctx.errors.update(bad)
        ctx.redo[redo] = True
        if arr is None:  # every row is an error or goes to the reference path
            ctx.redo[:] = True
            ctx.redo[list(ctx.errors)] = False
            return None, ctx.errors, ctx.redo
        out = self._message(arr, self.desc, self.arrow_type, np.arange(n), ctx)
        return out, ctx.errors, ctx.redo

    # -- reshaping: one call per node of the Arrow type ------------------------------------
    def _message(self, arr, desc, t, rows, ctx) -> pa.Array:
        if len(arr) == 0:  # deep levels of an unrolled type are often empty
            return pa.array([], t)
        if pa.types.is_binary(arr.type):  # recursion cut by ptars: decode one more level
            arr = self._nested(arr, desc, rows, ctx)
            if arr is None:
                return pa.nulls(len(rows), t)
        valid = arr.is_valid() if arr.null_count else None
        kids = dict(zip((f.name for f in arr.type), _children(arr)))
        by_name = desc.fields_by_name
        out = []
        for field in t:
            f = by_name[field.name]
            out.append(self._field(kids[field.name], f, field.type, rows, ctx))
        # Fields below the recursion cut are dropped, as documented for recursionDepth and as
        # Spark's from_protobuf (recursive.fields.max.depth) and our Avro and JSON decoders do;
        # nesting beyond the hard cap (MAX_DEPTH) is still a row error (the wire check).
        for o in desc.oneofs:
            members = [kids[f.name] for f in o.fields if f.name in kids]
            members = [m for m in members if m.null_count < len(m)]
            if len(members) > 1:
                count = np.zeros(len(rows), np.int32)
                for m in members:
                    count += m.is_valid().to_numpy(zero_copy_only=False)
                ctx.redo[rows[count > 1]] = True
        mask = None if valid is None else pc.invert(valid)
        if not len(t):
            # from_arrays cannot tell the length of a struct without children: build it whole
            validity = None if mask is None else pc.invert(mask)
            if validity is not None and (validity.offset or validity.null_count):
                validity = pa.array(validity.to_numpy(zero_copy_only=False))
            return pa.Array.from_buffers(t, len(rows), [None if validity is None else validity.buffers()[1]],
                                         null_count=-1 if validity is not None else 0)
        return pa.StructArray.from_arrays(out, fields=list(t), mask=mask)

    def _nested(self, arr: pa.BinaryArray, desc, rows, ctx):
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        idx = np.flatnonzero(valid)
        vals = arr.take(pa.array(idx)) if len(idx) != len(arr) else arr
        sub, bad, redo = self._parse(desc, vals)
        for i, why in bad.items():
            ctx.error(rows[idx[i]:idx[i] + 1], why)
        if redo:
            ctx.redo[rows[idx[redo]]] = True
        if sub is None:
            ctx.redo[rows[idx]] = True
            return None
        if len(idx) == len(arr):
            return sub
        pos = np.full(len(arr), -1, np.int64)
        pos[idx] = np.arange(len(idx))
        return sub.take(pa.array(pos, mask=pos < 0))

    def _field(self, arr, f, t, rows, ctx) -> pa.Array:
        if len(arr) == 0:
            return pa.array([], t)
        if is_map(f):
            offsets, lens, child_rows = self._lists(arr, rows, ctx)
            keys, items = _entries(arr.keys, arr, offsets, lens), _entries(arr.items, arr, offsets, lens)
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            multi = np.flatnonzero(lens > 1)
            if len(multi):  # a key repeated within one map: the reference keeps the last
                pick = np.repeat(lens > 1, lens)
                owner = np.repeat(np.arange(len(rows)), lens)[pick]
                picked = keys.filter(pa.array(pick))
                if pa.types.is_integer(picked.type) or pa.types.is_boolean(picked.type):
                    codes = picked.cast(pa.int64()).to_numpy(zero_copy_only=False)
                else:
                    codes = picked.dictionary_encode().indices.to_numpy(zero_copy_only=False)
                order = np.lexsort((codes, owner))
                same = (np.diff(owner[order]) == 0) & (np.diff(codes[order]) == 0)
                many = owner[order][1:][same]
                if len(many):
                    ctx.redo[rows[many]] = True
            k = self._single(keys, kf, t.key_type, child_rows, ctx)
            v = self._single(items, vf, t.item_type, child_rows, ctx)
            return pa.MapArray.from_arrays(pa.array(offsets), k, v, type=t)
        cut = (f.containing_type.full_name, f.name) in self._cut
        if not f.is_repeated and ((cut and f.containing_oneof is None) or _made_repeated(f)):
            arr = self._first(arr, rows, ctx)  # repeated in the copy ptars reads
        if f.is_repeated:
            offsets, _, child_rows = self._lists(arr, rows, ctx)
            vals = arr.flatten()
            v = self._single(vals, f, t.value_type, child_rows, ctx)
            return pa.ListArray.from_arrays(pa.array(offsets), v, type=t)
        return self._single(arr, f, t, rows, ctx)

    def _json_text(self, arr: pa.Array, desc, rows, ctx) -> pa.Array:
        """Serialized Any/Struct/Value/ListValue → JSON text (``_wktjson``); a value the kernel
        leaves to protobuf (an Any of another type) is converted alone, a row it refuses goes
        to the reference path."""
        from connector.formats.protobuf._wktjson import PY, REDO, WKT_KIND, json_text, render

        if not pa.types.is_binary(arr.type):
            arr = arr.cast(pa.binary())
        text, status = render(arr, WKT_KIND[desc.full_name])
        try:
            text.validate(full=True)
        except pa.ArrowInvalid:  # a string that is not UTF-8: protobuf refuses the message
            raw = _as_binary(text)
            for i in np.flatnonzero(status == 0).tolist():
                v = raw[i].as_py()
                if v is not None:
                    try:
                        v.decode()
                    except UnicodeDecodeError:
                        status[i] = REDO
            text = pc.if_else(pa.array(status == REDO), pa.scalar(None, pa.binary()),
                              raw).cast(pa.string())
        redo = status == REDO
        if redo.any():
            ctx.redo[rows[redo]] = True
        py = np.flatnonzero(status == PY)
        if not len(py):
            return text
        from google.protobuf import message_factory

        cls = message_factory.GetMessageClass(desc)
        got = text.to_pylist()
        for i in py.tolist():
            try:
                got[i] = json_text(cls.FromString(arr[i].as_py()), desc.file.pool)
            except Exception as e:  # noqa: BLE001 - protobuf's json_format raises many kinds
                got[i] = None
                ctx.error(rows[i:i + 1], f"{desc.full_name} value not writable as JSON: "
                                         f"{type(e).__name__}: {e}")
        return pa.array(got, pa.string())

    def _first(self, arr, rows, ctx) -> pa.Array:
        """The only item of each list (null when empty); rows where a singular message
        field came twice (protobuf merges them, ptars would keep the last) go to the
        reference path."""
        raw = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        lens = np.diff(raw)
        twice = lens > 1
        if twice.any():
            ctx.redo[rows[twice]] = True
        has = lens >= 1
        return arr.values.take(pa.array(np.where(has, raw[:-1], 0), mask=~has))

    def _lists(self, arr, rows, ctx):
        raw = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        lens = np.diff(raw)
        if arr.null_count:
            lens = np.where(arr.is_valid().to_numpy(zero_copy_only=False), lens, 0)
        big = lens > ctx.max_items
        if big.any():
            ctx.error(rows[big], f"a repeated field or map holds more than "
                                 f"{ctx.max_items} items (max_collection_items)")
        offsets = np.zeros(len(lens) + 1, np.int32)
        np.cumsum(lens, out=offsets[1:])
        return offsets, lens, np.repeat(rows, lens)

    def _single(self, arr, f, t, rows, ctx) -> pa.Array:
        if f.type == FD.TYPE_MESSAGE:
            name = f.message_type.full_name
            if name == "google.protobuf.Timestamp" or name == "google.protobuf.Duration":
                us = arr.cast(pa.int64()) if not pa.types.is_timestamp(arr.type) else arr.view(pa.int64())
                v = us.fill_null(0).to_numpy(zero_copy_only=False)  # int64, never float
                if name == "google.protobuf.Timestamp":
                    out_of_range = (v < TS_MIN) | (v >= TS_MAX)
                else:
                    out_of_range = (v > DUR_MAX) | (v < -DUR_MAX)
                out_of_range &= arr.is_valid().to_numpy(zero_copy_only=False)
                if out_of_range.any():
                    ctx.error(rows[out_of_range], f"{name} of field {f.full_name} is out of range")
                return us.cast(t) if t != pa.int64() else us
            if name in WKT_SCALARS:
                return _cast(arr, t)
            if name in WKT_JSON:  # its bytes, as ptars read them
                return self._json_text(arr, f.message_type, rows, ctx)
            return self._message(arr, f.message_type, t, rows, ctx)
        return _cast(arr, t)


def _made_repeated(f) -> bool:
    """A singular field the copies ptars reads declare repeated: Timestamp/Duration/wrappers
    (to see one sent twice) and JSON-text types (bytes: to tell absent from empty), except in
    oneofs and map entries, which cannot be repeated."""
    if f.is_repeated or f.type != FD.TYPE_MESSAGE or f.containing_oneof is not None or \
            f.containing_type.GetOptions().map_entry:
        return False
    return f.message_type.full_name in WKT_SCALARS or f.message_type.full_name in WKT_JSON


def _as_binary(text: pa.Array) -> pa.Array:
    """The same buffers as ``binary`` (no UTF-8 check)."""
    return pa.Array.from_buffers(pa.binary(), len(text), text.buffers(), offset=text.offset)


def _entries(flat: pa.Array, arr, offsets: np.ndarray, lens: np.ndarray) -> pa.Array:
    """The items of the (valid) lists of ``arr`` back to back: ``flat`` ignores offsets."""
    raw = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    total = int(offsets[-1])
    if raw[0] == 0 and raw[-1] == total:
        return flat.slice(0, total)
    idx = np.arange(total) - np.repeat(offsets[:-1], lens) + np.repeat(raw[:-1], lens)
    return flat.take(pa.array(idx))


def _cast(arr: pa.Array, t: pa.DataType) -> pa.Array:
    if arr.type == t:
        return arr
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(arr.type):
        return arr.view(pa.int64()).view(t)
    return arr.cast(t)


def _children(arr: pa.StructArray) -> list:
    """Children with the parent's offset applied (and its nulls merged, harmlessly)."""
    if arr.offset == 0 and arr.null_count == 0:
        return [arr.field(i) for i in range(arr.type.num_fields)]
    return arr.flatten()


def _as_struct(rb: pa.RecordBatch) -> pa.StructArray:
    if rb.num_columns == 0:
        return pa.array([{}] * rb.num_rows, pa.struct([]))
    return pa.StructArray.from_arrays(rb.columns, fields=list(rb.schema))


def _is_panic(e: BaseException) -> bool:
    return type(e).__name__ == "PanicException"
