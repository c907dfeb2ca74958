"""The generic decoder: ParsedFrames + writer schemas → one typed Arrow column in row order.

Rows are grouped by writer schema (and Protobuf message index), each group is decoded by the
format's reader (:class:`connector.formats.core.ReaderModel`) in one vectorized call, and the
groups are scattered back into row order with one ``take``. A reader that can decode rows of
several writers in one pass (an optional ``decode_runs(payloads, [(writer, rows, label)])``;
Avro has it) gets a batch of several groups whole instead: no take of each group's payloads,
no concatenation, no scatter (a writer that changes mid-partition gives such batches).

Schema problems (an unreachable or unparseable writer schema, a writer that cannot be
resolved to the reader) become per-row errors for that group naming the schema id, so a
PERMISSIVE read keeps going; only a bad *reader* schema raises (at planning time).
Fields a newer writer adds that the reader lacks are dropped (or rescued, or stop the query:
``DecodeOptions.evolution``); reader fields the writer lacks take the reader's default (Avro)
or are null/default (Protobuf, JSON).
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

from connector.errors import ConfigError, SchemaMappingError
from connector.formats._registry import payload_format, schema_format
from connector.formats.core import (
    DecodeOptions,
    DecodeResult,
    EvolutionMode,
    ProcessCache,
    ReaderModel,
    RowBook,
    SchemaBound,
    SchemaEvolutionError,
    fault_text,
    label_of,
    new_fields,
    payloads_of,
    raise_unless_records_fault,
    refs_of,
    rescue_json,
    row_groups,
    scatter,
)

__all__ = ["Decoder", "build_decoder", "writer_groups"]


class _State:
    """Per-process compiled objects of one Decoder (never pickled)."""

    def __init__(self, d: "Decoder"):
        self.lock = threading.Lock()
        self.reader: ReaderModel = payload_format(d.fmt).reader(d.text, d.refs, d.message, d.options)
        # (writer text, writer refs, message path) -> the writer's own Decoder (schema evolution)
        self.evolved: dict[tuple, Decoder] = {}
        # (writer text, writer refs, message path) -> record full name; see Decoder.writer_name
        self.names: dict[tuple, str | None] = {}


_STATES = ProcessCache()
# Writer names cached per decoder and process (distinct writer schemas x message paths).
_MAX_NAMES = 4096


class Decoder(SchemaBound):
    """Decodes framed Kafka payloads to one Arrow column of a type fixed at planning time.

    Build with :func:`build_decoder`. Picklable: holds the reader schema text and options;
    compiled schemas and codecs live in a per-process cache.

    Examples
    --------
    >>> from connector.formats import build_decoder, DecodeOptions
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
        return self._state().reader.arrow_type

    @property
    def full_name(self) -> str | None:
        """Full name of the reader's record/message type (JSON: the schema ``title``)."""
        return self._state().reader.full_name

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
        name = payload_format(self.fmt).writer_name(writer.text, refs_of(writer), path, self.options)
        with st.lock:
            if len(st.names) < _MAX_NAMES:  # paths come from record bytes: bound the cache
                st.names[key] = name
        return name

    def decode_group(self, payloads: pa.BinaryArray, writer, path: tuple, label: str):
        """Decode payloads that share a writer schema; returns (values, errors)."""
        reader = self._state().reader
        if writer is not None and payload_format(self.fmt).indexed_messages:
            # the bytes do not say their type: the message-index path must name the reader's
            name = self.writer_name(writer, path)
            if name != reader.full_name:
                raise SchemaMappingError(f"message type {name} does not match the reader's {reader.full_name}")
        return reader.decode_group(payloads, writer, path, label)

    # -- schema evolution -----------------------------------------------------------------
    def _writer_decoder(self, writer, path: tuple) -> "Decoder":
        key = (writer.text, refs_of(writer), path)
        st = self._state()
        d = st.evolved.get(key)
        if d is None:
            # records that name their type by a message-index path: the writer's own message
            message = self.writer_name(writer, path) if payload_format(self.fmt).indexed_messages else None
            d = Decoder(self.fmt, writer.text, refs_of(writer), message,
                        dataclasses.replace(self.options, evolution=EvolutionMode.NONE))
            with st.lock:
                st.evolved[key] = d
        return d

    def new_fields(self, writer, path: tuple = ()) -> list[str]:
        """Dotted paths of fields ``writer`` (a registry Schema) has and the reader lacks."""
        reader = self._state().reader
        w = self._writer_decoder(writer, path)
        return new_fields(w.arrow_type, reader.arrow_type, dict(reader.aliases))

    def evolve(self, parsed, rows: np.ndarray, writer, path: tuple, label: str):
        """Apply ``options.evolution`` to one group: raise, rescue (JSON per row) or nothing."""
        mode = self.options.evolution
        if mode is EvolutionMode.NONE or writer is None:
            return None
        try:
            extra = self.new_fields(writer, path)
        except Exception:  # noqa: BLE001 - a writer schema we cannot map fails its rows in decode_group
            return None
        if not extra:
            return None
        if mode is EvolutionMode.FAIL_ON_NEW_FIELDS:
            raise SchemaEvolutionError(label, tuple(extra))
        w = self._writer_decoder(writer, path)
        vals, errs = w.decode_group(payloads_of(parsed, rows), None, path, label)
        reader = self._state().reader
        return rescue_json(vals, reader.arrow_type, dict(reader.aliases))

    # -- whole batch --------------------------------------------------------------------
    #: one reader: no row is routed by its headers (see :class:`MultiDecoder`)
    routes_by_header = False

    def decode(self, parsed, lookup: Callable[[Any], Any], headers: Any = None) -> DecodeResult:
        """Decode every row of ``parsed`` (``wireformat.ParsedFrames``).

        Parameters
        ----------
        parsed : wireformat.ParsedFrames
        lookup : callable
            ``SchemaKey -> registry.Schema`` (e.g. ``SchemaRegistry.lookup``). Not called for
            rows framed with ``none``. For JSON it only checks the id (known, JSON Schema):
            the reader schema decodes.
        headers : pa.ListArray, optional
            The records' Kafka headers; one reader does not route by them (the same call as
            :meth:`MultiDecoder.decode`).

        Returns
        -------
        DecodeResult
            Never raises for bad payloads or writer schemas: those rows get error text.
        """
        book = RowBook(parsed)
        groups = list(writer_groups(parsed, lookup, self.fmt, book))
        for writer, path, rows, label in groups:  # outside any try: failOnNewFields must raise
            book.rescue(rows, self.evolve(parsed, rows, writer, path, label))
        values = self._decode_together(parsed, groups, book) if len(groups) > 1 else None
        if values is None:
            parts: list = []
            for writer, path, rows, label in groups:
                self._decode_group_into(parsed, rows, writer, path, label, book, parts)
            values = scatter(len(parsed), parts, self.arrow_type)
        return book.result(values)

    def _decode_together(self, parsed, groups: list, book: RowBook) -> pa.Array | None:
        """The values of every row when the format decodes several writer groups in one pass
        (``decode_runs``; Avro: one kernel call in row order, no take, concatenation or
        scatter); None: decode group by group (no such method, or a writer it cannot compile)."""
        runs = getattr(self._state().reader, "decode_runs", None)
        if runs is None:
            return None
        try:
            got = runs(parsed.payload, [(writer, rows, label) for writer, _, rows, label in groups])
        except Exception:  # noqa: BLE001 - group by group: each group's failure stays its own
            return None
        if got is None:
            return None
        values, errs = got
        book.add_errors(np.arange(len(parsed)), errs)
        return values

    def decode_rows(self, parsed, rows: np.ndarray, writer, path: tuple, label: str, book: "RowBook",
                    parts: list) -> None:
        """Decode one writer group into ``parts`` (row indices, values) and ``book``.

        Evolution runs outside the ``try``: ``failOnNewFields`` must stop the query, not mark
        rows. Any other failure (SchemaMappingError, anything unforeseen) becomes the rows'
        error: decode() never raises for data or writer schemas.
        """
        book.rescue(rows, self.evolve(parsed, rows, writer, path, label))
        self._decode_group_into(parsed, rows, writer, path, label, book, parts)

    def _decode_group_into(self, parsed, rows: np.ndarray, writer, path: tuple, label: str,
                           book: "RowBook", parts: list) -> None:
        try:
            vals, errs = self.decode_group(payloads_of(parsed, rows), writer, path, label)
        except Exception as e:  # noqa: BLE001 - see decode_rows
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
        for path, sub in row_groups(parsed, rows, payload_format(fmt).indexed_messages):
            yield writer, path, sub, label


