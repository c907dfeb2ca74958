"""Which schema a write encodes with and which id it frames with, resolved once on the driver.

Registration modes use confluent-kafka's serializer names:

=========================  =====================================================================
mode                       schema encoded with / id framed with
=========================  =====================================================================
``use.schema.id=N``        the registered schema N (Glue, GUID framings: a UUID) / N
``use.latest.version``     the subject's latest version / its id
``auto.register.schemas``  the document's schema / the id the registry gives it when registered
                           under the subject (idempotent: an existing identical version is reused;
                           an incompatible one fails here, with the registry's 409)
(default)                  the document's schema / the id of the subject's version equal to it;
                           not registered is an error (production registries are usually managed
                           by CI, as confluent-kafka's ``auto.register.schemas=false``)
=========================  =====================================================================

The subject follows ``schema.subject.strategy`` (else the binding's ``schemaLookupStrategy``, else
``TopicNameStrategy``). For AWS Glue, whose schemas have names rather than subjects, the default
schema name is the topic (as the AWS serializer names them).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import re
from typing import Any

from wireformat import Framing

from connector.decode import schema_format
from connector.errors import ConfigError

__all__ = ["ResolvedSchema", "record_name", "resolve_schema"]

log = logging.getLogger("asyncapi_kafka")

_VERSIONS_SCANNED = 50  # default mode: how many recent versions may match the document's schema


@dataclasses.dataclass(frozen=True)
class ResolvedSchema:
    """The schema to encode with (document SchemaSpec or registry Schema) and the wire id."""

    schema: Any              # the document's SchemaSpec or the registry's Schema; None: bytes
    wire_id: int | str | None  # int, or UUID text for GUID framings and Glue; None for framing none
    subject: str | None = None
    how: str = "document"

    def describe(self) -> str:
        where = f" under subject {self.subject!r}" if self.subject else ""
        return f"schema id {self.wire_id}{where} ({self.how})"


def record_name(spec) -> str | None:
    """Fully qualified record name of a schema (Avro ``namespace.name``, Protobuf ``package.Message``,
    JSON Schema ``title``), for the record subject strategies."""
    fmt = schema_format(spec)
    text = getattr(spec, "text", "") or ""
    if fmt.startswith("proto"):
        pkg = re.search(r"^\s*package\s+([\w.]+)\s*;", text, re.MULTILINE)
        name = getattr(spec, "message_name", None)
        if not name:
            m = re.search(r"^\s*message\s+(\w+)", text, re.MULTILINE)
            name = m.group(1) if m else None
        if name and "." not in name and pkg:
            return f"{pkg.group(1)}.{name}"
        return name
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    if fmt.startswith("json"):
        return doc.get("title")
    name, ns = doc.get("name"), doc.get("namespace")
    if isinstance(name, str) and "." not in name and isinstance(ns, str) and ns:
        return f"{ns}.{name}"
    return name if isinstance(name, str) else None


def _canonical(spec) -> str:
    """Comparable text: JSON re-serialized with sorted keys, .proto with whitespace squeezed."""
    text = getattr(spec, "text", "") or ""
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return " ".join(text.split())


def _subject(opts, plan, topic: str | None, spec, is_key: bool, vendor: str | None) -> str:
    from registry import subject_name

    explicit = opts.subject_strategy
    if vendor == "aws-glue" and not explicit:
        if topic is None:
            raise ConfigError("the Glue schema name defaults to the topic, and this write's topic varies by "
                              "row: set 'use.schema.id' or 'schema.subject.strategy'")
        return topic
    strategy = explicit or (plan.key_schema_lookup_strategy if is_key else plan.schema_lookup_strategy) \
        or "TopicNameStrategy"
    name = record_name(spec) if spec is not None else None
    try:
        return subject_name(strategy, topic or "", name, is_key)
    except Exception as e:
        raise ConfigError(f"cannot name the registry subject ({strategy}): {e}") from e


def _wire_id(schema, framing: str, given=None):
    if Framing(framing).has_guid:
        if schema.guid is None:
            raise ConfigError(f"framing {framing!r} frames with the schema's GUID, and the registry gave none "
                              f"for {schema!r}")
        return schema.guid
    ident = given if given is not None else schema.id
    if ident is None:
        raise ConfigError(f"the registry gave no schema id for {schema!r}")
    return int(ident)


def resolve_schema(opts, plan, framing: str, registry_config, spec, *, topic: str | None,
                   is_key: bool = False) -> ResolvedSchema:
    """Resolve the schema and wire id of a write (see the module table).

    ``spec`` is the document's schema (may be None when the registry provides it); ``topic`` the
    one topic written, or None when rows choose their topics.

    Raises
    ------
    ConfigError
        Nothing to encode with, no registry for a registry framing, a mode this vendor cannot do,
        or the document's schema is not registered (default mode).
    registry.IncompatibleSchemaError, registry.InvalidSchemaError
        ``auto.register.schemas`` and the registry refuses the schema (409 / 422).
    """
    if framing == "none":
        if opts.use_schema_id is not None or opts.use_latest_version or opts.auto_register:
            raise ConfigError("framing 'none' carries no schema id, so 'use.schema.id', 'use.latest.version' "
                              "and 'auto.register.schemas' do not apply (set a registry framing)")
        if spec is None:
            return ResolvedSchema(None, None)
        return ResolvedSchema(spec, None)
    if registry_config is None:
        raise ConfigError(f"framing {framing!r} needs a schema registry: set 'schema.registry.url' or the "
                          "server binding's schemaRegistryUrl (or wireFormat=none)")
    from registry import client_for

    client = client_for(registry_config)
    vendor: str | None = str(registry_config.vendor).lower() or None
    if vendor in ("glue",):
        vendor = "aws-glue"
    what = "key" if is_key else "value"

    if opts.use_schema_id is not None and not is_key:
        sid = opts.use_schema_id
        if "-" in sid:  # a UUID
            if not Framing(framing).has_guid:
                raise ConfigError(f"'use.schema.id' {sid} is a UUID but framing {framing!r} frames integer ids")
            schema = client.get_schema_by_guid(sid)
            return ResolvedSchema(schema, schema.guid or sid, how="use.schema.id")
        if Framing(framing).id_kind == "global":
            schema = client.get_schema_by_global_id(int(sid))
        elif Framing(framing).id_kind == "content":
            schema = client.get_schema_by_content_id(int(sid))
        else:
            schema = client.get_schema_by_id(int(sid))
        return ResolvedSchema(schema, _wire_id(schema, framing, int(sid)), how="use.schema.id")

    if Framing(framing).id_kind == "global":
        raise ConfigError(f"framing {framing!r} frames Apicurio global ids, which the Confluent-compatible API "
                          "this sink registers and looks up through does not return: set 'use.schema.id' to "
                          "the artifact version's global id (or use apicurio-new / header-apicurio-content)")
    if spec is None and not opts.use_latest_version:
        raise ConfigError(f"the channel's message has no {what} schema in the document: set "
                          "'use.latest.version=true' or 'use.schema.id' to write with a registered schema")
    subject = _subject(opts, plan, topic, spec, is_key, vendor)
    if topic is None and subject.endswith(("-key", "-value")) and not opts.subject_strategy:
        raise ConfigError("rows of this write choose their topics, so TopicNameStrategy gives no single "
                          "subject: set 'topic', 'channel.param.*', 'use.schema.id', or a record "
                          "'schema.subject.strategy'")

    if opts.use_latest_version:
        schema = client.get_latest(subject)
        return ResolvedSchema(schema, _wire_id(schema, framing), subject, "use.latest.version")

    if opts.auto_register:
        register = getattr(client, "register_schema", None)
        if register is None:
            raise ConfigError(f"'auto.register.schemas' is not supported for the {vendor or 'configured'} "
                              "registry: register the schema first and write with 'use.latest.version' "
                              "or 'use.schema.id'")
        sid = register(subject, spec, normalize=opts.normalize_schemas)
        wire = sid
        if vendor == "aws-glue":  # Glue answers the schema version id (a UUID) itself
            if framing != "glue":
                raise ConfigError(f"an AWS Glue registry names schemas by version UUID; framing {framing!r} "
                                  "cannot carry it (use the glue framing)")
        elif Framing(framing).has_guid:
            wire = client.get_schema_by_id(sid).guid
        log.info("registered the document's %s schema under %s: id %s", what, subject, sid)
        return ResolvedSchema(spec, wire, subject, "auto.register.schemas")

    # Default: the document's schema must already be registered under the subject.
    want = _canonical(spec)
    try:
        versions = client.list_versions(subject)
    except Exception as e:
        from registry import SchemaNotFound

        if isinstance(e, SchemaNotFound):
            raise ConfigError(f"subject {subject!r} does not exist in the registry: register the document's "
                              f"{what} schema, or set 'auto.register.schemas=true'") from e
        raise
    for version in sorted(versions, reverse=True)[:_VERSIONS_SCANNED]:
        schema = client.get_version(subject, version)
        if _canonical(schema) == want:
            return ResolvedSchema(spec, _wire_id(schema, framing), subject, f"registered version {version}")
    raise ConfigError(f"the document's {what} schema is not registered under subject {subject!r} (versions "
                      f"{versions[-5:]} differ): register it, set 'auto.register.schemas=true', or write "
                      "with 'use.latest.version=true'")
