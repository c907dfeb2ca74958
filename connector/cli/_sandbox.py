"""``asyncapi-kafka sandbox DOC``: try any AsyncAPI document on this machine, one command.

Starts the embedded Kafka (librdkafka's mock cluster, a real Kafka protocol peer on loopback)
and the embedded schema registry, then for every channel: creates its topic with the channel
binding's partitions, registers the payload schemas under the subjects the document's lookup
strategy names, produces example messages (the document's message ``examples``, otherwise
values generated from the schemas) framed the way the bindings say, with the type header the
document names for each message (``__TypeId__``, ``ce_type``... from its ``headers`` schema, see
``docs/multi-type-channels.md``), and prints the exact
``spark.read`` options that read them back. It runs until interrupted (Ctrl-C or SIGTERM).

Only the runtime dependencies are needed (no ``[test]`` extra). A channel that cannot be
produced (no address, a schema that cannot be resolved offline, a framing the sandbox cannot
write) is listed with the reason and skipped; the others still run. Addresses with
``{parameters}`` get one concrete topic (each parameter's first enum value, else its default,
else ``sandbox``) and the options pin it with ``channel.param.*``.

Each channel is also printed as one machine-readable line, ``SANDBOX {json}``, with the
options, the topic and the number of messages produced.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import tempfile
import threading
import uuid

__all__ = ["Sandbox", "add_sandbox_arguments", "sandbox_command"]


def add_sandbox_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``sandbox`` arguments on ``parser`` (a sub-command parser)."""
    parser.add_argument("document", metavar="DOC", help="AsyncAPI 2.x/3.x document (YAML or JSON file)")
    parser.add_argument("--messages", type=int, default=10, metavar="N",
                        help="messages per channel and message type (default 10)")
    parser.add_argument("--allow-remote-refs", action="store_true",
                        help="fetch http(s) $refs (TLS verified, size-capped); off by default")
    parser.add_argument("--no-wait", action="store_true", help="exit once everything is printed (for scripts)")


def _param_value(param) -> str:
    if param is not None and param.enum:
        return str(param.enum[0])
    if param is not None and param.default is not None:
        return str(param.default)
    return "sandbox"


def _message_examples(doc, channel, message_key: str) -> list:
    """The message's ``examples[].payload`` values from the raw document (best effort)."""
    msg = channel.messages.get(message_key)
    if msg is None:
        return []
    node = _walk(doc.raw, msg.path)
    if not isinstance(node, dict) or not isinstance(node.get("examples"), list):
        return []
    return [e["payload"] for e in node["examples"] if isinstance(e, dict) and "payload" in e]


def _walk(node, path: str):
    """Follow a dotted document path whose keys may themselves contain dots."""
    rest = path
    while rest:
        if not isinstance(node, dict):
            return None
        match = max((k for k in node if isinstance(k, str) and (rest == k or rest.startswith(k + "."))),
                    key=len, default=None)
        if match is None:
            return None
        node, rest = node[match], rest[len(match) + 1:]
    return node


