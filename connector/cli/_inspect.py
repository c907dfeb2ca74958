"""``asyncapi-kafka inspect``: what a document says, in the terms a Spark reader will see.

For each channel: the topic (or the regex of a templated address and its parameters), the
channel binding (partitions, replicas, topicConfiguration), every message's payload format
and the Spark schema its payload decodes to, how a read tells several message types apart
(each record's schema id, a type header and its values, validation; or why ``load()`` refuses)
and the type header a write puts on each message's records, the chain of files that schema came from (when
``$ref``\\s spread it over several), the key schema, the wire format (framing), the subject
lookup strategy and the consumer group id. Nothing is fetched from the network
unless ``--allow-remote-refs`` is given; a schema that cannot be resolved is shown with the
reason instead of its Spark type, and never stops the listing of the other channels.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from registry import redact_servers, redact_url

from connector.asyncapi import describe, plan_read
from connector.cli._common import add_ref_root_argument, open_document
from connector.schema import SchemaRequest, subject_for
from connector.cli._table import render_table, wrap_type
from connector.errors import AsyncApiKafkaError

__all__ = ["add_inspect_arguments", "add_ref_root_argument", "inspect_command", "inspect_report", "render_inspect", "spark_type_of",
           "open_document"]

_WIDTH = 100


def add_inspect_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``inspect`` arguments on ``parser`` (a sub-command parser)."""
    parser.add_argument("document", metavar="DOC", help="AsyncAPI 2.x/3.x document (YAML or JSON file)")
    parser.add_argument("--channel", metavar="NAME", help="only this channel (key, address or topic)")
    parser.add_argument("--server", metavar="NAME",
                        help="server whose registry and bindings apply (default: the channel's first "
                             "Kafka server)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--allow-remote-refs", action="store_true",
                        help="fetch http(s) $refs (TLS verified, size-capped); off by default")
    add_ref_root_argument(parser)


