"""``.proto`` text → descriptors (compiled at run time with grpc_tools) → Arrow types.

No generated classes: the schema text and its references are written to a temporary
directory, compiled by ``grpc_tools.protoc`` into a FileDescriptorSet and loaded into a
fresh ``DescriptorPool``; message classes come from ``message_factory.GetMessageClass``.
Pools are cached per process by a hash of the texts.

========================================  =====================================
Protobuf                                  Arrow
========================================  =====================================
message                                   struct (all fields nullable)
repeated T                                list<element: T>
map<K, V>                                 map<key: K, value: V>
enum                                      string (name; unknown numbers as their digits)
                                          or int32 with ``enum_as="int"``
int32, sint32, sfixed32                   int32
int64, sint64, sfixed64                   int64
uint32, fixed32                           int64
uint64, fixed64                           decimal128(20, 0)
float / double / bool / string / bytes    float32 / float64 / bool / string / binary
google.protobuf.Timestamp                 timestamp[us, tz=UTC]
google.protobuf.Duration                  int64 (microseconds)
google.protobuf.*Value wrappers           nullable scalar
google.protobuf.Any / Struct / Value /    JSON text (string)
ListValue
========================================  =====================================

Presence: proto3 scalars without ``optional`` always carry a value (the default when
unset); ``optional`` scalars, oneof members, proto2 optionals and message fields are null
when unset.
"""
from __future__ import annotations

import hashlib
import importlib.resources
import os
import re
import tempfile
import threading

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.errors import SchemaMappingError

__all__ = ["CompiledProto", "compile_proto", "arrow_type_of_message", "WKT_SCALARS", "WKT_JSON"]

TS_UTC = pa.timestamp("us", tz="UTC")
U64 = pa.decimal128(20, 0)
_SCALARS = {
    FD.TYPE_DOUBLE: pa.float64(), FD.TYPE_FLOAT: pa.float32(),
    FD.TYPE_INT64: pa.int64(), FD.TYPE_SINT64: pa.int64(), FD.TYPE_SFIXED64: pa.int64(),
    FD.TYPE_UINT64: U64, FD.TYPE_FIXED64: U64,
    FD.TYPE_INT32: pa.int32(), FD.TYPE_SINT32: pa.int32(), FD.TYPE_SFIXED32: pa.int32(),
    FD.TYPE_UINT32: pa.int64(), FD.TYPE_FIXED32: pa.int64(),
    FD.TYPE_BOOL: pa.bool_(), FD.TYPE_STRING: pa.string(), FD.TYPE_BYTES: pa.binary(),
}
WKT_SCALARS = {
    "google.protobuf.DoubleValue": pa.float64(), "google.protobuf.FloatValue": pa.float32(),
    "google.protobuf.Int64Value": pa.int64(), "google.protobuf.UInt64Value": U64,
    "google.protobuf.Int32Value": pa.int32(), "google.protobuf.UInt32Value": pa.int64(),
    "google.protobuf.BoolValue": pa.bool_(), "google.protobuf.StringValue": pa.string(),
    "google.protobuf.BytesValue": pa.binary(),
    "google.protobuf.Timestamp": TS_UTC, "google.protobuf.Duration": pa.int64(),
}
_VARINT_WKT = frozenset(["google.protobuf.Timestamp", "google.protobuf.Duration"])
WKT_JSON = frozenset(["google.protobuf.Any", "google.protobuf.Struct", "google.protobuf.Value",
                      "google.protobuf.ListValue"])


