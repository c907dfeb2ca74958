"""Registry options: names, parsing into a frozen :class:`RegistryConfig`, URL hygiene, SSRF guard."""
from __future__ import annotations

import dataclasses
import ipaddress
import logging
import socket
import urllib.parse
from collections.abc import Mapping
from typing import Any

from registry.errors import RegistryConfigError
from registry._redact import redact_url
from registry._types import Secret
from registry._vendor import Vendor

__all__ = ["RegistryConfig", "RegistryOption", "REGISTRY_OPTIONS", "REGISTRY_OPTION_NAMES", "SECRET_OPTION_NAMES",
           "VENDORS",
           "redact_url", "split_credentials", "check_address"]

log = logging.getLogger("registry")

VENDORS = tuple(v.value for v in Vendor)

_P = "schema.registry."


@dataclasses.dataclass(frozen=True)
class RegistryOption:
    """One ``schema.registry.*`` option: the one declaration of its name, the
    :class:`RegistryConfig` field it fills, how its text is parsed, its default and its meaning
    (the connector's option table and the docs' option tables are generated from these rows).

    ``default`` is option text parsed like a user's value (so the field default and the docs
    cannot drift); ``shown`` is what the docs say when the default is not a value."""

    suffix: str
    field: str | None
    kind: str
    default: str | None
    doc: str
    secret: bool = False
    shown: str | None = None

    @property
    def name(self) -> str:
        return _P + self.suffix

    @property
    def documented_default(self) -> str:
        return self.shown if self.shown is not None else (self.default or "")


#: Every registry option, in the docs' order.
REGISTRY_OPTIONS: tuple[RegistryOption, ...] = (
    RegistryOption("url", "urls", "urls", None, "Comma-separated URLs (failover in order), or `file:///dir` for a "
                   "snapshot; `user:password@` in a URL moves into basic auth.",
                   shown="the server binding's `schemaRegistryUrl`"),
    RegistryOption("vendor", "vendor", "vendor", "confluent", "confluent (also Karapace, Redpanda, Apicurio ccompat), "
                   "apicurio (also ibm), aws-glue, file.", shown="the binding's `schemaRegistryVendor`"),
    RegistryOption("basic.auth.username", None, "str", None,
                   "Registry basic-auth user (with `schema.registry.basic.auth.password`)."),
    RegistryOption("basic.auth.password", None, "secret", None,
                   "Registry basic-auth password; Spark's redaction hides it.", secret=True),
    RegistryOption("basic.auth.user.info", "basic_auth", "secret", None,
                   "`user:password` (Confluent's spelling; Spark's default redaction does not recognise the name).",
                   secret=True),
    RegistryOption("bearer.auth.credentials.source", "bearer_source", "bearer", None,
                   "`STATIC_TOKEN` (`bearer.auth.token`) or `OAUTHBEARER` (OAuth client credentials from "
                   "`bearer.auth.issuer.endpoint.url`), as confluent-kafka's client.",
                   shown="STATIC_TOKEN when a token is given"),
    RegistryOption("bearer.auth.token", "bearer_token", "secret", None, "Bearer token (STATIC_TOKEN).", secret=True),
    RegistryOption("bearer.auth.issuer.endpoint.url", "bearer_issuer_url", "str", None,
                   "OAUTHBEARER: the OAuth token endpoint; the token is cached per process, fetched again at 80% "
                   "of its lifetime and after a 401."),
    RegistryOption("bearer.auth.client.id", "bearer_client_id", "str", None, "OAUTHBEARER: the client id."),
    RegistryOption("bearer.auth.client.secret", "bearer_client_secret", "secret", None,
                   "OAUTHBEARER: the client secret.", secret=True),
    RegistryOption("bearer.auth.scope", "bearer_scope", "str", None, "OAUTHBEARER: the scope asked for."),
    RegistryOption("bearer.auth.logical.cluster", "bearer_logical_cluster", "str", None,
                   "Confluent Cloud: the registry's logical cluster (`target-sr-cluster` header)."),
    RegistryOption("bearer.auth.identity.pool.id", "bearer_identity_pool", "str", None,
                   "Confluent Cloud: the identity pool(s), comma-separated (`Confluent-Identity-Pool-Id` header)."),
    RegistryOption("ssl.ca.location", "ca_location", "str", None, "CA bundle for the registry's TLS certificate."),
    RegistryOption("ssl.certificate.location", "cert_location", "str", None, "Client certificate for mTLS."),
    RegistryOption("ssl.key.location", "key_location", "str", None, "Client key for mTLS."),
    RegistryOption("ssl.key.password", "key_password", "secret", None, "Password of the client key.", secret=True),
    RegistryOption("ssl.verify", "verify", "bool", "true",
                   "`false` turns TLS verification off and logs a warning every time."),
    RegistryOption("connect.timeout.ms", "connect_timeout_s", "ms", "10000", "Connect timeout."),
    RegistryOption("request.timeout.ms", "request_timeout_s", "ms", "30000", "Read timeout of one request."),
    RegistryOption("max.retries", "max_retries", "int", "3",
                   "Retries on connection errors and 408/429/5xx, full-jitter backoff."),
    RegistryOption("retry.backoff.ms", "retry_backoff_s", "ms", "100", "Base of the backoff."),
    RegistryOption("retry.backoff.max.ms", "retry_backoff_max_s", "ms", "5000", "Cap of one backoff."),
    RegistryOption("cache.max.entries", "cache_max_entries", "int", None, "Bound of the schema id cache (LRU).",
                   shown="unbounded"),
    RegistryOption("cache.latest.ttl.sec", "cache_latest_ttl_s", "float", "60", "TTL of latest-version answers."),
    RegistryOption("cache.notfound.ttl.sec", "cache_notfound_ttl_s", "float", "30", "TTL of not-found answers."),
    RegistryOption("allow.private.addresses", "allow_private_addresses", "bool", "false",
                   "Allow link-local / cloud-metadata registry hosts (refused by default)."),
    RegistryOption("apicurio.api.version", "apicurio_api_version", "apiver", "auto",
                   "Apicurio native API: auto (v3, falling back to v2), 2 or 3."),
    RegistryOption("glue.region", "glue_region", "str", None,
                   "AWS Glue registry region; credentials from the standard AWS chain."),
    RegistryOption("glue.registry.name", "glue_registry_name", "str", None, "AWS Glue registry name."),
    RegistryOption("glue.endpoint.url", "glue_endpoint_url", "str", None,
                   "AWS Glue endpoint (LocalStack, a VPC endpoint)."),
    RegistryOption("glue.access.key.id", "glue_access_key_id", "secret", None,
                   "Explicit AWS access key id (secret).", secret=True),
    RegistryOption("glue.secret.access.key", "glue_secret_access_key", "secret", None,
                   "Explicit AWS secret access key (secret).", secret=True),
    RegistryOption("glue.session.token", "glue_session_token", "secret", None,
                   "Explicit AWS session token (secret).", secret=True),
    RegistryOption("file.path", "file_path", "str", None, "Snapshot directory (same as a `file://` URL)."),
)
# option name -> row, for the ones that fill a field (username/password are combined first)
_OPTIONS: dict[str, RegistryOption] = {o.name: o for o in REGISTRY_OPTIONS if o.field is not None}
# The documented spelling of basic auth: Spark's default redaction regex hides a "password"
# option but not Confluent's "basic.auth.user.info" ("user:password"); both are accepted.
_USER, _PASSWORD = _P + "basic.auth.username", _P + "basic.auth.password"
REGISTRY_OPTION_NAMES: frozenset[str] = frozenset(o.name for o in REGISTRY_OPTIONS)
SECRET_OPTION_NAMES: frozenset[str] = frozenset(o.name for o in REGISTRY_OPTIONS if o.secret)


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
        if kind == "vendor":
            return Vendor.parse(text)
        if kind == "bearer":
            return text.upper()
        return text
    except RegistryConfigError:
        raise
    except ValueError:
        raise RegistryConfigError(f"bad value for {key}: expected {kind}") from None


