"""Channel addresses with ``{parameters}`` → a concrete topic or an anchored regex.

A parameter matches one or more of the characters Kafka allows in topic names except
the dot (``[A-Za-z0-9_-]+``), since dots separate the segments of most topic naming
schemes; a parameter with ``enum`` matches exactly one of its values, one with a
``pattern`` (2.x parameter ``schema.pattern``) matches that pattern (leading ``^`` and
trailing ``$`` removed). Defaults are *not* substituted: a reader wants every topic of
the template unless the caller narrows it with ``params``.

The regex is a Python :mod:`re` pattern with one named group per parameter (a name that
is not a Python identifier gets the group ``p<index>``; a parameter repeated in the
address must repeat the same value). It is meant for matching topic names listed from
cluster metadata, not for librdkafka's own regex subscription syntax.
"""
from __future__ import annotations

import re

from connector.errors import AsyncApiDocumentError, ConfigError

DEFAULT_VALUE_PATTERN = r"[A-Za-z0-9_-]+"
_TOPIC_CHARS = re.compile(r"^[A-Za-z0-9._-]+$")
MAX_TOPIC_LENGTH = 249


def template_names(address: str) -> list[str]:
    """Parameter names in order of first appearance."""
    seen: list[str] = []
    for name in re.findall(r"\{([^{}]*)\}", address):
        if name not in seen:
            seen.append(name)
    return seen


def _value_regex(param) -> str:
    if param is None:
        return DEFAULT_VALUE_PATTERN
    if param.enum:
        return "|".join(re.escape(v) for v in param.enum)
    if param.pattern:
        pat = param.pattern
        if pat.startswith("^"):
            pat = pat[1:]
        if pat.endswith("$") and not pat.endswith("\\$"):
            pat = pat[:-1]
        try:
            re.compile(pat)
        except re.error as e:
            raise AsyncApiDocumentError(f"parameter pattern {param.pattern!r} is not a valid regex: {e}",
                                        path=param.path) from e
        if "(?P" in pat:
            raise AsyncApiDocumentError("parameter pattern must not contain named groups", path=param.path)
        return pat
    return DEFAULT_VALUE_PATTERN


def check_value(name: str, value, param) -> str:
    """Validate one user-given parameter value (``ConfigError`` when it cannot match)."""
    if not isinstance(value, str):
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        else:
            raise ConfigError(f"parameter {name!r} must be a string, got {type(value).__name__}")
    if not value or not _TOPIC_CHARS.match(value):
        raise ConfigError(f"parameter {name!r} value {value!r} contains characters not allowed in Kafka "
                          "topic names (allowed: letters, digits, '.', '_', '-')")
    if param is not None and param.enum and value not in param.enum:
        raise ConfigError(f"parameter {name!r} value {value!r} is not one of {', '.join(param.enum)}")
    if param is not None and param.pattern and not param.enum:
        try:
            ok = re.search(param.pattern, value) is not None
        except re.error as e:
            raise AsyncApiDocumentError(f"parameter pattern {param.pattern!r} is not a valid regex: {e}",
                                        path=param.path) from e
        if not ok:
            raise ConfigError(f"parameter {name!r} value {value!r} does not match pattern {param.pattern!r}")
    return value


def check_topic(topic: str, path: str, address: str | None = None) -> str:
    if not topic or len(topic) > MAX_TOPIC_LENGTH or not _TOPIC_CHARS.match(topic) or topic in (".", ".."):
        what = f"{topic!r}" if address is None or address == topic else f"address {address!r} (part {topic!r})"
        raise AsyncApiDocumentError(f"{what} is not a valid Kafka topic name (1-{MAX_TOPIC_LENGTH} "
                                    "letters, digits, '.', '_', '-')", path=path)
    return topic


def expand_address(address: str, parameters: dict, given: dict | None, path: str):
    """Topic(s) for an address template.

    Returns
    -------
    tuple
        ``(topics, pattern, param_names, groups, fixed)``: ``topics`` holds the concrete
        topic when every parameter is given (else empty), ``pattern`` the anchored regex
        otherwise, ``groups`` pairs (regex group, parameter name), ``fixed`` the given values.
    """
    names = template_names(address)
    given = dict(given or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ConfigError(f"unknown address parameter {unknown[0]!r}; the address {address!r} has "
                          f"{', '.join(names) if names else 'no parameters'}")
    fixed = {n: check_value(n, given[n], parameters.get(n)) for n in names if n in given}
    parts = re.split(r"\{([^{}]*)\}", address)
    if all(n in fixed for n in names):
        topic = "".join(fixed[p] if i % 2 else p for i, p in enumerate(parts))
        return (check_topic(topic, path, address if names else None),), None, tuple(names), (), fixed
    regex = ["^"]
    groups: list[tuple[str, str]] = []
    used: dict[str, str] = {}
    for i, part in enumerate(parts):
        if i % 2 == 0:
            if part and not _TOPIC_CHARS.match(part):
                check_topic(part, path, address)
            regex.append(re.escape(part))
        elif part in fixed:
            regex.append(re.escape(fixed[part]))
        elif part in used:
            regex.append(f"(?P={used[part]})")
        else:
            group = part if part.isidentifier() else f"p{len(groups)}"
            used[part] = group
            groups.append((group, part))
            regex.append(f"(?P<{group}>{_value_regex(parameters.get(part))})")
    regex.append("$")
    pattern = "".join(regex)
    try:
        re.compile(pattern)
    except re.error as e:
        raise AsyncApiDocumentError(f"address {address!r} gives an invalid regex: {e}", path=path) from e
    return (), pattern, tuple(names), tuple(groups), fixed