class Sandbox:
    """The embedded peers and what was produced; ``close()`` stops everything.

    Examples
    --------
    >>> with Sandbox("examples/shop.yaml", messages=3) as box:   # doctest: +SKIP
    ...     [c["channel"] for c in box.channels if c["messages"]]
    ['orders', 'payments', 'shipments', 'stock']
    """

    def __init__(self, document: str, *, messages: int = 10, allow_remote_refs: bool = False):
        from connector.testing import EmbeddedKafka, RegistryServer

        self.document = os.path.abspath(document)
        self.messages = int(messages)
        self.allow_remote_refs = allow_remote_refs
        self.workdir = tempfile.mkdtemp(prefix="asyncapi-kafka-sandbox-")
        self.glue_dir = os.path.join(self.workdir, "glue-snapshot")
        self.kafka = EmbeddedKafka()
        self.registry = RegistryServer().start()
        self.channels: list[dict] = []

    def __enter__(self) -> Sandbox:
        self.populate()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        import shutil

        self.registry.stop()
        self.kafka.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def populate(self) -> list[dict]:
        from connector.asyncapi import load_document

        doc = load_document(self.document, allow_remote_refs=self.allow_remote_refs)
        for name, ch in doc.channels.items():
            report = {"channel": name, "topic": None, "partitions": None, "messages": 0, "options": None,
                      "skipped": None}
            try:
                self._channel(doc, name, ch, report)
            except Exception as e:  # noqa: BLE001 - one channel must not stop the others
                report["skipped"] = f"{type(e).__name__}: {e}"
            self.channels.append(report)
        self.kafka.flush()
        return self.channels

    def _channel(self, doc, name: str, ch, report: dict) -> None:
        from connector.asyncapi import plan_read
        from connector.cli._inspect import _server_choice

        if ch.address is None:
            report["skipped"] = "the channel has no address (its topic is only known at run time)"
            return
        server, _ = _server_choice(doc, ch, None)
        names = re.findall(r"{([^}]+)}", ch.address)
        params = {p: _param_value(ch.parameters.get(p)) for p in names}
        plan = plan_read(doc, channel=name, server=server, params=params or None, require_schemas=False)
        topic = plan.topics[0] if plan.topics else ch.address.format(**params)
        if plan.unresolved_schemas:
            # The topic still exists as the binding says; there is nothing to encode with.
            report.update(topic=topic, partitions=len(self.kafka.create_topic(topic, plan.partitions or None)))
            where, why = plan.unresolved_schemas[0]
            report["skipped"] = f"schema at {where} not resolved: {why}"
            return
        framing = plan.framing().value
        options = {"asyncapi": self.document, "channel": name,
                   "kafka.bootstrap.servers": self.kafka.bootstrap_servers,
                   "kafka.security.protocol": "PLAINTEXT"}
        if server is not None and len([n for n in (ch.servers or doc.servers) if doc.servers[n].is_kafka]) > 1:
            options["server"] = server
        for p, v in params.items():
            options[f"channel.param.{p}"] = v
        if framing == "glue":
            options["schema.registry.url"] = "file://" + self.glue_dir
        elif framing != "none":
            options["schema.registry.url"] = self.registry.url
        report.update(topic=topic, framing=framing,
                      partitions=len(self.kafka.create_topic(topic, plan.partitions or None)))
        produced = 0
        for m in plan.value_messages:
            if m.payload is None:
                continue
            produced += self._produce(doc, ch, plan, topic, framing, m)
        report.update(messages=produced, options=options)

    def _produce(self, doc, ch, plan, topic: str, framing: str, m) -> int:
        from wireformat import Framing, encode_frame, header_for_id

        from connector.cli._sandbox_data import serialize_examples
        from connector.formats import payload_format
        from connector.schema import SchemaRequest, subject_for

        payloads, proto = serialize_examples(m.payload, self.messages, _message_examples(doc, ch, m.name))
        fr = Framing(framing)
        frames: list[tuple[bytes, list[tuple[str, bytes]] | None]]  # (value, headers carrying the id)
        if fr is Framing.NONE:
            frames = [(p, None) for p in payloads]
        else:
            schema_type = payload_format(m.payload.format).registry_type.value
            indexes = proto["message_indexes"] if proto else None
            if fr is Framing.GLUE:
                guid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"asyncapi-kafka-sandbox/{m.payload.text}"))
                os.makedirs(os.path.join(self.glue_dir, "guids"), exist_ok=True)
                with open(os.path.join(self.glue_dir, "guids", f"{guid}.json"), "w", encoding="utf-8") as f:
                    json.dump({"schemaType": schema_type, "schema": m.payload.text, "guid": guid}, f)
                frames = [(encode_frame(fr, guid, p), None) for p in payloads]
            else:
                subject = subject_for(SchemaRequest(), plan, m.payload, topic)
                sid = self.registry.register(subject, m.payload.text, schema_type)
                sid_for_frame: int | str  # a GUID for GUID framings, else a numeric id
                if fr.has_guid:
                    sid_for_frame = self.registry.guid_of(sid)
                elif fr.id_kind == "global":
                    sid_for_frame = self.registry.global_id_of(subject, 1)
                else:
                    sid_for_frame = sid
                if fr.in_header:
                    header = header_for_id(fr, sid_for_frame, message_indexes=indexes)
                    frames = [(p, [header]) for p in payloads]
                else:
                    kw = {"message_indexes": indexes} if indexes and fr.carries_protobuf_indexes else {}
                    frames = [(encode_frame(fr, sid_for_frame, p, **kw), None) for p in payloads]
        typed = plan.routing.header_for(m.name) if plan.routing is not None else None
        for i, (value, headers) in enumerate(frames):
            if typed is not None:  # the type header the document names, as its producers write it
                headers = (headers or []) + [(typed[0], typed[1].encode())]
            self.kafka.produce(topic, value, key=f"key-{i}".encode(), headers=headers)
        return len(frames)


