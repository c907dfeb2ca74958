"""Broker side of ``asyncapi-kafka check``: metadata, DescribeCluster, DescribeConfigs and
CreateTopics (validated first with ``validate_only``, as the admin protocol recommends)."""
from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConfigResource, NewTopic, ResourceType

from registry import redact_servers

from connector.cli._common import _Report
from connector.errors import ConfigError
from connector.kafka import kafka_conf_from_options, kafka_error, norm_config

__all__ = ["BrokerCheck"]


class BrokerCheck:
    """Broker side of the check: metadata, DescribeCluster, DescribeConfigs, CreateTopics."""

    def __init__(self, admin: AdminClient, bootstrap: str, timeout: float):
        self.admin, self.bootstrap, self.timeout = admin, bootstrap, timeout
        self._md: ClusterMetadata | None = None
        self.admin_reason: str | None = None  # set when the broker does not answer admin APIs

    @classmethod
    def connect(cls, options: dict, *, bootstrap: str | None, plan_config, timeout: float) -> BrokerCheck:
        conf = kafka_conf_from_options(options, bootstrap_servers=bootstrap, plan_config=plan_config,
                                       allow_group_id=True)
        conf.setdefault("log_level", "0")  # librdkafka's own stderr lines would bury the report
        try:
            admin = AdminClient({**conf})  # its stub wants dict[str, str | int | float | bool]; dict is invariant
        except (KafkaException, ValueError, TypeError) as e:
            raise ConfigError(f"invalid Kafka client setting: {kafka_error(e)[1]}") from e
        return cls(admin, redact_servers(conf["bootstrap.servers"]), timeout)

    @property
    def md(self) -> ClusterMetadata:
        """Cluster metadata of the last :meth:`refresh` (``connected`` refreshes first)."""
        if self._md is None:
            raise RuntimeError("BrokerCheck.md read before connected()/refresh()")
        return self._md

    def refresh(self) -> None:
        self._md = self.admin.list_topics(timeout=self.timeout)

    def connected(self, report: _Report) -> bool:
        try:
            self.refresh()
            return True
        except KafkaException as e:
            report.line("error", "kafka", f"cannot reach Kafka at {self.bootstrap} within {self.timeout:g}s "
                                          f"({kafka_error(e)[1]})")
            return False

    def header(self, report: _Report) -> None:
        controller: int | str  # "-" when DescribeCluster names no controller
        cluster, controller, brokers = self.md.cluster_id, self.md.controller_id, len(self.md.brokers)
        try:
            dc = self.admin.describe_cluster(request_timeout=self.timeout).result(self.timeout + 5)
            cluster, brokers = dc.cluster_id, len(dc.nodes)
            controller = dc.controller.id if dc.controller is not None else "-"
        except (KafkaException, TimeoutError) as e:
            code, text = kafka_error(e)
            if code == KafkaError._TIMED_OUT or isinstance(e, TimeoutError):
                self.admin_reason = (f"the broker did not answer DescribeCluster within {self.timeout:g}s "
                                     f"({text}): it does not support admin APIs (the librdkafka mock "
                                     "cluster has none)")
        report.note(f"  kafka     {self.bootstrap}  cluster {cluster}, controller {controller}, {brokers} broker(s)")
        if self.admin_reason:
            report.line("error", "kafka", self.admin_reason)

    def check_channel(self, plan, report: _Report, *, create_missing: bool) -> list[str]:
        """Check topics of one plan; return the topics whose subjects should be checked."""
        if self.admin_reason and plan.topic_configuration:
            report.line("warn", plan.channel, "topicConfiguration not checked: no admin APIs on this broker")
        topics = self.md.topics
        if plan.topic_pattern is not None:
            matched = sorted(t for t in topics if plan.matches(t) and topics[t].error is None)
            if not matched:
                report.line("drift", plan.channel, f"no topic matches {plan.address}",
                            [("topics", f"at least one matching {plan.topic_pattern}", "none")])
                if create_missing:
                    report.line("warn", plan.channel, "not created: a templated address names no "
                                                      "concrete topic")
                return []
            report.line("ok", plan.channel, f"{len(matched)} topic(s) match {plan.address}: {', '.join(matched)}")
            existing = matched
        else:
            existing = []
            for t in plan.topics:
                meta = topics.get(t)
                if meta is not None and meta.error is not None:
                    report.line("error", t, f"metadata error: {meta.error.str()}")
                elif meta is not None:
                    existing.append(t)
                elif create_missing:
                    if self._create(plan, t, report):
                        existing.append(t)
                else:
                    report.line("drift", t, "topic missing", [("topic", t, "(missing)")])
        for t in existing:
            self._check_layout(plan, t, report)
        if plan.topic_configuration and existing and not self.admin_reason:
            self._check_configs(plan, existing, report)
        return existing if plan.topic_pattern is not None else list(plan.topics)

    def _check_layout(self, plan, topic: str, report: _Report) -> None:
        parts = self.md.topics[topic].partitions
        rfs = sorted({len(p.replicas) for p in parts.values()})
        rf = (rfs[0] if len(rfs) == 1 else f"{rfs[0]}..{rfs[-1]}") if rfs else 0
        report.line("ok", topic, f"topic exists ({len(parts)} partition{'s' * (len(parts) != 1)}, "
                                  f"replication factor {rf})")
        if plan.partitions is not None and plan.partitions != len(parts):
            report.line("drift", topic, "partition count differs", [("partitions", plan.partitions, len(parts))])
        if plan.replicas is not None and rfs != [plan.replicas]:
            report.line("drift", topic, "replication factor differs", [("replicas", plan.replicas, rf)])

    def _check_configs(self, plan, topics: list[str], report: _Report) -> None:
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        futures = self.admin.describe_configs(resources, request_timeout=self.timeout)
        for res, fut in futures.items():
            topic = res.name
            try:
                entries = fut.result(self.timeout + 5)
            except (KafkaException, TimeoutError) as e:
                report.line("error", topic, f"DescribeConfigs failed: {kafka_error(e)[1]}")
                continue
            same = []
            for key, expected in plan.topic_configuration:
                entry = entries.get(key)
                if entry is None or entry.value is None:
                    report.line("warn", topic, f"{key} not reported by the broker (expected {expected})")
                elif norm_config(key, expected) == norm_config(key, entry.value):
                    same.append(f"{key}={entry.value}")
                else:
                    report.line("drift", topic, f"{key} differs", [(key, expected, entry.value)])
            if same:
                report.line("ok", topic, "config " + ", ".join(same))

    def _create_call(self, new: NewTopic, validate_only: bool) -> str | None:
        """None on success, ``"exists"``, or the reason the request failed."""
        try:
            futures = self.admin.create_topics([new], validate_only=validate_only,
                                               operation_timeout=self.timeout, request_timeout=self.timeout)
            futures[new.topic].result(self.timeout + 5)
            return None
        except (KafkaException, TimeoutError) as e:
            code, text = kafka_error(e)
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                return "exists"
            if code == KafkaError._TIMED_OUT or isinstance(e, TimeoutError):
                return f"no answer within {self.timeout:g}s ({text}); does this broker support admin APIs?"
            return text

    def _create(self, plan, topic: str, report: _Report) -> bool:
        if self.admin_reason:
            report.line("error", topic, "topic missing and not created: no admin APIs on this broker")
            return False
        config = dict(plan.topic_configuration)
        new = NewTopic(topic, num_partitions=plan.partitions or -1, replication_factor=plan.replicas or -1,
                       config=config)
        what = (f"{plan.partitions or 'default'} partitions, replication {plan.replicas or 'default'}"
                + (", " + ", ".join(f"{k}={v}" for k, v in config.items()) if config else ""))
        err = self._create_call(new, validate_only=True)
        if err is None:
            self.refresh()
            if topic in self.md.topics:  # seen with tansu: validate_only is not honoured
                report.line("warn", topic, "the broker created the topic on a validate-only CreateTopics "
                                           "request (it ignores validate_only)")
            else:
                err = self._create_call(new, validate_only=False)
        if err not in (None, "exists"):
            report.line("error", topic, f"topic missing; CreateTopics failed: {err}")
            return False
        self.refresh()
        if topic not in self.md.topics:
            report.line("error", topic, "CreateTopics succeeded but the topic is not in the metadata yet")
            return False
        report.line("created", topic, f"created ({what})")
        return True
