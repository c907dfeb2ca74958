"""The registry-facing tests' peers: the stand-in (``connector.testing.RegistryServer``) and a real
registry, Karapace 3.16 (``connector.testing.KarapaceServer``), driven alike over REST.

Karapace runs once per session, so what a test names in it must be its own: subjects, topics and
record names carry :meth:`RegistryPeer.unique` tokens (processes cache registry answers per URL,
the Spark workers' too, so names are never reused rather than cleaned up).
"""
from __future__ import annotations

import json
import urllib.parse
import uuid

import requests

__all__ = ["RegistryPeer", "KARAPACE_MISSING"]

KARAPACE_MISSING = ("Karapace is not installed here: .ci/run builds .karapace-venv when ../shared/karapace/ (or "
                    "$ASYNCAPI_KAFKA_KARAPACE_DIR) exists; set KARAPACE_BIN to use another install")
def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


_H = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


class RegistryPeer:
    """One registry, by its URL: what a test sets up, the same calls on every peer."""

    def __init__(self, url: str, kind: str, server=None):
        self.url, self.kind, self.server = url.rstrip("/"), kind, server
        self.token = uuid.uuid4().hex[:8]

    def __repr__(self) -> str:
        return f"RegistryPeer({self.kind})"

    @property
    def is_karapace(self) -> bool:
        return self.kind == "karapace"

    def unique(self, name: str) -> str:
        """``name`` made this test's own (Karapace outlives the test)."""
        return f"{name}.{self.token}"

    def _call(self, method: str, path: str, body=None, **params):
        r = requests.request(method, self.url + path, data=None if body is None else json.dumps(body),
                             headers=_H, params=params or None, timeout=30)
        if r.status_code >= 300:
            raise AssertionError(f"{method} {path} -> {r.status_code} {r.text[:300]}")
        return r.json()

    def register(self, subject: str, text: str, schema_type: str = "AVRO", references=()) -> int:
        body: dict = {"schema": text}
        if schema_type.upper() != "AVRO":
            body["schemaType"] = schema_type.upper()
        if references:
            body["references"] = [r if isinstance(r, dict) else {"name": r[0], "subject": r[1], "version": r[2]}
                                  for r in references]
        return int(self._call("POST", f"/subjects/{_q(subject)}/versions", body)["id"])

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return self._call("GET", f"/subjects/{_q(subject)}/versions", **({"deleted": "true"} if deleted else {}))

    def get(self, path: str, **params):
        return self._call("GET", path, **params)

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        self._call("PUT", f"/config/{_q(subject)}" if subject else "/config", {"compatibility": level})

    def delete_version(self, subject: str, version: int, permanent: bool = False) -> None:
        self._call("DELETE", f"/subjects/{_q(subject)}/versions/{version}",
                   **({"permanent": "true"} if permanent else {}))
