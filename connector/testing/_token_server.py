"""An OAuth 2.0 token endpoint (client credentials grant) on 127.0.0.1, for tests and the sandbox.

It checks the client id and secret (HTTP Basic, as authlib and confluent-kafka send them, or in
the form), answers ``{"access_token", "token_type": "Bearer", "expires_in"}`` with a new token each
time, and can tell whether a token is one it issued and has not revoked — the check a
:class:`~connector.testing.RegistryServer` makes with :meth:`RegistryServer.require_bearer_from`.
Standard library only.
"""
from __future__ import annotations

import base64
import hmac
import http.server
import json
import secrets
import threading
import urllib.parse

__all__ = ["TokenServer"]


class TokenServer:
    """Issue bearer tokens to one client.

    Parameters
    ----------
    client_id, client_secret : str
        The only credentials accepted.
    expires_in : int or None
        Lifetime the answers announce (None: no ``expires_in``).

    Examples
    --------
    >>> import requests
    >>> with TokenServer("app", "s3cret") as idp:
    ...     answer = requests.post(idp.url, data={"grant_type": "client_credentials"}, auth=("app", "s3cret")).json()
    ...     idp.valid(answer["access_token"]), answer["expires_in"], idp.issued
    (True, 3600, 1)
    """

    def __init__(self, client_id: str, client_secret: str, *, expires_in: int | None = 3600):
        self.client_id, self.client_secret, self.expires_in = client_id, client_secret, expires_in
        self._lock = threading.Lock()
        self._live: set[str] = set()
        self.issued = 0
        self.tokens: list[str] = []  # every token issued, for tests that check none leaks
        self.requests: list[dict] = []  # the forms received (scope, grant_type), for assertions
        self._httpd: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "TokenServer is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/oauth2/token"

    def __enter__(self) -> TokenServer:
        handler = type("Handler", (_Handler,), {"idp": self})
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="TokenServer", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = self._thread = None

    def valid(self, token: str) -> bool:
        """Whether ``token`` was issued here and not revoked."""
        with self._lock:
            return token in self._live

    def revoke_all(self) -> None:
        """Revoke every token issued so far (a rotation: the next request with one gets 401)."""
        with self._lock:
            self._live.clear()

    def _issue(self, form: dict, authorization: str) -> tuple[int, dict]:
        cid, secret = form.get("client_id", ""), form.get("client_secret", "")
        if authorization.startswith("Basic "):
            try:
                user, _, pw = base64.b64decode(authorization[6:]).decode().partition(":")
            except ValueError:
                user, pw = "", ""
            cid, secret = urllib.parse.unquote(user), urllib.parse.unquote(pw)
        with self._lock:
            self.requests.append({k: v for k, v in form.items() if k != "client_secret"})
            if form.get("grant_type") != "client_credentials":
                return 400, {"error": "unsupported_grant_type"}
            if not (hmac.compare_digest(cid, self.client_id) and hmac.compare_digest(secret, self.client_secret)):
                return 401, {"error": "invalid_client", "error_description": "bad client credentials"}
            token = "at-" + secrets.token_hex(12)
            self._live.add(token)
            self.tokens.append(token)
            self.issued += 1
        answer: dict = {"access_token": token, "token_type": "Bearer"}
        if self.expires_in is not None:
            answer["expires_in"] = self.expires_in
        return 200, answer


class _Handler(http.server.BaseHTTPRequestHandler):
    idp: TokenServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        length = min(int(self.headers.get("Content-Length") or 0), 65536)
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode("utf-8", "replace")))
        status, doc = self.idp._issue(form, self.headers.get("Authorization") or "")
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
