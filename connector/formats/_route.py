"""Which message type each record of a several-message channel is, from its Kafka headers.

Records framed with a schema id say their type through the registry (the writer schema's
record name). Records without one (framing ``none``) are told apart by the type headers
producers write, as the document describes them:

===========================  ===================================================================
header                       values that name a message
===========================  ===================================================================
``__TypeId__`` (Spring       the ``const`` / ``enum`` the message's ``headers`` schema fixes; where
Kafka), ``ce_type`` /        it fixes none, the message's names (its ``name``, key, ``title``,
``ce-type`` (CloudEvents)    payload record name; also matched by simple name, ``a.b.Order`` =
                             ``Order``)
any other header             the ``const`` / ``enum`` of every message's ``headers`` schema (a
                             header fixed in every message, not to the same values everywhere)
===========================  ===================================================================

A header is *documented* when a message's ``headers`` schema names it: then a value that names
no message is the record's error. Spring's and CloudEvents' headers are also looked at when the
document does not name them; a value that names no message then leaves the choice to the next
header, or to validation. The last occurrence of a header counts (as Spring's and CloudEvents'
consumers read it); a JSON-quoted value (``"\\"a.B\\""``, Spring's header mapper) is unquoted.

:class:`Routing` is built once on the driver from the document (``connector.asyncapi``) and
applied per batch, vectorized over the Arrow ``headers`` column: one look-up per distinct value.
"""
from __future__ import annotations

import dataclasses
import functools
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Routing", "RouteHeader", "Claim", "Route", "TYPE_HEADERS"]

#: Type headers producers write: Spring Kafka's JSON serializer, CloudEvents' Kafka binding
#: (binary mode, ``ce_``) and the ``ce-`` spelling some producers use on Kafka too.
TYPE_HEADERS = ("__TypeId__", "ce_type", "ce-type")

_SHOWN = 6  # known values named in an error


@dataclasses.dataclass(frozen=True)
class Claim:
    """One header value that names one message.

    ``how``: ``"const"`` / ``"enum"`` (the message's ``headers`` schema fixes it) or
    ``"name"`` (a name of the message, for a type header its schema does not fix);
    ``path``: where in the document."""

    value: str
    message: str
    how: str
    path: str


