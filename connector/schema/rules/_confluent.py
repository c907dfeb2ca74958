"""The per-record path: confluent-kafka's own serializers and deserializers, one record at a time.

Rules the vectorized path does not cover (JSONata migrations and transforms, CEL outside the
Arrow subset, rule types this package does not know) run exactly as confluent-kafka runs them:
reading, the record's bytes go through its deserializer (with ``use.latest.version``,
``use.latest.with.metadata`` or ``use.schema.id`` as the read chose its reader), and the object
that comes out is written again with the schema it now has, so the vectorized decoder reads it
like any record; writing, the record our encoder made is read back into an object and handed to
its serializer with ``use.schema.id``. Needs ``confluent-kafka[rules]``. Which serde class a
format uses, and its records as objects, are the format's (``PayloadFormat.record_form``).

A rule whose ``onFailure`` is DLQ is captured here (the record is not sent by confluent-kafka's
action): :mod:`connector.schema.rules._engine` sends it with the job's own producer.
"""
from __future__ import annotations

import threading
from typing import Any

from registry import RegistryConfig, Schema

from connector.errors import ConfigError

__all__ = ["RecordSerde", "sr_conf", "Captured"]


def sr_conf(config: RegistryConfig) -> dict[str, Any]:
    """confluent-kafka's ``SchemaRegistryClient`` configuration for ``config``."""
    conf: dict[str, Any] = {"url": ",".join(config.urls)}
    if config.basic_auth is not None:
        conf["basic.auth.credentials.source"] = "USER_INFO"
        conf["basic.auth.user.info"] = config.basic_auth.get()
    if config.bearer_token is not None:
        raise ConfigError("rules that run per record (JSONata, CEL outside the vectorized subset) go through "
                          "confluent-kafka's registry client, which this connector cannot give a static bearer "
                          "token; use basic auth or mTLS for such rules")
    for ours, theirs in (("ca_location", "ssl.ca.location"), ("cert_location", "ssl.certificate.location"),
                         ("key_location", "ssl.key.location")):
        if getattr(config, ours):
            conf[theirs] = getattr(config, ours)
    if config.key_password is not None:
        conf["ssl.key.password"] = config.key_password.get()
    return conf


class Captured:
    """What the DLQ action saw for the current record (per thread)."""

    def __init__(self):
        self.rule: Any = None
        self.error: BaseException | None = None


_local = threading.local()


def _captured() -> Captured:
    c = getattr(_local, "captured", None)
    if c is None:
        c = _local.captured = Captured()
    return c


_MODULES = {
    "SchemaRegistryClient": "confluent_kafka.schema_registry",
    "Schema": "confluent_kafka.schema_registry",
    "RuleRegistry": "confluent_kafka.schema_registry.rule_registry",
    "CelExecutor": "confluent_kafka.schema_registry.rules.cel.cel_executor",
    "CelFieldExecutor": "confluent_kafka.schema_registry.rules.cel.cel_field_executor",
    "EncryptionExecutor": "confluent_kafka.schema_registry.rules.encryption.encrypt_executor",
    "FieldEncryptionExecutor": "confluent_kafka.schema_registry.rules.encryption.encrypt_executor",
    "LocalKmsDriver": "confluent_kafka.schema_registry.rules.encryption.localkms.local_driver",
    "JsonataExecutor": "confluent_kafka.schema_registry.rules.jsonata.jsonata_executor",
    "RuleAction": "confluent_kafka.schema_registry.serde",
    "MessageField": "confluent_kafka.serialization",
    "SerializationContext": "confluent_kafka.serialization",
    "SerializationError": "confluent_kafka.serialization",
}


def _modules() -> dict[str, Any]:
    import importlib

    out = {}
    try:
        for name, module in _MODULES.items():
            out[name] = getattr(importlib.import_module(module), name)
    except ImportError as e:
        raise ConfigError("this schema's rules run per record with confluent-kafka's executors (JSONata, CEL "
                          "beyond the vectorized subset): pip install 'asyncapi-kafka[rules]' "
                          f"(confluent-kafka[rules]); {e}") from e
    return out


_driver_lock = threading.Lock()
_drivers_registered = False


