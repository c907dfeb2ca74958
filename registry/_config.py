"""Registry options: names, parsing into a frozen :class:`RegistryConfig`, URL hygiene, SSRF guard."""
from __future__ import annotations

import dataclasses
import ipaddress
import logging
import socket
import urllib.parse
from collections.abc import Mapping
from typing import Any

from registry._errors import RegistryConfigError
from registry._redact import redact_url
from registry._types import Secret

__all__ = ["RegistryConfig", "REGISTRY_OPTION_NAMES", "SECRET_OPTION_NAMES", "VENDORS",
           "redact_url", "split_credentials", "check_address"]

log = logging.getLogger("registry")

VENDORS = ("confluent", "apicurio", "aws-glue", "file")
_VENDOR_ALIASES = {"confluent": "confluent", "karapace": "confluent", "redpanda": "confluent",
                   "apicurio-ccompat": "confluent", "apicurio": "apicurio", "aws-glue": "aws-glue",
                   "glue": "aws-glue", "aws": "aws-glue", "file": "file", "apicurio-registry": "apicurio",
                   "confluent-schema-registry": "confluent", "aws-glue-schema-registry": "aws-glue"}

_P = "schema.registry."
# option name -> (field, kind); kind drives parsing.
_OPTIONS: dict[str, tuple[str, str]] = {
    _P + "url": ("urls", "urls"),
    _P + "vendor": ("vendor", "vendor"),
    _P + "basic.auth.user.info": ("basic_auth", "secret"),
    _P + "bearer.auth.token": ("bearer_token", "secret"),
    _P + "ssl.ca.location": ("ca_location", "str"),
    _P + "ssl.certificate.location": ("cert_location", "str"),
    _P + "ssl.key.location": ("key_location", "str"),
    _P + "ssl.key.password": ("key_password", "secret"),
    _P + "ssl.verify": ("verify", "bool"),
    _P + "connect.timeout.ms": ("connect_timeout_s", "ms"),
    _P + "request.timeout.ms": ("request_timeout_s", "ms"),
    _P + "max.retries": ("max_retries", "int"),
    _P + "retry.backoff.ms": ("retry_backoff_s", "ms"),
    _P + "retry.backoff.max.ms": ("retry_backoff_max_s", "ms"),
    _P + "cache.max.entries": ("cache_max_entries", "int"),
    _P + "cache.latest.ttl.sec": ("cache_latest_ttl_s", "float"),
    _P + "cache.notfound.ttl.sec": ("cache_notfound_ttl_s", "float"),
    _P + "allow.private.addresses": ("allow_private_addresses", "bool"),
    _P + "apicurio.api.version": ("apicurio_api_version", "apiver"),
    _P + "glue.region": ("glue_region", "str"),
    _P + "glue.registry.name": ("glue_registry_name", "str"),
    _P + "glue.endpoint.url": ("glue_endpoint_url", "str"),
    _P + "glue.access.key.id": ("glue_access_key_id", "secret"),
    _P + "glue.secret.access.key": ("glue_secret_access_key", "secret"),
    _P + "glue.session.token": ("glue_session_token", "secret"),
    _P + "file.path": ("file_path", "str"),
}
# The documented spelling of basic auth: Spark's default redaction regex hides a "password"
# option but not Confluent's "basic.auth.user.info" ("user:password"); both are accepted.
_USER, _PASSWORD = _P + "basic.auth.username", _P + "basic.auth.password"
REGISTRY_OPTION_NAMES: frozenset[str] = frozenset(_OPTIONS) | {_USER, _PASSWORD}
SECRET_OPTION_NAMES: frozenset[str] = frozenset(
    k for k, (_, kind) in _OPTIONS.items() if kind == "secret") | {_PASSWORD}

_METADATA_HOSTS = {"metadata.google.internal", "metadata.goog", "metadata"}
_BLOCKED_NETS = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"),
                 ipaddress.ip_network("fd00:ec2::254/128"), ipaddress.ip_network("100.100.100.200/32"))


