"""Credentials out of every URL and server list the project prints.

One place for the rule, used by errors, logs, ``explain()`` and the CLI: ``userinfo@`` is
removed from URLs (``https://user:secret@host/`` → ``https://host/``) and from Kafka
bootstrap lists (``kafka://user:secret@b1:9092,user:secret@b2:9092`` → ``kafka://b1:9092,b2:9092``),
and query values whose names look like credentials become ``***``. It lives in ``registry``,
the lowest layer that prints URLs (``wireformat`` never does); ``connector`` imports it.
"""
from __future__ import annotations

import re
import urllib.parse
from typing import overload

__all__ = ["redact_url", "redact_servers", "redact_text", "split_userinfo", "strip_userinfo"]

_SECRET_QUERY_KEYS = ("token", "key", "secret", "pass", "auth", "sig")
# ``scheme://userinfo@`` anywhere in a text; userinfo runs to the last ``@`` before whitespace, a quote or ``/``
# (a password may contain ``@``).
_SCHEME_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/'\"<>]*@")
# ``user:password@host`` without a scheme (a bootstrap list item, a librdkafka broker name).
_BARE_USERINFO = re.compile(r"(?P<lead>^|[\s,;'\"(=\[])[^\s/@,;:'\"()=\[\]]+:[^\s/,;'\"()\[\]]*@(?=[\w.\[-])")


@overload
def redact_url(url: str) -> str: ...


@overload
def redact_url(url: None) -> None: ...


def redact_url(url: str | None) -> str | None:
    """Remove userinfo and query values that look like credentials from a URL.

    Examples
    --------
    >>> redact_url("https://alice:s3cret@registry:8081/subjects?token=abc&x=1")
    'https://registry:8081/subjects?token=%2A%2A%2A&x=1'
    """
    if url is None:
        return None
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    netloc = parts.netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        query = urllib.parse.urlencode([(k, "***" if any(s in k.lower() for s in _SECRET_QUERY_KEYS) else v)
                                        for k, v in pairs])
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def split_userinfo(item: str) -> tuple[str, bool]:
    """One server address without its userinfo, and whether it had one.

    ``kafka://u:p@h:9092`` → ``("kafka://h:9092", True)``; ``u:p@h:9092`` → ``("h:9092", True)``.
    """
    text = item.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    head, slash, tail = rest.partition("/")
    if "@" not in head:
        return text, False
    host = head.rpartition("@")[2]
    return (scheme + sep if sep else "") + host + slash + tail, True


@overload
def redact_servers(servers: str) -> str: ...


@overload
def redact_servers(servers: None) -> None: ...


def redact_servers(servers: str | None) -> str | None:
    """A comma-separated server list (Kafka ``bootstrap.servers``) without any userinfo.

    Examples
    --------
    >>> redact_servers("kafka://alice:s3cret@b1:9092, alice:s3cret@b2:9092")
    'kafka://b1:9092,b2:9092'
    """
    if servers is None:
        return None
    return ",".join(split_userinfo(s)[0] for s in str(servers).split(",") if s.strip())


def strip_userinfo(servers: str) -> tuple[str, bool]:
    """A server list without userinfo, and whether any item had some (to warn that it was
    ignored: credentials come from options, never from an address).

    Examples
    --------
    >>> strip_userinfo("u:p@b1:9092,b2:9092")
    ('b1:9092,b2:9092', True)
    """
    items = [split_userinfo(s) for s in str(servers).split(",") if s.strip()]
    return ",".join(i for i, _ in items), any(had for _, had in items)


def redact_text(text: str) -> str:
    """Remove userinfo from every URL or ``user:password@host`` inside free text (errors
    from third-party libraries that echo their configuration, e.g. librdkafka).

    Examples
    --------
    >>> redact_text("Connect to alice:s3cret@b1:9092 failed; see http://u:p@r:8081/x")
    'Connect to b1:9092 failed; see http://r:8081/x'
    """
    text = _SCHEME_USERINFO.sub(lambda m: m.group("scheme"), str(text))
    return _BARE_USERINFO.sub(lambda m: m.group("lead"), text)