def _default(field: str):
    """The field default, parsed from its option's default text (the table owns it)."""
    row = next(o for o in REGISTRY_OPTIONS if o.field == field)
    return None if row.default is None else _parse(row.name, row.kind, row.default)


_METADATA_HOSTS = {"metadata.google.internal", "metadata.goog", "metadata"}
_BLOCKED_NETS = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"),
                 ipaddress.ip_network("fd00:ec2::254/128"), ipaddress.ip_network("100.100.100.200/32"))


@dataclasses.dataclass(frozen=True)
class RegistryConfig:
    """Everything needed to build a registry client; frozen, hashable, picklable.

    Build it with :meth:`from_options` from the ``schema.registry.*`` options (lower-case names),
    declared with their defaults and meanings in :data:`REGISTRY_OPTIONS`.

    Examples
    --------
    >>> c = RegistryConfig.from_options({"schema.registry.url": "https://u:pw@sr.example:8081"})
    >>> c.urls, c.basic_auth
    (('https://sr.example:8081',), Secret('***'))
    """

    urls: tuple[str, ...] = ()
    vendor: Vendor = _default("vendor")
    basic_auth: Secret | None = None
    bearer_source: str | None = None
    bearer_token: Secret | None = None
    bearer_issuer_url: str | None = None
    bearer_client_id: str | None = None
    bearer_client_secret: Secret | None = None
    bearer_scope: str | None = None
    bearer_logical_cluster: str | None = None
    bearer_identity_pool: str | None = None
    verify: bool = _default("verify")
    ca_location: str | None = None
    cert_location: str | None = None
    key_location: str | None = None
    key_password: Secret | None = None
    connect_timeout_s: float = _default("connect_timeout_s")
    request_timeout_s: float = _default("request_timeout_s")
    max_retries: int = _default("max_retries")
    retry_backoff_s: float = _default("retry_backoff_s")
    retry_backoff_max_s: float = _default("retry_backoff_max_s")
    cache_max_entries: int | None = None
    cache_latest_ttl_s: float = _default("cache_latest_ttl_s")
    cache_notfound_ttl_s: float = _default("cache_notfound_ttl_s")
    allow_private_addresses: bool = _default("allow_private_addresses")
    apicurio_api_version: str = _default("apicurio_api_version")
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
        for f in ("basic_auth", "bearer_token", "bearer_client_secret", "key_password", "glue_access_key_id",
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
        vendor = Vendor.parse(self.vendor)
        self._check_bearer()
        if self.urls and all(u.startswith("file://") for u in self.urls) and self.file_path is None:
            object.__setattr__(self, "file_path", urllib.parse.unquote(urllib.parse.urlsplit(self.urls[0]).path))
            vendor = Vendor.FILE
        object.__setattr__(self, "vendor", vendor)
        if self.apicurio_api_version not in ("auto", "2", "3"):
            raise RegistryConfigError("schema.registry.apicurio.api.version must be auto, 2 or 3")
        if self.max_retries < 0 or self.connect_timeout_s <= 0 or self.request_timeout_s <= 0:
            raise RegistryConfigError("timeouts must be > 0 and max.retries >= 0")
        if self.cache_max_entries is not None and self.cache_max_entries <= 0:
            raise RegistryConfigError("schema.registry.cache.max.entries must be > 0")
        if vendor in (Vendor.CONFLUENT, Vendor.APICURIO):
            if not self.urls:
                raise RegistryConfigError(f"schema.registry.url is required for vendor {vendor}")
            for u in self.urls:
                parts = urllib.parse.urlsplit(u)
                if parts.scheme not in ("http", "https") or not parts.hostname:
                    raise RegistryConfigError(f"bad registry URL {redact_url(u)!r}: need http(s)://host[:port]")
                if not self.allow_private_addresses:
                    _check_literal(parts.hostname)
        if vendor is Vendor.FILE and not self.file_path:
            raise RegistryConfigError("vendor file needs schema.registry.file.path or a file:// URL")
        if vendor is Vendor.AWS_GLUE and self.glue_endpoint_url and not self.allow_private_addresses:
            host = urllib.parse.urlsplit(self.glue_endpoint_url).hostname or ""
            _check_literal(host)

    def _check_bearer(self) -> None:
        """The bearer settings as confluent-kafka's client checks them (see :mod:`registry._oauth`)."""
        source = self.bearer_source.upper() if self.bearer_source else None
        oauth_fields = {"bearer.auth.issuer.endpoint.url": self.bearer_issuer_url,
                        "bearer.auth.client.id": self.bearer_client_id,
                        "bearer.auth.client.secret": self.bearer_client_secret}
        if source is None:
            if self.bearer_token is not None:
                source = "STATIC_TOKEN"
            elif any(v is not None for v in oauth_fields.values()):
                raise RegistryConfigError(f"{', '.join(_P + k for k, v in oauth_fields.items() if v is not None)} "
                                          f"need {_P}bearer.auth.credentials.source=OAUTHBEARER")
        object.__setattr__(self, "bearer_source", source)
        if source is None:
            return
        if source not in ("STATIC_TOKEN", "OAUTHBEARER"):
            raise RegistryConfigError(f"{_P}bearer.auth.credentials.source must be STATIC_TOKEN or OAUTHBEARER, not "
                                      f"{source!r} (OAUTHBEARER_AZURE_IMDS and CUSTOM are not supported)")
        if source == "STATIC_TOKEN":
            if self.bearer_token is None:
                raise RegistryConfigError(f"{_P}bearer.auth.credentials.source=STATIC_TOKEN needs "
                                          f"{_P}bearer.auth.token")
            return
        if self.basic_auth is not None:  # (a static token next to basic auth is as before: basic wins)
            raise RegistryConfigError("give either basic auth or OAUTHBEARER to the registry, not both")
        missing = [_P + k for k, v in oauth_fields.items() if not v]
        if missing:
            raise RegistryConfigError(f"{_P}bearer.auth.credentials.source=OAUTHBEARER needs {', '.join(missing)}")
        if self.bearer_token is not None:
            raise RegistryConfigError(f"{_P}bearer.auth.token is for STATIC_TOKEN; OAUTHBEARER fetches its tokens")
        url = str(self.bearer_issuer_url)
        if "@" in urllib.parse.urlsplit(url).netloc:
            raise RegistryConfigError(f"the token endpoint URL {redact_url(url)!r} carries credentials: give them as "
                                      f"{_P}bearer.auth.client.id and {_P}bearer.auth.client.secret")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RegistryConfigError(f"bad token endpoint URL {redact_url(url)!r}: need http(s)://host[:port]/path")
        if not self.allow_private_addresses:
            _check_literal(parts.hostname)

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
            row = _OPTIONS[key]
            if value is None or row.field is None:
                continue
            kwargs[row.field] = _parse(key, row.kind, value)
        return cls(**kwargs)

    def redacted_urls(self) -> tuple[str, ...]:
        """The URLs with any credentials removed (they never hold any after construction)."""
        return tuple(redact_url(u) for u in self.urls)


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
