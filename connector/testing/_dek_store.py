"""The DEK registry part of the test registry server: KEKs and DEKs in memory, Confluent's routes.

=====================================================================  ==========================
route                                                                  answer
=====================================================================  ==========================
``POST /dek-registry/v1/keks``                                         the KEK (409 when it exists
                                                                       with other settings)
``GET  /dek-registry/v1/keks/{kek}``                                   the KEK, 404/40470
``POST /dek-registry/v1/keks/{kek}/deks[/{subject}]``                  the DEK (409 when that
                                                                       version exists)
``GET  /dek-registry/v1/keks/{kek}/deks/{subject}[/versions/{v}]``     one version (-1/latest: the
                                                                       newest), 404/40470
=====================================================================  ==========================

A shared KEK (``shared: true``) has its DEKs made by the registry: ``shared_kek_wrapper`` (a
callable ``algorithm -> (key material, wrapped key material)``, e.g. a local KMS) is then
required, as on a real registry that reaches the KMS. Standard library only.
"""
from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

__all__ = ["DekStore"]

_PREFIX = ["dek-registry", "v1"]
_ALGORITHMS = ("AES128_GCM", "AES256_GCM", "AES256_SIV")


class _Error(Exception):
    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class DekStore:
    """KEKs and DEKs of one test registry (callers hold the server's lock)."""

    def __init__(self, shared_kek_wrapper: Callable[[str], tuple[bytes, bytes]] | None = None):
        self.keks: dict[str, dict] = {}
        self.deks: dict[tuple[str, str, str], dict[int, dict]] = {}
        self.shared_kek_wrapper = shared_kek_wrapper

    @staticmethod
    def handles(parts: list[str]) -> bool:
        return parts[:2] == _PREFIX

    def route(self, method: str, parts: list[str], body: Any, query: dict[str, list[str]]) -> tuple[int, Any]:
        """``(status, JSON body)``; raises ``_Error`` for Confluent error answers."""
        p = parts[2:]
        if p[:1] != ["keks"]:
            raise _Error(404, 404, "HTTP 404 Not Found")
        if method == "POST" and len(p) == 1:
            return 200, self._register_kek(body)
        if method == "GET" and len(p) == 2:
            return 200, self._kek(p[1])
        if len(p) >= 3 and p[2] == "deks":
            kek = self._kek(p[1])
            if method == "POST" and len(p) in (3, 4):
                subject = p[3] if len(p) == 4 else (body or {}).get("subject")
                return 200, self._register_dek(kek, str(subject), body or {})
            if method == "GET" and len(p) in (4, 6):
                version = p[5] if len(p) == 6 and p[4] == "versions" else "latest"
                algorithm = (query.get("algorithm") or ["AES256_GCM"])[0]
                return 200, self._dek(kek["name"], p[3], algorithm, version)
        raise _Error(404, 404, "HTTP 404 Not Found")

    def _kek(self, name: str) -> dict:
        kek = self.keks.get(name)
        if kek is None:
            raise _Error(404, 40470, f"Key '{name}' not found")
        return kek

    def _register_kek(self, body: Any) -> dict:
        if not isinstance(body, dict) or not body.get("name") or not body.get("kmsType"):
            raise _Error(422, 42271, "Invalid key: name and kmsType are required")
        name = str(body["name"])
        doc: dict[str, Any] = {"name": name, "kmsType": str(body["kmsType"]), "kmsKeyId": str(body.get("kmsKeyId") or ""),
               "kmsProps": dict(body.get("kmsProps") or {}), "doc": body.get("doc"),
               "shared": bool(body.get("shared") or False), "deleted": False}
        old = self.keks.get(name)
        if old is not None:
            if {k: old[k] for k in doc if k != "doc"} == {k: doc[k] for k in doc if k != "doc"}:
                return old
            raise _Error(409, 40972, f"Key '{name}' already exists")
        doc["ts"] = int(time.time() * 1000)
        self.keks[name] = doc
        return doc

    def _register_dek(self, kek: dict, subject: str, body: dict) -> dict:
        algorithm = str(body.get("algorithm") or "AES256_GCM")
        if algorithm not in _ALGORITHMS:
            raise _Error(422, 42271, f"Invalid algorithm {algorithm}")
        version = int(body.get("version") or 1)
        versions = self.deks.setdefault((kek["name"], subject, algorithm), {})
        if version in versions:
            raise _Error(409, 40972, f"Key version {version} of '{subject}' already exists")
        doc: dict[str, Any] = {"kekName": kek["name"], "subject": subject, "version": version, "algorithm": algorithm,
                               "encryptedKeyMaterial": body.get("encryptedKeyMaterial"),
                               "ts": int(time.time() * 1000), "deleted": False}
        raw = None
        if not doc["encryptedKeyMaterial"]:
            if not kek["shared"] or self.shared_kek_wrapper is None:
                raise _Error(422, 42271, "encryptedKeyMaterial is required for a KEK that is not shared")
            raw, wrapped = self.shared_kek_wrapper(algorithm)
            doc["encryptedKeyMaterial"] = base64.b64encode(wrapped).decode("ascii")
        versions[version] = doc
        return self._answer(kek, doc, raw)

    def _dek(self, kek_name: str, subject: str, algorithm: str, version: str) -> dict:
        versions = self.deks.get((kek_name, subject, algorithm)) or {}
        if not versions:
            raise _Error(404, 40470, f"Key '{kek_name}' has no DEK for subject '{subject}'")
        want = max(versions) if version in ("latest", "-1") else int(version)
        doc = versions.get(want)
        if doc is None:
            raise _Error(404, 40470, f"Key '{kek_name}' has no version {version} for subject '{subject}'")
        return self._answer(self.keks[kek_name], doc, None)

    def _answer(self, kek: dict, doc: dict, raw: bytes | None) -> dict:
        out = dict(doc)
        if kek["shared"] and self.shared_kek_wrapper is not None:
            if raw is None:
                raw = doc.get("_raw")
            if raw is not None:
                doc["_raw"] = raw
                out.pop("_raw", None)
                out["keyMaterial"] = base64.b64encode(raw).decode("ascii")
        out.pop("_raw", None)
        return out