@dataclasses.dataclass(frozen=True)
class RegistryConfig:
    """Everything needed to build a registry client; frozen, hashable, picklable.

    Build it with :meth:`from_options` from the ``schema.registry.*`` options (lower-case names):

    ==========================================  ===================================================
    ``schema.registry.url``                     comma-separated base URLs (failover in order);
                                                ``user:password@`` is moved into basic auth;
                                                ``file:///dir`` selects the snapshot registry
    ``schema.registry.vendor``                  ``confluent`` (default; Karapace, Redpanda, Apicurio
                                                ccompat), ``apicurio``, ``aws-glue``, ``file``
    ``schema.registry.basic.auth.user.info``    ``user:password`` (secret)
    ``schema.registry.bearer.auth.token``       bearer token (secret)
    ``schema.registry.ssl.ca.location``         CA bundle file (PEM)
    ``schema.registry.ssl.certificate.location``  client certificate (PEM) for mTLS
    ``schema.registry.ssl.key.location``        client key (PEM) for mTLS
    ``schema.registry.ssl.key.password``        password of the client key (secret)
    ``schema.registry.ssl.verify``              ``true`` (default); ``false`` logs a warning
                                                each time a client is created
    ``schema.registry.connect.timeout.ms``      default 10000
    ``schema.registry.request.timeout.ms``      read timeout, default 30000
    ``schema.registry.max.retries``             retries after the first attempt, default 3
    ``schema.registry.retry.backoff.ms``        base of the full-jitter backoff, default 100
    ``schema.registry.retry.backoff.max.ms``    cap of one backoff, default 5000
    ``schema.registry.cache.max.entries``       bound of the id cache (LRU); default unbounded
    ``schema.registry.cache.latest.ttl.sec``    TTL of latest-version lookups, default 60
    ``schema.registry.cache.notfound.ttl.sec``  TTL of cached "not found" answers, default 30
    ``schema.registry.allow.private.addresses`` allow link-local / cloud-metadata hosts, default false
    ``schema.registry.apicurio.api.version``    ``auto`` (v3, falling back to v2), ``2`` or ``3``
    ``schema.registry.glue.region``             AWS region of the Glue registry
    ``schema.registry.glue.registry.name``      Glue registry name (for subject lookups)
    ``schema.registry.glue.endpoint.url``       endpoint override (tests, VPC endpoints)
    ``schema.registry.glue.access.key.id``      (secret) else the standard AWS credential chain
    ``schema.registry.glue.secret.access.key``  (secret)
    ``schema.registry.glue.session.token``      (secret)
    ``schema.registry.file.path``               snapshot directory (same as a ``file://`` URL)
    ==========================================  ===================================================

    Examples
    --------
    >>> c = RegistryConfig.from_options({"schema.registry.url": "https://u:pw@sr.example:8081"})
    >>> c.urls, c.basic_auth
    (('https://sr.example:8081',), Secret('***'))
    """

    urls: tuple[str, ...] = ()
    vendor: str = "confluent"
    basic_auth: Secret | None = None
    bearer_token: Secret | None = None
    verify: bool = True
    ca_location: str | None = None
    cert_location: str | None = None
    key_location: str | None = None
    key_password: Secret | None = None
    connect_timeout_s: float = 10.0
    request_timeout_s: float = 30.0
    max_retries: int = 3
    retry_backoff_s: float = 0.1
    retry_backoff_max_s: float = 5.0
    cache_max_entries: int | None = None
    cache_latest_ttl_s: float = 60.0
    cache_notfound_ttl_s: float = 30.0
    allow_private_addresses: bool = False
    apicurio_api_version: str = "auto"
    glue_region: str | None = None
    glue_registry_name: str | None = None
    glue_endpoint_url: str | None = None
    glue_access_key_id: Secret | None = None
    glue_secret_access_key: Secret | None = None
    glue_session_token: Secret | None = None
    file_path: str | None = None
    max_response_bytes: int = 64 * 1024 * 1024

    def __post_init__(self):
        # Accept plain strings for secrets and lists for urls when built directly.
        for f in ("basic_auth", "bearer_token", "key_password", "glue_access_key_id",
                  "glue_secret_access_key", "glue_session_token"):
            v = getattr(self, f)
            if v is not None and not isinstance(v, Secret):
                object.__setattr__(self, f, Secret(v))
        urls, creds = [], None
        for u in ((self.urls,) if isinstance(self.urls, str) else self.urls):
            clean, found = split_credentials(u)
            urls.append(clean)
            creds = creds or found
        object.__setattr__(self, "urls", tuple(urls))
        if creds is not None and self.basic_auth is None:
            object.__setattr__(self, "basic_auth", Secret(creds))
        vendor = _VENDOR_ALIASES.get(str(self.vendor).lower())
        if vendor is None:
            raise RegistryConfigError(f"unknown schema.registry.vendor {self.vendor!r}; valid: {', '.join(VENDORS)}")
        if self.urls and all(u.startswith("file://") for u in self.urls) and self.file_path is None:
            object.__setattr__(self, "file_path", urllib.parse.unquote(urllib.parse.urlsplit(self.urls[0]).path))
            vendor = "file"
        object.__setattr__(self, "vendor", vendor)
        if self.apicurio_api_version not in ("auto", "2", "3"):
            raise RegistryConfigError("schema.registry.apicurio.api.version must be auto, 2 or 3")
        if self.max_retries < 0 or self.connect_timeout_s <= 0 or self.request_timeout_s <= 0:
            raise RegistryConfigError("timeouts must be > 0 and max.retries >= 0")
        if self.cache_max_entries is not None and self.cache_max_entries <= 0:
            raise RegistryConfigError("schema.registry.cache.max.entries must be > 0")
        if vendor in ("confluent", "apicurio"):
            if not self.urls:
                raise RegistryConfigError("schema.registry.url is required for vendor " + vendor)
            for u in self.urls:
                parts = urllib.parse.urlsplit(u)
                if parts.scheme not in ("http", "https") or not parts.hostname:
                    raise RegistryConfigError(f"bad registry URL {redact_url(u)!r}: need http(s)://host[:port]")
                if not self.allow_private_addresses:
                    _check_literal(parts.hostname)
        if vendor == "file" and not self.file_path:
            raise RegistryConfigError("vendor file needs schema.registry.file.path or a file:// URL")
        if vendor == "aws-glue" and self.glue_endpoint_url and not self.allow_private_addresses:
            host = urllib.parse.urlsplit(self.glue_endpoint_url).hostname or ""
            _check_literal(host)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "RegistryConfig":
        """Parse ``schema.registry.*`` options (other keys are ignored).

        Parameters
        ----------
        options : Mapping[str, str or Secret]
            Option names are matched case-insensitively.

        Raises
        ------
        RegistryConfigError
            Unknown ``schema.registry.*`` name (the message lists the valid ones) or bad value.
        """
        kwargs: dict[str, Any] = {}
        opts: dict[str, Any] = {str(k).strip().lower(): v for k, v in options.items()}
        user, password = opts.pop(_USER, None), opts.pop(_PASSWORD, None)
        if (user is None) != (password is None):
            raise RegistryConfigError(f"options {_USER!r} and {_PASSWORD!r} go together")
        if user is not None:
            if opts.get(_P + "basic.auth.user.info") is not None:
                raise RegistryConfigError(f"give either {_USER!r}/{_PASSWORD!r} or "
                                          f"'{_P}basic.auth.user.info', not both")
            pw = password.get() if isinstance(password, Secret) else str(password)
            opts[_P + "basic.auth.user.info"] = Secret(f"{str(user).strip()}:{pw}")
        for key, value in opts.items():
            if not key.startswith(_P):
                continue
            if key not in _OPTIONS:
                raise RegistryConfigError(f"unknown option {key!r}; valid registry options: "
                                          + ", ".join(sorted(REGISTRY_OPTION_NAMES)))
            field, kind = _OPTIONS[key]
            if value is None:
                continue
            kwargs[field] = _parse(key, kind, value)
        return cls(**kwargs)

    def redacted_urls(self) -> tuple[str, ...]:
        """The URLs with any credentials removed (they never hold any after construction)."""
        return tuple(redact_url(u) for u in self.urls)