def _err(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def spark_type_of(spec) -> str:
    """The Spark ``simpleString`` of the type a payload/key schema decodes to.

    Raises whatever the decoder raises for a schema it cannot map (callers catch it per message).
    """
    # Imported here: the decoder stack (and pyspark) is only needed for this column, and a
    # broken schema module must not stop the rest of the report.
    from pyspark.sql.pandas.types import from_arrow_type

    from connector.schema import decoder_for
    return from_arrow_type(decoder_for(spec).arrow_type).simpleString()


def _schema_entry(spec) -> dict:
    entry = {"format": spec.format, "schema_format": spec.schema_format, "spark_type": None, "error": None,
             "files": list(getattr(spec, "files", ())), "notes": list(getattr(spec, "notes", ()))}
    try:
        entry["spark_type"] = spark_type_of(spec)
    except Exception as e:  # noqa: BLE001 - one bad schema must not hide the others
        entry["error"] = f"{type(e).__name__}: {e}"
    return entry


def _server_choice(doc, ch, server: str | None) -> tuple[str | None, str]:
    """The server inspect describes the channel with, and why (shown as ``server_reason``).

    A read makes the same choice except with several Kafka servers, where it asks for
    ``server=`` instead of taking the first: the reason says so."""
    if server is not None:
        return server, "given with --server"
    listed = ch.servers is not None
    names = list(ch.servers) if listed else list(doc.servers)
    kafka = [n for n in names if doc.servers[n].is_kafka]
    where = "listed by the channel" if listed else "in the document"
    if not kafka:
        return None, f"no Kafka server {where}"
    if len(kafka) == 1:
        return kafka[0], f"the only Kafka server {where}"
    return kafka[0], (f"the first of {len(kafka)} Kafka servers {where} ({', '.join(kafka)}); "
                      f"a read must choose one with .option(\"server\", ...)")


def _channel_report(doc, summary: dict, server: str | None) -> dict:
    ch = doc.channels[summary["name"]]
    kafka = summary.get("kafka") or {}
    out = {
        "name": ch.name, "address": ch.address, "topic": summary.get("topic"),
        "topic_pattern": summary.get("topic_pattern"), "parameters": summary.get("parameters") or {},
        "servers": summary.get("servers") or [], "server": None, "server_reason": None,
        "partitions": kafka.get("partitions"), "replicas": kafka.get("replicas"),
        "topic_configuration": kafka.get("topic_configuration") or {},
        "operations": summary.get("operations") or [],
        "framing": None, "schema_id_location": None, "lookup_strategy": None, "group_id": None,
        "client_id": None, "key": None, "messages": [], "error": summary.get("error"),
    }
    msg_paths = {k: m.path for k, m in ch.messages.items()}
    chosen, out["server_reason"] = _server_choice(doc, ch, server)
    try:
        plan = plan_read(doc, channel=ch.name, server=chosen,
                         require_schemas=False)
    except (AsyncApiKafkaError, ValueError) as e:
        out["error"] = str(e)
        out["messages"] = [{"name": m["name"], "title": m["title"], "content_type": m["content_type"],
                            "format": m["format"], "payload": None, "subject": None, "error": None}
                           for m in summary.get("messages") or []]
        return out
    out.update(server=plan.server, topic=plan.topics[0] if len(plan.topics) == 1 else out["topic"],
               schema_id_location=plan.schema_id_location, lookup_strategy=plan.schema_lookup_strategy,
               group_id=plan.group_id, client_id=plan.client_id)
    try:
        out["framing"] = plan.framing().value
    except (AsyncApiKafkaError, ValueError) as e:
        out["framing_error"] = str(e)
    if plan.key_schema is not None:
        out["key"] = _schema_entry(plan.key_schema)
    formats = {m["name"]: m["format"] for m in summary.get("messages") or []}
    for m in plan.value_messages:
        entry = {"name": m.name, "title": m.title, "content_type": m.content_type,
                 "format": formats.get(m.name), "payload": None, "subject": None, "error": None}
        if m.payload is not None:
            entry["payload"] = _schema_entry(m.payload)
            entry["format"] = m.payload.format
            if plan.topics and plan.registry_url:
                try:
                    entry["subject"] = subject_for(SchemaRequest(), plan, m.payload, plan.topics[0])
                except (AsyncApiKafkaError, ValueError):
                    entry["subject"] = None
        else:
            prefix = msg_paths.get(m.name, "\0") + ".payload"
            reasons = [r for p, r in plan.unresolved_schemas if p.startswith(prefix)]
            entry["error"] = reasons[0] if reasons else None
        out["messages"].append(entry)
    out["routing"] = _routing_entry(plan, out.get("framing"), out["messages"])
    return out


def _routing_entry(plan, framing: str | None, messages: list[dict]) -> dict | None:
    """How a read tells the channel's message types apart (None: one message), and the type header
    a write puts on each message's records (``type_header`` of each message entry)."""
    routing = plan.routing
    for m in messages:
        typed = routing.header_for(m["name"]) if routing is not None else None
        m["type_header"] = list(typed) if typed else None
    decodable = [m for m in plan.value_messages if m.payload is not None]
    if len(decodable) < 2 or routing is None:
        return None
    if framing is None:
        return {"by": None, "headers": [], "otherwise": None, "error": "the framing is unknown"}
    if framing != "none":
        return {"by": "registry", "headers": [], "otherwise": None, "error": None}
    entry = {"by": "header" if routing.documented else "validation", "headers": _header_entries(routing),
             "otherwise": "validation", "error": None}
    try:  # the schema layer's own decision (Avro and Protobuf cannot be tried)
        from wireformat import Framing

        from connector.schema import value_decoder

        dec = value_decoder(SchemaRequest(), plan=plan, registry=None, framing=Framing.NONE)
    except (AsyncApiKafkaError, ValueError) as e:
        entry.update(by="refused", otherwise=None, error=str(e))
        return entry
    applied = getattr(dec, "routing", None)
    if applied is not None:  # the table the read applies (payload record names too)
        entry["headers"] = _header_entries(applied)
    if not getattr(dec, "can_try", True):
        entry["otherwise"] = "error"
    return entry


def _header_entries(routing) -> list[dict]:
    out = []
    for h in routing.headers:
        per: dict[str, dict] = {}
        for c in h.claims:
            m = per.setdefault(c.message, {"values": [], "how": c.how})
            m["values"].append(c.value)
        out.append({"name": h.name, "documented": h.documented, "messages": per})
    return out


def inspect_report(doc, *, channel: str | None = None, server: str | None = None) -> dict:
    """The JSON-serialisable report ``inspect`` prints.

    Raises
    ------
    AsyncApiDocumentError
        ``channel`` or ``server`` is not in the document (the message lists the names).
    """
    from connector.errors import AsyncApiDocumentError

    summary = describe(doc)
    channels = summary["channels"]
    if server is not None and server not in doc.servers:
        raise AsyncApiDocumentError(f"no server {server!r} in the document (servers: "
                                    f"{', '.join(doc.servers) or 'none'})", path="servers")
    if channel is not None:
        picked = [c for c in channels if channel in (c["name"], c["address"], c["topic"])]
        if not picked:
            raise AsyncApiDocumentError(f"no channel {channel!r} in the document (channels: "
                                        f"{', '.join(c['name'] for c in channels) or 'none'})", path="channels")
        channels = picked
    servers = []
    for s in summary["servers"]:
        if server is not None and s["name"] != server:
            continue
        srv = doc.servers[s["name"]]
        servers.append({
            "name": s["name"], "protocol": s["protocol"], "kafka": s["kafka"],
            "bootstrap": redact_servers(srv.bootstrap_servers() if s["kafka"] else s["host"]),
            "registry_url": redact_url(s["registry_url"]), "registry_vendor": s["registry_vendor"],
            "security": ["+".join(sc["type"] for sc in alt) for alt in s["security"]],
            "description": srv.description,
        })
    return {"title": summary["title"], "asyncapi": summary["asyncapi"], "source": redact_url(summary["source"]),
            "servers": servers, "channels": [_channel_report(doc, c, server) for c in channels]}


def _kv(label: str, value, indent: int = 4) -> list[str]:
    if value in (None, "", [], {}):
        return []
    return [f"{' ' * indent}{label:<15}{value}"]


def _config_text(tc: dict) -> str:
    return ", ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in tc.items())


def _params_text(params: dict) -> str:
    parts = []
    for name, p in params.items():
        detail = []
        if p.get("enum"):
            detail.append("one of " + "|".join(map(str, p["enum"])))
        if p.get("pattern"):
            detail.append(f"pattern {p['pattern']}")
        if p.get("default") is not None:
            detail.append(f"default {p['default']}")
        parts.append(name + (f" ({'; '.join(detail)})" if detail else ""))
    return ", ".join(parts)


def _prose(text: str, indent: int, hang: int = 2) -> list[str]:
    return textwrap.wrap(text, _WIDTH, initial_indent=" " * indent, subsequent_indent=" " * (indent + hang),
                         break_long_words=False, break_on_hyphens=False)


def _files_lines(entry: dict | None, indent: int) -> list[str]:
    """The chain of files a schema came from, when there is more than the document itself, and how
    its references resolved where the rules leave a choice."""
    files = (entry or {}).get("files") or []
    lines = _prose("from " + " -> ".join(files), indent, 5) if len(files) >= 2 else []
    for note in (entry or {}).get("notes") or ():
        lines += _prose(note, indent, 2)
    return lines


def _schema_lines(entry: dict | None, error: str | None, indent: int) -> list[str]:
    if entry is None:
        if error and "allow_remote_refs" in error:
            error += "; on the command line: --allow-remote-refs"
        return _prose(f"schema not resolved: {error}" if error else "no payload schema (raw bytes)", indent)
    if entry["error"]:
        return _prose(f"cannot map to Spark: {entry['error']}", indent)
    return wrap_type(entry["spark_type"], _WIDTH, indent)


def render_inspect(report: dict) -> str:
    """Readable text for :func:`inspect_report`'s output."""
    lines = [f"{report['title'] or '(untitled)'}  (AsyncAPI {report['asyncapi']})"]
    if report["source"]:
        lines.append(f"  {report['source']}")
    lines += ["", "Servers"]
    if report["servers"]:
        rows = [(s["name"], s["protocol"], s["bootstrap"], s["registry_url"], s["registry_vendor"],
                 ", ".join(s["security"]) or None) for s in report["servers"]]
        lines.append(render_table(rows, ("name", "protocol", "bootstrap", "registry", "vendor", "security")))
    else:
        lines.append("  (none)")
    lines += ["", f"Channels ({len(report['channels'])})"]
    for c in report["channels"]:
        lines += ["", f"  {c['name']}"]
        if c["topic"]:
            lines += _kv("topic", c["topic"])
        elif c["topic_pattern"]:
            lines += _kv("address", c["address"]) + _kv("topic pattern", c["topic_pattern"])
            lines += _kv("parameters", _params_text(c["parameters"]))
        elif c["address"] is None:
            lines += _kv("topic", "(none: the address is null; read it with the option topic=)")
        else:
            lines += _kv("address", c["address"])
            lines += _kv("topic", "(not a legal Kafka topic name; read it with the option topic=)")
        chosen = c["server"] or (", ".join(c["servers"]) if c["servers"] else None)
        if c["server"] and c.get("server_reason"):
            chosen = f"{c['server']} ({c['server_reason']})"
        lines += _kv("server", chosen)
        lines += _kv("partitions", c["partitions"]) + _kv("replicas", c["replicas"])
        lines += _kv("topic config", _config_text(c["topic_configuration"]))
        framing = c["framing"] or (f"? ({c['framing_error']})" if c.get("framing_error") else None)
        if framing and c["schema_id_location"]:
            framing += f" (schema id in {c['schema_id_location']})"
        lines += _kv("framing", framing) + _kv("lookup", c["lookup_strategy"])
        lines += _kv("group id", c["group_id"]) + _kv("client id", c["client_id"])
        if c["key"] is not None:
            key = c["key"]
            text = key["spark_type"] if key["spark_type"] else f"? ({key['error']})"
            lines += _kv("key", f"{text}  [{key['format']}]") + _files_lines(key, 19)
        if c["error"]:
            lines += _prose(f"{'problem':<15}{c['error']}", 4, 15)
        lines += _routing_lines(c.get("routing"))
        for m in c["messages"]:
            head = f"    message {m['name']}  [{m['format'] or '?'}]"
            if m["subject"]:
                head += f"  subject {m['subject']}"
            if m.get("type_header"):
                head += f"  header {m['type_header'][0]}={m['type_header'][1]}"
            lines.append(head)
            lines += _files_lines(m["payload"], 6)
            if not c["error"] or m["payload"] is not None:
                lines += _schema_lines(m["payload"], m["error"], 6)
    return "\n".join(lines)


def _routing_lines(r: dict | None) -> list[str]:
    """``routing`` of a several-message channel: which header and values say each record's type."""
    if r is None:
        return []
    if r["by"] is None:
        return _kv("routing", f"? ({r['error']})")
    if r["by"] == "registry":
        return _kv("routing", "by each record's schema id: the registry's writer schema names its message")
    if r["by"] == "refused":
        return _prose(f"{'routing':<15}refused: {r['error']}", 4, 15)
    lines: list[str] = []
    for h in (h for h in r["headers"] if h["documented"]):
        lines += _kv("routing" if not lines else "", f"by header {h['name']}:")
        for message, v in h["messages"].items():
            how = "its names" if v["how"] == "name" else v["how"]
            lines += _prose(f"{', '.join(map(repr, v['values']))} ({how}) -> {message}", 21, 4)
    guessed = [h["name"] for h in r["headers"] if not h["documented"]]
    if guessed:
        lines += _prose(f"{'routing' if not lines else '':<15}then {', '.join(guessed)} (not in the document) when "
                        "the value is a message's name", 4, 15)
    tail = ("the one message whose schema accepts the record; none or several is a row error"
            if r["otherwise"] == "validation" else "a row error (these payloads cannot be tried against each schema)")
    lines += _prose(f"{'':<15}records without a type header: {tail}", 4, 15)
    return lines


def inspect_command(args: argparse.Namespace) -> int:
    """Run ``inspect``: 0 on success, 1 when no channel can be read, 2 when the document or a
    name given is wrong."""
    doc = open_document(args.document, getattr(args, "allow_remote_refs", False), getattr(args, "ref_root", None))
    if doc is None:
        return 2
    try:
        report = inspect_report(doc, channel=getattr(args, "channel", None), server=getattr(args, "server", None))
    except (AsyncApiKafkaError, ValueError) as e:
        _err(str(e))
        return 2
    readable = [c for c in report["channels"] if not c["error"]]
    report["readable_channels"] = [c["name"] for c in readable]
    if getattr(args, "json", False):
        print(json.dumps(report, indent=2, default=str))
    else:
        print(render_inspect(report))
    if not readable:
        # Scripts gate on this: a document none of whose channels can be planned is not usable.
        _err("no channel of this document can be read as it stands (see the problems above)")
        return 1
    return 0
