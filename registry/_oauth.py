"""Bearer authentication of registry requests, as confluent-kafka's ``SchemaRegistryClient`` does it.

``schema.registry.bearer.auth.credentials.source``:

===============  ====================================================================================
``STATIC_TOKEN``  ``bearer.auth.token`` as given (the default when a token is given)
``OAUTHBEARER``   OAuth 2.0 client credentials: a token from ``bearer.auth.issuer.endpoint.url``
                  (``grant_type=client_credentials``, ``scope``; the client id and secret in HTTP
                  Basic auth, authlib's default, which confluent-kafka uses)
===============  ====================================================================================

Either way, ``bearer.auth.logical.cluster`` and ``bearer.auth.identity.pool.id`` travel as the
``target-sr-cluster`` and ``Confluent-Identity-Pool-Id`` headers (Confluent Cloud reads them;
confluent-kafka requires the logical cluster, here both are optional so that other registries
behind an OAuth proxy work too).

A fetched token is cached per process for its configuration (every client, transport and task of
the worker shares it), fetched again once 80% of its ``expires_in`` has passed (confluent-kafka's
threshold), and at once, a single time, when the registry answers 401 to it (revoked or rotated).
A token without ``expires_in`` is kept until such a 401. Neither the client secret nor a token
ever appears in a log, an error, a ``repr`` or a pickle.
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import threading
import time
import urllib.parse
from typing import Any


from registry._config import RegistryConfig, check_address
from registry.errors import RegistryAuthError, RegistryProtocolError, RegistryTLSError, RegistryUnavailable
from registry._redact import redact_url

__all__ = ["BearerAuth", "clear_tokens", "REFRESH_AT"]

log = logging.getLogger("registry")

#: Fraction of a token's lifetime after which it is fetched again (confluent-kafka's threshold).
REFRESH_AT = 0.8
_MAX_TOKEN_ANSWER = 1024 * 1024
_RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))


def _now() -> float:
    return time.monotonic()  # tests move time by replacing this function


class _TokenSource:
    """One client registration at one issuer: its current token, fetched when needed."""

    def __init__(self, config: RegistryConfig):
        assert config.bearer_issuer_url and config.bearer_client_id and config.bearer_client_secret is not None
        self._url = config.bearer_issuer_url
        self._shown = redact_url(self._url)
        self._client_id = config.bearer_client_id
        self._secret = config.bearer_client_secret
        self._scope = config.bearer_scope
        self._config = config
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = math.inf
        self.fetches = 0  # observable by tests: how many tokens this process fetched
        parts = urllib.parse.urlsplit(self._url)
        if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            log.warning("the registry's token endpoint %s is plain http: the client secret crosses the network "
                        "unencrypted", self._shown)

    def token(self) -> str:
        with self._lock:
            if self._token is None or _now() >= self._refresh_at:
                self._token, self._refresh_at = self._fetch()
            return self._token

    def invalidate(self, token: str) -> None:
        """Drop ``token`` if it is still the current one (another thread may have refreshed it)."""
        with self._lock:
            if self._token == token:
                self._token = None

    def _fetch(self) -> tuple[str, float]:
        import requests  # with the first token, not with the package (import sets: tests/unit/test_import_sets.py)

        cfg = self._config
        check_address(self._url, cfg.allow_private_addresses)
        form = {"grant_type": "client_credentials"}
        if self._scope:
            form["scope"] = self._scope
        # RFC 6749 2.3.1: the id and secret are form-encoded before going into Basic auth
        auth = (urllib.parse.quote(self._client_id, safe=""), urllib.parse.quote(self._secret.get(), safe=""))
        verify: Any = cfg.ca_location if (cfg.verify and cfg.ca_location) else bool(cfg.verify)
        last = "no answer"
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                time.sleep(random.uniform(0, min(cfg.retry_backoff_max_s, cfg.retry_backoff_s * (2 ** (attempt - 1)))))
            started = _now()
            try:
                r = requests.post(self._url, data=form, auth=auth, headers={"Accept": "application/json"},
                                  timeout=(cfg.connect_timeout_s, cfg.request_timeout_s), verify=verify,
                                  allow_redirects=False, stream=True)
                try:
                    body = r.raw.read(_MAX_TOKEN_ANSWER + 1, decode_content=True)
                finally:
                    r.close()
            except requests.exceptions.SSLError:
                raise RegistryTLSError(f"TLS failure talking to the token endpoint {self._shown}",
                                       url=self._shown) from None
            except requests.exceptions.RequestException as e:
                last = type(e).__name__
                log.debug("token endpoint %s failed: %s", self._shown, last)
                continue
            if r.status_code in _RETRY_STATUS:
                last = f"HTTP {r.status_code}"
                continue
            if r.status_code >= 300:
                raise RegistryAuthError(f"the token endpoint {self._shown} refused the client credentials of "
                                        f"client id {self._client_id!r}: HTTP {r.status_code}{_oauth_error(body)}",
                                        status=r.status_code, url=self._shown)
            token, lifetime = self._parse(body)
            self.fetches += 1
            log.info("fetched a registry access token from %s (expires in %s s)", self._shown,
                     "?" if lifetime is None else f"{lifetime:g}")
            return token, math.inf if lifetime is None else started + REFRESH_AT * lifetime
        raise RegistryUnavailable(f"the token endpoint {self._shown} did not answer after {cfg.max_retries + 1} "
                                  f"attempt(s): {last}", url=self._shown)

    def _parse(self, body: bytes) -> tuple[str, float | None]:
        if len(body) > _MAX_TOKEN_ANSWER:
            raise RegistryProtocolError(f"the token endpoint {self._shown} answered more than "
                                        f"{_MAX_TOKEN_ANSWER} bytes", url=self._shown)
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        token = doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryProtocolError(f"the token endpoint {self._shown} answered no access_token: is "
                                        "bearer.auth.issuer.endpoint.url an OAuth token endpoint?", url=self._shown)
        raw = doc.get("expires_in")
        try:
            lifetime = float(raw) if raw is not None else None
        except (TypeError, ValueError):
            lifetime = None
        if lifetime is not None and not (lifetime > 0 and math.isfinite(lifetime)):
            lifetime = None
        return token, lifetime


def _oauth_error(body: bytes) -> str:
    """The OAuth error code of a refusal (RFC 6749 5.2: ``invalid_client``, ...), never more."""
    try:
        doc = json.loads(body)
    except ValueError:
        return ""
    code = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(code, str) and code.replace("_", "").isalnum() and len(code) < 64:
        return f" ({code})"
    return ""


_sources: dict[tuple, _TokenSource] = {}
_sources_lock = threading.Lock()


def _source_for(config: RegistryConfig) -> _TokenSource:
    key = (config.bearer_issuer_url, config.bearer_client_id, config.bearer_client_secret, config.bearer_scope,
           config.verify, config.ca_location)
    with _sources_lock:
        source = _sources.get(key)
        if source is None:
            source = _sources[key] = _TokenSource(config)
        return source


def clear_tokens() -> None:
    """Forget every cached token of this process."""
    with _sources_lock:
        _sources.clear()


def _after_fork() -> None:
    global _sources_lock
    _sources.clear()  # a child fetches its own: the parent's lock may be held
    _sources_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class BearerAuth:
    """The bearer headers of every request to one registry (None from :meth:`of`: no bearer auth)."""

    def __init__(self, config: RegistryConfig):
        self._static = config.bearer_token.get() if config.bearer_token is not None else None
        self._source = _source_for(config) if config.bearer_source == "OAUTHBEARER" else None
        self._extra: dict[str, str] = {}
        if config.bearer_logical_cluster:
            self._extra["target-sr-cluster"] = config.bearer_logical_cluster
        if config.bearer_identity_pool:
            self._extra["Confluent-Identity-Pool-Id"] = config.bearer_identity_pool

    @classmethod
    def of(cls, config: RegistryConfig) -> BearerAuth | None:
        return cls(config) if config.bearer_source is not None else None

    @property
    def refreshable(self) -> bool:
        """Whether a 401 may be answered by fetching a new token."""
        return self._source is not None

    def headers(self) -> dict[str, str]:
        token = self._source.token() if self._source is not None else self._static
        return {"Authorization": f"Bearer {token}", **self._extra}

    def refused(self, headers: dict[str, str]) -> None:
        """The registry answered 401 to ``headers``: their token is not to be used again."""
        if self._source is not None:
            self._source.invalidate(headers["Authorization"].removeprefix("Bearer "))

    def __repr__(self) -> str:
        return f"BearerAuth({'OAUTHBEARER' if self._source is not None else 'STATIC_TOKEN'})"
