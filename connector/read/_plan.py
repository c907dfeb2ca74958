"""What a read and a write both take from the document: the plan of the chosen channel, its
registry configuration and its non-secret librdkafka settings (one builder each)."""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from connector.errors import ConfigError
from connector.options import SourceOptions

if TYPE_CHECKING:
    from registry import RegistryConfig

    from connector.asyncapi import AsyncApiDocument, ReadPlan

__all__ = ["load_plan", "registry_config", "document_kafka"]


def load_plan(opts: SourceOptions, *, sending: bool = False) -> ReadPlan:
    """The plan of the channel the options name. ``sending``: a write, whose ``operation``
    must be one in which the application sends."""
    from connector.asyncapi import load_document, plan_read

    source = opts.asyncapi
    if source is None:
        raise ConfigError("option 'asyncapi' is required: a path to an AsyncAPI document or its text")
    base_dir = os.path.dirname(os.path.abspath(source)) if "\n" not in source and os.path.exists(source) else None
    doc = load_document(source, base_dir=base_dir, allow_remote_refs=opts.allow_remote_refs,
                        ref_root=opts.ref_root)
    if sending and opts.operation is not None:
        op = doc.operations.get(opts.operation) or next(
            (o for o in doc.operations.values() if o.operation_id == opts.operation), None)
        if op is not None and op.action != "send":
            raise ConfigError(f"operation {opts.operation!r} receives messages; a write needs an operation in "
                              "which the application sends (3.x 'action: send', 2.x 'subscribe')")
    return plan_read(doc, channel=opts.channel, operation=opts.operation, message=opts.message,
                     server=opts.server, params=_param_names_as_documented(doc, dict(opts.channel_params)) or None,
                     topic=opts.topic)


def registry_config(opts: SourceOptions, plan: ReadPlan) -> RegistryConfig | None:
    """The document's registry under the ``schema.registry.*`` options (None: no registry)."""
    from connector.options import registry_config_for

    return registry_config_for(opts.registry_options(), plan)


def document_kafka(plan: ReadPlan, *, client_id: bool = False) -> tuple[tuple[str, str], ...]:
    """The document's librdkafka settings (no secrets); the user's ``kafka.*`` options are
    applied over them by :func:`connector.kafka.kafka_conf_from_options`."""
    conf = dict(plan.kafka_config)
    if plan.bootstrap_servers:
        conf["bootstrap.servers"] = plan.bootstrap_servers
    if client_id and plan.client_id:
        conf["client.id"] = str(plan.client_id)
    return tuple(sorted(conf.items()))


def _param_names_as_documented(doc: AsyncApiDocument, params: dict[str, str]) -> dict[str, str]:
    """Spark lowercases option keys, so ``channel.param.streetlightId`` arrives as
    ``streetlightid``: give each the document's spelling when exactly one parameter matches."""
    if not params:
        return params
    known: dict[str, set[str]] = {}
    for ch in doc.channels.values():
        names = set(ch.parameters or {}) | set(re.findall(r"{([^}]+)}", ch.address or ""))
        for n in names:
            known.setdefault(n.lower(), set()).add(n)
    out = {}
    for k, v in params.items():
        spellings = known.get(k.lower(), set())
        out[next(iter(spellings)) if k not in spellings and len(spellings) == 1 else k] = v
    return out
