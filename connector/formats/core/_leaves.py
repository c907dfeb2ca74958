"""What a format's schema walk gives the data-contract rules: the leaf fields of a schema, each
with its place in the decoded Arrow value, its full name, its type and its inline tags.

Each format walks its own schema (``PayloadFormat.tagged_leaves``), as each of
confluent-kafka's serde modules owns its ``transform`` and ``get_inline_tags``; the rules
(:mod:`connector.schema.rules`) stay generic. The walk follows confluent-kafka's field
transformers: into records, array items, map values and union branches; a tag on a record
field does not reach the record's own fields.

Paths over the decoded value: a field name per struct level, ``[]`` for list items, ``{}`` for
map values, ``memberN`` for the branch of an Avro union of several types.
"""
from __future__ import annotations

import dataclasses

__all__ = ["Leaf", "STRING", "BYTES", "PRIMITIVE", "MAX_WALK_DEPTH"]

#: confluent-kafka's ``FieldType`` names (the ``typeName`` a ``CEL_FIELD`` rule sees)
STRING, BYTES = "STRING", "BYTES"
PRIMITIVE = frozenset({"INT", "LONG", "FLOAT", "DOUBLE", "BOOLEAN", "NULL", STRING, BYTES})
#: how deep a walk goes (nesting and named-type hops): hostile schemas stay bounded
MAX_WALK_DEPTH = 64


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One primitive (or enum/fixed) field a field rule may touch.

    Attributes
    ----------
    path : tuple of str
        Where its values are in the decoded Arrow value.
    full_name : str
        confluent-kafka's full name: Avro ``<record full name>.<field>``, JSON Schema ``$.a.b``,
        Protobuf the field descriptor's full name (what metadata tag patterns match).
    name : str
        The field's own name.
    type : str
        confluent-kafka's ``FieldType`` name: ``STRING``, ``BYTES``, ``INT``, ``LONG``, ...,
        ``ENUM``, ``FIXED``.
    tags : frozenset of str
        Its tags (the schema's inline tags; the rules add the metadata's).
    """

    path: tuple[str, ...]
    full_name: str
    name: str
    type: str
    tags: frozenset[str]

    @property
    def nested(self) -> bool:
        """Under an array or map (one value per item, not per record)."""
        return "[]" in self.path or "{}" in self.path

    def selected_by(self, rule_tags: tuple[str, ...]) -> bool:
        return not rule_tags or bool(self.tags & set(rule_tags))
