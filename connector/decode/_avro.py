"""Avro payloads of one writer schema → one Arrow array of the reader's type.

Fast path: the group's payloads become one in-memory Avro object-container file (header,
one block holding every payload back to back, sync marker) read by ``polars.read_avro``;
then sizes are checked (see ``_avro_arrow``) and writer → reader resolution runs in Arrow.
Reference path (also the fallback for maps, multi-type unions, recursion, enum defaults and
any row after a failure): ``fastavro.schemaless_reader`` per record, with the same
logical-type handling, so both paths give identical output.
"""
from __future__ import annotations

import io
import json
import os
from typing import Any, Callable

import fastavro
import fastavro.schema
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.decode._avro_guard import check_counts, needs_guard
from connector.decode._avro_arrow import encoded_sizes, fast_ok, resolve, writer_fast_ok
from connector.decode._avro_schema import Node, arrow_type_of, parse_avro, strip_logical, union_kind
from connector.decode._options import DecodeOptions
from connector.errors import SchemaMappingError

__all__ = ["AvroCodec", "build_container"]

_MAGIC = b"Obj\x01"


def _zigzag_varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _payload_view(payloads: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of a binary array without copying."""
    if pa.types.is_large_binary(payloads.type):
        payloads = payloads.cast(pa.binary())
    bufs = payloads.buffers()
    offs = np.frombuffer(bufs[1], np.int32, len(payloads) + 1, payloads.offset * 4)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return offs, data


def _container_head(schema_json: str, sync: bytes) -> bytearray:
    meta = {b"avro.schema": schema_json.encode(), b"avro.codec": b"null"}
    head = bytearray(_MAGIC) + _zigzag_varint(len(meta))
    for k, v in meta.items():
        head += _zigzag_varint(len(k)) + k + _zigzag_varint(len(v)) + v
    head += b"\x00" + sync
    return head


def build_container(schema_json: str, payloads: pa.BinaryArray) -> bytes:
    """One Avro object-container file holding ``payloads`` as a single uncompressed block."""
    sync = os.urandom(16)
    head = _container_head(schema_json, sync)
    offs, data = _payload_view(payloads)
    body = data[offs[0]:offs[-1]]  # payloads of a null-free array are back to back
    head += _zigzag_varint(len(payloads)) + _zigzag_varint(len(body))
    return b"".join([bytes(head), body.tobytes(), sync])


def build_block_per_record(schema_json: str, payloads: pa.BinaryArray) -> bytes:
    """An object-container file with one block per payload: ``count=1, size, payload, sync``.

    A reader decodes each record from its own block, so a payload with trailing bytes or a
    truncated one cannot shift its neighbours (unlike one block for all): the same per-record
    isolation as ``schemaless_reader``, in one call. Built with numpy and one Arrow join.
    """
    from connector.decode._avro_arrow import _varint_len, _zz

    n = len(payloads)
    sync = os.urandom(16)
    offs, _ = _payload_view(payloads)
    zz = _zz(np.diff(offs).astype(np.int64))
    nb = _varint_len(zz)
    prefix_len = 1 + nb
    prefix_offs = np.zeros(n + 1, np.int32)
    np.cumsum(prefix_len, out=prefix_offs[1:])
    prefix = np.empty(int(prefix_offs[-1]), np.uint8)
    starts = prefix_offs[:-1]
    prefix[starts] = 2  # zigzag(1): one record in the block
    for k in range(int(nb.max()) if n else 0):
        rows = nb > k
        byte = ((zz[rows] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        more = (nb[rows] > k + 1).astype(np.uint8) << 7
        prefix[starts[rows] + 1 + k] = byte | more
    prefixes = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(prefix_offs.tobytes()),
                                                      pa.py_buffer(prefix.tobytes())])
    blocks = pc.binary_join_element_wise(prefixes, payloads, pa.repeat(pa.scalar(sync, pa.binary()), n),
                                         pa.scalar(b"", pa.binary()))
    bufs = blocks.buffers()
    body = np.frombuffer(bufs[2], np.uint8)[:int(np.frombuffer(bufs[1], np.int32)[n])] if n else b""
    return bytes(_container_head(schema_json, sync)) + bytes(memoryview(body))


def _is_identity(n: Node) -> bool:
    """Whether ``_converter(n)`` returns fastavro's value unchanged (``pa.array`` takes it as is)."""
    k = n.kind
    if k == "union":
        uk = union_kind(n)
        if uk == "nullable":
            return all(_is_identity(b) for b in n.nonnull)
        return uk in ("long", "double")
    if k == "record":
        return all(_is_identity(f.type) for f in n.fields)
    if k in ("array", "map"):
        return _is_identity(n.items)  # pa.array takes dicts for map types
    if k == "long" and n.logical in ("timestamp-millis", "local-timestamp-millis"):
        return False
    return True


def _converter(n: Node) -> Callable[[Any], Any]:
    """Python value from fastavro (logical types stripped but decimal) → value for pa.array."""
    k = n.kind
    if k == "union":
        uk = union_kind(n)
        nn = n.nonnull
        if uk == "nullable":
            inner = _converter(nn[0]) if nn else (lambda v: None)
            return lambda v: None if v is None else inner(v[1] if type(v) is tuple else v)
        if uk in ("long", "double"):
            return lambda v: v
        convs = [_converter(b) for b in nn]
        width = len(nn)

        def pick(v):
            if v is None:
                return None
            if type(v) is tuple:  # (record name, record) from return_record_name
                name, v = v
                i = next(j for j, b in enumerate(nn) if b.kind == "record" and
                         (b.name == name or b.name.rpartition(".")[2] == name))
            else:
                i = _branch_for(nn, v)
            out = dict.fromkeys(f"member{j}" for j in range(width))
            out[f"member{i}"] = convs[i](v)
            return out
        return pick
    if k == "record":
        fields = [(f.name, _converter(f.type)) for f in n.fields]
        return lambda v: None if v is None else {name: c(v.get(name)) for name, c in fields}
    if k == "array":
        c = _converter(n.items)
        return lambda v: None if v is None else [c(x) for x in v]
    if k == "map":
        c = _converter(n.items)
        return lambda v: None if v is None else [(key, c(x)) for key, x in v.items()]
    if k == "long" and n.logical in ("timestamp-millis", "local-timestamp-millis"):
        return lambda v: None if v is None else v * 1000
    return lambda v: v


_PY_KINDS = {bool: ("boolean",), int: ("int", "long"), float: ("float", "double"),
             str: ("string", "enum"), bytes: ("bytes", "fixed"), dict: ("record", "map"),
             list: ("array",)}


def _branch_for(branches, v) -> int:
    kinds = _PY_KINDS.get(type(v), ("bytes", "fixed"))  # Decimal comes from a decimal branch
    for j, b in enumerate(branches):
        if b.kind in kinds and (b.kind != "fixed" or len(v) == b.size):
            return j
    raise ValueError(f"value of type {type(v).__name__} matches no union branch")


def _full(x: dict, ns) -> str:
    if "." in x["name"]:
        return x["name"]
    return ".".join(filter(None, [x.get("namespace", ns), x["name"]]))


def _inline_refs(obj, refs: tuple):
    """Main schema JSON with referenced named types defined inline at first use."""
    if not refs:
        return obj
    defs: dict = {}

    def collect(x, ns):
        if isinstance(x, list):
            for y in x:
                collect(y, ns)
        elif isinstance(x, dict):
            if x.get("type") in ("record", "error", "enum", "fixed") and "name" in x:
                name = _full(x, ns)
                defs.setdefault(name, x)
                ns = name.rpartition(".")[0] or None
            for k in ("type", "items", "values", "fields"):
                if k in x:
                    collect(x[k], ns)
    for ref in refs:
        collect(json.loads(ref), None)
    seen: set = set()

    def walk(x, ns):
        if isinstance(x, str):
            for cand in (".".join(filter(None, [ns, x])) if "." not in x else x, x):
                if cand in defs and cand not in seen:
                    seen.add(cand)
                    d = dict(defs[cand])
                    if "." not in d["name"] and "namespace" not in d:
                        d["name"] = cand  # keep its full name once moved into another namespace
                    return walk(d, ns)
            return x
        if isinstance(x, list):
            return [walk(y, ns) for y in x]
        if isinstance(x, dict):
            out = dict(x)
            if x.get("type") in ("record", "error", "enum", "fixed") and "name" in x:
                full = _full(x, ns)
                seen.add(full)
                ns = full.rpartition(".")[0] or None
            for k in ("type", "items", "values"):
                if k in x:
                    out[k] = walk(x[k], ns)
            if isinstance(x.get("fields"), list):
                out["fields"] = [dict(f, type=walk(f.get("type"), ns)) for f in x["fields"]]
            return out
        return x
    return walk(obj, None)


def _fastavro_schema(obj, refs: tuple):
    return fastavro.parse_schema(strip_logical(_inline_refs(obj, refs)), _write_hint=False)


class AvroCodec:
    """Decoder of one (writer, reader) pair; build once per process and reuse."""

    def __init__(self, writer_text: str, reader: Node | None, reader_text: str | None,
                 options: DecodeOptions, writer_refs: tuple = (), reader_refs: tuple = ()):
        self.options = options
        self.writer, w_recursive = parse_avro(writer_text, max_depth=options.max_recursion_depth,
                                              refs=writer_refs)
        self.reader = reader if reader is not None else self.writer
        self.arrow_type = arrow_type_of(self.reader)
        w_json = json.loads(writer_text)
        r_json = json.loads(reader_text) if reader_text else w_json
        if not reader_text:
            reader_refs = writer_refs
        try:
            self._w_parsed = _fastavro_schema(w_json, writer_refs)
            self._r_parsed = _fastavro_schema(r_json, reader_refs)
        except Exception as e:  # fastavro raises several untyped errors on bad schemas
            raise SchemaMappingError(f"invalid Avro schema: {e}") from e
        self._stripped_json = None
        try:
            # polars does not resolve named-type references: give it every definition inline
            self._stripped_json = json.dumps(fastavro.schema.expand_schema(
                strip_logical(_inline_refs(w_json, writer_refs))))
        except Exception:  # noqa: BLE001 - no fast path then; the reference path decodes
            pass
        self._convert = _converter(self.reader)
        self._guard = needs_guard(self.writer)
        # Resolution costs fastavro about a third more per record: skip it when the writer
        # schema is the reader schema (the common case: one schema id for the whole topic).
        self._same = (not reader_text or json.loads(reader_text) == w_json) and reader_refs == writer_refs
        # Block path: fields whose fastavro value needs converting for pa.array (the rest go
        # through pa.array's C++ conversion untouched).
        self._top_convs = None
        if self.reader.kind == "record":
            self._top_convs = [(f.name, _converter(f.type)) for f in self.reader.fields
                               if not _is_identity(f.type)]
        self.fast = (options.fast_path and self._stripped_json is not None and not w_recursive
                     and writer_fast_ok(self.writer) and fast_ok(self.writer, self.reader))

    def decode(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        """Decode a null-free binary array; returns (values, per-row error or None)."""
        n = len(payloads)
        if n == 0:
            return pa.array([], self.arrow_type), []
        start = 0
        parts = []
        if self.fast:
            good = self._fast(payloads)
            if good is not None:
                parts.append(good)
                start = len(good)
        errors = [None] * start
        if start < n and self._block_ok():
            got = self._block(payloads.slice(start), label)
            if got is not None:
                parts.append(got)
                return (got if not start else pa.concat_arrays(parts)), [None] * n
        if start < n:
            vals, errs = self._reference(payloads.slice(start), label)
            parts.append(vals)
            errors.extend(errs)
        values = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
        return values, errors

    def _fast(self, payloads: pa.BinaryArray) -> pa.Array | None:
        """Decoded prefix of the group that passed the size check, or None."""
        import polars as pl
        try:
            blob = build_container(self._stripped_json, payloads)
            table = pl.read_avro(io.BytesIO(blob)).to_arrow()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # noqa: BLE001 - polars raises Rust PanicException (BaseException)
            return None
        try:
            struct = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns],
                                                names=table.column_names)
            if len(struct) != len(payloads):
                return None
            offs, _ = _payload_view(payloads)
            ok = encoded_sizes(struct, self.writer) == np.diff(offs)
            trusted = len(ok) if ok.all() else int(np.argmin(ok))
            if trusted == 0:
                return None
            return resolve(struct.slice(0, trusted), self.writer, self.reader)
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            return None

    def _block_ok(self) -> bool:
        # Hostile collection counts are checked per record on the reference path only.
        return (self.options.fast_path and not self._guard and self._top_convs is not None
                and self._stripped_json is not None)

    def _block(self, payloads: pa.BinaryArray, label: str) -> pa.Array | None:
        """Every record of the group through fastavro's container reader in one call.

        Any failure (a corrupt record, a value that does not fit) returns None and the
        reference path decodes the group record by record to find the bad rows.
        """
        n = len(payloads)
        offs, _ = _payload_view(payloads)
        if int(np.diff(offs).max()) > self.options.max_record_bytes:
            return None
        try:
            blob = build_block_per_record(self._stripped_json, payloads)
            recs = list(fastavro.reader(io.BytesIO(blob), reader_schema=None if self._same else self._r_parsed,
                                        return_record_name=True, return_record_name_override=True))
            if len(recs) != n:
                return None
            for name, conv in self._top_convs:
                for r in recs:
                    r[name] = conv(r[name])
            return pa.array(recs, type=self.arrow_type)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception:  # noqa: BLE001 - fastavro/pyarrow raise many types; reference decides
            return None

    def _reference(self, payloads: pa.BinaryArray, label: str) -> tuple[pa.Array, list]:
        rows: list = []
        errors: list = []
        cap = self.options.max_record_bytes
        for p in payloads.to_pylist():
            if p is None:
                rows.append(None)
                errors.append(f"avro decode failed for schema id {label}: null payload")
                continue
            if len(p) > cap:
                rows.append(None)
                errors.append(f"avro decode failed for schema id {label}: payload of {len(p)} "
                              f"bytes exceeds max_record_bytes={cap}")
                continue
            try:
                if self._guard:
                    check_counts(p, self.writer, self.options.max_collection_items)
                rec = fastavro.schemaless_reader(io.BytesIO(p), self._w_parsed, self._r_parsed,
                                                 return_record_name=True,
                                                 return_record_name_override=True)
                rows.append(self._convert(rec))
                errors.append(None)
            except (KeyboardInterrupt, SystemExit, MemoryError):
                raise
            except Exception as e:  # noqa: BLE001 - fastavro raises EOFError, ValueError, ...
                rows.append(None)
                errors.append(f"avro decode failed for schema id {label}: "
                              f"{type(e).__name__}: {e}")
        return _to_arrow(rows, errors, self.arrow_type, f"avro decode failed for schema id {label}")


def _to_arrow(rows: list, errors: list, arrow_type: pa.DataType, prefix: str):
    """``pa.array(rows)``; if that fails, locate the rows that do not fit the type."""
    try:
        return pa.array(rows, type=arrow_type), errors
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        pass
    for i, r in enumerate(rows):
        if r is None:
            continue
        try:
            pa.array([r], type=arrow_type)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as e:
            rows[i] = None
            errors[i] = f"{prefix}: value does not fit {arrow_type}: {e}"
    return pa.array(rows, type=arrow_type), errors
