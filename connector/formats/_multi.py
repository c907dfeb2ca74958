"""Several record types on one topic: one struct field per type, each row fills its own.

How a row's type is known, first that applies:

==========================  =======================================================================
the record carries          its type is
==========================  =======================================================================
a schema id (registry)      the writer schema's record name (Avro full name, Protobuf message, JSON
                            Schema ``title``) matched to the reader of that name
a type header               the message(s) its value names (:class:`connector.formats._route.Routing`:
                            ``__TypeId__``, ``ce_type``, a header the document fixes per message)
neither, or a header value  the one candidate message whose schema accepts the record: the group is
naming several messages     decoded with each candidate's decoder and a row goes to the only one
                            without a row error (JSON; a binary payload cannot be tried, so Avro and
                            Protobuf rows are errors there, and ``load()`` refuses a channel whose
                            messages no documented header tells apart)
==========================  =======================================================================

A row of no documented type, of an unknown type, matching no candidate or several is a row
error naming the candidates; never a row decoded with another type's schema.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.errors import ConfigError
from connector.formats._decoder import Decoder, build_decoder, writer_groups
from connector.formats._registry import payload_format
from connector.formats._route import Route, Routing
from connector.formats.core import DecodeOptions, DecodeResult, RowBook, fault_text, payloads_of, scatter

__all__ = ["MultiDecoder", "build_multi_decoder", "KeptMessageDecoder"]

_TEXT_PER_CANDIDATE = 160  # characters of each candidate's own error in a "matches none" error


def _short(name: str | None) -> str | None:
    return name.rpartition(".")[2] if name else name


class MultiDecoder:
    """Decoder whose output is ``struct<name1: T1, name2: T2, ...>``.

    A row whose type (see the module table) is reader *k* fills field *k*; the others stay
    null. Rows of any other type get an error naming the candidates; with ``only`` set, rows
    whose type is not in ``only`` are left null without an error (filtering by message name).
    ``routing`` (the plan's header table) tells rows without a schema id apart.
    """

    def __init__(self, decoders: dict[str, Decoder], only: tuple[str, ...] | None = None,
                 routing: Routing | None = None):
        self.decoders = dict(decoders)
        self.only = only
        fmts = {d.fmt for d in self.decoders.values()}
        if len(fmts) != 1:
            raise ConfigError(f"all record types of a topic must share one format, got {sorted(fmts)}")
        self.fmt = fmts.pop()
        if routing is not None:  # a type header may name a message by its payload's record name too
            routing = routing.with_names({k: d.full_name for k, d in self.decoders.items()})
        self.routing = routing

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.struct([pa.field(k, d.arrow_type) for k, d in self.decoders.items()])

    @property
    def routes_by_header(self) -> bool:
        """Rows without a schema id are routed by their Kafka headers: the read needs them."""
        return self.routing is not None and bool(self.routing.headers)

    @property
    def can_try(self) -> bool:
        """Whether a payload can be judged by each candidate's schema (not binary)."""
        return not payload_format(self.fmt).binary_payloads

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
        if writer is None:
            return None  # no schema id: the row's headers or payload decide (decode)
        return self._match(next(iter(self.decoders.values())).writer_name(writer, path))

    def decode(self, parsed, lookup: Callable[[Any], Any], headers: pa.Array | None = None) -> DecodeResult:
        """Like :meth:`Decoder.decode`, routing each row to the reader of its type.

        ``headers``: the records' Kafka headers (``list<struct<key, value>>``), for rows
        without a schema id."""
        book = RowBook(parsed)
        parts: dict[str, list] = {k: [] for k in self.decoders}
        any_d = next(iter(self.decoders.values()))
        for writer, path, rows, label in writer_groups(parsed, lookup, self.fmt, book):
            if writer is None:
                self._route(parsed, rows, label, headers, book, parts)
                continue
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

    # -- rows without a schema id -----------------------------------------------------------------
    def _route(self, parsed, rows: np.ndarray, label: str, headers, book: RowBook, parts: dict) -> None:
        if self.routing is None:
            routes = [Route(tuple(self.decoders), None, "no schema id", np.arange(len(rows)))]
        else:
            sub = headers.take(pa.array(rows)) if headers is not None and len(rows) != len(headers) else headers
            routes = self.routing.assign(sub, len(rows))
        for route in routes:
            these = rows[route.rows]
            cands = tuple(c for c in route.candidates if c in self.decoders)
            if route.error is not None:
                book.fail(these, route.error)
            elif not cands:
                book.fail(these, f"{route.why} names {list(route.candidates)}, which this read does not decode "
                                 f"(it decodes {list(self.decoders)})")
            elif len(cands) == 1:
                field = cands[0]
                if self.only is None or field in self.only:
                    self.decoders[field].decode_rows(parsed, these, None, (), label, book, parts[field])
            else:
                self._try(parsed, these, cands, route.why, label, book, parts)

    def _try(self, parsed, rows: np.ndarray, names: tuple[str, ...], why: str, label: str, book: RowBook,
             parts: dict) -> None:
        """Decode ``rows`` with each candidate; a row goes to the only one that accepts it."""
        if not self.can_try:
            book.fail(rows, f"{why}: the record may be any of {list(names)}, and {self.fmt} payloads "
                            "cannot be told apart by trying their schemas; producers must write the type header the "
                            "document names (or read one message with the option 'message')")
            return
        payloads = payloads_of(parsed, rows)
        results = []
        for name in names:
            try:
                vals, errs = self.decoders[name].decode_group(payloads, None, (), label)
            except Exception as e:  # noqa: BLE001 - this candidate fails every row; the others may not
                vals, errs = None, [fault_text(e)] * len(rows)
            results.append((vals, np.array([e is None for e in errs], bool), errs))
        ok = np.stack([r[1] for r in results]) if results else np.zeros((0, len(rows)), bool)
        count = ok.sum(axis=0)
        for k, name in enumerate(names):
            mine = np.flatnonzero(ok[k] & (count == 1))
            vals = results[k][0]
            if len(mine) and vals is not None and (self.only is None or name in self.only):
                parts[name].append((rows[mine], vals.take(pa.array(mine))))
        pattern = (ok.astype(np.int64) << np.arange(len(names), dtype=np.int64)[:, None]).sum(axis=0)
        for p in np.unique(pattern[count > 1]).tolist():
            which = [n for k, n in enumerate(names) if p >> k & 1]
            book.fail(rows[pattern == p], f"{why}: the record fits several of the channel's messages {which}, so its "
                                          "type is unknown; producers should write a type header (__TypeId__, "
                                          "ce_type) whose values the messages' headers schemas fix")
        for i in np.flatnonzero(count == 0).tolist():  # each row its own reasons (bad rows only)
            reasons = "; ".join(f"{n}: {str(results[k][2][i])[:_TEXT_PER_CANDIDATE]}" for k, n in enumerate(names))
            book.errors[rows[i]] = f"{why}: the record fits none of the channel's messages {list(names)} ({reasons})"


class KeptMessageDecoder(Decoder):
    """The decoder of one message of a several-message channel (the option ``message``): a record
    whose documented type header names another of the channel's messages is a row error, never
    decoded with this message's schema (as a Protobuf record of another message is)."""

    _PICKLED: tuple[str, ...] = Decoder._PICKLED + ("kept", "routing")
    routes_by_header = True
    kept: str
    routing: Routing

    @classmethod
    def of(cls, decoder: Decoder, kept: str, routing: Routing) -> KeptMessageDecoder:
        out = cls(decoder.fmt, decoder.text, decoder.refs, decoder.message, decoder.options)
        out.kept, out.routing = kept, Routing(routing.messages, routing.documented, routing.paths)
        return out

    def decode(self, parsed, lookup: Callable[[Any], Any], headers: Any = None) -> DecodeResult:
        res = super().decode(parsed, lookup, headers)
        unframed = [rows for key, rows in parsed.group_by_schema() if key[1] is None]
        if not unframed or headers is None:
            return res
        rows = np.concatenate(unframed)
        sub = headers.take(pa.array(rows)) if len(rows) != len(headers) else headers
        errors = None
        for route in self.routing.assign(sub, len(rows)):
            if route.error is None and self.kept in route.candidates:
                continue  # this message (or a value it shares with others): decoded as it
            if errors is None:
                errors = res.errors.to_numpy(zero_copy_only=False).copy()
            errors[rows[route.rows]] = route.error or (
                f"{route.why}: the record is {' or '.join(route.candidates)}, and this read keeps {self.kept} "
                "(option 'message')")
        if errors is None:
            return res
        bad = pa.array(np.not_equal(errors, np.array(None, object)).astype(bool))
        return DecodeResult(pc.if_else(bad, pa.nulls(len(bad), res.values.type), res.values),
                            pa.array(errors, pa.string()), res.parsed, res.rescued)


def build_multi_decoder(readers: dict[str, Any], *, options: DecodeOptions = DecodeOptions(),
                        only: list[str] | None = None, messages: dict[str, str | None] | None = None,
                        routing: Routing | None = None) -> MultiDecoder:
    """One :class:`Decoder` per record type; output ``struct<name: type, ...>``.

    Parameters
    ----------
    readers : dict
        Output field name → reader schema (as for :func:`build_decoder`).
    only : list of str, optional
        Keep only these record types; rows of other types are null without an error.
    messages : dict, optional
        Output field name → Protobuf message of that reader (see :func:`build_decoder`).
    routing : Routing, optional
        The plan's header → message table, for records without a schema id.
    """
    if not readers:
        raise ConfigError("build_multi_decoder needs at least one reader schema")
    return MultiDecoder({k: build_decoder(v, options=options, message=(messages or {}).get(k))
                         for k, v in readers.items()},
                        tuple(only) if only else None, routing)