def _parse(key: str, kind: str, value) -> object:
    text = value.get() if isinstance(value, Secret) else str(value).strip()
    try:
        if kind == "secret":
            return Secret(text)
        if kind == "urls":
            return tuple(u.strip().rstrip("/") for u in text.split(",") if u.strip())
        if kind == "bool":
            low = text.lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return low in ("true", "1", "yes")
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "ms":
            return float(text) / 1000.0
        if kind == "apiver":
            return text.lower().lstrip("v")
        return text
    except ValueError:
        raise RegistryConfigError(f"bad value for {key}: expected {kind}") from None


def split_credentials(url: str) -> tuple[str, str | None]:
    """Split ``scheme://user:pw@host/...`` into the URL without credentials and ``user:pw``."""
    url = url.strip().rstrip("/")
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:
        raise RegistryConfigError("unparseable registry URL") from e
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    creds = urllib.parse.unquote(userinfo)
    return urllib.parse.urlunsplit(parts._replace(netloc=hostport)), creds


def _blocked_ip(text: str) -> bool:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in _BLOCKED_NETS if net.version == ip.version)


def _check_literal(host: str) -> None:
    h = host.strip("[]").lower().rstrip(".")
    if h in _METADATA_HOSTS or _blocked_ip(h):
        raise RegistryConfigError(f"refusing registry host {h!r}: link-local / cloud-metadata address "
                                  "(set schema.registry.allow.private.addresses=true to allow)")


def check_address(url: str, allow_private: bool) -> None:
    """Refuse URLs whose host is, or resolves to, a link-local or cloud-metadata address.

    Loopback and RFC 1918 addresses are allowed. Resolution failures are not an error here
    (the request itself will fail with a typed error).
    """
    if allow_private:
        return
    host = urllib.parse.urlsplit(url).hostname or ""
    _check_literal(host)
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return
    for info in infos:
        if _blocked_ip(str(info[4][0])):
            raise RegistryConfigError(f"refusing registry host {host!r}: it resolves to a link-local / "
                                      "cloud-metadata address (schema.registry.allow.private.addresses)")