@dataclasses.dataclass(frozen=True)
class RouteHeader:
    """One header the records' types are read from, with the values that name messages."""

    name: str
    documented: bool
    claims: tuple[Claim, ...]

    @functools.cached_property
    def _exact(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for c in self.claims:
            if c.message not in out.setdefault(c.value, []):
                out[c.value].append(c.message)
        return {k: tuple(v) for k, v in out.items()}

    @functools.cached_property
    def _simple(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for c in self.claims:
            if c.how == "name" and c.message not in out.setdefault(_simple_name(c.value), []):
                out[_simple_name(c.value)].append(c.message)
        return {k: tuple(v) for k, v in out.items()}

    def known(self) -> list[str]:
        return list(self._exact)

    def candidates(self, text: str) -> tuple[str, ...]:
        """The messages ``text`` names (exact value, else by simple name); () for none."""
        return self._exact.get(text) or self._simple.get(_simple_name(text)) or ()


@dataclasses.dataclass(frozen=True)
class Route:
    """Rows that share one verdict: the messages they may be (one: routed), or the reason
    they are none (``error``), and how it was decided (``why``, for error texts)."""

    candidates: tuple[str, ...]
    error: str | None
    why: str
    rows: np.ndarray


@dataclasses.dataclass(frozen=True)
class Routing:
    """The channel's header → message table (picklable; a fact of the plan).

    Attributes
    ----------
    messages : tuple of str
        The channel's messages (the output fields of a several-message read), in order.
    headers : tuple of RouteHeader
        The headers to look at, first match first: documented ones, then Spring's and
        CloudEvents' type headers the document does not name.
    paths : tuple of (str, str)
        Message → its document path (for errors about the document).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from connector.formats import Claim, RouteHeader, Routing
    >>> routing = Routing(("Order", "Refund"), (RouteHeader("__TypeId__", True, (
    ...     Claim("com.acme.Order", "Order", "const", ""), Claim("com.acme.Refund", "Refund", "const", ""))),))
    >>> headers = pa.array([[{"key": "__TypeId__", "value": b"com.acme.Refund"}], None,
    ...                     [{"key": "__TypeId__", "value": b"com.acme.Coupon"}]],
    ...                    pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
    >>> [(r.candidates, r.rows.tolist(), r.error is not None) for r in routing.assign(headers, 3)]
    [(('Order', 'Refund'), [1], False), (('Refund',), [0], False), ((), [2], True)]
    >>> routing.header_for("Refund")
    ('__TypeId__', 'com.acme.Refund')
    """

    messages: tuple[str, ...]
    headers: tuple[RouteHeader, ...] = ()
    paths: tuple[tuple[str, str], ...] = ()

    @property
    def documented(self) -> tuple[RouteHeader, ...]:
        """The headers the document names (their values are authoritative)."""
        return tuple(h for h in self.headers if h.documented)

    def path_of(self, message: str) -> str:
        return dict(self.paths).get(message, "")

    def header_for(self, message: str) -> tuple[str, str] | None:
        """(header, value) a record of ``message`` carries, for writers: the first documented
        header with a value for it (a fixed value first, else its first name); None: none."""
        for h in self.documented:
            claims = [c for c in h.claims if c.message == message]
            fixed = [c for c in claims if c.how != "name"]
            if fixed or claims:
                return h.name, (fixed or claims)[0].value
        return None

    def unidentified(self) -> list[str]:
        """Messages no documented header value names alone (their records cannot be routed
        without trying the payload)."""
        alone = {ms[0] for h in self.documented for ms in h._exact.values() if len(ms) == 1}
        return [m for m in self.messages if m not in alone]

    def with_names(self, names: dict[str, str | None]) -> Routing:
        """This table with one more name per message (its payload's record name, which the
        decoders know), for the type headers that name the message by its names."""
        headers = []
        for h in self.headers:
            extra = []
            for message, name in names.items():
                own = [c for c in h.claims if c.message == message]
                if name and own and all(c.how == "name" for c in own) and name not in {c.value for c in own}:
                    extra.append(Claim(name, message, "name", own[0].path))
            headers.append(dataclasses.replace(h, claims=h.claims + tuple(extra)) if extra else h)
        return dataclasses.replace(self, headers=tuple(headers))

    def assign(self, headers: pa.Array | pa.ChunkedArray | None, n: int) -> list[Route]:
        """Group ``n`` rows by verdict from their ``headers`` (``list<struct<key, value>>``;
        None: no headers). Rows no header decides may be any message (``why`` says so)."""
        verdict = np.full(n, -1, np.int64)
        routes: list[tuple[tuple[str, ...], str | None, str]] = []
        index: dict[tuple, int] = {}

        def code(v: tuple[tuple[str, ...], str | None, str]) -> int:
            if v not in index:
                index[v] = len(routes)
                routes.append(v)
            return index[v]

        if headers is not None and n and self.headers:
            if isinstance(headers, pa.ChunkedArray):
                headers = headers.combine_chunks()
            flat = pc.list_flatten(headers)
            if len(flat):
                parents = pc.list_parent_indices(headers).to_numpy(zero_copy_only=False)
                keys, values = flat.field("key"), flat.field("value")
                for h in self.headers:
                    hit = pc.fill_null(pc.equal(keys, pa.scalar(h.name, keys.type)), False)
                    entries = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
                    if not len(entries):
                        continue
                    rows, last = _last_per_row(parents[entries], entries)
                    open_ = verdict[rows] == -1
                    rows, last = rows[open_], last[open_]
                    if not len(rows):
                        continue
                    enc = pc.dictionary_encode(values.take(pa.array(last)))
                    codes = [self._verdict_code(h, raw, code) for raw in enc.dictionary.to_pylist()]
                    table = np.array(codes + [-1], np.int64)
                    # a header without a value (null) says nothing: as if absent
                    ids = pc.fill_null(enc.indices, len(codes)).to_numpy(zero_copy_only=False)
                    verdict[rows] = table[ids]
        out = []
        undecided = np.flatnonzero(verdict == -1)
        if len(undecided):
            out.append(Route(self.messages, None, self._no_header_why(), undecided))
        if routes:
            order = np.argsort(verdict, kind="stable")
            bounds = np.searchsorted(verdict[order], np.arange(len(routes) + 1))
            for i, (cands, err, why) in enumerate(routes):
                rows = order[bounds[i]:bounds[i + 1]]
                if len(rows):
                    out.append(Route(cands, err, why, rows))
        return out

    def _verdict_code(self, h: RouteHeader, raw: bytes | None, code) -> int:
        text = _header_text(raw)
        found = h.candidates(text) if text is not None else ()
        why = f"header {h.name}={text!r}"
        if found:  # one group per set of candidates, whichever value named it
            return code((found, None, f"header {h.name}"))
        if not h.documented:
            return -1  # a guess that did not match: the next header, or validation, decides
        known = h.known()
        shown = ", ".join(repr(k) for k in known[:_SHOWN]) + (", ..." if len(known) > _SHOWN else "")
        return code(((), f"{why} names none of the channel's messages {list(self.messages)} (values the "
                         f"document gives: {shown}); a record of an unknown type is not decoded", why))

    def _no_header_why(self) -> str:
        names = [h.name for h in self.headers]
        return f"no type header ({', '.join(names)})" if names else "no type header"


def _last_per_row(rows: np.ndarray, entries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, the last entry of each): a header repeated on a record counts once, its
    last occurrence (Kafka's ``lastHeader``)."""
    rev_rows, rev_entries = rows[::-1], entries[::-1]
    uniq, first = np.unique(rev_rows, return_index=True)
    return uniq, rev_entries[first]


def _header_text(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace").strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            inner = json.loads(text)
        except ValueError:
            return text
        return inner if isinstance(inner, str) else text
    return text


def _simple_name(name: str) -> str:
    """``com.acme.Outer$Order`` → ``Order``: a Java class or record name without its package."""
    return name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
