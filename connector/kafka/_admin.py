"""Topic creation from a channel binding, on the driver, before a write starts (``createTopics``).

Follows the CreateTopics contract (Kafka admin protocol, API key 19): each topic is created
independently; ``TOPIC_ALREADY_EXISTS`` means another writer won the race and is fine; a
timed-out request does not mean failure, so the metadata decides; ``validate_only`` is asked
first so a bad partition count, replication factor or config fails before anything is created.
An existing topic whose partition count, replication factor or configs differ from the binding
is reported (a warning, as ``asyncapi-kafka check`` reports drift), never altered.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from connector.errors import ConfigError, TopicCreationError

__all__ = ["TopicReport", "TopicSpec", "ensure_topics"]

log = logging.getLogger("asyncapi_kafka")


@dataclasses.dataclass(frozen=True)
class TopicSpec:
    """A topic as a channel binding describes it (``None``: the broker's default)."""

    name: str
    partitions: int | None = None
    replicas: int | None = None
    configs: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass
class TopicReport:
    """What :func:`ensure_topics` did: topics created, found, and drift warnings."""

    created: list[str] = dataclasses.field(default_factory=list)
    existing: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)

    def warn(self, text: str) -> None:
        self.warnings.append(text)
        log.warning("createTopics: %s", text)


def norm_config(key: str, value) -> str:
    """Comparable form of a topic config value (policies as sets, numbers as numbers); shared
    by topic creation and ``asyncapi-kafka check``."""
    text = str(value).strip()
    if key == "cleanup.policy":
        return ",".join(sorted({p.strip() for p in text.split(",") if p.strip()}))
    if text.lower() in ("true", "false"):
        return text.lower()
    try:
        return str(int(text))
    except ValueError:
        return text


def kafka_error(e: BaseException) -> tuple[object, str]:
    """``(librdkafka error code or None, text)`` of a client exception, userinfo redacted
    (librdkafka's text may name a broker as it was configured)."""
    from registry import redact_text

    err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
    return (err.code(), redact_text(err.str())) if err is not None else (None, redact_text(str(e)) or type(e).__name__)


def _create(admin: AdminClient, spec: TopicSpec, validate_only: bool, timeout_s: float) -> str | None:
    """None on success, ``"exists"``, ``"timeout"``, or the broker's reason."""
    try:
        new = NewTopic(spec.name, num_partitions=spec.partitions or -1, replication_factor=spec.replicas or -1,
                       config=dict(spec.configs))
    except (ValueError, TypeError, KafkaException) as e:  # refused by the client before any request
        return kafka_error(e)[1]
    try:
        futures = admin.create_topics([new], validate_only=validate_only, operation_timeout=timeout_s,
                                      request_timeout=timeout_s)
        futures[spec.name].result(timeout_s + 5)
        return None
    except (ValueError, TypeError) as e:  # refused by the client (e.g. partitions out of range)
        return str(e)
    except (KafkaException, TimeoutError) as e:
        code, text = kafka_error(e)
        if code == KafkaError.TOPIC_ALREADY_EXISTS:
            return "exists"
        if code in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT) or isinstance(e, TimeoutError):
            return "timeout"
        return text


