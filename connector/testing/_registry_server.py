"""An in-memory Confluent-compatible schema registry on 127.0.0.1, for tests and the demo.

Speaks the Confluent REST subset that clients use (including confluent-kafka's own
``SchemaRegistryClient`` with ``auto.register.schemas``), Apicurio's v2/v3 ``ids`` endpoints
and its ``/apis/ccompat/v7`` prefix, with Confluent error bodies and status codes. Data
contracts: schemas carry ``metadata`` and ``ruleSet`` (part of a schema's identity, as in
Confluent's registry), ``GET /subjects/{s}/metadata`` chooses a version by its metadata
(``use.latest.with.metadata``), and the DEK registry API (``/dek-registry/v1``) keeps KEKs and
DEKs (:mod:`connector.testing._dek_store`). Fault
injection (failures, delays, a pause gate, redirects, auth) and request counters make
client behaviour observable. Standard library only.
"""
from __future__ import annotations

import base64
import hmac
import http.server
import json
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from typing import Any

from ._dek_store import DekStore, _Error
from ._registry_rules import COMPATIBILITY_LEVELS, avro_problem, compatibility_problem, identity, stored_text

__all__ = ["RegistryServer"]

_CCOMPAT = re.compile(r"^/apis/ccompat/v[67](?=/)")
_APICURIO = re.compile(r"^/apis/registry/v([23])/ids/(globalIds|contentIds)/(\d+)(/references)?$")
_MAX_BODY = 16 * 1024 * 1024


class _Reply(Exception):
    def __init__(self, status: int, body, headers=None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _norm(doc):
    """A rule set or metadata without empty members (clients send ``[]``/``null``/``false`` for
    what another omits): what the registry compares."""
    if isinstance(doc, dict):
        out = {k: _norm(v) for k, v in doc.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {}, False)} or None
    if isinstance(doc, list):
        return [_norm(v) for v in doc]
    return doc


def _err(status: int, code: int, message: str) -> _Reply:
    return _Reply(status, {"error_code": code, "message": message})