class CompiledProto:
    """A pool holding one schema and its imports, plus helpers to find message types."""

    def __init__(self, pool: descriptor_pool.DescriptorPool, main: descriptor_pb2.FileDescriptorProto):
        self.pool = pool
        self.main = main
        self._batch: dict[str, type] = {}
        self._shadow: dict[str, tuple | None] = {}
        self._lock = threading.Lock()

    def message_names(self) -> list[str]:
        pkg = self.main.package
        return [f"{pkg}.{m.name}" if pkg else m.name for m in self.main.message_type]

    def full_name_for_indexes(self, indexes) -> str:
        """Confluent message-index path → message full name ([] or None = first message)."""
        idx = list(indexes or [0])
        msgs = self.main.message_type
        parts = [self.main.package] if self.main.package else []
        try:
            m = msgs[idx[0]]
            parts.append(m.name)
            for i in idx[1:]:
                m = m.nested_type[i]
                parts.append(m.name)
        except IndexError as e:
            raise SchemaMappingError(f"message index {idx} does not exist in the schema") from e
        return ".".join(parts)

    def find(self, name: str | None):
        """Descriptor by full or simple name (None = the only top-level message).

        A schema that declares several top-level messages needs the name: guessing the
        first one would read records written as another message with the wrong type.
        """
        if name is None:
            names = self.message_names()
            if not names:
                raise SchemaMappingError("Protobuf schema declares no message")
            if len(names) > 1:
                raise SchemaMappingError(
                    f"Protobuf schema declares several messages ({', '.join(names)}); choose "
                    "the reader's with option 'schema.message' (source) or message= "
                    "(from_registry), e.g. " + repr(names[0]))
            name = names[0]
        try:
            return self.pool.FindMessageTypeByName(name)
        except KeyError:
            pass
        pkg = self.main.package
        for cand in ([f"{pkg}.{name}"] if pkg else []):
            try:
                return self.pool.FindMessageTypeByName(cand)
            except KeyError:
                pass
        raise SchemaMappingError(f"Protobuf message {name!r} not found; schema declares "
                                 f"{self.message_names()}")

    def shadow(self, desc):
        """(class, {field name}) of a copy of ``desc`` whose singular Timestamp/Duration fields
        are ``optional bytes`` — read as bytes they need no Python wrapper object per row and
        are decoded with numpy. None when not applicable (no such field, maps, editions)."""
        with self._lock:
            if desc.full_name in self._shadow:
                return self._shadow[desc.full_name]
        out = None
        names = [f.name for f in desc.fields if not f.is_repeated and f.type == FD.TYPE_MESSAGE
                 and f.message_type.full_name in _VARINT_WKT]
        file_proto = descriptor_pb2.FileDescriptorProto.FromString(desc.file.serialized_pb)
        if names and not any(is_map(f) for f in desc.fields) and \
                file_proto.syntax in ("", "proto2", "proto3"):
            tag = re.sub(r"\W", "_", desc.full_name)
            fdp = descriptor_pb2.FileDescriptorProto(
                name=f"__shadow__/{tag}.proto", package=f"__shadow__.{tag}",
                dependency=[desc.file.name] + [d.name for d in desc.file.dependencies],
                syntax=file_proto.syntax or "proto2")
            m = fdp.message_type.add()
            desc.CopyToProto(m)
            m.name = "Shadow"
            del m.nested_type[:]
            del m.enum_type[:]
            for f in m.field:
                if f.name in names:
                    f.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
                    f.ClearField("type_name")
                    if fdp.syntax == "proto3" and not f.HasField("oneof_index"):
                        f.proto3_optional = True
                        f.oneof_index = len(m.oneof_decl)
                        m.oneof_decl.add(name=f"_{f.name}")
            try:
                self.pool.Add(fdp)
                sd = self.pool.FindMessageTypeByName(f"__shadow__.{tag}.Shadow")
                out = (sd, frozenset(names))
            except (TypeError, KeyError, ValueError):
                out = None
        with self._lock:
            self._shadow[desc.full_name] = out
        return out

    def message_class(self, desc):
        return message_factory.GetMessageClass(desc)

    def batch_class(self, desc):
        """Class of ``message Batch { repeated <desc> items = 1; }`` in the same pool."""
        with self._lock:
            cls = self._batch.get(desc.full_name)
            if cls is None:
                tag = re.sub(r"\W", "_", desc.full_name)
                fdp = descriptor_pb2.FileDescriptorProto(
                    name=f"__batch__/{tag}.proto", package=f"__batch__.{tag}",
                    dependency=[desc.file.name], syntax="proto3")
                m = fdp.message_type.add(name="Batch")
                m.field.add(name="items", number=1, label=FD.LABEL_REPEATED,
                            type=FD.TYPE_MESSAGE, type_name="." + desc.full_name)
                self.pool.Add(fdp)
                cls = message_factory.GetMessageClass(
                    self.pool.FindMessageTypeByName(f"__batch__.{tag}.Batch"))
                self._batch[desc.full_name] = cls
            return cls