def ensure_topics(conf: Mapping[str, object], specs: Sequence[TopicSpec], *,
                  timeout_s: float = 30.0) -> TopicReport:
    """Create the missing topics of ``specs``; report existing ones that differ from them.

    Parameters
    ----------
    conf : mapping
        librdkafka client settings (bootstrap servers, security).
    specs : sequence of TopicSpec
        The topics with the channel binding's ``partitions``, ``replicas``, ``topicConfiguration``.
    timeout_s : float
        Per admin request.

    Returns
    -------
    TopicReport

    Raises
    ------
    TopicCreationError
        A missing topic could not be created (the broker's error, e.g. ``INVALID_REPLICATION_FACTOR``,
        or no answer: the broker may not support admin APIs).

    Examples
    --------
    >>> from connector.testing import TansuBroker
    >>> with TansuBroker() as broker:                                   # doctest: +SKIP
    ...     ensure_topics(broker.conf, [TopicSpec("orders", partitions=3)]).created
    ['orders']
    """
    admin_conf: dict[str, Any] = {k: v for k, v in conf.items() if not callable(v)}
    admin_conf.setdefault("log_level", 3)
    try:
        admin = AdminClient(admin_conf)
    except (KafkaException, ValueError, TypeError) as e:
        raise ConfigError(f"invalid Kafka client setting: {kafka_error(e)[1]}") from e
    report = TopicReport()
    try:
        # Listing all topics (no name) never auto-creates one, unlike a per-topic metadata request.
        md = admin.list_topics(timeout=timeout_s)
    except KafkaException as e:
        raise TopicCreationError(f"cannot reach Kafka to create topics: {kafka_error(e)[1]}") from e
    for spec in specs:
        if spec.name in md.topics and md.topics[spec.name].error is None:
            report.existing.append(spec.name)
            continue
        err = _create(admin, spec, True, timeout_s)
        if err is None:
            if spec.name in admin.list_topics(timeout=timeout_s).topics:
                # Seen with tansu: validate_only is not honoured and the topic now exists.
                log.info("createTopics: the broker created %s on a validate-only request", spec.name)
            else:
                err = _create(admin, spec, False, timeout_s)
        if err == "timeout":  # a timeout does not mean failure: the metadata decides
            if spec.name not in admin.list_topics(timeout=timeout_s).topics:
                raise TopicCreationError(
                    f"CreateTopics for {spec.name!r} got no answer within {timeout_s:g}s and the topic does "
                    "not exist; does this broker support admin APIs? (the librdkafka mock cluster has none)")
        elif err not in (None, "exists"):
            raise TopicCreationError(f"CreateTopics for {spec.name!r} failed: {err} (binding: "
                                     f"{_describe(spec)})")
        if err == "exists":
            report.existing.append(spec.name)
        else:
            report.created.append(spec.name)
            log.info("createTopics: created %s (%s)", spec.name, _describe(spec))
    md = admin.list_topics(timeout=timeout_s)
    by_name = {s.name: s for s in specs}
    for name in report.existing:
        _check_layout(md, by_name[name], report)
    _check_configs(admin, [by_name[n] for n in report.existing + report.created if by_name[n].configs],
                   report, timeout_s)
    return report


def _describe(spec: TopicSpec) -> str:
    parts = [f"{spec.partitions or 'default'} partitions", f"replication {spec.replicas or 'default'}"]
    parts += [f"{k}={v}" for k, v in spec.configs]
    return ", ".join(parts)


def _check_layout(md, spec: TopicSpec, report: TopicReport) -> None:
    topic = md.topics.get(spec.name)
    if topic is None:
        return
    parts = topic.partitions
    if spec.partitions is not None and spec.partitions != len(parts):
        report.warn(f"topic {spec.name!r} exists with {len(parts)} partitions; the binding says "
                    f"{spec.partitions} (left as is)")
    rfs = sorted({len(p.replicas) for p in parts.values()})
    if spec.replicas is not None and rfs and rfs != [spec.replicas]:
        report.warn(f"topic {spec.name!r} exists with replication factor {'/'.join(map(str, rfs))}; the "
                    f"binding says {spec.replicas} (left as is)")


def _check_configs(admin: AdminClient, specs: list[TopicSpec], report: TopicReport, timeout_s: float) -> None:
    if not specs:
        return
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, s.name) for s in specs],
                                     request_timeout=timeout_s)
    by_name = {s.name: s for s in specs}
    for res, fut in futures.items():
        spec = by_name[res.name]
        try:
            entries = fut.result(timeout_s + 5)
        except (KafkaException, TimeoutError) as e:
            report.warn(f"topic {spec.name!r}: configs not checked (DescribeConfigs failed: {kafka_error(e)[1]})")
            continue
        for key, expected in spec.configs:
            entry = entries.get(key)
            if entry is None or entry.value is None:
                report.warn(f"topic {spec.name!r}: {key} not reported by the broker (binding: {expected})")
            elif norm_config(key, expected) != norm_config(key, entry.value):
                report.warn(f"topic {spec.name!r}: {key} is {entry.value!r}; the binding says {expected!r} "
                            "(left as is)")
