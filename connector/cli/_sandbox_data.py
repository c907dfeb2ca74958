"""Example payloads for ``asyncapi-kafka sandbox``: the document's message ``examples`` when it
has them, otherwise values generated from the payload schema, serialized the way a producer
would. Deterministic: record ``i`` is the same on every run.

Each format generates its own (``PayloadFormat.samples``: Avro, JSON Schema, Protobuf follow
the schema's own constraints where it states them, and keep nesting bounded).
"""
from __future__ import annotations

from connector.formats import payload_format

__all__ = ["serialize_examples"]


def serialize_examples(spec, n: int, examples: list | None = None) -> tuple[list[bytes], dict | None]:
    """``n`` serialized payloads for a ``connector.asyncapi.SchemaSpec`` and, for formats whose
    records name their type by a message-index path (Protobuf), ``{"message_indexes": [...],
    "full_name": ...}`` (None otherwise).

    ``examples`` are the document's example payloads (JSON values); they are used in turn
    before generated ones. An example that does not fit the schema raises ``ValueError``.
    """
    fmt = payload_format(spec.format)
    samples = fmt.samples(spec.text, spec.message_name, n, list(examples or []))
    if not fmt.indexed_messages:
        return samples.payloads, None
    return samples.payloads, {"message_indexes": samples.message_indexes, "full_name": samples.full_name}