_CACHE: dict[tuple[int, str], CompiledProto] = {}
_CACHE_LOCK = threading.Lock()


# confluent/meta.proto: the field, message and file options of Confluent's data contracts (tags,
# params, rules), imported by schemas that tag fields; Confluent's serializers register it as a
# built-in, with no reference. Its text as confluent-kafka ships it (descriptor-equal).
CONFLUENT_META = """syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
option go_package = "../confluent";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule { string name = 1; string doc = 2; string expr = 3; string sql = 4; }
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
"""
BUILTINS = {"confluent/meta.proto": CONFLUENT_META}


def _builtin_descriptor(name: str):
    """The FileDescriptorProto of a Confluent built-in import (compiled once per process)."""
    compiled = compile_proto(BUILTINS[name])
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.CopyFrom(compiled.main)
    fdp.name = name
    return fdp


def _safe_name(name: str) -> str:
    if not name or name.startswith("/") or ".." in name.split("/") or "\\" in name:
        raise SchemaMappingError(f"unsafe Protobuf reference name {name!r}")
    return name if name.endswith(".proto") else name + ".proto"


def compile_proto(text: str, references: tuple = ()) -> CompiledProto:
    """Compile ``.proto`` text and its references ((name, text) pairs) into a pool (cached)."""
    h = hashlib.sha256(text.encode())
    for name, ref in references:
        h.update(b"\0" + name.encode() + b"\0" + ref.encode())
    key = (os.getpid(), h.hexdigest())
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    fdp = _descriptor_from_base64(text)
    if fdp is not None:
        compiled = _pool_from_descriptors(fdp, references)
        with _CACHE_LOCK:
            _CACHE[key] = compiled
        return compiled
    from grpc_tools import protoc  # lazily: compiling is rare, importing it is not free

    wkt = str(importlib.resources.files("grpc_tools") / "_proto")
    main_name = f"__schema_{key[1][:16]}.proto"
    with tempfile.TemporaryDirectory(prefix="asyncapi-proto-") as tmp:
        given = {name for name, _ in references}
        for name, ref in [*references, *((n, t) for n, t in BUILTINS.items() if n not in given and n in text)]:
            if name.startswith("google/protobuf/"):
                continue  # bundled with grpc_tools
            path = os.path.join(tmp, _safe_name(name))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(ref)
        with open(os.path.join(tmp, main_name), "w", encoding="utf-8") as f:
            f.write(text)
        out = os.path.join(tmp, "set.pb")
        rc = protoc.main(["protoc", f"-I{tmp}", f"-I{wkt}", f"--descriptor_set_out={out}",
                          "--include_imports", os.path.join(tmp, main_name)])
        if rc != 0 or not os.path.exists(out):
            raise SchemaMappingError(f"Protobuf schema does not compile (protoc exit {rc})")
        with open(out, "rb") as f:
            fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    main = None
    for fdp in fds.file:
        pool.Add(fdp)
        if fdp.name == main_name:
            main = fdp
    if main is None:  # protoc always writes the file it compiled; never seen
        raise SchemaMappingError("Protobuf schema did not compile to a descriptor")
    compiled = CompiledProto(pool, main)
    with _CACHE_LOCK:
        _CACHE[key] = compiled
    return compiled


