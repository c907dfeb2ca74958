"""Orchestration: ParsedFrames + writer schemas → one typed Arrow column in row order.

Rows are grouped by writer schema (and Protobuf message index), each group is decoded in
one vectorized call, and the groups are scattered back into row order with one ``take``.

Schema problems (an unreachable or unparseable writer schema, a writer that cannot be
resolved to the reader) become per-row errors for that group naming the schema id, so a
PERMISSIVE read keeps going; only a bad *reader* schema raises (at planning time).
Fields a newer writer adds that the reader lacks are dropped; reader fields the writer
lacks take the reader's default (Avro) or are null/default (Protobuf, JSON).
"""
from __future__ import annotations

import threading
import uuid
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wireformat import add_note

from connector.process_cache import ProcessCache, SchemaBound
from connector.decode._avro import AvroCodec
from connector.decode._avro_schema import arrow_type_of, parse_avro
from connector.decode._json import JsonCodec
from connector.decode._json_schema import parse_json_schema
from connector.decode._options import DecodeOptions, DecodeResult
from connector.decode._protobuf import ProtoCodec
from connector.decode._protobuf_schema import compile_proto
from connector.errors import ConfigError, SchemaMappingError

_NONE = np.array(None, object)  # compares like None; numpy's stubs refuse a bare None operand
__all__ = ["Decoder", "build_decoder", "schema_format", "refs_of", "json_title", "label_of", "scatter", "row_groups",
           "payloads_of", "RowBook", "writer_groups", "fault_text"]

_FORMATS = {"avro": "avro", "json": "json", "jsonschema": "json", "protobuf": "protobuf",
            "proto": "protobuf"}


def schema_format(obj: Any, hint: str | None = None) -> str:
    """``"avro"``/``"json"``/``"protobuf"`` from a SchemaSpec ``.format`` or a registry
    ``.schema_type`` (``"AVRO"``, ``"PROTOBUF"``, ``"JSON"``)."""
    raw = getattr(obj, "format", None) or getattr(obj, "schema_type", None) or hint or "avro"
    raw = str(getattr(raw, "value", raw)).lower()
    try:
        return _FORMATS[raw]
    except KeyError as e:
        raise ConfigError(f"unsupported payload format {raw!r}; expected avro, json or protobuf") from e


def refs_of(obj: Any) -> tuple:
    out = []
    for name, ref in getattr(obj, "resolved_references", ()) or ():
        out.append((name, getattr(ref, "text", ref)))
    return tuple(out)


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
    idx = np.concatenate([p[0] for p in parts]).astype(np.int64)
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


class _State:
    """Per-process compiled objects of one Decoder (never pickled)."""

    def __init__(self, d: "Decoder"):
        self.lock = threading.Lock()
        o = d.options
        self.reader_avro = self.reader_proto = self.json = None
        text = d.text or ""  # build_decoder refuses Avro and Protobuf readers without text
        if d.fmt == "avro":
            self.reader_avro, _ = parse_avro(text, max_depth=o.max_recursion_depth,
                                             refs=tuple(t for _, t in d.refs))
            self.arrow_type = arrow_type_of(self.reader_avro)
            self.full_name = self.reader_avro.name
        elif d.fmt == "protobuf":
            self.reader_proto = ProtoCodec(compile_proto(text, d.refs),
                                           d.message or o.protobuf_message, o)
            self.arrow_type = self.reader_proto.arrow_type
            self.full_name = self.reader_proto.full_name
        else:
            self.json = JsonCodec(parse_json_schema(d.text, max_depth=o.max_recursion_depth), o)
            self.arrow_type = self.json.arrow_type
            self.full_name = json_title(d.text)
        self.avro: dict[tuple, AvroCodec] = {}
        # (writer text, writer refs, message path) -> the writer's own Decoder (schema evolution)
        self.evolved: dict[tuple, Decoder] = {}
        # (writer text, writer refs, message path) -> record full name; see Decoder.writer_name
        self.names: dict[tuple, str | None] = {}


def json_title(text: str | None) -> str | None:
    import json
    try:
        t = json.loads(text).get("title") if text else None
    except (ValueError, AttributeError):
        return None
    return t if isinstance(t, str) else None


_STATES = ProcessCache()
# Writer names cached per decoder and process (distinct writer schemas x message paths).
_MAX_NAMES = 4096