class RegistryServer:
    """Embedded schema registry (Confluent REST API + Apicurio ids endpoints).

    Parameters
    ----------
    ssl_context : ssl.SSLContext, optional
        Serve HTTPS with this server-side context.
    compatibility : str
        The global compatibility level (``NONE``: Karapace and Confluent default to BACKWARD);
        checked for Avro (:mod:`connector.testing._registry_rules`).
    apicurio_api_versions : tuple of str
        Which Apicurio native API versions to answer (``("2",)`` mimics an Apicurio 2 server).
    shared_kek_wrapper : callable, optional
        ``algorithm -> (key material, wrapped key material)``: makes the DEKs of shared KEKs (a
        KMS the registry reaches, e.g. ``connector.schema.rules._crypto.local_kms_dek_maker(secret)``).

    Examples
    --------
    >>> import requests
    >>> from connector.testing import RegistryServer
    >>> with RegistryServer() as srv:
    ...     sid = srv.register("orders-value", '{"type": "record", "name": "O", "fields": []}')
    ...     requests.get(f"{srv.url}/schemas/ids/{sid}").json()["schema"], srv.request_count()
    ('{"fields":[],"name":"O","type":"record"}', 1)
    """

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None,
                 apicurio_api_versions: tuple[str, ...] = ("2", "3"), shared_kek_wrapper=None,
                 compatibility: str = "NONE"):
        self._ssl = ssl_context
        self.apicurio_api_versions = tuple(apicurio_api_versions)
        self._lock = threading.Condition()
        self._schemas: dict[int, dict] = {}          # id -> {"schema","schemaType","references","guid"}
        self._by_content: dict[str, int] = {}
        self._subjects: dict[str, list[tuple[int, int, int]]] = {}  # subject -> [(version, id, globalId)]
        self._globals: dict[int, tuple[str, int, int]] = {}        # globalId -> (subject, version, id)
        self._deleted: set[tuple[str, int]] = set()                # soft-deleted (subject, version)
        # Compatibility levels: None is the global one. NONE by default, where Karapace and
        # Confluent default to BACKWARD: tests set up evolutions freely, and the peer tests set
        # BACKWARD per subject (PUT /config/{subject}) on both registries alike.
        self._compat: dict[str | None, str] = {None: compatibility.upper()}
        self._query: dict = {}
        self._next_id, self._next_global = 1, 1001
        self.deks = DekStore(shared_kek_wrapper)
        self._requests: list[tuple[str, str]] = []
        self._faults: list[list] = []                # [remaining, status, path_prefix]
        self._redirects: list[list] = []             # [remaining, location]
        self._delay = 0.0
        self._paused = False
        self._auth: Any = None  # the Authorization value required, or a check of bearer tokens
        self._auth_headers: list[dict[str, str]] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> "RegistryServer":
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        handler = type("Handler", (_Handler,), {"registry": self})
        httpd = _HTTPServer(("127.0.0.1", 0), handler)
        if self._ssl is not None:
            httpd.socket = self._ssl.wrap_socket(httpd.socket, server_side=True)
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="RegistryServer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        self.resume()
        httpd, self._httpd = self._httpd, None
        thread, self._thread = self._thread, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("RegistryServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:41234``."""
        return f"{'https' if self._ssl else 'http'}://127.0.0.1:{self.port}"

    # -- data ---------------------------------------------------------------------------
    def register(self, subject: str, text: str, schema_type: str = "AVRO", references=(), *,
                 metadata=None, rule_set=None) -> int:
        """Register ``text`` under ``subject``; the same schema (and type, references, metadata and
        rule set) gets the same id. Stored reprinted, as a registry does
        (:func:`connector.testing._registry_rules.stored_text`); not validated, so a test may
        plant a schema a registry would refuse.

        ``references`` items are ``SchemaReference``-like objects or dicts with
        ``name``/``subject``/``version``; ``metadata`` and ``rule_set`` are the REST JSON (dicts) or
        ``registry.Metadata`` / ``registry.RuleSet``.
        """
        refs = [r if isinstance(r, dict) else {"name": r.name, "subject": r.subject, "version": r.version}
                for r in references]
        body = {"schema": text, "schemaType": str(schema_type).upper(), "references": refs}
        for key, value in (("metadata", metadata), ("ruleSet", rule_set)):
            if value is not None:
                body[key] = value.to_json() if hasattr(value, "to_json") else value
        with self._lock:
            return self._register(subject, body, validate=False)[0]

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        """The compatibility level of ``subject`` (None: the global one), as ``PUT /config`` sets it."""
        with self._lock:
            self._compat[subject] = level.upper()

    def delete_version(self, subject: str, version: int, permanent: bool = False) -> None:
        """Soft-delete a version (``permanent``: remove a soft-deleted one), as ``DELETE`` does."""
        with self._lock:
            self._delete(subject, str(version), permanent)

    def _identity(self, subject: str, body: dict, *, validate: bool, looking_up: bool = False):
        """(type, stored text, references, metadata, rule set) of a request body, refused with the
        registry's error when it is invalid."""
        stype = (body.get("schemaType") or "AVRO").upper()
        if stype not in ("AVRO", "JSON", "PROTOBUF"):
            raise _err(422, 422, f"Invalid schemaType {stype}")
        refs = [{"name": str(r["name"]), "subject": str(r["subject"]), "version": int(r["version"])}
                for r in body.get("references") or ()]
        text = body["schema"]
        try:
            stored = stored_text(stype, text)
        except ValueError:
            if validate or looking_up:
                raise _err(422, 42201, f"Invalid {stype} schema" if not looking_up else
                           f"Error while looking up schema under subject {subject}") from None
            stored = text
        if validate or looking_up:
            problem = None
            if stype == "AVRO":
                problem = avro_problem(text, self._avro_names(refs))
            elif stype == "JSON" and not isinstance(json.loads(text), (dict, bool)):
                problem = "Invalid JSON schema"
            elif stype == "PROTOBUF":
                # an import no reference provides cannot be parsed (Karapace answers 42201)
                given = {r["name"] for r in refs}
                missing = [i for i in re.findall(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"', text, re.M)
                           if i not in given and not i.startswith("google/protobuf/")]
                problem = f"Invalid PROTOBUF schema: imports {missing} without references" if missing else None
            if problem:
                raise _err(422, 42201, problem if not looking_up else
                           f"Error while looking up schema under subject {subject}")
        return stype, stored, refs, _norm(body.get("metadata")), _norm(body.get("ruleSet"))

    def _avro_names(self, refs: list[dict]) -> set[str]:
        names: set[str] = set()
        for r in refs:
            names.add(r["name"])
            for version, sid, _ in self._subjects.get(r["subject"], ()):
                if version == r["version"]:
                    try:
                        doc = json.loads(self._schemas[sid]["schema"])
                    except ValueError:
                        continue
                    if isinstance(doc, dict) and isinstance(doc.get("name"), str):
                        ns = doc.get("namespace")
                        names.add(doc["name"] if "." in doc["name"] or not ns else f"{ns}.{doc['name']}")
        return names

    def _live(self, subject: str, deleted: bool = False) -> list[tuple[int, int, int]]:
        return [e for e in self._subjects.get(subject, ()) if deleted or (subject, e[0]) not in self._deleted]

    def _register(self, subject: str, body: dict, validate: bool = True) -> tuple[int, int]:
        stype, stored, refs, metadata, rule_set = self._identity(subject, body, validate=validate)
        content = json.dumps([stype, identity(stype, stored), refs, metadata, rule_set], sort_keys=True)
        sid = self._by_content.get(content)
        for version, vid, _ in self._live(subject):
            if vid == sid:
                return sid, version
        if validate:
            level = self._compat.get(subject) or self._compat[None]
            olds = [self._schemas[i]["schema"] for _, i, _ in self._live(subject)
                    if self._schemas[i]["schemaType"] == stype]
            problem = compatibility_problem(level, stype, stored, olds)
            if problem:
                raise _err(409, 409, f"Incompatible schema, {problem}")
        if sid is None:
            sid, self._next_id = self._next_id, self._next_id + 1
            self._by_content[content] = sid
            self._schemas[sid] = {"schema": stored, "schemaType": stype, "references": refs,
                                  "guid": str(uuid.uuid4()), "metadata": metadata, "ruleSet": rule_set}
        versions = self._subjects.setdefault(subject, [])
        # a soft-deleted version keeps its number: registering its schema again makes a new one
        version = versions[-1][0] + 1 if versions else 1
        gid, self._next_global = self._next_global, self._next_global + 1
        versions.append((version, sid, gid))
        self._globals[gid] = (subject, version, sid)
        return sid, version

    def _delete(self, subject: str, v: str | None, permanent: bool) -> object:
        if not self._subjects.get(subject):
            raise _err(404, 40401, f"Subject '{subject}' not found.")
        if v is None:  # the whole subject
            live = [e[0] for e in self._live(subject)]
            if not permanent:
                if not live:
                    raise _err(404, 40404, f"Subject '{subject}' was soft deleted.")
                self._deleted.update((subject, n) for n in live)
                return live
            if live:
                raise _err(404, 40405, f"Subject '{subject}' was not deleted first before being permanently "
                                       "deleted")
            gone = [e[0] for e in self._subjects.pop(subject)]
            self._deleted.difference_update((subject, n) for n in gone)
            self._compat.pop(subject, None)
            return gone
        version, _, _ = self._version(subject, v, deleted=permanent)
        if permanent:
            if (subject, version) not in self._deleted:
                raise _err(404, 40407, f"Subject '{subject}' Version {version} was not deleted first before "
                                       "being permanently deleted")
            self._subjects[subject] = [e for e in self._subjects[subject] if e[0] != version]
            self._deleted.discard((subject, version))
            if not self._subjects[subject]:
                del self._subjects[subject]
        else:
            self._deleted.add((subject, version))
        return version

    def guid_of(self, schema_id: int) -> str:
        """The GUID the server assigned to schema ``schema_id``."""
        with self._lock:
            return self._schemas[schema_id]["guid"]

    def global_id_of(self, subject: str, version: int) -> int:
        """The Apicurio-style global id of ``subject`` version ``version``."""
        with self._lock:
            return next(g for v, _, g in self._subjects[subject] if v == version)

    # -- fault injection and observation -----------------------------------------------
    def fail_next(self, n: int, status: int = 503, path_prefix: str | None = None) -> None:
        """Answer the next ``n`` requests (matching ``path_prefix``) with ``status``."""
        with self._lock:
            self._faults.append([n, status, path_prefix])

    def redirect_next(self, n: int, location: str) -> None:
        """Answer the next ``n`` requests with ``307 Location: location`` (``{path}`` is substituted)."""
        with self._lock:
            self._redirects.append([n, location])

    def set_delay(self, seconds: float) -> None:
        """Sleep this long before answering each request (simulates a slow registry)."""
        self._delay = float(seconds)

    def pause(self) -> None:
        """Hold every request (after counting it) until :meth:`resume`."""
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            self._lock.notify_all()

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> bool:
        """Block until at least ``n`` requests were received; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= n, timeout)

    def require_basic_auth(self, user: str, password: str) -> None:
        """Answer 401 unless requests carry these basic-auth credentials."""
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self._auth = "Basic " + token

    def require_bearer(self, token: str) -> None:
        """Answer 401 unless requests carry ``Authorization: Bearer <token>``."""
        self._auth = "Bearer " + token

    def require_bearer_from(self, valid) -> None:
        """Answer 401 unless requests carry a bearer token ``valid(token)`` accepts (e.g.
        :meth:`connector.testing.TokenServer.valid`: tokens an OAuth endpoint issued)."""
        self._auth = valid

    def headers_of(self, n: int = -1) -> dict[str, str]:
        """The authentication headers of the ``n``-th request (``Authorization``, Confluent Cloud's
        ``target-sr-cluster`` and ``Confluent-Identity-Pool-Id``)."""
        with self._lock:
            return dict(self._auth_headers[n])

    def request_count(self, path_prefix: str | None = None, method: str | None = None) -> int:
        """Requests received so far (optionally only those whose path starts with ``path_prefix``)."""
        with self._lock:
            return sum(1 for m, p in self._requests
                       if (path_prefix is None or p.startswith(path_prefix)) and (method is None or m == method))

    def reset_counts(self) -> None:
        with self._lock:
            self._requests.clear()
            self._auth_headers.clear()

    # -- request handling (called from handler threads) ---------------------------------
    def _pre(self, method: str, path: str, headers) -> None:
        with self._lock:
            self._requests.append((method, path))
            self._auth_headers.append({k: headers[k] for k in ("Authorization", "target-sr-cluster",
                                                               "Confluent-Identity-Pool-Id") if k in headers})
            self._lock.notify_all()
            self._lock.wait_for(lambda: not self._paused)
        if self._delay:
            time.sleep(self._delay)
        with self._lock:
            for r in self._redirects:
                if r[0] > 0:
                    r[0] -= 1
                    raise _Reply(307, {"message": "moved"}, {"Location": r[1].replace("{path}", path)})
            for f in self._faults:
                if f[0] > 0 and (f[2] is None or path.startswith(f[2])):
                    f[0] -= 1
                    raise _err(f[1], f[1] * 100 + 1 if f[1] >= 500 else f[1], f"injected failure {f[1]}")
        if self._auth is not None:
            given = headers.get("Authorization") or ""
            if callable(self._auth):
                ok = given.startswith("Bearer ") and self._auth(given[7:])
            else:
                ok = hmac.compare_digest(given.encode(), self._auth.encode())
            if not ok:
                raise _err(401, 40101, "Unauthorized")

    def _route(self, method: str, path: str, body, query: dict | None = None) -> tuple[int, object, dict]:
        m = _APICURIO.match(path)
        if m and method == "GET":
            return self._apicurio(m.group(1), m.group(2), int(m.group(3)), bool(m.group(4)))
        path = _CCOMPAT.sub("", path)
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
        with self._lock:
            if DekStore.handles(parts):
                try:
                    status, doc = self.deks.route(method, parts, body, query or {})
                except _Error as e:
                    raise _err(e.status, e.code, e.message) from None
                return status, doc, {}
            if method == "GET" and len(parts) == 3 and parts[0] == "subjects" and parts[2] == "metadata":
                return self._latest_with_metadata(parts[1], query or {})
            self._query = query or {}
            return self._confluent(method, parts, body)

    def _doc(self, sid: int, **extra) -> dict:
        s = self._schemas[sid]
        doc = {"schema": s["schema"], "guid": s["guid"], **extra}
        if s["schemaType"] != "AVRO":
            doc["schemaType"] = s["schemaType"]
        if s["references"]:
            doc["references"] = s["references"]
        for key in ("metadata", "ruleSet"):
            if s.get(key):
                doc[key] = s[key]
        return doc

    def _version(self, subject: str, v: str, deleted: bool = False) -> tuple[int, int, int]:
        versions = self._live(subject, deleted)
        if not versions:
            raise _err(404, 40401, f"Subject '{subject}' not found.")
        if v in ("latest", "-1"):
            return versions[-1]
        try:
            want = int(v)
        except ValueError:
            raise _err(422, 42202, "The specified version is not a valid version id.") from None
        for entry in versions:
            if entry[0] == want:
                return entry
        raise _err(404, 40402, f"Version {v} not found.")

    def _latest_with_metadata(self, subject: str, query: dict) -> tuple[int, object, dict]:
        want = dict(zip(query.get("key") or [], query.get("value") or []))
        self._version(subject, "latest")
        for version, sid, _ in reversed(self._live(subject)):
            props = (self._schemas[sid].get("metadata") or {}).get("properties") or {}
            if all(props.get(k) == v for k, v in want.items()):
                return 200, self._doc(sid, subject=subject, version=version, id=sid), {}
        raise _err(404, 40403, f"Schema not found for subject '{subject}' with metadata {want}")

    def _confluent(self, method: str, p: list[str], body) -> tuple[int, object, dict]:
        n, q = len(p), self._query
        deleted = (q.get("deleted") or ["false"])[0] == "true"
        if method == "GET":
            if p == ["subjects"]:
                return 200, [s for s in self._subjects if self._live(s, deleted)], {}
            if n == 3 and p[0] == "subjects" and p[2] == "versions":
                self._version(p[1], "latest", deleted)
                return 200, [v for v, _, _ in self._live(p[1], deleted)], {}
            if n in (4, 5) and p[0] == "subjects" and p[2] == "versions":
                version, sid, _ = self._version(p[1], p[3], deleted)
                if n == 5 and p[4] == "schema":
                    return 200, self._schemas[sid]["schema"], {"Content-Type": "application/json"}
                return 200, self._doc(sid, subject=p[1], version=version, id=sid), {}
            if n >= 3 and p[:2] == ["schemas", "ids"] and p[2].isdigit():
                sid = int(p[2])
                if sid not in self._schemas:
                    raise _err(404, 40403, "Schema not found")
                if n == 3:
                    return 200, self._doc(sid), {}
                pairs = [(s, v) for s in self._subjects for v, i, _ in self._live(s, deleted) if i == sid]
                if p[3:] == ["subjects"]:
                    return 200, sorted({s for s, _ in pairs}), {}
                if p[3:] == ["versions"]:
                    return 200, [{"subject": s, "version": v} for s, v in pairs], {}
            if n == 3 and p[:2] == ["schemas", "guids"]:
                for sid, s in self._schemas.items():
                    if s["guid"] == p[2].lower():
                        return 200, self._doc(sid, id=sid), {}
                raise _err(404, 40403, "Schema not found")
            if n >= 2 and p[0] == "associations":
                return 200, [], {}  # confluent-kafka >= 2.13 asks; "none" sends it to its fallback
            if p == ["schemas", "types"]:
                return 200, ["AVRO", "PROTOBUF", "JSON"], {}
            if n in (1, 2) and p[0] == "config":
                level = self._compat.get(p[1] if n == 2 else None)
                if level is None:
                    if (q.get("defaultToGlobal") or ["false"])[0] != "true":
                        raise _err(404, 40408, f"Subject '{p[1]}' does not have subject-level compatibility "
                                               "configured")
                    level = self._compat[None]
                return 200, {"compatibilityLevel": level}, {}
        if method == "PUT" and n in (1, 2) and p[0] == "config":
            level = str((body or {}).get("compatibility", "")).upper()
            if level not in COMPATIBILITY_LEVELS:
                raise _err(422, 42203, "Invalid compatibility level")
            self._compat[p[1] if n == 2 else None] = level
            return 200, {"compatibility": level}, {}
        if method == "DELETE":
            permanent = (q.get("permanent") or ["false"])[0] == "true"
            if n == 2 and p[0] == "config":
                self._compat.pop(p[1], None)
                return 200, {"compatibility": self._compat[None]}, {}
            if n == 2 and p[0] == "subjects":
                return 200, self._delete(p[1], None, permanent), {}
            if n == 4 and p[0] == "subjects" and p[2] == "versions":
                return 200, self._delete(p[1], p[3], permanent), {}
        if method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
                raise _err(422, 42201, "Invalid schema")
            if n == 3 and p[0] == "subjects" and p[2] == "versions":
                sid, version = self._register(p[1], body)
                return 200, {"id": sid, "guid": self._schemas[sid]["guid"], "version": version}, {}
            if n == 2 and p[0] == "subjects":
                return self._look_up(p[1], body, deleted)
            if n == 5 and p[0] == "compatibility" and p[1] == "subjects" and p[3] == "versions":
                if not self._live(p[2]):
                    raise _err(404, 40402, f"Version {p[4]} not found.")  # Karapace's answer (Confluent: 40401)
                _, sid, _ = self._version(p[2], p[4])
                stype, stored, _, _, _ = self._identity(p[2], body, validate=True)
                level = self._compat.get(p[2]) or self._compat[None]
                problem = compatibility_problem(level.removesuffix("_TRANSITIVE"), stype, stored,
                                                [self._schemas[sid]["schema"]])
                doc: dict = {"is_compatible": problem is None}
                if problem and (q.get("verbose") or ["false"])[0] == "true":
                    doc["messages"] = [problem]
                return 200, doc, {}
        raise _err(404, 404, "HTTP 404 Not Found")

    def _look_up(self, subject: str, body: dict, deleted: bool) -> tuple[int, object, dict]:
        """``POST /subjects/{subject}``: the version that registered this schema, compared as the
        registry stores it (parsed and reprinted, not as text); soft-deleted ones with ``deleted``.
        ``normalize`` changes nothing here: the stored form is already the stand-in's normalization."""
        if not self._live(subject, deleted):
            raise _err(404, 40401, f"Subject '{subject}' not found.")
        stype, stored, refs, _, _ = self._identity(subject, body, validate=False, looking_up=True)
        for version, sid, _ in reversed(self._live(subject, deleted)):
            s = self._schemas[sid]
            contract = all(body.get(k) is None or _norm(body.get(k)) == _norm(s.get(k))
                           for k in ("metadata", "ruleSet"))
            if s["schemaType"] == stype and identity(stype, s["schema"]) == identity(stype, stored) \
                    and s["references"] == refs and contract:
                return 200, self._doc(sid, subject=subject, version=version, id=sid), {}
        raise _err(404, 40403, "Schema not found")

    def _apicurio(self, api: str, kind: str, ident: int, refs: bool) -> tuple[int, object, dict]:
        if api not in self.apicurio_api_versions:
            raise _Reply(404, b"", {"Content-Type": "text/plain"})
        with self._lock:
            if kind == "globalIds":
                if ident not in self._globals:
                    raise _err(404, 40403, f"No artifact with global ID '{ident}' was found.")
                sid = self._globals[ident][2]
            else:
                if ident not in self._schemas:
                    raise _err(404, 40403, f"No content with ID '{ident}' was found.")
                sid = ident
            s = self._schemas[sid]
        if refs:
            return 200, [{"groupId": "default", "artifactId": r["subject"], "version": str(r["version"]),
                          "name": r["name"]} for r in s["references"]], {}
        ctype = "application/x-protobuf" if s["schemaType"] == "PROTOBUF" else "application/json"
        return 200, s["schema"], {"Content-Type": ctype, "X-Registry-ArtifactType": s["schemaType"]}


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Clients that time out or drop the connection are expected in fault tests.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    registry: RegistryServer
    protocol_version = "HTTP/1.1"
    server_version = "RegistryServer/1"

    def setup(self):
        super().setup()
        # Headers and body go out in two writes; without NODELAY, Nagle + delayed ACK add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):
        pass

    def _handle(self, method: str) -> None:
        split = urllib.parse.urlsplit(self.path)
        path, query = split.path, urllib.parse.parse_qs(split.query)
        body = None
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY:
                raise _err(413, 413, "request too large")
            raw = self.rfile.read(length) if length else b""
            self.registry._pre(method, path, self.headers)
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError:
                    raise _err(422, 42201, "body is not JSON") from None
            status, payload, headers = self.registry._route(method, path, body, query)
        except _Reply as r:
            status, payload, headers = r.status, r.body, r.headers
        except Exception as e:  # noqa: BLE001 - a test server answers 500 rather than dying
            status, payload, headers = 500, {"error_code": 50001, "message": type(e).__name__}, {}
        if isinstance(payload, bytes):
            data = payload
        elif isinstance(payload, str) and "Content-Type" in headers:
            data = payload.encode()
        else:
            data = json.dumps(payload).encode()
            headers = {"Content-Type": "application/vnd.schemaregistry.v1+json", **headers}
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")