def render(box: Sandbox) -> str:
    lines = [f"Sandbox for {box.document}",
             f"  Kafka (embedded)     {box.kafka.bootstrap_servers}",
             f"  schema registry      {box.registry.url}", ""]
    for c in box.channels:
        if c["skipped"]:
            lines.append(f"  {c['channel']}: skipped — {c['skipped']}")
            continue
        lines.append(f"  {c['channel']}: {c['messages']} messages on topic {c['topic']} "
                     f"({c['partitions']} partitions, framing {c['framing']})")
        lines.append('    df = (spark.read.format("asyncapi-kafka")')
        for k, v in c["options"].items():
            lines.append(f"          .option({k!r}, {v!r})")
        lines.append("          .load())")
        peek = [f"asyncapi-kafka peek {shlex.quote(c['options']['asyncapi'])} --channel {shlex.quote(c['channel'])}"]
        peek += [f"-o {shlex.quote(f'{k}={v}')}" for k, v in c["options"].items() if k not in ("asyncapi", "channel")]
        lines.append("    without Spark: " + " ".join(peek))
        lines.append("")
    lines += ["SPARK: a session whose Python workers run this Python and start with the connector imported:",
              "    import os, sys",
              "    from pyspark.sql import SparkSession",
              '    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)',
              '    spark = (SparkSession.builder.config("spark.python.daemon.module", "connector.spark.daemon")',
              "             .getOrCreate())",
              "  The source is found by name once the package is installed; from a checkout, call "
              "spark.dataSource.register(connector.spark.AsyncApiKafkaDataSource) first."]
    return "\n".join(lines)


def _start_server():
    """``asyncapi-kafka serve`` for as long as the sandbox runs, so the peek commands printed
    above run in a warm process (None when it does not start, or one already serves)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "connector", "serve", "--idle", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("serving peek at "):
        proc.wait(30)
        return None
    print("peek: commands run in a warm process while the sandbox runs (asyncapi-kafka serve)", flush=True)
    return proc


def sandbox_command(args: argparse.Namespace) -> int:
    """Run the sandbox until interrupted; returns the exit code."""
    from connector.errors import AsyncApiKafkaError

    stop = threading.Event()

    def _on_signal(signum, frame):
        stop.set()

    previous = signal.signal(signal.SIGTERM, _on_signal)
    try:
        with Sandbox(args.document, messages=args.messages, allow_remote_refs=args.allow_remote_refs) as box:
            print(render(box), flush=True)
            for c in box.channels:
                print("SANDBOX " + json.dumps(c, sort_keys=True), flush=True)
            if not any(c["messages"] for c in box.channels):
                print("nothing could be produced for this document (see the reasons above)", flush=True)
            if args.no_wait:
                return 0
            server = _start_server()
            try:  # READY inside the try: a Ctrl-C right after it is a stop, not a traceback
                print("READY — press Ctrl-C to stop", flush=True)
                while not stop.wait(1.0):
                    pass
            except KeyboardInterrupt:
                pass
            finally:
                if server is not None:
                    server.terminate()
                    server.wait(30)
            print("stopping", flush=True)
        return 0
    except (AsyncApiKafkaError, OSError, ValueError) as e:
        print(f"error: {e}", flush=True)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