class Decoder(SchemaBound):
    """Decodes framed Kafka payloads to one Arrow column of a type fixed at planning time.

    Build with :func:`build_decoder`. Picklable: holds the reader schema text and options;
    compiled schemas and codecs live in a per-process cache.

    Examples
    --------
    >>> from connector.decode import build_decoder, DecodeOptions
    >>> class Spec:  # anything with .format and .text, e.g. connector.asyncapi.SchemaSpec
    ...     format, text = "json", '{"type": "object", "properties": {"a": {"type": "integer"}}}'
    >>> build_decoder(Spec(), options=DecodeOptions()).arrow_type
    StructType(struct<a: int64>)
    """

    options: DecodeOptions

    def _state(self) -> _State:
        return _STATES.get(self._key, lambda: _State(self))

    @property
    def arrow_type(self) -> pa.DataType:
        """The output type, in the exact form Spark expects."""
        return self._state().arrow_type

    @property
    def full_name(self) -> str | None:
        """Full name of the reader's record/message type (JSON: the schema ``title``)."""
        return self._state().full_name

    # -- one group ----------------------------------------------------------------------
    def writer_name(self, writer, path: tuple) -> str | None:
        """Full name of the record type a writer schema (and message-index path) carries.

        Parsed once per (writer schema, path) per process: every batch meets the same few.
        """
        if writer is None:
            return self.full_name
        st = self._state()
        key = (writer.text, refs_of(writer), path)
        try:
            return st.names[key]
        except KeyError:
            pass
        if self.fmt == "avro":
            name = parse_avro(writer.text, max_depth=max(1, self.options.max_recursion_depth),
                              refs=tuple(t for _, t in refs_of(writer)))[0].name
        elif self.fmt == "protobuf":
            name = compile_proto(writer.text, refs_of(writer)).full_name_for_indexes(path)
        else:
            name = json_title(writer.text)
        with st.lock:
            if len(st.names) < _MAX_NAMES:  # paths come from record bytes: bound the cache
                st.names[key] = name
        return name

    def decode_group(self, payloads: pa.BinaryArray, writer, path: tuple, label: str):
        """Decode payloads that share a writer schema; returns (values, errors)."""
        st = self._state()
        if st.json is not None:
            return st.json.decode(payloads, label)
        if self.fmt == "protobuf":
            if writer is not None:
                name = self.writer_name(writer, path)
                if name != st.full_name:
                    raise SchemaMappingError(f"message type {name} does not match the reader's "
                                             f"{st.full_name}")
            assert st.reader_proto is not None
            return st.reader_proto.decode(payloads, label)
        text = writer.text if writer is not None else self.text
        assert text is not None and st.reader_avro is not None
        w_refs = tuple(t for _, t in (refs_of(writer) if writer is not None else self.refs))
        codec = st.avro.get((text, w_refs))
        if codec is None:
            codec = AvroCodec(text, st.reader_avro, self.text, self.options, writer_refs=w_refs,
                              reader_refs=tuple(t for _, t in self.refs))
            with st.lock:
                st.avro[(text, w_refs)] = codec
        return codec.decode(payloads, label)

    # -- schema evolution -----------------------------------------------------------------
    def _writer_decoder(self, writer, path: tuple) -> "Decoder":
        key = (writer.text, refs_of(writer), path)
        st = self._state()
        d = st.evolved.get(key)
        if d is None:
            import dataclasses

            message = self.writer_name(writer, path) if self.fmt == "protobuf" else None
            d = Decoder(self.fmt, writer.text, refs_of(writer), message,
                        dataclasses.replace(self.options, evolution="none"))
            with st.lock:
                st.evolved[key] = d
        return d

    def new_fields(self, writer, path: tuple = ()) -> list[str]:
        """Dotted paths of fields ``writer`` (a registry Schema) has and the reader lacks."""
        from connector.decode._evolution import new_fields, reader_aliases

        st = self._state()
        w = self._writer_decoder(writer, path)
        return new_fields(w.arrow_type, st.arrow_type, reader_aliases(st.reader_avro))

    def evolve(self, parsed, rows: np.ndarray, writer, path: tuple, label: str):
        """Apply ``options.evolution`` to one group: raise, rescue (JSON per row) or nothing."""
        mode = self.options.evolution
        if mode == "none" or writer is None:
            return None
        try:
            extra = self.new_fields(writer, path)
        except Exception:  # noqa: BLE001 - a writer schema we cannot map fails its rows in decode_group
            return None
        if not extra:
            return None
        from connector.decode._evolution import SchemaEvolutionError, reader_aliases, rescue_json

        if mode == "failOnNewFields":
            raise SchemaEvolutionError(label, tuple(extra))
        w = self._writer_decoder(writer, path)
        vals, errs = w.decode_group(payloads_of(parsed, rows), None, path, label)
        return rescue_json(vals, self._state().arrow_type, reader_aliases(self._state().reader_avro))

    # -- whole batch --------------------------------------------------------------------
    def decode(self, parsed, lookup: Callable[[Any], Any]) -> DecodeResult:
        """Decode every row of ``parsed`` (``wireformat.ParsedFrames``).

        Parameters
        ----------
        parsed : wireformat.ParsedFrames
        lookup : callable
            ``SchemaKey -> registry.Schema`` (e.g. ``SchemaRegistry.lookup``). Not called for
            rows framed with ``none``. For JSON it only checks the id (known, JSON Schema):
            the reader schema decodes.

        Returns
        -------
        DecodeResult
            Never raises for bad payloads or writer schemas: those rows get error text.
        """
        book = RowBook(parsed)
        parts: list = []
        for writer, path, rows, label in writer_groups(parsed, lookup, self.fmt, book):
            self.decode_rows(parsed, rows, writer, path, label, book, parts)
        return book.result(scatter(len(parsed), parts, self._state().arrow_type))

    def decode_rows(self, parsed, rows: np.ndarray, writer, path: tuple, label: str, book: "RowBook",
                    parts: list) -> None:
        """Decode one writer group into ``parts`` (row indices, values) and ``book``.

        Evolution runs outside the ``try``: ``failOnNewFields`` must stop the query, not mark
        rows. Any other failure (SchemaMappingError, anything unforeseen) becomes the rows'
        error: decode() never raises for data or writer schemas.
        """
        book.rescue(rows, self.evolve(parsed, rows, writer, path, label))
        try:
            vals, errs = self.decode_group(payloads_of(parsed, rows), writer, path, label)
        except Exception as e:  # noqa: BLE001 - see above
            book.fail(rows, f"{self.fmt} decode failed for schema id {label}: {fault_text(e)}")
            return
        parts.append((rows, vals))
        book.add_errors(rows, errs)


