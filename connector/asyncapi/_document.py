"""``load_document`` and the summaries used by the ``inspect`` command."""
from __future__ import annotations

import os

from connector.errors import AsyncApiDocumentError

from connector.asyncapi._loader import DEFAULT_MAX_BYTES, parse_text, read_file_text, to_plain
from connector.asyncapi._model import AsyncApiDocument
from connector.asyncapi._params import expand_address
from connector.asyncapi._refs import DEFAULT_MAX_REF_DEPTH, RefResolver
from connector.asyncapi._schema import describe_format


def _looks_like_path(text: str) -> bool:
    if "\n" in text or len(text) > 4096 or text.lstrip()[:1] in ("{", "["):
        return False
    return os.path.exists(text) or text.lower().endswith((".yml", ".yaml", ".json"))


def load_document(source, *, base_dir: str | os.PathLike | None = None, allow_remote_refs: bool = False,
                  max_bytes: int = DEFAULT_MAX_BYTES, max_ref_depth: int = DEFAULT_MAX_REF_DEPTH,
                  ref_root: str | os.PathLike | None = None) -> AsyncApiDocument:
    """Load and validate an AsyncAPI 2.x or 3.x document.

    Parameters
    ----------
    source : str, os.PathLike, bytes or dict
        A file path, YAML/JSON text, or an already parsed mapping (copied).
    base_dir : str, optional
        Directory the document's own relative file ``$ref``\\s are resolved against
        (default: the file's directory; text and dict sources have none unless given).
        Refs inside referenced files resolve from those files.
    ref_root : str, optional
        Directory file ``$ref``\\s may reach (default: ``base_dir``). It must contain
        ``base_dir``: it only widens the sandbox, e.g. to the repository root for
        documents that share bindings through ``../``. Nothing above it is read.
    allow_remote_refs : bool, default False
        Fetch ``http(s)://`` ``$ref``\\s (TLS verified, timeout, size cap, link-local and
        metadata addresses refused). Without it such refs raise, naming the ref and path.
    max_bytes : int, default 10 MiB
        Cap on the document and on every referenced file.
    max_ref_depth : int, default 32
        Longest ``$ref`` chain.

    Returns
    -------
    AsyncApiDocument
        Servers, channels, operations and bindings are resolved and validated now;
        payload schemas are resolved by :func:`plan_read` (so a remote schema only fails
        the channels that need it).

    Raises
    ------
    AsyncApiDocumentError
        Syntax errors, caps, invalid bindings, broken ``$ref``\\s, with the document path.

    Examples
    --------
    >>> import importlib.resources
    >>> doc = load_document(str(importlib.resources.files("connector") / "examples" / "shop.yaml"))
    >>> list(doc.channels)
    ['orders', 'payments', 'shipments', 'stock']
    """
    path = None
    if isinstance(source, dict):
        raw = to_plain(source, what="document")
    elif isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        path = os.path.abspath(os.fspath(source))
        data = read_file_text(path, max_bytes=max_bytes)
        raw = parse_text(data, what=path, max_bytes=max_bytes)
        if base_dir is None:
            base_dir = os.path.dirname(path)
    elif isinstance(source, (str, bytes)):
        raw = parse_text(source, what="document", max_bytes=max_bytes)
    else:
        raise TypeError(f"source must be a path, text or dict, not {type(source).__name__}")
    if not isinstance(raw, dict):
        raise AsyncApiDocumentError("an AsyncAPI document must be a mapping at the top level"
                                    + ("" if path else " (or a path to an existing file)"))
    resolver = RefResolver(raw, base_dir=os.fspath(base_dir) if base_dir is not None else None,
                           allow_remote_refs=allow_remote_refs, max_bytes=max_bytes, max_ref_depth=max_ref_depth,
                           ref_root=os.fspath(ref_root) if ref_root is not None else None, path=path)
    return AsyncApiDocument(raw, resolver, path)


def _as_document(doc) -> AsyncApiDocument:
    return doc if isinstance(doc, AsyncApiDocument) else load_document(doc)


def list_channels(doc) -> list[dict]:
    """One summary dict per channel: topic or pattern, parameters, servers, messages, operations.

    Nothing remote is fetched; a message whose format needs a remote ref says ``"unresolved"``.
    """
    doc = _as_document(doc)
    out = []
    for ch in doc.channels.values():
        address = ch.kafka.topic if ch.kafka is not None and ch.kafka.topic else ch.address
        topic = pattern = None
        error = None
        if address is not None:
            try:
                topics, pattern, _, _, _ = expand_address(address, ch.parameters, None, ch.path)
                topic = topics[0] if topics else None
            except AsyncApiDocumentError as e:
                error = str(e)
        out.append({
            "name": ch.name, "address": ch.address, "topic": topic, "topic_pattern": pattern,
            "parameters": {p: {"enum": list(v.enum) if v.enum else None, "pattern": v.pattern,
                               "default": v.default} for p, v in ch.parameters.items()},
            "servers": list(ch.servers) if ch.servers is not None else list(doc.servers),
            "messages": [{"name": k, "title": m.title, "content_type": m.content_type,
                          "format": describe_format(doc, m),
                          "schema_id_location": m.kafka.schema_id_location if m.kafka else None}
                         for k, m in ch.messages.items()],
            "operations": [{"name": o.name, "action": o.action} for o in doc.operations.values()
                           if o.channel == ch.name],
            "kafka": None if ch.kafka is None else {
                "partitions": ch.kafka.partitions, "replicas": ch.kafka.replicas,
                "topic_configuration": dict(ch.kafka.topic_configuration)},
            "pulsar": ch.pulsar is not None,
            **({"error": error} if error else {}),
        })
    return out


def describe(doc) -> dict:
    """A JSON-serialisable summary: version, title, servers (with registry and security), channels."""
    doc = _as_document(doc)
    servers = []
    for s in doc.servers.values():
        servers.append({
            "name": s.name, "protocol": s.protocol, "host": s.host, "kafka": s.is_kafka,
            "registry_url": s.kafka.schema_registry_url if s.kafka else None,
            "registry_vendor": s.kafka.vendor.value if s.kafka and s.kafka.vendor else None,
            "security": [[{"name": sc.name, "type": sc.type} for sc in alt] for alt in s.security],
        })
    return {"asyncapi": doc.version, "title": doc.title, "source": doc.source, "servers": servers,
            "channels": list_channels(doc)}
