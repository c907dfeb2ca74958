"""librdkafka configuration: what users may set, what the source owns, what is secret.

The source reads Kafka like Spark's Kafka source does: it assigns partitions itself, tracks
offsets in its own checkpoints and never relies on consumer-group state. Settings that would
change that behaviour are refused with a reason, as ``KafkaSourceProvider`` does.
"""
from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping

from registry import redact_servers, strip_userinfo

from connector.errors import ConfigError

__all__ = [
    "OWNED_KAFKA_SETTINGS",
    "SECRET_KAFKA_SETTINGS",
    "kafka_conf_from_options",
    "is_secret_setting",
    "redact_conf",
    "bootstrap_without_credentials",
    "drop_document_security",
]

_log = logging.getLogger(__name__)
_WARNED: set[tuple[str, str]] = set()  # (origin, cleaned list): warn once per process


class _ConfWarnOnce(logging.Filter):
    """Lets each distinct librdkafka CONFWARN through once per process: every pooled consumer
    would otherwise repeat the same configuration warnings (issue 17 saw 38 lines per job)."""

    _CLIENT = re.compile(r"\[rdkafka#[a-z]+-\d+\]")

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if "CONFWARN" not in msg:
            return True
        key = self._CLIENT.sub("", msg)
        with self._lock:
            if key in self._seen or len(self._seen) > 1000:
                return False
            self._seen.add(key)
        return True


CONFWARN_ONCE = _ConfWarnOnce()
# The loggers the source's consumers report through (Consumer(conf, logger=...)).
for _name in ("connector.kafka._consume", "connector.kafka._reader"):
    logging.getLogger(_name).addFilter(CONFWARN_ONCE)

#: Settings the source sets itself, with the reason shown when a user tries to set them.
OWNED_KAFKA_SETTINGS: Mapping[str, str] = {
    "enable.auto.commit": "the source does not commit offsets to Kafka; it tracks them in its "
                          "own checkpoints",
    "enable.auto.offset.store": "the source does not commit offsets to Kafka",
    "auto.offset.reset": "set the source option 'startingOffsets' to specify where to start; "
                         "out-of-range offsets are reported per 'failOnDataLoss' and never reset "
                         "silently",
    "group.id": "the source assigns partitions itself and creates a unique group id for each "
                "query; a fixed group id is only accepted when explicitly allowed (for "
                "clusters whose ACLs require one)",
    "key.deserializer": "keys are always read as bytes and decoded by the source",
    "value.deserializer": "values are always read as bytes and decoded by the source",
    "enable.partition.eof": "the source needs partition-EOF events to end ranges that finish in "
                            "an offset gap",
    "interceptor.classes": "interceptors are not supported by the source",
}

#: Settings whose values must never appear in logs, reprs or error messages.
SECRET_KAFKA_SETTINGS: frozenset[str] = frozenset({
    "sasl.password",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.private.key.pem",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl_key",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "sasl.jaas.config",
})

# Settings that load native code or run programs: acceptable from the user, never from a
# document (an AsyncAPI file may come from a less trusted place than the job's options).
_NOT_FROM_DOCUMENT = frozenset({"plugin.library.paths", "ssl.engine.location",
                                "sasl.kerberos.kinit.cmd"})


def is_secret_setting(name: str) -> bool:
    """Whether a librdkafka setting holds a secret (by name, or by a password/secret suffix)."""
    n = name.strip().lower()
    return (n in SECRET_KAFKA_SETTINGS or n.endswith((".password", ".secret", "passphrase"))
            or ".private.key" in n)


def redact_conf(conf: Mapping[str, object]) -> dict[str, object]:
    """Copy of ``conf`` with secret values replaced by ``'***'`` and userinfo removed from the
    bootstrap list (for logs and reprs)."""
    return {k: ("***" if is_secret_setting(k) else
                redact_servers(str(v)) if k.strip().lower() == "bootstrap.servers" else v)
            for k, v in conf.items()}


def bootstrap_without_credentials(servers: str, origin: str) -> str:
    """``servers`` without ``user:password@``, warning that such credentials are ignored.

    librdkafka has no userinfo in addresses (it would try to resolve it, and log it): SASL
    credentials are the ``kafka.sasl.username`` / ``kafka.sasl.password`` options.
    """
    clean, had = strip_userinfo(servers)
    if had and (origin, clean) not in _WARNED:
        _WARNED.add((origin, clean))
        _log.warning("credentials (user:password@) in %s were ignored and removed from the bootstrap "
                     "list %s: pass them as the options 'kafka.sasl.username' and 'kafka.sasl.password'",
                     origin, clean)
    return clean


# Which of the document's security settings a user's ``security.protocol`` leaves in force.
_SECURITY_PREFIXES_KEPT = {"PLAINTEXT": (), "SSL": ("ssl.",), "SASL_PLAINTEXT": ("sasl.",),
                           "SASL_SSL": ("ssl.", "sasl.")}


