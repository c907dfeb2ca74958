"""``asyncapi-kafka check``: does a live cluster and registry match the document?

For each channel on the chosen server:

=====================  ==============================================================
topic                  exists (templated address: at least one matching topic)
partitions, replicas   channel binding ``partitions``/``replicas`` vs topic metadata
topicConfiguration     each key vs ``DescribeConfigs`` (``cleanup.policy`` compared as
                       a set; numbers as numbers)
subjects               the subject the lookup strategy names exists; the document's
                       schema is registered there, or is compatible with the latest
                       version (``POST /compatibility/subjects/{s}/versions/latest``)
=====================  ==============================================================

Exit codes: 0 everything matches, 1 drift, 2 usage or connection errors (unreachable broker
or registry, admin APIs the broker does not answer). ``--create-missing`` creates missing
topics from the channel binding, validating the request first (``validate_only``), as the
Kafka admin protocol recommends.
"""
from __future__ import annotations

import argparse
import sys

from registry import RegistryError, SchemaNotFound, Vendor, make_backend, redact_url

from connector.asyncapi import plan_read
from connector.cli._check_kafka import BrokerCheck
from connector.cli._common import _Report, add_option_argument, add_ref_root_argument, open_document, option_pairs
from connector.errors import AsyncApiKafkaError, ConfigError
from connector.formats import payload_format
from connector.schema import SchemaRequest, subject_for
from connector.options import registry_config_for

__all__ = ["add_check_arguments", "check_command"]

DEFAULT_TIMEOUT_S = 15.0


