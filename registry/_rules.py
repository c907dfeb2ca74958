"""Data contracts as a Confluent registry stores them: ``metadata`` and ``ruleSet`` of a schema.

=================  ==========================================================================
REST field         here
=================  ==========================================================================
``metadata``       :class:`Metadata`: ``tags`` (field path pattern → tags, e.g.
                   ``{"**.ssn": ["PII"]}``), ``properties`` (``major_version`` ...),
                   ``sensitive`` (property names whose values are secrets)
``ruleSet``        :class:`RuleSet`: ``migrationRules``, ``domainRules``, ``encodingRules``,
                   ``enableAt``
rule               :class:`Rule`: ``name``, ``doc``, ``kind`` (CONDITION, TRANSFORM), ``mode``
                   (UPGRADE, DOWNGRADE, UPDOWN, READ, WRITE, WRITEREAD), ``type`` (CEL,
                   CEL_FIELD, JSONATA, ENCRYPT, ENCRYPT_PAYLOAD, ...), ``tags``, ``params``,
                   ``expr``, ``onSuccess``, ``onFailure`` (NONE, ERROR, DLQ, or
                   ``"<write>,<read>"``), ``disabled``
=================  ==========================================================================

Every type is frozen, hashable and picklable (tuples, not dicts): schemas carrying them travel
from the driver to executors and key per-process caches. What the rules *do* is
``connector.schema.rules``' business; this module only reads and writes their JSON.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from registry.errors import RegistryProtocolError

__all__ = ["Rule", "RuleSet", "Metadata", "rule_set_of", "metadata_of", "KINDS", "MODES", "PHASES"]

KINDS = ("CONDITION", "TRANSFORM")
MODES = ("UPGRADE", "DOWNGRADE", "UPDOWN", "READ", "WRITE", "WRITEREAD")
PHASES = ("MIGRATION", "DOMAIN", "ENCODING")


def _pairs(doc: Any, what: str) -> tuple[tuple[str, str], ...]:
    if doc is None:
        return ()
    if not isinstance(doc, dict):
        raise RegistryProtocolError(f"{what} must be an object, got {type(doc).__name__}")
    return tuple(sorted((str(k), str(v)) for k, v in doc.items() if v is not None))


@dataclasses.dataclass(frozen=True)
class Rule:
    """One data-contract rule (Confluent's ``Rule``).

    Examples
    --------
    >>> r = Rule.from_json({"name": "pii", "kind": "TRANSFORM", "mode": "WRITEREAD", "type": "ENCRYPT",
    ...                     "tags": ["PII"], "params": {"encrypt.kek.name": "k1"}, "onFailure": "ERROR,NONE"})
    >>> r.param("encrypt.kek.name"), r.action("READ", failure=True), r.action("WRITE", failure=True)
    ('k1', 'NONE', 'ERROR')
    >>> Rule.from_json(r.to_json()) == r
    True
    """

    name: str
    kind: str
    mode: str
    type: str
    tags: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    expr: str | None = None
    on_success: str | None = None
    on_failure: str | None = None
    disabled: bool = False
    doc: str | None = None

    def param(self, name: str) -> str | None:
        for k, v in self.params:
            if k == name:
                return v
        return None

    def action(self, direction: str, *, failure: bool) -> str | None:
        """The action name for one direction (``READ``/``WRITE``/``UPGRADE``/``DOWNGRADE``):
        ``"ERROR,NONE"`` on a two-way rule means ERROR when writing (or upgrading), NONE when
        reading (or downgrading); None when the rule names none."""
        text = self.on_failure if failure else self.on_success
        if not text:
            return None
        if self.mode in ("WRITEREAD", "UPDOWN") and "," in text:
            first, second = (p.strip() for p in text.split(",", 1))
            return first if direction in ("WRITE", "UPGRADE") else second
        return text.strip()

    def applies_to(self, direction: str) -> bool:
        """Whether the rule runs in ``direction`` (READ, WRITE, UPGRADE or DOWNGRADE)."""
        if self.mode == "WRITEREAD":
            return direction in ("READ", "WRITE")
        if self.mode == "UPDOWN":
            return direction in ("UPGRADE", "DOWNGRADE")
        return self.mode == direction

    @classmethod
    def from_json(cls, doc: Any) -> Rule:
        if not isinstance(doc, dict):
            raise RegistryProtocolError(f"a ruleSet rule must be an object, got {type(doc).__name__}")
        try:
            tags = doc.get("tags") or ()
            return cls(name=str(doc.get("name") or ""), kind=str(doc.get("kind") or "TRANSFORM").upper(),
                       mode=str(doc.get("mode") or "WRITEREAD").upper(), type=str(doc.get("type") or "").upper(),
                       tags=tuple(str(t) for t in tags), params=_pairs(doc.get("params"), "rule params"),
                       expr=doc.get("expr"), on_success=doc.get("onSuccess"), on_failure=doc.get("onFailure"),
                       disabled=bool(doc.get("disabled") or False), doc=doc.get("doc"))
        except (TypeError, ValueError) as e:
            raise RegistryProtocolError(f"malformed ruleSet rule ({type(e).__name__}: {e})") from e

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "mode": self.mode, "type": self.type}
        if self.doc is not None:
            out["doc"] = self.doc
        if self.tags:
            out["tags"] = list(self.tags)
        if self.params:
            out["params"] = dict(self.params)
        for key, value in (("expr", self.expr), ("onSuccess", self.on_success), ("onFailure", self.on_failure)):
            if value is not None:
                out[key] = value
        if self.disabled:
            out["disabled"] = True
        return out


@dataclasses.dataclass(frozen=True)
class RuleSet:
    """A schema's rules by phase (Confluent's ``RuleSet``)."""

    migration_rules: tuple[Rule, ...] = ()
    domain_rules: tuple[Rule, ...] = ()
    encoding_rules: tuple[Rule, ...] = ()
    enable_at: str | None = None

    def __bool__(self) -> bool:
        return bool(self.migration_rules or self.domain_rules or self.encoding_rules)

    def rules(self, phase: str) -> tuple[Rule, ...]:
        return {"MIGRATION": self.migration_rules, "DOMAIN": self.domain_rules,
                "ENCODING": self.encoding_rules}[phase]

    def all_rules(self) -> tuple[Rule, ...]:
        return self.migration_rules + self.domain_rules + self.encoding_rules

    @classmethod
    def from_json(cls, doc: Any) -> RuleSet:
        if not isinstance(doc, dict):
            raise RegistryProtocolError(f"ruleSet must be an object, got {type(doc).__name__}")

        def rules(key: str) -> tuple[Rule, ...]:
            items = doc.get(key) or ()
            if not isinstance(items, (list, tuple)):
                raise RegistryProtocolError(f"ruleSet.{key} must be a list")
            return tuple(Rule.from_json(r) for r in items)

        return cls(rules("migrationRules"), rules("domainRules"), rules("encodingRules"), doc.get("enableAt"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, rules in (("migrationRules", self.migration_rules), ("domainRules", self.domain_rules),
                           ("encodingRules", self.encoding_rules)):
            if rules:
                out[key] = [r.to_json() for r in rules]
        if self.enable_at is not None:
            out["enableAt"] = self.enable_at
        return out


@dataclasses.dataclass(frozen=True)
class Metadata:
    """A schema's metadata (Confluent's ``Metadata``).

    Examples
    --------
    >>> m = Metadata.from_json({"tags": {"**.ssn": ["PII"]}, "properties": {"major_version": "2"}})
    >>> m.property("major_version"), dict(m.tags)
    ('2', {'**.ssn': ('PII',)})
    """

    tags: tuple[tuple[str, tuple[str, ...]], ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    sensitive: tuple[str, ...] = ()

    def property(self, name: str) -> str | None:
        for k, v in self.properties:
            if k == name:
                return v
        return None

    @classmethod
    def from_json(cls, doc: Any) -> Metadata:
        if not isinstance(doc, dict):
            raise RegistryProtocolError(f"metadata must be an object, got {type(doc).__name__}")
        tags = doc.get("tags") or {}
        if not isinstance(tags, dict):
            raise RegistryProtocolError("metadata.tags must be an object")
        return cls(tags=tuple(sorted((str(k), tuple(str(t) for t in (v or ()))) for k, v in tags.items())),
                   properties=_pairs(doc.get("properties"), "metadata.properties"),
                   sensitive=tuple(str(s) for s in doc.get("sensitive") or ()))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tags:
            out["tags"] = {k: list(v) for k, v in self.tags}
        if self.properties:
            out["properties"] = dict(self.properties)
        if self.sensitive:
            out["sensitive"] = list(self.sensitive)
        return out


def rule_set_of(doc: Any) -> RuleSet | None:
    """The ``ruleSet`` of a REST schema document (None when absent or empty)."""
    raw = doc.get("ruleSet") if isinstance(doc, dict) else None
    if raw is None:
        return None
    rs = RuleSet.from_json(raw)
    return rs if rs or rs.enable_at else None


def metadata_of(doc: Any) -> Metadata | None:
    """The ``metadata`` of a REST schema document (None when absent or empty)."""
    raw = doc.get("metadata") if isinstance(doc, dict) else None
    if raw is None:
        return None
    md = Metadata.from_json(raw)
    return md if md.tags or md.properties or md.sensitive else None