def drop_document_security(doc: Mapping[str, str], user: Mapping[str, str]) -> dict[str, str]:
    """The document's settings minus the security ones a user's ``security.protocol`` overrides.

    A document describes its production servers (often SASL_SSL); a user who points the read at
    another cluster with ``kafka.bootstrap.servers`` says how to reach it with one more option,
    ``kafka.security.protocol``: ``PLAINTEXT`` drops the document's ``sasl.*`` and ``ssl.*``
    settings, ``SSL`` its ``sasl.*`` ones, ``SASL_PLAINTEXT`` its ``ssl.*`` ones. Settings the
    user gives explicitly are never dropped (they are applied after this).

    Examples
    --------
    >>> drop_document_security({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
    ...                         "client.id": "x"}, {"security.protocol": "plaintext"})
    {'client.id': 'x'}
    """
    proto = str(user.get("security.protocol", "")).strip().upper()
    if proto not in _SECURITY_PREFIXES_KEPT:
        return dict(doc)
    kept = _SECURITY_PREFIXES_KEPT[proto]
    return {k: v for k, v in doc.items()
            if k != "security.protocol" and (not k.startswith(("ssl.", "sasl.")) or k.startswith(kept))}


def _norm(items: Iterable[tuple[str, object]], origin: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in items:
        key = str(k).strip().lower()
        if key.startswith("kafka."):
            key = key[len("kafka."):]
        if not key:
            raise ConfigError(f"empty Kafka setting name in {origin}")
        out[key] = "" if v is None else str(v)
    return out


def kafka_conf_from_options(options: Mapping[str, object] | None = None, *,
                            bootstrap_servers: str | None = None,
                            plan_config: Iterable[tuple[str, str]] = (),
                            allow_group_id: bool = False,
                            require_bootstrap: bool = True,
                            owned: Mapping[str, str] | None = None,
                            client_id: str | None = None,
                            where: str = "the AsyncAPI document names no server",
                            warn: bool = True) -> dict[str, str]:
    """Build and check the librdkafka configuration: the one builder of the Spark read, the
    Spark write and the CLI.

    Document settings, then the user's ``kafka.*`` options (secrets included) on top;
    ``security.protocol`` from the user drops the document's other security settings
    (:func:`drop_document_security`); settings the source owns are refused with a reason;
    ``user:password@`` is stripped from the bootstrap list; disabling TLS verification warns.

    Parameters
    ----------
    options : mapping of str to str, optional
        The user's ``kafka.*`` options, with or without the ``kafka.`` prefix. They override
        settings from the document.
    bootstrap_servers : str, optional
        Bootstrap servers derived from the AsyncAPI document's server; a user
        ``bootstrap.servers`` option overrides it.
    plan_config : iterable of (str, str)
        Non-secret settings derived from the document (security protocol, SASL mechanism...).
    allow_group_id : bool
        Accept a user ``group.id`` (for clusters whose ACLs require a fixed group).
    require_bootstrap : bool
        Raise when no bootstrap servers are known.
    owned : mapping of str to str, optional
        The settings the client owns, with the reason shown when one is set: the reader's
        :data:`OWNED_KAFKA_SETTINGS` (default) or the sink's ``OWNED_PRODUCER_SETTINGS``.
    client_id : str, optional
        ``client.id`` from the document's operation binding, unless the user sets one.
    where : str
        Completes "no Kafka bootstrap servers: ..." (which document server gave none).
    warn : bool
        Log the TLS warnings (executors rebuild a configuration the driver already checked).

    Returns
    -------
    dict of str to str
        librdkafka settings, without the ones the source owns (readers add those).

    Raises
    ------
    ConfigError
        A setting the source owns is set, or no bootstrap servers are known.

    Examples
    --------
    >>> kafka_conf_from_options({"kafka.security.protocol": "SSL"},
    ...                         bootstrap_servers="broker:9093")
    {'bootstrap.servers': 'broker:9093', 'security.protocol': 'SSL'}
    """
    doc = _norm(plan_config, "the AsyncAPI document")
    for key in doc:
        if key in _NOT_FROM_DOCUMENT:
            raise ConfigError(f"Kafka setting '{key}' cannot come from an AsyncAPI document; "
                              "set it as the source option 'kafka." + key + "' if you trust it")
    user = _norm((options or {}).items(), "the source options")
    refused = OWNED_KAFKA_SETTINGS if owned is None else owned
    conf: dict[str, str] = {}
    if bootstrap_servers:
        conf["bootstrap.servers"] = bootstrap_servers
    if client_id and "client.id" not in user:
        conf["client.id"] = str(client_id)
    doc = drop_document_security(doc, user)
    for origin in (doc, user):
        for key, value in origin.items():
            if key in refused and not (key == "group.id" and allow_group_id):
                raise ConfigError(f"option 'kafka.{key}' is not supported: {refused[key]}")
            conf[key] = value
    if conf.get("bootstrap.servers"):
        conf["bootstrap.servers"] = bootstrap_without_credentials(conf["bootstrap.servers"],
                                                                  "the Kafka bootstrap servers")
    if require_bootstrap and not conf.get("bootstrap.servers", "").strip():
        raise ConfigError(f"no Kafka bootstrap servers: {where}; set the option "
                          "'kafka.bootstrap.servers'")
    if warn:
        warn_insecure_tls(conf)
    return conf


def warn_insecure_tls(conf: Mapping[str, str]) -> None:
    """Log a warning each time a configuration turns TLS verification off."""
    algo = str(conf.get("ssl.endpoint.identification.algorithm", "https")).strip().lower()
    if algo == "none":
        _log.warning("Kafka TLS hostname verification is disabled "
                     "(ssl.endpoint.identification.algorithm=none): connections can be "
                     "intercepted; remove the setting unless this is a test cluster")
    verify = str(conf.get("enable.ssl.certificate.verification", "true")).strip().lower()
    if verify in ("false", "0", "no"):
        _log.warning("Kafka TLS certificate verification is disabled "
                     "(enable.ssl.certificate.verification=false): connections can be "
                     "intercepted; remove the setting unless this is a test cluster")