def build_decoder(reader: Any, *, options: DecodeOptions = DecodeOptions(), fmt: str | None = None,
                  message: str | None = None) -> Decoder:
    """Fix the output type from a reader schema, on the driver.

    Parameters
    ----------
    reader : SchemaSpec-like or registry.Schema or None
        Anything with ``.text`` and ``.format`` (``"avro"``/``"json"``/``"protobuf"``) or
        ``.schema_type`` (``"AVRO"``/``"PROTOBUF"``/``"JSON"``), optionally
        ``.message_name`` (Protobuf) and ``.resolved_references``. ``None`` is only valid for
        JSON: payloads come out as JSON text.
    options : DecodeOptions
    fmt : str, optional
        The format when ``reader`` does not say it.
    message : str, optional
        Protobuf: the message to read (full or simple name); else the reader's
        ``.message_name``, else the schema's only top-level message.

    Raises
    ------
    SchemaMappingError
        The reader schema cannot be mapped (recursion, unknown names, does not compile), or a
        Protobuf schema declares several messages and none is chosen.
    ConfigError
        ``reader`` is None for a format that needs a schema (Avro, Protobuf).
    """
    if reader is None:
        d = Decoder(payload_format(fmt or "avro").name, None, (), message, options)
        try:
            _ = d.arrow_type  # JSON reads any document as JSON text; the others need a schema
        except SchemaMappingError as e:
            raise ConfigError(f"a reader schema is required for {d.fmt} payloads; fetch one from the "
                              "registry and pass it to build_decoder") from e
        return d
    d = Decoder(schema_format(reader, fmt), getattr(reader, "text", None), refs_of(reader),
                message or getattr(reader, "message_name", None), options)
    _ = d.arrow_type  # compile now so reader-schema problems surface on the driver
    return d
