"""Several record types on one topic: one struct field per type, each row fills its own."""
from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from connector.errors import ConfigError
from connector.formats._decoder import Decoder, build_decoder, writer_groups
from connector.formats.core import DecodeOptions, DecodeResult, RowBook, fault_text, scatter

__all__ = ["MultiDecoder", "build_multi_decoder"]


def _short(name: str | None) -> str | None:
    return name.rpartition(".")[2] if name else name


class MultiDecoder:
    """Decoder whose output is ``struct<name1: T1, name2: T2, ...>``.

    A row whose writer record type (Avro record full name, Protobuf message full name, JSON
    Schema ``title``) matches reader *k* fills field *k*; the others stay null. Rows of any
    other type get the error ``record type X is not one of [...]``; with ``only`` set, rows
    whose type is not in ``only`` are left null without an error (filtering by message name).
    """

    def __init__(self, decoders: dict[str, Decoder], only: tuple[str, ...] | None = None):
        self.decoders = dict(decoders)
        self.only = only
        fmts = {d.fmt for d in self.decoders.values()}
        if len(fmts) != 1:
            raise ConfigError(f"all record types of a topic must share one format, got {sorted(fmts)}")
        self.fmt = fmts.pop()

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.struct([pa.field(k, d.arrow_type) for k, d in self.decoders.items()])

    def _match(self, name: str | None) -> str | None:
        for field, d in self.decoders.items():
            if d.full_name == name:
                return field
        for field, d in self.decoders.items():
            if _short(d.full_name) == _short(name) or field == name:
                return field
        return None

    def field_for(self, writer, path: tuple = ()) -> str | None:
        """The output field records of ``writer`` (and message-index path) fill; None: none."""
        return self._match(next(iter(self.decoders.values())).writer_name(writer, path))

    def decode(self, parsed, lookup: Callable[[Any], Any]) -> DecodeResult:
        """Like :meth:`Decoder.decode`, routing each group to the reader of its type."""
        book = RowBook(parsed)
        parts: dict[str, list] = {k: [] for k in self.decoders}
        any_d = next(iter(self.decoders.values()))
        for writer, path, rows, label in writer_groups(parsed, lookup, self.fmt, book):
            try:
                name = any_d.writer_name(writer, path)
            except Exception as e:  # noqa: BLE001 - decode() never raises for data or schemas
                book.fail(rows, f"{self.fmt} decode failed for schema id {label}: {fault_text(e)}")
                continue
            field = self._match(name)
            if field is None:
                if self.only is None:
                    book.fail(rows, f"record type {name} of schema id {label} is not "
                                    f"one of {sorted(self.decoders)}")
                continue
            if self.only is not None and field not in self.only:
                continue
            self.decoders[field].decode_rows(parsed, rows, writer, path, label, book, parts[field])
        n = len(parsed)
        children = [scatter(n, parts[k], d.arrow_type) for k, d in self.decoders.items()]
        return book.result(pa.StructArray.from_arrays(children, fields=list(self.arrow_type)))


def build_multi_decoder(readers: dict[str, Any], *, options: DecodeOptions = DecodeOptions(),
                        only: list[str] | None = None, messages: dict[str, str | None] | None = None) -> MultiDecoder:
    """One :class:`Decoder` per record type; output ``struct<name: type, ...>``.

    Parameters
    ----------
    readers : dict
        Output field name → reader schema (as for :func:`build_decoder`).
    only : list of str, optional
        Keep only these record types; rows of other types are null without an error.
    messages : dict, optional
        Output field name → Protobuf message of that reader (see :func:`build_decoder`).
    """
    if not readers:
        raise ConfigError("build_multi_decoder needs at least one reader schema")
    return MultiDecoder({k: build_decoder(v, options=options, message=(messages or {}).get(k))
                         for k, v in readers.items()},
                        tuple(only) if only else None)
