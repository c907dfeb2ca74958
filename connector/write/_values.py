"""How a write's ``value`` becomes bytes: with one writer schema (the inline one, the channel's one
message), with one per message (``value`` a struct of the channel's messages), or as given (a
channel without a payload schema). Each writer is checked against its input's Arrow type on the
driver, so a column the schema cannot hold fails before any task starts."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyarrow as pa

from connector.errors import ConfigError
from connector.write._types import Encoding, EncodingMode

if TYPE_CHECKING:
    from registry import RegistryConfig
    from wireformat import Framing

    from connector.asyncapi import ReadPlan
    from connector.formats import Encoder
    from connector.schema import SchemaRequest

__all__ = ["value_encoding", "check_coerce", "is_text", "is_binary"]

log = logging.getLogger("asyncapi_kafka")


def is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


def check_coerce(encoder: Encoder, arrow_type: pa.DataType, column: str) -> None:
    """Fail on the driver when the input cannot be written with the schema (missing/extra fields)."""
    encoder.coerce(pa.array([], arrow_type), column)


def value_encoding(request: SchemaRequest, plan: ReadPlan, registry: RegistryConfig | None, framing: Framing,
                   topic: str | None, schema: pa.Schema, value_column: str | None, value_fields: tuple[str, ...],
                   compression: str | None) -> Encoding:
    """The value side of a write: one message, or the channel's messages (``value``'s fields)."""
    value_field = schema.field(value_column) if value_column is not None else None
    if _message_fields(plan, request, value_field):
        assert value_field is not None
        return _several_messages(request, plan, registry, framing, topic, value_field.type, compression)
    return _one_message(request, plan, registry, framing, topic, schema, value_column, value_fields, compression)


def _one_message(request: SchemaRequest, plan: ReadPlan, registry: RegistryConfig | None, framing: Framing,
                 topic: str | None, schema: pa.Schema, value_column: str | None, value_fields: tuple[str, ...],
                 compression: str | None) -> Encoding:
    """The value written with one schema: the inline one, else the channel's one message."""
    from connector.schema import value_writer

    writer = value_writer(request, plan=plan, registry=registry, framing=framing, topic=topic)
    if writer.encoder is None:
        vtype = schema.field(value_column).type if value_column is not None else None
        if vtype is None or not (is_binary(vtype) or is_text(vtype)):
            raise ConfigError(f"channel {plan.channel!r} has no payload schema, so a 'value' column of binary or "
                              "string type is written as is; set 'use.latest.version'/'use.schema.id' to "
                              "encode with a registered schema")
        return Encoding(EncodingMode.BYTES)
    if value_column is not None:
        vtype = schema.field(value_column).type
        if is_binary(vtype):
            raise ConfigError("column 'value' is binary, but the channel's message has a schema: give the "
                              "message as a struct 'value' (or its fields as columns) to be encoded, or "
                              "write the bytes with wireFormat=none and no payload schema")
        check_coerce(writer.encoder, vtype, "value")
    else:
        if not value_fields:
            raise ConfigError("no 'value' column and no other columns to build the message from")
        check_coerce(writer.encoder, pa.struct([schema.field(n) for n in value_fields]), "value")
    log.info("asyncapi-kafka write to channel %s: %s, framing %s%s", plan.channel, writer.describe(), framing,
             f", header {writer.headers[0][0]}" if writer.headers else "")
    return Encoding(EncodingMode.ENCODE, writer, compression)


def _message_fields(plan: ReadPlan, request: SchemaRequest, value_field: pa.Field | None) -> bool:
    """Whether ``value`` is the shape a read of several messages gives: a struct whose fields are
    messages of the channel (each row sets the one it is)."""
    specs = {m.name for m in plan.value_messages if m.payload is not None}
    if request.inline is not None or len(specs) < 2 or value_field is None:
        return False
    vtype = value_field.type
    return pa.types.is_struct(vtype) and vtype.num_fields > 0 and all(f.name in specs for f in vtype)


def _several_messages(request: SchemaRequest, plan: ReadPlan, registry: RegistryConfig | None, framing: Framing,
                      topic: str | None, vtype: pa.StructType, compression: str | None) -> Encoding:
    """The writers of the messages ``value``'s fields name, each checked against its field's type."""
    from connector.schema import message_writers

    writers = message_writers(request, plan=plan, registry=registry, framing=framing, topic=topic)
    chosen = []
    for f in vtype:
        w = writers[f.name]
        assert w.encoder is not None  # messages with a payload schema only
        check_coerce(w.encoder, f.type, f"value.{f.name}")
        chosen.append((f.name, w))
        log.info("asyncapi-kafka write to channel %s, message %s: %s, framing %s%s", plan.channel, f.name,
                 w.describe(), framing, f", header {w.headers[0][0]}" if w.headers else "")
    return Encoding(EncodingMode.MESSAGES, None, compression, tuple(chosen))
