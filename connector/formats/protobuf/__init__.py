"""Protobuf: the schema model (``.proto`` text compiled with its imports, message choice, Arrow
types), the vectorized decoder (ptars behind a numba wire check, protobuf's own parser as the
checked path) and the compiled encoder (``_encode_program``) with its per-record reference.

Examples
--------
>>> from connector.formats.protobuf import PROTOBUF, compile_proto
>>> compile_proto('syntax = "proto3"; package p; message A {} message B {}').message_names()
['p.A', 'p.B']
"""
from typing import TYPE_CHECKING

from connector.formats.protobuf._format import PROTOBUF

if TYPE_CHECKING:
    from connector.formats.protobuf._schema import compile_proto
from connector.formats.protobuf._source import top_level_messages

__all__ = ["PROTOBUF", "compile_proto", "top_level_messages"]

_SCHEMA_NAMES = frozenset({"compile_proto"})


def __getattr__(name: str):
    # The schema model imports google.protobuf: loaded when a name of it is first asked for,
    # so the format table (which every read imports) does not pay for it.
    if name in _SCHEMA_NAMES:
        from connector.formats.protobuf import _schema

        return getattr(_schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
