"""HTTP transport shared by the REST clients: auth, TLS, timeouts, retries, failover, redirects.

Retries: connection errors, timeouts and 408/429/5xx, with full-jitter exponential backoff
between rounds; within a round every base URL is tried once (failover). Never retried:
other 4xx, TLS failures. Redirects are followed only to the same scheme/host/port.
"""
from __future__ import annotations

import json
import logging
import random
import ssl
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from registry._config import RegistryConfig, check_address, redact_url
from registry._oauth import BearerAuth
from registry.errors import (RegistryAuthError, RegistryConfigError, RegistryError, RegistryProtocolError,
                              RegistryTLSError, RegistryUnavailable, SchemaNotFound)

if TYPE_CHECKING:
    import requests

__all__ = ["HttpTransport", "Response"]

log = logging.getLogger("registry")

_RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 3
_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json, */*"


class Response:
    """A fully read HTTP answer (body capped)."""

    __slots__ = ("status", "headers", "body", "url")

    def __init__(self, status: int, headers, body: bytes, url: str):
        self.status, self.headers, self.body, self.url = status, headers, body, url

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as e:
            # A registry always answers JSON on its API paths: an HTML page means the URL
            # points at something else (a proxy, a web app), which is no record's fault.
            raise RegistryProtocolError(f"registry answered non-JSON from {redact_url(self.url)}: "
                                        "is schema.registry.url a schema registry?",
                                        status=self.status, url=redact_url(self.url)) from e

    def text(self) -> str:
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RegistryProtocolError(f"schema text from {redact_url(self.url)} is not UTF-8",
                                        url=redact_url(self.url)) from e


def _key_password_adapter(context: ssl.SSLContext, **kw) -> requests.adapters.HTTPAdapter:
    # requests cannot pass a key password; give urllib3 an SSLContext with the chain loaded.
    # (requests is imported by the first client made, not by importing the registry: 0.1 s.)
    import requests.adapters

    class _KeyPasswordAdapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args, **kwargs):
            kwargs["ssl_context"] = context
            return super().init_poolmanager(*args, **kwargs)

    return _KeyPasswordAdapter(**kw)


class HttpTransport:
    """Requests to one logical registry reachable at one or more base URLs."""

    def __init__(self, config: RegistryConfig, *, base_urls: tuple[str, ...] | None = None):
        self._config = config
        self._urls = tuple(base_urls if base_urls is not None else config.urls)
        if not self._urls:
            raise RegistryConfigError("no registry URL configured")
        for u in self._urls:
            check_address(u, config.allow_private_addresses)
        self._preferred = 0
        self._lock = threading.Lock()
        self._session = self._make_session(config)
        self._bearer = BearerAuth.of(config)
        self._timeout = (config.connect_timeout_s, config.request_timeout_s)
        if not config.verify:
            log.warning("schema registry TLS certificate verification is DISABLED for %s",
                        ", ".join(redact_url(u) for u in self._urls))

    @staticmethod
    def _make_session(config: RegistryConfig) -> requests.Session:
        import requests.adapters

        s = requests.Session()
        adapter_kw: dict[str, Any] = {"pool_connections": 4, "pool_maxsize": 32, "max_retries": 0}
        s.headers.update({"Accept": _ACCEPT, "User-Agent": "asyncapi-kafka-registry"})
        if config.basic_auth is not None:
            user, sep, pw = config.basic_auth.get().partition(":")
            if not sep:
                raise RegistryConfigError("schema.registry.basic.auth.user.info must be user:password")
            s.auth = (user, pw)
        s.verify = config.ca_location if (config.verify and config.ca_location) else bool(config.verify)
        custom_https = False
        if config.cert_location:
            if config.key_password is not None:
                ctx = ssl.create_default_context(cafile=config.ca_location if config.verify else None)
                if not config.verify:
                    ctx.check_hostname = False
                    ctx.verify_mode = ssl.CERT_NONE
                try:
                    ctx.load_cert_chain(config.cert_location, config.key_location,
                                        password=config.key_password.get())
                except (OSError, ssl.SSLError) as e:
                    raise RegistryConfigError("cannot load the client certificate/key "
                                              f"({type(e).__name__})") from None
                s.mount("https://", _key_password_adapter(ctx, **adapter_kw))
                custom_https = True
            else:
                s.cert = (config.cert_location, config.key_location) if config.key_location \
                    else config.cert_location
        for prefix in ("http://", "https://"):
            if not (custom_https and prefix == "https://"):
                s.mount(prefix, requests.adapters.HTTPAdapter(**adapter_kw))
        return s

    def close(self) -> None:
        self._session.close()

    @property
    def base_urls(self) -> tuple[str, ...]:
        return self._urls

    # -- requests ------------------------------------------------------------------------
    def get_json(self, path: str, *, params: dict | None = None) -> Any:
        return self.request("GET", path, params=params).json()

    def request(self, method: str, path: str, *, params: dict | None = None,
                body: Any = None) -> Response:
        """Send one logical request with failover and retries; return the 2xx answer.

        Raises
        ------
        SchemaNotFound, RegistryAuthError, RegistryUnavailable, RegistryTLSError, RegistryError
        """
        import requests

        cfg = self._config
        attempts = cfg.max_retries + 1
        last_exc: BaseException | None = None
        last: Response | None = None
        for attempt in range(attempts):
            if attempt:
                cap = min(cfg.retry_backoff_max_s, cfg.retry_backoff_s * (2 ** (attempt - 1)))
                # Full jitter; a server's Retry-After (429/503) is a floor, capped by the max backoff.
                time.sleep(max(random.uniform(0, cap), min(_retry_after(last), cfg.retry_backoff_max_s)))
            start = self._preferred
            for i in range(len(self._urls)):
                idx = (start + i) % len(self._urls)
                url = self._urls[idx] + path
                try:
                    resp = self._send_authorized(method, url, params, body)
                except requests.exceptions.SSLError as e:
                    raise RegistryTLSError(f"TLS failure talking to {redact_url(url)}: {_short(e)}",
                                           url=redact_url(url)) from None
                except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as e:
                    log.debug("registry %s %s failed: %s", method, redact_url(url), type(e).__name__)
                    last_exc, last = e, None
                    continue
                except requests.exceptions.RequestException as e:
                    raise RegistryError(f"request to {redact_url(url)} failed: {type(e).__name__}",
                                        url=redact_url(url)) from None
                if resp.status < 300:
                    self._preferred = idx
                    return resp
                if resp.status in _RETRY_STATUS:
                    log.debug("registry %s %s answered %d", method, redact_url(url), resp.status)
                    last_exc, last = None, resp
                    continue
                self._preferred = idx
                raise _error_for(resp)
        if last is not None:
            err = _error_for(last)
            raise RegistryUnavailable(f"registry unavailable after {attempts} attempt(s): {err}",
                                      status=last.status, error_code=err.error_code, url=err.url)
        urls = ", ".join(redact_url(u) for u in self._urls)
        raise RegistryUnavailable(f"registry unreachable after {attempts} attempt(s) at {urls}: "
                                  f"{type(last_exc).__name__}", url=redact_url(self._urls[0] + path))

    def _send_authorized(self, method: str, url: str, params, body) -> Response:
        """One exchange with bearer headers; after a 401 to a fetched token, a new token and one retry."""
        if self._bearer is None:
            return self._send(method, url, params, body)
        headers = self._bearer.headers()
        resp = self._send(method, url, params, body, headers)
        if resp.status == 401 and self._bearer.refreshable:
            self._bearer.refused(headers)
            log.info("registry %s refused its access token (401): fetching a new one", redact_url(url))
            resp = self._send(method, url, params, body, self._bearer.headers())
        return resp

    def _send(self, method: str, url: str, params, body, auth_headers: dict[str, str] | None = None) -> Response:
        for _ in range(_MAX_REDIRECTS + 1):
            # verify is passed per request: requests lets REQUESTS_CA_BUNDLE override a
            # session-level CA path, which would silently ignore ssl.ca.location.
            kw: dict[str, Any] = {"params": params, "timeout": self._timeout, "verify": self._session.verify,
                                  "allow_redirects": False, "stream": True}
            headers = dict(auth_headers or {})
            if body is not None:
                kw["data"] = json.dumps(body)
                headers["Content-Type"] = "application/vnd.schemaregistry.v1+json"
            if headers:
                kw["headers"] = headers
            r = self._session.request(method, url, **kw)
            try:
                if r.status_code in _REDIRECT_STATUS:
                    url = self._redirect_target(url, r.headers.get("Location"))
                    params = None  # the Location carries its own query
                    continue
                return Response(r.status_code, r.headers, self._read_capped(r, url), url)
            finally:
                r.close()
        raise RegistryError(f"too many redirects from {redact_url(url)}", url=redact_url(url))

    def _redirect_target(self, url: str, location: str | None) -> str:
        if not location:
            raise RegistryError(f"redirect without Location from {redact_url(url)}", url=redact_url(url))
        target = urllib.parse.urljoin(url, location)
        a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(target)
        if (a.scheme, a.hostname, a.port) != (b.scheme, b.hostname, b.port) or "@" in b.netloc:
            raise RegistryError(f"refusing redirect from {redact_url(url)} to another host "
                                f"({redact_url(target)})", url=redact_url(url))
        return target

    def _read_capped(self, r: requests.Response, url: str) -> bytes:
        import requests

        cap = self._config.max_response_bytes
        chunks, total = [], 0
        try:
            for chunk in r.iter_content(65536):
                total += len(chunk)
                if total > cap:
                    raise RegistryError(f"registry answer larger than {cap} bytes from {redact_url(url)}",
                                        status=r.status_code, url=redact_url(url))
                chunks.append(chunk)
        except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError) as e:
            raise requests.exceptions.ConnectionError(type(e).__name__) from None
        return b"".join(chunks)


def _retry_after(resp: Response | None) -> float:
    if resp is None:
        return 0.0
    try:
        return max(0.0, float(resp.headers.get("Retry-After") or 0))
    except (TypeError, ValueError):
        return 0.0  # HTTP-date form: not worth parsing for a capped floor


def _short(e: BaseException) -> str:
    text = str(e)
    # Keep the useful reason (e.g. "certificate verify failed: self-signed certificate").
    marker = "certificate verify failed"
    if marker in text:
        i = text.index(marker)
        return text[i:i + 120].split("'")[0].split(")")[0]
    return type(e).__name__


def _error_for(resp: Response) -> RegistryError:
    code, message = None, ""
    try:
        doc = json.loads(resp.body) if resp.body else None
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        raw = doc.get("error_code", doc.get("errorCode"))
        code = raw if isinstance(raw, int) else None
        message = str(doc.get("message") or doc.get("detail") or doc.get("title") or "")[:300]
    url = redact_url(resp.url)
    text = f"HTTP {resp.status}" + (f" error_code {code}" if code is not None else "") + \
        f" from {url}" + (f": {message}" if message else "")
    kw: dict[str, Any] = {"status": resp.status, "error_code": code, "url": url}
    if resp.status == 404 or code in (40401, 40402, 40403):
        return SchemaNotFound(text, **kw)
    if resp.status in (401, 403):
        return RegistryAuthError(text, **kw)
    if resp.status in _RETRY_STATUS:
        return RegistryUnavailable(text, **kw)
    return RegistryError(text, **kw)
