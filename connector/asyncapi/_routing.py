"""The channel's header → message table (:class:`connector.formats.Routing`), derived once from the
document on the driver: what each message's ``headers`` schema fixes with ``const`` / ``enum``, and
the names of each message for the type headers producers write (``__TypeId__``, ``ce_type``,
``ce-type``) where its schema fixes none. See :mod:`connector.formats._route` for how records are
routed by it, and ``docs/multi-type-channels.md``.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from connector.asyncapi._refs import join_path

if TYPE_CHECKING:
    from connector.formats import Claim, RouteHeader, Routing

    from connector.asyncapi._schema import MessageSpec
    from connector.asyncapi._types import Message

__all__ = ["derive_routing"]

_MAX_VALUES = 256  # enum values taken per header and message (a type header has a few)


def derive_routing(messages: Sequence[tuple[Message, MessageSpec]]) -> Routing:
    """The table of the channel's ``messages`` ((model message, its spec) pairs, document order).

    Headers looked at, first match first: the type headers some message's ``headers`` schema
    names, then any other header every message fixes (to values that are not the same for
    all), then the type headers no message names (values: the messages' names)."""
    from connector.formats import TYPE_HEADERS, RouteHeader, Routing

    props = [_header_properties(spec) for _, spec in messages]
    names = [_names(m, spec) for m, spec in messages]
    typed_doc: list[RouteHeader] = []
    typed_guess: list[RouteHeader] = []
    others: list[RouteHeader] = []
    for h in TYPE_HEADERS:
        claims: list[Claim] = []
        for (m, spec), p, own in zip(messages, props, names):
            fixed = _fixed(p.get(h), spec.name, join_path(m.path, f"headers.properties.{h}"))
            claims += fixed or [_claim(n, spec.name, "name", m.path) for n in own]
        documented = any(h in p for p in props)
        (typed_doc if documented else typed_guess).append(RouteHeader(h, documented, tuple(claims)))
    seen: list[str] = []
    for p in props:
        seen += [h for h in p if h not in seen and h not in TYPE_HEADERS]
    for h in seen:
        per = [_fixed(p.get(h), spec.name, join_path(m.path, f"headers.properties.{h}"))
               for (m, spec), p in zip(messages, props)]
        if len(per) < 2 or not all(per):
            continue  # a header some message leaves free cannot tell that message's records apart
        if len({frozenset(c.value for c in cs) for cs in per}) == 1:
            continue  # the same values everywhere (a version, an example id): says nothing of the type
        others.append(RouteHeader(h, True, tuple(c for cs in per for c in cs)))
    return Routing(tuple(spec.name for _, spec in messages), tuple(typed_doc + others + typed_guess),
                   tuple((spec.name, m.path) for m, spec in messages))


def _claim(value: str, message: str, how: str, path: str) -> Claim:
    from connector.formats import Claim

    return Claim(value, message, how, path)


def _header_properties(spec: MessageSpec) -> dict[str, Any]:
    """The ``headers`` schema's properties (its own and its ``allOf`` members'), by name."""
    if spec.headers is None:
        return {}
    try:
        schema = json.loads(spec.headers.text)
    except ValueError:
        return {}
    out: dict[str, Any] = {}
    parts: list[Any] = [schema]
    if isinstance(schema, dict) and isinstance(schema.get("allOf"), list):
        parts += schema["allOf"]
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("properties"), dict):
            for k, v in part["properties"].items():
                out.setdefault(k, v)
    return out


def _fixed(schema: Any, message: str, path: str) -> list[Claim]:
    """The values a header's schema fixes (``const``, else ``enum``), as header text."""
    if not isinstance(schema, dict):
        return []
    if "const" in schema:
        text = _text(schema["const"])
        return [_claim(text, message, "const", join_path(path, "const"))] if text is not None else []
    enum = schema.get("enum")
    if not isinstance(enum, list):
        return []
    texts = [t for t in (_text(v) for v in enum[:_MAX_VALUES]) if t is not None]
    return [_claim(t, message, "enum", join_path(path, "enum")) for t in dict.fromkeys(texts)]


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return None


def _names(m: Message, spec: MessageSpec) -> list[str]:
    """The names a type header may give a message: its ``name``, key and ``title`` (the decoder
    adds its payload's record name: :meth:`connector.formats.Routing.with_names`)."""
    return [n for n in dict.fromkeys([m.name, spec.name, m.title]) if isinstance(n, str) and n]