def _descriptor_from_base64(text: str):
    """A FileDescriptorProto when ``text`` is one in base64 (what Confluent's serializer
    registers), else None."""
    import base64
    import binascii

    stripped = text.strip()
    if not stripped or any(c.isspace() for c in stripped) or "{" in stripped:
        return None
    try:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(stripped, validate=True))
    except (binascii.Error, ValueError, Exception):  # noqa: BLE001 - protobuf DecodeError
        return None
    return fdp if fdp.name else None


def _pool_from_descriptors(main, references: tuple) -> CompiledProto:
    pool = descriptor_pool.DescriptorPool()
    default = descriptor_pool.Default()
    added: set[str] = set()
    adding: set[str] = set()  # on the current import path: seen again = a cycle

    def add(fdp):
        if fdp.name in added:
            return
        if fdp.name in adding:
            raise SchemaMappingError(f"Protobuf imports form a cycle through {fdp.name!r}")
        adding.add(fdp.name)
        for dep in fdp.dependency:
            ref = dict(references).get(dep)
            dep_fdp = _descriptor_from_base64(ref) if ref else None
            if dep_fdp is None and dep.startswith("google/protobuf/"):
                _load_wkt(dep)
                dep_fdp = descriptor_pb2.FileDescriptorProto()
                default.FindFileByName(dep).CopyToProto(dep_fdp)
            if dep_fdp is None and dep in BUILTINS:
                dep_fdp = _builtin_descriptor(dep)
            if dep_fdp is None:
                raise SchemaMappingError(f"Protobuf import {dep!r} is not among the references")
            add(dep_fdp)
        pool.Add(fdp)
        added.add(fdp.name)
    try:
        add(main)
    except (TypeError, KeyError, RecursionError) as e:  # RecursionError: a chain of imports
        # deeper than Python's stack
        raise SchemaMappingError(f"Protobuf descriptor does not load: {e}") from e
    return CompiledProto(pool, main)


def _load_wkt(name: str) -> None:
    import importlib
    mod = "google.protobuf." + name.rpartition("/")[2].replace(".proto", "_pb2")
    try:
        importlib.import_module(mod)
    except ImportError as e:
        raise SchemaMappingError(f"unknown well-known Protobuf file {name!r}") from e


def is_map(f) -> bool:
    return f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry


def arrow_type_of_field(f, enum_as: str, stack: dict, max_depth: int, repeated_ok=True):
    if repeated_ok and is_map(f):
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        vt = arrow_type_of_field(vf, enum_as, stack, max_depth)
        if vt is None:
            return None
        return pa.map_(pa.field("key", arrow_type_of_field(kf, enum_as, stack, max_depth),
                                nullable=False), pa.field("value", vt))
    if repeated_ok and f.is_repeated:
        it = arrow_type_of_field(f, enum_as, stack, max_depth, repeated_ok=False)
        return None if it is None else pa.list_(pa.field("element", it))
    if f.type == FD.TYPE_ENUM:
        return pa.int32() if enum_as == "int" else pa.string()
    if f.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        return arrow_type_of_message(f.message_type, enum_as, stack, max_depth)
    return _SCALARS[f.type]


def arrow_type_of_message(desc, enum_as: str = "string", stack: dict | None = None,
                          max_depth: int = 0):
    """Arrow type of a message descriptor (None when cut by ``max_depth``)."""
    name = desc.full_name
    if name in WKT_SCALARS:
        return WKT_SCALARS[name]
    if name in WKT_JSON:
        return pa.string()
    stack = {} if stack is None else stack
    depth = stack.get(name, 0)
    if depth:
        if max_depth <= 0:
            raise SchemaMappingError(
                f"recursive Protobuf message {name!r} cannot be mapped to a Spark schema; set "
                "max_recursion_depth to cut it at a fixed depth")
        if depth > max_depth:
            return None
    stack[name] = depth + 1
    try:
        fields = []
        for f in desc.fields:
            t = arrow_type_of_field(f, enum_as, stack, max_depth)
            if t is not None:
                fields.append(pa.field(f.name, t))
    finally:
        stack[name] = depth
    return pa.struct(fields)
