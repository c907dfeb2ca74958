"""What read and write rules share: settings, which rules run, failures, the dead-letter queue, and
the key ring and confluent-kafka serdes of a scope.

Which rules of a schema run, as confluent-kafka's ``BaseSerde`` decides: those of the phase
(ENCODING, DOMAIN, MIGRATION) whose ``mode`` covers the direction, not ``disabled``, with the
rule set's ``enableAt`` unset, ``ALL`` or ``CLIENT``; reads run a phase's rules in reverse order;
of two field transforms with the same type, mode and tags only the first (writing) or the last
(reading) runs. A record replayed from a DLQ (header ``__rule.name``) skips the rule named there.

A failed rule does its ``onFailure`` action (a two-way rule's ``"ERROR,NONE"`` is ERROR when
writing, NONE when reading; none given means ERROR): ``NONE`` lets the record through as it is,
``ERROR`` makes it a row error (the source's ``mode`` decides the rest), ``DLQ`` sends it to the
dead-letter topic (``dlq.topic`` of the rule, or the ``rules.dlq.topic`` option) with
confluent-kafka's ``__rule.*`` headers and then fails it like ERROR.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from registry import RegistryConfig, Rule, Schema, Secret, subject_name

from connector.errors import ConfigError
from connector.formats import payload_format, refs_of
from connector.schema.rules._cel import NotVectorizable, compile_cel, split_guard
from connector.schema.rules._keys import KeyRing, key_ring
from connector.schema.rules._kms import KmsSettings

__all__ = ["ContractSettings", "active_rules", "failure_action", "RowFailures", "replayed", "VECTORIZED_TYPES",
           "DLQ_HEADERS", "RuleScope", "record_form"]

log = logging.getLogger("asyncapi_kafka")

#: Rule types with a vectorized implementation (the rest run per record through confluent-kafka).
VECTORIZED_TYPES = frozenset({"ENCRYPT", "ENCRYPT_PAYLOAD", "CEL", "CEL_FIELD"})
DLQ_HEADERS = ("__rule.name", "__rule.mode", "__rule.subject", "__rule.topic", "__rule.exception")


@dataclasses.dataclass(frozen=True)
class ContractSettings:
    """The job's ``rules.*`` options.

    Attributes
    ----------
    enabled : bool
        ``rules.enabled`` (default true): apply the schemas' rules. False reads and writes the
        bytes as they are (ciphertext stays ciphertext), and says so in the log.
    kms : KmsSettings
        ``rules.<name>`` KMS credentials and settings (confluent-kafka's rule config names).
    dlq_topic : str or None
        ``rules.dlq.topic``: the dead-letter topic when a rule's ``onFailure`` is DLQ (else the
        rule's ``dlq.topic`` parameter).
    dlq_conf : tuple
        librdkafka settings of the DLQ producer (the job's own cluster), secrets as
        :class:`registry.Secret`.
    """

    enabled: bool = True
    kms: KmsSettings = KmsSettings()
    dlq_topic: str | None = None
    dlq_conf: tuple[tuple[str, str | Secret], ...] = ()

    def with_producer(self, conf: dict[str, str]) -> ContractSettings:
        """These settings with the DLQ producer's librdkafka settings (every value kept as a
        :class:`registry.Secret`: they may hold SASL credentials)."""
        return dataclasses.replace(self, dlq_conf=tuple(sorted((k, Secret(str(v))) for k, v in conf.items())))

    def producer_conf(self) -> dict[str, str]:
        return {k: v.get() if isinstance(v, Secret) else v for k, v in self.dlq_conf}


def _enabled(schema: Schema) -> bool:
    rs = schema.rule_set
    env = (rs.enable_at if rs is not None else None) or "ALL"
    return env in ("ALL", "CLIENT")


def active_rules(schema: Schema | None, phase: str, direction: str) -> list[Rule]:
    """The rules of ``schema`` that run in ``phase`` for ``direction`` (READ/WRITE/UPGRADE/DOWNGRADE),
    in the order they run."""
    if schema is None or not schema.rule_set or not _enabled(schema):
        return []
    rules = [r for r in schema.rule_set.rules(phase) if not r.disabled and r.applies_to(direction)]
    reading = direction in ("READ", "DOWNGRADE")
    ordered = list(reversed(rules)) if reading else rules
    # of field transforms sharing type, mode and tags, only the first (write) / last (read) runs
    out: list[Rule] = []
    for i, r in enumerate(ordered):
        if r.tags and r.kind == "TRANSFORM" and any(
                o.tags == r.tags and o.kind == r.kind and o.mode == r.mode and o.type == r.type
                for o in ordered[:i]):
            continue
        out.append(r)
    return out


def failure_action(rule: Rule, direction: str) -> str:
    """NONE, ERROR or DLQ for a failure of ``rule`` in ``direction``."""
    action = (rule.action(direction, failure=True) or "ERROR").upper()
    if action not in ("NONE", "ERROR", "DLQ"):
        raise ConfigError(f"rule {rule.name!r}: onFailure action {action!r} is not supported (NONE, ERROR, DLQ)")
    return action


def dlq_topic_of(rule: Rule, settings: ContractSettings) -> str | None:
    return settings.dlq_topic or rule.param("dlq.topic")


def replayed(headers: pa.Array | None, n: int, rule_name: str) -> np.ndarray | None:
    """Rows whose last ``__rule.name`` header names ``rule_name`` (a DLQ replay): None when none."""
    if headers is None or not rule_name:
        return None
    if isinstance(headers, pa.ChunkedArray):
        headers = headers.combine_chunks()
    if headers.null_count == len(headers) or len(pc.list_flatten(headers)) == 0:
        return None
    flat = pc.list_flatten(headers)
    parents = pc.list_parent_indices(headers).to_numpy(zero_copy_only=False)
    hit = pc.fill_null(pc.equal(flat.field("key"), "__rule.name"), False).to_numpy(zero_copy_only=False)
    if not hit.any():
        return None
    out = np.zeros(n, bool)
    values = flat.field("value")
    last: dict[int, bytes | None] = {}
    for i in np.flatnonzero(hit).tolist():  # rare: only rows replayed from a DLQ carry it
        last[int(parents[i])] = values[i].as_py()
    for row, v in last.items():
        out[row] = v is not None and v == rule_name.encode("utf-8")
    return out if out.any() else None


class RowFailures:
    """Row errors of one batch, and the rows a DLQ action asked to send."""

    def __init__(self, n: int, direction: str, settings: ContractSettings):
        self.errors = np.full(n, None, object)
        self.dlq: dict[int, tuple[Rule, str, str]] = {}   # row -> (rule, subject, error text)
        self.direction = direction
        self.settings = settings

    def fail(self, rows: np.ndarray, rule: Rule, texts: Any, subject: Any = "") -> np.ndarray:
        """Apply ``rule``'s onFailure to ``rows`` (``texts`` and ``subject``: one, or one per row);
        returns the rows that now fail (empty for NONE)."""
        action = failure_action(rule, self.direction)
        if action == "NONE" or not len(rows):
            return np.zeros(0, np.int64)
        kind = f"{rule.type} {rule.kind}"
        for j, row in enumerate(rows.tolist()):
            text = texts if isinstance(texts, str) else texts[j]
            if self.errors[row] is not None:
                continue
            msg = f"data contract rule {rule.name!r} ({kind}) failed: {text}"
            if action == "DLQ":
                topic = dlq_topic_of(rule, self.settings)
                if topic is None:
                    msg += "; onFailure is DLQ but no dead-letter topic is configured ('rules.dlq.topic' or the " \
                           "rule's dlq.topic parameter)"
                else:
                    self.dlq[row] = (rule, subject if isinstance(subject, str) else subject[j], text)
                    msg += f"; sent to the dead-letter topic {topic!r}"
            self.errors[row] = msg
        return rows

    def error(self, rows: np.ndarray, text: str) -> None:
        """A row error that is no rule's onFailure (no subject; a per-record rule that raised)."""
        for row in rows.tolist():
            if self.errors[row] is None:
                self.errors[row] = text

    @property
    def any(self) -> bool:
        return bool(np.not_equal(self.errors, np.array(None, object)).any())

    def mask(self) -> np.ndarray:
        return np.not_equal(self.errors, np.array(None, object)).astype(bool)


def send_to_dlq(failures: RowFailures, *, values: list, keys: list | None, topics: Any, headers: list | None,
                mode: str) -> None:
    """Produce the DLQ rows of ``failures`` (raw key/value bytes and ``__rule.*`` headers, as
    confluent-kafka's ``DlqAction``); returns once every record is acknowledged."""
    if not failures.dlq:
        return
    from connector.kafka import producer_for

    conf = failures.settings.producer_conf()
    if not conf.get("bootstrap.servers"):
        raise ConfigError("a rule sends records to a dead-letter topic, but there is no Kafka cluster to send "
                          "them to: set 'kafka.bootstrap.servers' (column functions: options={'kafka.bootstrap."
                          "servers': ...})")
    by_topic: dict[str, list[tuple]] = {}
    for row, (rule, subject, text) in sorted(failures.dlq.items()):
        topic = dlq_topic_of(rule, failures.settings)
        src_topic = topics if isinstance(topics, str) or topics is None else topics[row]
        hdrs = list(headers[row] or []) if headers is not None else []
        hdrs += [("__rule.name", rule.name.encode()), ("__rule.mode", mode.encode()),
                 ("__rule.subject", (subject or "").encode()), ("__rule.topic", (src_topic or "").encode()),
                 ("__rule.exception", text.encode("utf-8"))]
        by_topic.setdefault(str(topic), []).append((keys[row] if keys is not None else None, values[row], hdrs))
    bp = producer_for(conf)
    try:
        for topic, recs in by_topic.items():
            bp.produce(topic, [r[1] for r in recs], [r[0] for r in recs], None, [r[2] for r in recs])
        bp.finish()
    except BaseException:
        bp.abandon()
        raise
    log.warning("data contracts: sent %d record(s) to dead-letter topic(s) %s", len(failures.dlq),
                ", ".join(sorted(by_topic)))


def true_rows(result: Any, n: int | None = None) -> np.ndarray:
    """Rows where a CEL result is exactly true (false and null, a CEL error, fail)."""
    if isinstance(result, pa.Array):
        if not pa.types.is_boolean(result.type):
            raise NotVectorizable("a condition that is not a boolean")
        return pc.fill_null(result, False).to_numpy(zero_copy_only=False).astype(bool)
    if isinstance(result, bool) and n is not None:
        return np.full(n, result)
    raise NotVectorizable("a condition that is not a boolean")


def put_rows(col: pa.Array, idx: np.ndarray, sub: pa.Array) -> pa.Array:
    """``col`` with positions ``idx`` replaced by ``sub``."""
    if len(idx) == len(col):
        return sub if sub.type.equals(col.type) else sub.cast(col.type)
    perm = np.arange(len(col), dtype=np.int64)
    perm[idx] = len(col) + np.arange(len(idx))
    return pa.concat_arrays([col, sub.cast(col.type)]).take(pa.array(perm))


def per_record_reason(encoding: list[Rule], domain: list[Rule]) -> str | None:
    """Why a writer schema's rules must run record by record (through confluent-kafka's
    executors), or None when every rule is vectorized: payload encryption, field encryption, and
    CEL conditions/field rules inside the vectorized subset."""
    why = None
    for rule in encoding:
        if rule.type != "ENCRYPT_PAYLOAD":
            why = why or f"{rule.type} encoding rule {rule.name!r}"
    for rule in domain:
        if rule.type == "ENCRYPT":
            continue
        if (rule.type == "CEL" and rule.kind == "CONDITION") or rule.type == "CEL_FIELD":
            try:
                for part in split_guard(rule.expr or ""):
                    if part is not None:
                        compile_cel(part)
                continue
            except NotVectorizable as e:
                why = why or f"{rule.type} rule {rule.name!r}: {e}"
                continue
        why = why or f"{rule.type} {rule.kind} rule {rule.name!r}"
    return why


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuleScope:
    """What the rules of one column (a read's or a write's) know of it: the registry holding its
    schemas and keys, the job's settings, the payload format, and how its records' subjects are
    named (see :class:`~._read.ReadRules` for the fields). Picklable."""

    registry: RegistryConfig
    settings: ContractSettings
    fmt: str
    is_key: bool = False
    subject: str | None = None
    strategy: str = "TopicNameStrategy"
    message: str | None = None

    #: What to pass when the record's topic is unknown and the subject depends on it.
    no_topic_hint: ClassVar[str] = "pass subject= or topic="

    def subject_of(self, topic: str | None, schema: Schema) -> str:
        """The subject of a record of ``topic`` written with ``schema``: the given subject, or
        the subject name strategy's (Confluent's names)."""
        if self.subject:
            return self.subject
        if topic is None:
            raise ConfigError("this value's schema has data-contract rules whose keys belong to a subject, and the "
                              f"record's topic is unknown: {self.no_topic_hint}")
        record = None if self.strategy in ("TopicNameStrategy", "SimpleTopicNameStrategy") else \
            payload_format(self.fmt).record_name(schema.text, refs_of(schema), self.message)
        return subject_name(self.strategy, topic, record, self.is_key)

    @property
    def ring(self) -> KeyRing:
        """The process's key ring (KEKs and DEKs) of this scope's registry and KMS settings."""
        return key_ring(self.registry, self.settings.kms)

    def record_serde(self, reader_conf: dict[str, Any]):
        """confluent-kafka's serdes for this scope (the per-record path; built once per process
        by the caller): its registry, KMS settings and key/value side."""
        from connector.schema.rules._confluent import RecordSerde

        return RecordSerde(self.registry, self.settings.kms.as_dict(), self.is_key, reader_conf)


def record_form(fmt: str, schema: Schema, message: str | None):
    """``schema``'s records as objects (the format's :class:`connector.formats.core.RecordForm`):
    what the per-record path hands confluent-kafka's serdes."""
    return payload_format(fmt).record_form(schema.text, refs_of(schema), message)
