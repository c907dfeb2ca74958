"""A copy of a message schema unrolled along the output Arrow type, for ptars.

ptars cuts recursive fields to serialized bytes, which would cost one more ptars call (and
a copy of the bytes) per nesting level. Instead, every struct node of the Arrow type
(itself cut at ``max_recursion_depth``) becomes its own message type ``M<k>`` whose message
fields point at the types of its children, so the copy is acyclic and ptars decodes a whole
batch, every level, in one call. Fields the Arrow type cut become ``repeated bytes`` (same
number; oneof members stay singular, the oneof tracks their presence): only their presence
is looked at (data below the cut is a row error).

Singular Timestamp/Duration/wrapper fields become ``repeated``: ptars keeps the last of
two occurrences of such a field where protobuf merges them, so the engine must see both
(in a oneof or a map entry they cannot: the wire check flags such rows instead). Any, Struct,
Value and ListValue fields become ``bytes``: the engine writes them as JSON text.

The work is bounded by the size of the Arrow type, never by the data.
"""
from __future__ import annotations

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.descriptor import FieldDescriptor as FD

from connector.formats.protobuf._schema import WKT_JSON, WKT_SCALARS, is_map

__all__ = ["unrolled_pool"]

_MAX_TYPES = 5000  # an Arrow type this bushy is left to the slower per-level route


def _file_syntax(fd) -> str:
    return descriptor_pb2.FileDescriptorProto.FromString(fd.serialized_pb).syntax or "proto2"


def unrolled_pool(desc, t: pa.DataType):
    """(pool, full name of the root copy) or None when the schema cannot be copied so."""
    syntax = _file_syntax(desc.file)
    pkg = "__unrolled__"
    files: list[FileDescriptor] = []
    seen: set[str] = set()

    def closure(fd):
        if fd.name in seen:
            return
        seen.add(fd.name)
        for dep in fd.dependencies:
            closure(dep)
        files.append(fd)

    closure(desc.file)
    out = descriptor_pb2.FileDescriptorProto(name=f"__unrolled__/{id(t)}_{desc.full_name}.proto",
                                             package=pkg, syntax=syntax,
                                             dependency=[fd.name for fd in files])
    count = 0
    FDP = descriptor_pb2.FieldDescriptorProto
    # (message, its struct type, (proto field to point) or None)
    todo: list[tuple[Descriptor, pa.DataType, descriptor_pb2.FieldDescriptorProto | None, bool]] = \
        [(desc, t, None, False)]
    root: str | None = None
    while todo:
        d, st, point, is_entry = todo.pop()
        if d.full_name in WKT_JSON:  # read as its bytes: written as JSON text after ptars
            if point is not None:
                point.type = FDP.TYPE_BYTES
                point.ClearField("type_name")
                if point.label != FDP.LABEL_REPEATED and not point.HasField("oneof_index") \
                        and not is_entry:
                    point.label = FDP.LABEL_REPEATED  # bytes have no presence: no item is absent
            continue
        if d.full_name in WKT_SCALARS:
            if point is not None:
                point.type_name = "." + d.full_name
            continue
        if _file_syntax(d.file) != syntax or count >= _MAX_TYPES:
            return None
        name = f"M{count}"
        count += 1
        if point is not None:
            point.type_name = f".{pkg}.{name}"
        else:
            root = f"{pkg}.{name}"
        mp = out.message_type.add()
        d.CopyToProto(mp)
        mp.name = name
        del mp.nested_type[:]
        del mp.enum_type[:]
        del mp.extension[:]
        del mp.extension_range[:]
        kids = {f.name: f.type for f in st} if pa.types.is_struct(st) else {}
        for fp in mp.field:
            f = d.fields_by_name[fp.name]
            fm = f.message_type  # None exactly when the field is not of a message type
            if f.type != FD.TYPE_MESSAGE or fm is None:
                continue
            child_t = kids.get(fp.name)
            if child_t is None:  # cut by max_recursion_depth: only presence matters, so
                fp.type = FDP.TYPE_BYTES  # repeated (an empty list = absent) unless in a oneof
                fp.ClearField("type_name")
                if not fp.HasField("oneof_index"):
                    fp.label = FDP.LABEL_REPEATED
                continue
            if is_map(f):
                entry = mp.nested_type.add()
                fm.CopyToProto(entry)
                fp.type_name = f".{pkg}.{name}.{entry.name}"
                vf = fm.fields_by_name["value"]
                vm = vf.message_type
                if vf.type == FD.TYPE_MESSAGE and vm is not None:
                    vp = next(x for x in entry.field if x.name == "value")
                    todo.append((vm, child_t.item_type, vp, True))
                continue
            sub_t = child_t.value_type if f.is_repeated else child_t
            if not f.is_repeated and fm.full_name in WKT_SCALARS and \
                    f.containing_oneof is None:
                fp.label = FDP.LABEL_REPEATED
            todo.append((fm, sub_t, fp, False))
    if root is None:  # the root is a well-known type: nothing to unroll
        return None
    pool = descriptor_pool.DescriptorPool()
    try:
        for fd in files:
            pool.Add(descriptor_pb2.FileDescriptorProto.FromString(fd.serialized_pb))
        pool.Add(out)
        pool.FindMessageTypeByName(root)
    except (TypeError, KeyError, ValueError):
        return None
    return pool, root
