"""Kafka (0.1.0–0.5.0) and Pulsar (0.1.0) binding objects, parsed and validated.

Kafka field names did not change between binding versions 0.1.0 and 0.5.0 (fields were
only added), so one parser serves all. Objects the spec closes ("MUST contain only the
properties defined above") refuse unknown keys unless they are ``x-`` extensions or the
``bindingVersion`` is newer than the versions known here; extensions are kept in
``extensions`` for callers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from registry import Vendor

from connector.errors import AsyncApiDocumentError

from connector.asyncapi._refs import join_path

_KNOWN_KAFKA_VERSIONS = {None, "latest", "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0"}
_KNOWN_PULSAR_VERSIONS = {None, "latest", "0.1.0"}
SCHEMA_ID_LOCATIONS = ("payload", "header")


@dataclass(frozen=True)
class KafkaServerBinding:
    schema_registry_url: str | None = None
    schema_registry_vendor: str | None = None    # as the document spells it
    binding_version: str | None = None
    extensions: dict = field(default_factory=dict, compare=False)
    vendor: Vendor | None = None                 # the vendor it names (None: unset or unknown)


@dataclass(frozen=True)
class KafkaChannelBinding:
    topic: str | None = None
    partitions: int | None = None
    replicas: int | None = None
    topic_configuration: dict = field(default_factory=dict, compare=False)
    binding_version: str | None = None
    extensions: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class KafkaOperationBinding:
    group_id: str | None = None
    client_id: str | None = None
    binding_version: str | None = None
    extensions: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class KafkaMessageBinding:
    key: object = None  # raw schema node (may hold $refs; resolved when planning)
    schema_id_location: str | None = None
    schema_id_payload_encoding: str | None = None
    schema_lookup_strategy: str | None = None
    binding_version: str | None = None
    extensions: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class PulsarServerBinding:
    tenant: str = "public"
    binding_version: str | None = None


@dataclass(frozen=True)
class PulsarChannelBinding:
    namespace: str = "public"
    persistence: str = "persistent"
    compaction: int | None = None
    geo_replication: tuple[str, ...] = ()
    retention_time: int | None = None
    retention_size: int | None = None
    ttl: int | None = None
    deduplication: bool | None = None
    binding_version: str | None = None


# -- helpers -----------------------------------------------------------------------------
def _version(obj: dict, path: str) -> str | None:
    v = obj.get("bindingVersion")
    if v is None:
        return None
    if not isinstance(v, str):
        raise AsyncApiDocumentError("bindingVersion must be a string", path=join_path(path, "bindingVersion"))
    return v


def _check_keys(obj: dict, allowed: set[str], known_versions: set, version, path: str, what: str) -> dict:
    ext = {k: v for k, v in obj.items() if k.startswith("x-")}
    unknown = sorted(k for k in obj if k not in allowed and not k.startswith("x-"))
    if unknown and version in known_versions:
        raise AsyncApiDocumentError(
            f"unknown field {unknown[0]!r} in {what} binding (allowed: {', '.join(sorted(allowed))})",
            path=join_path(path, unknown[0]))
    for k in unknown:  # newer binding version: keep what we do not understand
        ext[k] = obj[k]
    return ext


def _opt_str(obj: dict, key: str, path: str) -> str | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise AsyncApiDocumentError(f"{key} must be a string", path=join_path(path, key))
    return v


def _int(v, key: str, path: str, *, minimum: int | None = None, what: str = "an integer") -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise AsyncApiDocumentError(f"{key} must be {what}, got {v!r}", path=path)
    if minimum is not None and v < minimum:
        raise AsyncApiDocumentError(f"{key} must be {what}, got {v}", path=path)
    return v


def _obj(node, path: str, what: str) -> dict:
    if not isinstance(node, dict):
        raise AsyncApiDocumentError(f"{what} binding must be an object", path=path)
    return node


# -- Kafka -------------------------------------------------------------------------------
def parse_kafka_server(node, path: str) -> KafkaServerBinding:
    obj = _obj(node, path, "Kafka server")
    version = _version(obj, path)
    ext = _check_keys(obj, {"schemaRegistryUrl", "schemaRegistryVendor", "bindingVersion"},
                      _KNOWN_KAFKA_VERSIONS, version, path, "Kafka server")
    url = _opt_str(obj, "schemaRegistryUrl", path)
    vendor = _opt_str(obj, "schemaRegistryVendor", path)
    if url is not None and not url.lower().startswith(("http://", "https://")):
        raise AsyncApiDocumentError(f"schemaRegistryUrl must be an http(s) URL, got {url!r}",
                                    path=join_path(path, "schemaRegistryUrl"))
    # The rule exists because a REST registry is nothing without its URL; AWS Glue has a
    # regional default endpoint, so "vendor: aws-glue" alone still says how to find schemas.
    known = Vendor.from_document(vendor, join_path(path, "schemaRegistryVendor"))
    if vendor is not None and url is None and known is not Vendor.AWS_GLUE:
        raise AsyncApiDocumentError("schemaRegistryVendor MUST NOT be specified without schemaRegistryUrl "
                                    "(except aws-glue, whose endpoint is regional)",
                                    path=join_path(path, "schemaRegistryVendor"))
    return KafkaServerBinding(url, vendor, version, ext, known)


_TOPIC_CONFIG_LONGS = {"retention.ms": -1, "retention.bytes": -1, "delete.retention.ms": 0,
                       "max.message.bytes": 0}
_TOPIC_CONFIG_BOOLS = ("confluent.key.schema.validation", "confluent.value.schema.validation")
_TOPIC_CONFIG_STRS = ("confluent.key.subject.name.strategy", "confluent.value.subject.name.strategy")


def parse_kafka_channel(node, path: str) -> KafkaChannelBinding:
    obj = _obj(node, path, "Kafka channel")
    version = _version(obj, path)
    ext = _check_keys(obj, {"topic", "partitions", "replicas", "topicConfiguration", "bindingVersion"},
                      _KNOWN_KAFKA_VERSIONS, version, path, "Kafka channel")
    topic = _opt_str(obj, "topic", path)
    if topic is not None and not topic:
        raise AsyncApiDocumentError("topic must not be empty", path=join_path(path, "topic"))
    partitions = _int(obj.get("partitions"), "partitions", join_path(path, "partitions"),
                      minimum=1, what="a positive integer")
    replicas = _int(obj.get("replicas"), "replicas", join_path(path, "replicas"),
                    minimum=1, what="a positive integer")
    tc_path = join_path(path, "topicConfiguration")
    tc = obj.get("topicConfiguration")
    config: dict = {}
    if tc is not None:
        if not isinstance(tc, dict):
            raise AsyncApiDocumentError("topicConfiguration must be an object", path=tc_path)
        config = dict(tc)
        if "cleanup.policy" in tc:
            cp = tc["cleanup.policy"]
            cp_path = join_path(tc_path, "cleanup.policy")
            if isinstance(cp, str):  # tolerated: Kafka's own "delete,compact" spelling
                cp = [p.strip() for p in cp.split(",")]
            if not isinstance(cp, list) or not cp:
                raise AsyncApiDocumentError("cleanup.policy must be a non-empty array", path=cp_path)
            bad = [p for p in cp if p not in ("delete", "compact")]
            if bad:
                raise AsyncApiDocumentError(
                    f"cleanup.policy may only contain 'delete' and/or 'compact', got {bad[0]!r}", path=cp_path)
            config["cleanup.policy"] = list(cp)
        for key, minimum in _TOPIC_CONFIG_LONGS.items():
            _int(tc.get(key), key, join_path(tc_path, key), minimum=minimum,
                 what=f"an integer >= {minimum}")
        for key in _TOPIC_CONFIG_BOOLS:
            if key in tc and not isinstance(tc[key], bool):
                raise AsyncApiDocumentError(f"{key} must be a boolean", path=join_path(tc_path, key))
        for key in _TOPIC_CONFIG_STRS:
            _opt_str(tc, key, tc_path)
    return KafkaChannelBinding(topic, partitions, replicas, config, version, ext)


def pick_schema_value(node, path: str) -> str | None:
    """A concrete value from a schema object: ``const``, single ``enum``, ``default``, first ``enum``.

    A plain string (a common shortcut for the schema) is taken as the value itself.
    """
    if node is None:
        return None
    if isinstance(node, (str, int)) and not isinstance(node, bool):
        return str(node)
    if not isinstance(node, dict):
        raise AsyncApiDocumentError("must be a schema object", path=path)
    enum = node.get("enum")
    if enum is not None and (not isinstance(enum, list) or not enum):
        raise AsyncApiDocumentError("enum must be a non-empty array", path=join_path(path, "enum"))
    for candidate in (node.get("const"), enum[0] if enum and len(enum) == 1 else None,
                      node.get("default"), enum[0] if enum else None):
        if candidate is not None:
            if isinstance(candidate, (dict, list, bool)):
                raise AsyncApiDocumentError("value must be a string", path=path)
            return str(candidate)
    return None


def parse_kafka_operation(node, path: str, follow) -> KafkaOperationBinding:
    obj = _obj(node, path, "Kafka operation")
    version = _version(obj, path)
    ext = _check_keys(obj, {"groupId", "clientId", "bindingVersion"}, _KNOWN_KAFKA_VERSIONS, version,
                      path, "Kafka operation")
    gid = pick_schema_value(follow(obj.get("groupId"), join_path(path, "groupId")), join_path(path, "groupId"))
    cid = pick_schema_value(follow(obj.get("clientId"), join_path(path, "clientId")),
                            join_path(path, "clientId"))
    return KafkaOperationBinding(gid, cid, version, ext)


def parse_kafka_message(node, path: str) -> KafkaMessageBinding:
    obj = _obj(node, path, "Kafka message")
    version = _version(obj, path)
    ext = _check_keys(obj, {"key", "schemaIdLocation", "schemaIdPayloadEncoding", "schemaLookupStrategy",
                            "bindingVersion"}, _KNOWN_KAFKA_VERSIONS, version, path, "Kafka message")
    loc = _opt_str(obj, "schemaIdLocation", path)
    if loc is not None and loc.lower() not in SCHEMA_ID_LOCATIONS:
        raise AsyncApiDocumentError(f"schemaIdLocation must be 'payload' or 'header', got {loc!r}",
                                    path=join_path(path, "schemaIdLocation"))
    enc = obj.get("schemaIdPayloadEncoding")
    if isinstance(enc, int) and not isinstance(enc, bool):
        enc = str(enc)  # '4' written unquoted in YAML
    elif enc is not None and not isinstance(enc, str):
        raise AsyncApiDocumentError("schemaIdPayloadEncoding must be a string",
                                    path=join_path(path, "schemaIdPayloadEncoding"))
    strategy = _opt_str(obj, "schemaLookupStrategy", path)
    return KafkaMessageBinding(obj.get("key"), loc.lower() if loc else None, enc, strategy, version, ext)


# -- Pulsar --------------------------------------------------------------------------------
def parse_pulsar_server(node, path: str) -> PulsarServerBinding:
    obj = _obj(node, path, "Pulsar server")
    version = _version(obj, path)
    _check_keys(obj, {"tenant", "bindingVersion"}, _KNOWN_PULSAR_VERSIONS, version, path, "Pulsar server")
    tenant = _opt_str(obj, "tenant", path)
    return PulsarServerBinding(tenant if tenant is not None else "public", version)


def parse_pulsar_channel(node, path: str) -> PulsarChannelBinding:
    obj = _obj(node, path, "Pulsar channel")
    version = _version(obj, path)
    _check_keys(obj, {"namespace", "persistence", "compaction", "geo-replication", "retention", "ttl",
                      "deduplication", "bindingVersion"}, _KNOWN_PULSAR_VERSIONS, version, path,
                "Pulsar channel")
    namespace = _opt_str(obj, "namespace", path)
    persistence = obj.get("persistence")
    if persistence is None:
        raise AsyncApiDocumentError("persistence is required ('persistent' or 'non-persistent')",
                                    path=join_path(path, "persistence"))
    if persistence not in ("persistent", "non-persistent"):
        raise AsyncApiDocumentError(f"persistence must be 'persistent' or 'non-persistent', got {persistence!r}",
                                    path=join_path(path, "persistence"))
    compaction = _int(obj.get("compaction"), "compaction", join_path(path, "compaction"), minimum=0,
                      what="a non-negative integer")
    geo = obj.get("geo-replication")
    if geo is not None and (not isinstance(geo, list) or not all(isinstance(g, str) for g in geo)):
        raise AsyncApiDocumentError("geo-replication must be an array of strings",
                                    path=join_path(path, "geo-replication"))
    rt = rs = None
    ret = obj.get("retention")
    if ret is not None:
        rpath = join_path(path, "retention")
        if not isinstance(ret, dict):
            raise AsyncApiDocumentError("retention must be an object with time and size", path=rpath)
        for k in ("time", "size"):
            if k not in ret:
                raise AsyncApiDocumentError(f"retention needs both time and size; {k} is missing",
                                            path=join_path(rpath, k))
        rt = _int(ret["time"], "time", join_path(rpath, "time"), minimum=0, what="a non-negative integer")
        rs = _int(ret["size"], "size", join_path(rpath, "size"), minimum=0, what="a non-negative integer")
    ttl = _int(obj.get("ttl"), "ttl", join_path(path, "ttl"), minimum=0, what="a non-negative integer")
    dedup = obj.get("deduplication")
    if dedup is not None and not isinstance(dedup, bool):
        raise AsyncApiDocumentError("deduplication must be a boolean", path=join_path(path, "deduplication"))
    return PulsarChannelBinding(namespace if namespace is not None else "public", persistence, compaction,
                                tuple(geo or ()), rt, rs, ttl, dedup, version)


def check_empty_pulsar(node, path: str, what: str) -> None:
    """Pulsar operation and message bindings are reserved: no properties allowed."""
    obj = _obj(node, path, f"Pulsar {what}")
    extra = [k for k in obj if k != "bindingVersion" and not k.startswith("x-")]
    if extra:
        raise AsyncApiDocumentError(f"Pulsar {what} binding must not contain properties, got {extra[0]!r}",
                                    path=join_path(path, extra[0]))
