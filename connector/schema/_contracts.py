"""The data-contract part of the schema layer: which rules a read or a write applies.

========================  =======================================================================
read's reader             rules applied (``connector.schema.rules``)
========================  =======================================================================
inline, the document's    each record's writer schema's own rules (confluent-kafka's default: the
payload                   reader is the writer)
a registry schema         its domain rules, and migrations from each writer's version to its
(pinned, latest, with     version (confluent-kafka's ``use.schema.id``, ``use.latest.version``,
metadata)                 ``use.latest.with.metadata``); writers' encoding rules
========================  =======================================================================

A write applies the rules of the registered schema whose id frames the records, whatever the
registration mode. Rules run only on Confluent-compatible registries (the DEK registry is
Confluent's API) and while ``rules.enabled`` is true; turning them off is logged.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import logging
from typing import TYPE_CHECKING, Any

from registry import Schema, Vendor, client_for
from wireformat import Framing

from connector.errors import ConfigError
from connector.schema.rules import ContractSettings, ReadRules, WriteRules, active_rules

if TYPE_CHECKING:
    from registry import RegistryConfig

__all__ = ["read_rules", "write_rules", "check_runnable", "log_disabled"]

log = logging.getLogger("asyncapi_kafka")

_PER_RECORD_MODULES = ("celpy", "jsonata", "confluent_kafka.schema_registry.rules")


def _applies(settings: ContractSettings, registry: RegistryConfig | None, framing: Framing) -> bool:
    return settings.enabled and registry is not None and registry.vendor is Vendor.CONFLUENT \
        and framing is not Framing.NONE


_logged: set[str] = set()


def log_disabled(settings: ContractSettings, what: str) -> None:
    """Say once per process and job kind that rules are off (``rules.enabled=false``)."""
    if not settings.enabled and what not in _logged:
        _logged.add(what)
        log.warning("rules.enabled=false: %s applies no data-contract rules of the registry's schemas "
                    "(encrypted fields stay ciphertext, conditions and migrations do not run)", what)


def check_runnable(schema: Schema | None, directions: tuple[str, ...] = ("READ", "WRITE")) -> None:
    """Refuse at ``load()`` the rules this machine cannot run: say which package is missing."""
    if schema is None or not schema.rule_set:
        return
    rules = [r for phase in ("ENCODING", "DOMAIN") for d in directions for r in active_rules(schema, phase, d)]
    if any(r.type in ("ENCRYPT", "ENCRYPT_PAYLOAD") for r in rules) and importlib.util.find_spec("cryptography") is None:
        raise ConfigError(f"schema {schema.id} has encryption rules, which need the 'cryptography' package: pip "
                          "install 'asyncapi-kafka[rules]'")
    per_record = [r for r in rules if r.type not in ("ENCRYPT", "ENCRYPT_PAYLOAD") and not _vectorizable(r)]
    per_record += list(schema.rule_set.migration_rules)
    if per_record:
        missing = [m for m in _PER_RECORD_MODULES if not _importable(m)]
        if missing:
            raise ConfigError(f"schema {schema.id} has rules that run per record with confluent-kafka's executors "
                              f"({', '.join(sorted({r.name or r.type for r in per_record}))}); missing: "
                              f"{', '.join(missing)} (pip install 'asyncapi-kafka[rules]')")


def _vectorizable(rule) -> bool:
    from connector.schema.rules import NotVectorizable, compile_cel, split_guard

    if not ((rule.type == "CEL" and rule.kind == "CONDITION") or rule.type == "CEL_FIELD"):
        return False
    try:
        for part in split_guard(rule.expr or ""):
            if part is not None:
                compile_cel(part)
    except NotVectorizable:
        return False
    return True


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _check_dlq(schema: Schema | None, settings: ContractSettings, direction: str) -> None:
    """A DLQ action needs a topic and a cluster: refuse at ``load()`` when the rule is known then."""
    if schema is None or not schema.rule_set:
        return
    for phase in ("ENCODING", "DOMAIN", "MIGRATION"):
        for r in schema.rule_set.rules(phase):
            if (r.action(direction, failure=True) or "").upper() != "DLQ":
                continue
            if not (settings.dlq_topic or r.param("dlq.topic")):
                raise ConfigError(f"rule {r.name!r} of schema {schema.id} sends failing records to a dead-letter "
                                  "queue (onFailure DLQ) but names no topic: set the option 'rules.dlq.topic' (or "
                                  "the rule's dlq.topic parameter)")
            if not settings.producer_conf().get("bootstrap.servers"):
                raise ConfigError(f"rule {r.name!r} of schema {schema.id} sends failing records to a dead-letter "
                                  "topic, and this job has no Kafka cluster to send them to: set "
                                  "'kafka.bootstrap.servers' (column functions: options={'kafka.bootstrap.servers': "
                                  "...})")


def _with_version(schema: Schema, subject: str | None, registry: RegistryConfig) -> Schema:
    """The reader with its subject version (migrations compare versions)."""
    if schema.version is not None or not subject:
        return schema
    try:
        version = client_for(registry).version_of(subject, schema)
    except Exception as e:  # noqa: BLE001 - no version: no migrations to it, the rules still apply
        log.info("reader schema %s: no version under subject %s (%s); migrations are not applied", schema.id,
                 subject, type(e).__name__)
        return schema
    return dataclasses.replace(schema, subject=subject, version=version)


def read_rules(settings: ContractSettings, *, registry: RegistryConfig | None, framing: Framing, fmt: str,
               reader: Any, reader_conf: dict[str, Any] | None, subject: str | None, strategy: str,
               message: str | None, is_key: bool = False) -> ReadRules | None:
    """The rules of a read (None when rules cannot apply: no Confluent registry, framing none, off).

    ``reader`` is the reader schema when it is a registry schema chosen as ``reader_conf`` says
    (confluent-kafka's deserializer settings); otherwise writers' own rules apply.
    """
    if not _applies(settings, registry, framing):
        return None
    assert registry is not None
    registry_reader = reader if reader_conf and isinstance(reader, Schema) else None
    if registry_reader is not None:
        registry_reader = _with_version(registry_reader, subject or registry_reader.subject, registry)
        check_runnable(registry_reader, ("READ",))
        _check_dlq(registry_reader, settings, "READ")
    return ReadRules(registry=registry, settings=settings, fmt=fmt, is_key=is_key, subject=subject,
                     strategy=strategy, reader=registry_reader,
                     reader_conf=tuple(sorted((reader_conf or {}).items(), key=lambda kv: kv[0]))
                     if registry_reader is not None else (), message=message)


def write_rules(settings: ContractSettings, *, registry: RegistryConfig | None, framing: Framing, fmt: str,
                target: Any, subject: str | None, strategy: str, message: str | None,
                is_key: bool = False) -> WriteRules | None:
    """The rules of a write: those of ``target``, the registered schema the records are framed with."""
    if not _applies(settings, registry, framing) or not isinstance(target, Schema) or not target.rule_set:
        return None
    assert registry is not None
    check_runnable(target, ("WRITE",))
    _check_dlq(target, settings, "WRITE")
    kinds = sorted({r.type for r in target.rule_set.all_rules()})
    log.info("data contracts: writes framed with schema %s apply its rules (%s)", target.id, ", ".join(kinds))
    return WriteRules(registry=registry, settings=settings, fmt=fmt, target=target, is_key=is_key, subject=subject,
                      strategy=strategy, message=message)