class RecordSerde:
    """confluent-kafka serdes for one registry, KMS settings and key/value side (per process);
    each format's serde comes from its :class:`connector.formats.core.RecordForm`."""

    def __init__(self, registry: RegistryConfig, kms_conf: dict[str, str], is_key: bool,
                 reader_conf: dict[str, Any]):
        global _drivers_registered
        m = _modules()
        self._m = m
        with _driver_lock:
            if not _drivers_registered:
                m["LocalKmsDriver"].register()
                _drivers_registered = True
        self.is_key = is_key
        self._client = m["SchemaRegistryClient"](sr_conf(registry))
        self._kms_conf = dict(kms_conf)
        self._reader_conf = dict(reader_conf)
        self._lock = threading.Lock()
        self._subject = ""
        self._deser: dict[Any, Any] = {}
        self._ser: dict[Any, Any] = {}
        outer = self

        action_base: Any = m["RuleAction"]

        class _Dlq(action_base):
            def type(self):
                return "DLQ"

            def run(self, ctx, message, ex):
                c = _captured()
                c.rule, c.error = ctx.rule, ex
                raise outer._m["SerializationError"](f"Rule failed: {ctx.rule.name}") from ex

        rr = m["RuleRegistry"]()
        for cls in ("CelExecutor", "CelFieldExecutor", "JsonataExecutor", "FieldEncryptionExecutor",
                    "EncryptionExecutor"):
            rr.register_executor(m[cls]())
        rr.register_action(_Dlq())
        self._rules = rr

    def _strategy(self, ctx, record_name, *args):
        return self._subject

    def _ctx(self, topic: str, headers):
        m = self._m
        field = m["MessageField"].KEY if self.is_key else m["MessageField"].VALUE
        return m["SerializationContext"](topic, field, headers)

    def _common(self) -> dict[str, Any]:
        return {"subject.name.strategy": self._strategy}

    # -- reads ------------------------------------------------------------------------------------
    def _kw(self, conf: dict[str, Any]) -> dict[str, Any]:
        return {"schema_registry_client": self._client, "conf": conf, "rule_conf": self._kms_conf,
                "rule_registry": self._rules}

    def _deserializer(self, form):
        key = form.message_class  # the writer's schema comes from the registry: one per class
        d = self._deser.get(key)
        if d is None:
            d = self._deser[key] = form.deserializer(**self._kw({**self._common(), **self._reader_conf}))
        return d

    def deserialize(self, data: bytes, topic: str, subject: str, headers, form):
        """``(object, None, None)``, or ``(None, error text, rule that asked for the DLQ or None)``;
        ``form``: the records' :class:`connector.formats.core.RecordForm`."""
        c = _captured()
        c.rule = c.error = None
        with self._lock:
            self._subject = subject
            try:
                return self._deserializer(form)(data, self._ctx(topic, headers)), None, None
            except Exception as e:  # noqa: BLE001 - a record's rule failure becomes its row error
                return None, _describe(e), c.rule

    # -- writes -----------------------------------------------------------------------------------
    def _serializer(self, target: Schema, form):
        key = (target.id, form.message_class)
        s = self._ser.get(key)
        if s is None:
            conf = {**self._common(), "auto.register.schemas": False, "use.schema.id": target.id}
            text = self._m["Schema"](target.text, target.schema_type.value, list(_refs(target)))
            s = self._ser[key] = form.serializer(text, **self._kw(conf))
        return s

    def serialize(self, obj: Any, target: Schema, topic: str, subject: str, form):
        """``(Confluent-framed bytes, None, None)`` or ``(None, error text, DLQ rule or None)``."""
        c = _captured()
        c.rule = c.error = None
        with self._lock:
            self._subject = subject
            try:
                return self._serializer(target, form)(obj, self._ctx(topic, None)), None, None
            except Exception as e:  # noqa: BLE001 - a record's rule failure becomes its row error
                return None, _describe(e), c.rule


def _refs(schema: Schema):
    from confluent_kafka.schema_registry import SchemaReference

    return [SchemaReference(r.name, r.subject, r.version) for r in schema.references]


def _describe(e: BaseException) -> str:
    """The most telling message of a serde failure chain (the rule's own error, not the wrapper)."""
    parts, seen = [], set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text = str(cur).strip()
        if text:
            parts.append(text)
        cur = cur.__cause__ or cur.__context__
    return parts[-1] if parts else type(e).__name__