def writer_groups(parsed, lookup: Callable[[Any], Any], fmt: str,
                  book: "RowBook") -> Iterator[tuple[Any, tuple, np.ndarray, str]]:
    """Yield ``(writer schema, message path, rows, label)`` per writer group of a batch.

    The one place that looks writer schemas up: ``lookup`` faults that are the record's
    (an id the registry does not know, a schema of another format or one that cannot be
    parsed) fail that group's rows in ``book``; others raise (``raise_unless_records_fault``).
    """
    for key, rows in parsed.group_by_schema():
        label = label_of(key)
        writer = None
        # JSON too: the reader schema decodes, but an id the registry does not know, or one
        # of another format, marks the record as not written for this channel
        if key[1] is not None:
            try:
                writer = lookup(key)
            except Exception as e:  # noqa: BLE001 - the record's own fault becomes a row error
                raise_unless_records_fault(e, label)
                book.fail(rows, f"schema lookup failed for schema id {label}: "
                                f"{type(e).__name__}: {e}")
                continue
            try:
                wfmt = schema_format(writer) if writer is not None else fmt
            except ConfigError as e:
                book.fail(rows, f"schema id {label}: {e}")
                continue
            if wfmt != fmt:
                book.fail(rows, f"schema id {label} is {wfmt}, expected {fmt}")
                continue
        for path, sub in row_groups(parsed, rows, fmt == "protobuf"):
            yield writer, path, sub, label


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
    """Per-row error text and schema ids of one batch, kept in numpy object arrays."""

    def __init__(self, parsed):
        n = self.n = len(parsed)
        self.errors = np.full(n, None, object)
        if (parsed.error != 0).any():
            from wireformat import error_messages
            self.errors[:] = error_messages(parsed.error).to_numpy(zero_copy_only=False)
        self.parsed = parsed
        self.rescued: list[tuple[np.ndarray, pa.Array]] | None = None

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
        bad = np.not_equal(self.errors, _NONE).astype(bool)
        rescued = None if self.rescued is None else scatter(self.n, self.rescued, pa.string())
        if not bad.any():
            return DecodeResult(values, pa.nulls(self.n, pa.string()), self.parsed, rescued)
        errors = pa.array(self.errors, pa.string())
        values = pc.if_else(pa.array(bad), pa.nulls(self.n, values.type), values)
        if rescued is not None:
            rescued = pc.if_else(pa.array(bad), pa.nulls(self.n, pa.string()), rescued)
        return DecodeResult(values, errors, self.parsed, rescued)


def build_decoder(reader: Any, *, options: DecodeOptions = DecodeOptions()) -> Decoder:
    """Fix the output type from a reader schema, on the driver.

    Parameters
    ----------
    reader : SchemaSpec-like or registry.Schema or None
        Anything with ``.text`` and ``.format`` (``"avro"``/``"json"``/``"protobuf"``) or
        ``.schema_type`` (``"AVRO"``/``"PROTOBUF"``/``"JSON"``), optionally
        ``.message_name`` (Protobuf) and ``.resolved_references``. ``None`` is only valid with
        ``options.format == "json"``: payloads come out as JSON text.
    options : DecodeOptions

    Raises
    ------
    SchemaMappingError
        The reader schema cannot be mapped (recursion, unknown names, does not compile).
    ConfigError
        ``reader`` is None for a format that needs a schema.
    """
    if reader is None:
        if (options.format or "").lower() != "json":
            raise ConfigError("a reader schema is required for Avro and Protobuf payloads; fetch "
                              "one from the registry and pass it to build_decoder")
        d = Decoder("json", None, (), None, options)
    else:
        fmt = schema_format(reader, options.format)
        if fmt != "json" and not getattr(reader, "text", None):
            raise SchemaMappingError(f"the {fmt} reader schema has no text")
        d = Decoder(fmt, getattr(reader, "text", None), refs_of(reader),
                    getattr(reader, "message_name", None), options)
    _ = d.arrow_type  # compile now so reader-schema problems surface on the driver
    return d