# -- arguments and output ---------------------------------------------------------------------
def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``check`` arguments on ``parser`` (a sub-command parser)."""
    parser.add_argument("document", metavar="DOC", help="AsyncAPI 2.x/3.x document (YAML or JSON file)")
    parser.add_argument("--server", metavar="NAME", required=True, help="the document's server to check")
    parser.add_argument("--channel", metavar="NAME", action="append", dest="channels",
                        help="check only this channel (repeatable; default: every channel of the server)")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                        help="override the server's bootstrap servers")
    parser.add_argument("--registry-url", metavar="URL", help="override the server's schemaRegistryUrl")
    parser.add_argument("--create-missing", action="store_true",
                        help="create missing topics with the binding's partitions, replicas and "
                             "topicConfiguration (validated first)")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"limit for each broker/registry call (default {DEFAULT_TIMEOUT_S:g})")
    add_option_argument(parser, "a source option: kafka.<librdkafka setting> (the prefix may be left out) or "
                                "schema.registry.*")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON report (results, counts, exit code) instead of text")
    add_ref_root_argument(parser)


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _split_options(pairs) -> tuple[dict, dict]:
    """``-o`` pairs as (librdkafka settings, registry options). The source's spellings work as in
    ``peek`` and the DataSource (``kafka.security.protocol=SSL``); a bare librdkafka name too."""
    kafka, reg = {}, {}
    for key, value in option_pairs(pairs).items():
        if key.lower().startswith("schema.registry."):
            reg[key.lower()] = value
        else:
            kafka[key[len("kafka."):] if key.lower().startswith("kafka.") else key] = value
    return kafka, reg


def _normalize_option(kafka: dict) -> bool:
    """``-o normalize.schemas=true``: the write option, so that the check asks the registry's look-up
    as the write will (taken out of the librdkafka settings)."""
    raw = next((kafka.pop(k) for k in list(kafka) if k.lower() == "normalize.schemas"), "false")
    if str(raw).strip().lower() not in ("true", "false"):
        raise ConfigError(f"normalize.schemas must be true or false, not {raw!r}")
    return str(raw).strip().lower() == "true"


def _pick_channels(doc, server: str, wanted) -> list[str]:
    if wanted:
        names = []
        for w in wanted:
            ch = next((c for c in doc.channels.values() if w in (c.name, c.address)
                       or (c.kafka is not None and c.kafka.topic == w)), None)
            if ch is None:
                raise ConfigError(f"no channel {w!r} in the document (channels: "
                                  f"{', '.join(doc.channels) or 'none'})")
            names.append(ch.name)
        return names
    return [c.name for c in doc.channels.values() if c.servers is None or server in c.servers]


# -- the command ----------------------------------------------------------------------------------
def check_command(args: argparse.Namespace) -> int:
    """Run ``check``; returns 0 (in sync), 1 (drift) or 2 (usage/connection errors)."""
    doc = open_document(args.document, ref_root=getattr(args, "ref_root", None))
    if doc is None:
        return 2
    srv = doc.servers.get(args.server)
    if srv is None or not srv.is_kafka:
        kafka = [n for n, s in doc.servers.items() if s.is_kafka]
        what = "no server" if srv is None else "not a Kafka server:"
        return _usage(f"{what} {args.server!r} (Kafka servers: {', '.join(kafka) or 'none'})")
    timeout = float(args.timeout)
    if timeout <= 0:
        return _usage("--timeout must be > 0")
    try:
        kafka_opts, reg_opts = _split_options(getattr(args, "options", None))
        normalize = _normalize_option(kafka_opts)
        names = _pick_channels(doc, args.server, getattr(args, "channels", None))
    except ConfigError as e:
        return _usage(str(e))
    report = _Report(as_json=getattr(args, "json", False))
    head = {"document": args.document, "server": args.server}
    plans, skipped = [], []
    for name in names:
        try:
            plans.append(plan_read(doc, channel=name, server=args.server, require_schemas=False))
        except (AsyncApiKafkaError, ValueError) as e:
            # A channel the user named must be checkable; others (no address...) are noted.
            skipped.append(("error" if getattr(args, "channels", None) else "warn", name, f"not checked: {e}"))
    base = plans[0] if plans else None
    try:
        checks = BrokerCheck.connect(
            kafka_opts, bootstrap=args.bootstrap_servers or (base.bootstrap_servers if base else None)
            or srv.bootstrap_servers(), plan_config=base.kafka_config if base else (), timeout=timeout)
    except ConfigError as e:
        return _usage(str(e))
    report.note(f"Checking {redact_url(args.document)} against server {args.server!r}")
    if not checks.connected(report):
        return report.finish(**head)
    checks.header(report)
    given = {k.lower().removeprefix("kafka."): v.strip().lower() for k, v in kafka_opts.items()}
    missing = [s for s in (base.required_secrets if base else ()) if s not in given]
    if (base is not None and missing and base.security_scheme
            and given.get("security.protocol") not in ("plaintext", "ssl")):
        report.line("warn", "kafka", f"security scheme {base.security_scheme!r} needs {', '.join(missing)} "
                                     "(pass them with -o KEY=VALUE)")
    registry = _Registry.build(base, args, reg_opts, timeout, report, normalize) \
        if base is not None else None
    for status, name, text in skipped:
        report.line(status, name, text)
    for plan in plans:
        report.note(f"\n{plan.channel}")
        report.context["channel"] = plan.channel
        topics = checks.check_channel(plan, report, create_missing=args.create_missing)
        if registry is not None:
            registry.check_channel(plan, topics, report)
    report.context.pop("channel", None)
    return report.finish(**head)


class _Registry:
    """Registry side of the check, through the registry client's public subject methods."""

    def __init__(self, client, url: str, normalize: bool = False):
        self.client, self.url, self.down, self.normalize = client, url, False, normalize

    @classmethod
    def build(cls, plan, args, reg_opts: dict, timeout: float, report: _Report, normalize: bool = False):
        opts = dict(reg_opts)
        if args.registry_url:
            opts["schema.registry.url"] = args.registry_url
        opts.setdefault("schema.registry.connect.timeout.ms", str(int(timeout * 1000)))
        opts.setdefault("schema.registry.request.timeout.ms", str(int(timeout * 1000)))
        # the same builder as the source and the sink: the document's registry under the options
        shown = redact_url(args.registry_url or plan.registry_url or "") or "registry"
        try:
            config = registry_config_for(opts, plan)
            if config is None:
                return None
            if config.vendor not in (Vendor.CONFLUENT, Vendor.APICURIO):
                report.line("warn", "registry", f"{shown}: subject checks need a Confluent-compatible REST "
                                                f"registry; vendor {config.vendor!r} is not checked")
                return None
            client = make_backend(config)
            # A wrong URL (a web page answering 404 everywhere) would otherwise report every
            # subject as "missing from the registry": check it is a registry first.
            client.verify_registry()
        except SchemaNotFound as e:
            report.line("error", "registry", f"{shown}: not a schema registry (the subject listing "
                                             f"is not found either: {e})")
            return None
        except (RegistryError, ValueError) as e:
            report.line("error", "registry", f"{shown}: {e}")
            return None
        report.note(f"  registry  {', '.join(config.redacted_urls())} ({config.vendor})")
        return cls(client, shown, normalize)

    def check_channel(self, plan, topics: list[str], report: _Report) -> None:
        specs = [(m.name, m.payload, False) for m in plan.value_messages]
        if plan.key_schema is not None:
            specs.append(("key", plan.key_schema, True))
        for topic in topics:
            for label, spec, is_key in specs:
                if self.down:
                    return
                where = f"{topic} {label}"
                if spec is None:
                    report.line("warn", where, "payload schema not resolved in the document; not compared")
                    continue
                try:
                    subject = subject_for(SchemaRequest(), plan, spec, topic, is_key=is_key)
                except (AsyncApiKafkaError, ValueError) as e:
                    report.line("warn", where, f"no subject: {e}")
                    continue
                self._check_subject(subject, spec, report)

    def _check_subject(self, subject: str, spec, report: _Report) -> None:
        schema_type = payload_format(spec.format).registry_type.value
        try:
            try:
                versions = self.client.list_versions(subject)
            except SchemaNotFound:
                report.line("drift", subject, "subject missing from the registry",
                            [("subject", subject, "(not registered)")])
                return
            latest = max(versions) if versions else None
            # the registry's own look-up: it may store the schema reprinted (Karapace's Protobuf)
            found = self.client.lookup_schema(subject, spec, normalize=self.normalize)
            mine = found.version if found is not None else None
            if found is not None and mine is not None and mine == latest:
                report.line("ok", subject, f"document schema is the latest version {mine} (id {found.id})")
                return
            # Not registered, or an older version: what matters to readers is the latest one.
            compatible, messages = self.client.test_compatibility(subject, spec.text, schema_type)
        except RegistryError as e:
            self.down = True
            report.line("error", "registry", f"{self.url}: {e}")
            return
        which = "not registered itself" if mine is None else f"it is version {mine}"
        if compatible:
            report.line("ok", subject, f"document schema is compatible with latest version {latest} ({which})")
        else:
            reasons = "; ".join(messages) or "no reason given"
            report.line("drift", subject, f"document schema is NOT compatible with latest version {latest} "
                                          f"({which})",
                        [("compatibility", "compatible", f"incompatible ({reasons})")])


# -- Kafka side -----------------------------------------------------------------------------------
