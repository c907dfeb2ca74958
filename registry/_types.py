"""Value types handed out by every registry client: schemas, references, secrets, cache stats.

All of them are frozen and picklable so they can travel from the Spark driver to executors.
"""
from __future__ import annotations

import base64
import dataclasses
import enum
import os

from registry._rules import Metadata, RuleSet

__all__ = ["SchemaType", "SchemaReference", "Schema", "Secret", "CacheStats", "schema_type_of"]


class SchemaType(str, enum.Enum):
    """The schema language of a registered schema.

    Examples
    --------
    >>> SchemaType("PROTOBUF") is SchemaType.PROTOBUF
    True
    """

    AVRO = "AVRO"
    PROTOBUF = "PROTOBUF"
    JSON = "JSON"

    def __str__(self) -> str:
        return self.value


# Spellings seen in the wild: Confluent `schemaType`, Apicurio `X-Registry-ArtifactType`,
# Glue `DataFormat`, AsyncAPI schemaFormat fragments.
_TYPE_ALIASES = {
    "AVRO": SchemaType.AVRO,
    "PROTOBUF": SchemaType.PROTOBUF,
    "PROTO": SchemaType.PROTOBUF,
    "JSON": SchemaType.JSON,
    "JSONSCHEMA": SchemaType.JSON,
    "JSON_SCHEMA": SchemaType.JSON,
}


def schema_type_of(name: str | None) -> SchemaType:
    """Map a registry's spelling of a schema type to :class:`SchemaType`.

    ``None`` or an empty string means Avro, as in the Confluent REST API where
    ``schemaType`` is omitted for Avro schemas.

    Raises
    ------
    ValueError
        If the spelling is not known.
    """
    if not name:
        return SchemaType.AVRO
    try:
        return _TYPE_ALIASES[str(name).strip().upper()]
    except KeyError:
        raise ValueError(f"unknown schema type {name!r}") from None


@dataclasses.dataclass(frozen=True)
class SchemaReference:
    """A reference from one schema to another registered schema (Confluent ``references``).

    Parameters
    ----------
    name : str
        The name the referencing schema uses (Avro full name, Protobuf import path, JSON ``$ref``).
    subject : str
        Subject of the referenced schema.
    version : int
        Version of the referenced schema within its subject.
    """

    name: str
    subject: str
    version: int


@dataclasses.dataclass(frozen=True)
class Schema:
    """A schema as a registry stores it.

    Parameters
    ----------
    schema_type : SchemaType
    text : str
        The schema text exactly as the registry returned it (Avro/JSON Schema JSON, ``.proto`` source).
    id : int or None
        Confluent schema id (Apicurio: content id or global id, whichever was asked for).
    guid : str or None
        Confluent schema GUID or Glue schema version id, lower-case hyphenated UUID text.
    subject : str or None
        Subject (Glue: schema name), when known.
    version : int or None
        Version within the subject, when known.
    references : tuple of SchemaReference
        Direct references as declared.
    resolved_references : tuple of (str, Schema)
        Every schema reachable through ``references``, transitively, each name once, in
        dependency order (a schema comes after the schemas it references), so that parsing them
        in this order and then ``text`` always succeeds. The nested schemas carry their own
        ``references`` but an empty ``resolved_references`` (the flat list here covers them).
    metadata : registry.Metadata or None
        Confluent data-contract metadata (tags, properties), when the registry gives it.
    rule_set : registry.RuleSet or None
        Confluent data-contract rules (``connector.schema.rules`` applies them).

    Examples
    --------
    >>> s = Schema(SchemaType.AVRO, '"string"', id=1)
    >>> s.schema_type, s.id
    (<SchemaType.AVRO: 'AVRO'>, 1)
    """

    schema_type: SchemaType
    text: str
    id: int | None = None
    guid: str | None = None
    subject: str | None = None
    version: int | None = None
    references: tuple[SchemaReference, ...] = ()
    resolved_references: tuple[tuple[str, "Schema"], ...] = ()
    metadata: Metadata | None = None
    rule_set: RuleSet | None = None

    def __repr__(self) -> str:
        # Schema texts can be many kilobytes: keep reprs (and so error messages) short.
        return (f"Schema({self.schema_type.value}, id={self.id!r}, guid={self.guid!r}, "
                f"subject={self.subject!r}, version={self.version!r}, "
                f"references={len(self.references)}, text={len(self.text)} chars"
                + (", ruleSet" if self.rule_set else "") + ")")


class Secret:
    """A credential that never shows itself in ``repr``/``str``/logs.

    Pickling keeps the value (executors need it) but stores it masked with a random pad, so
    the plain text does not appear in pickled bytes, plan dumps or core files that are grepped
    for it. This is obfuscation against accidental disclosure, not encryption.

    Examples
    --------
    >>> s = Secret("hunter2")
    >>> s, str(s), s.get()
    (Secret('***'), '***', 'hunter2')
    """

    __slots__ = ("_value",)
    _value: str  # set once through object.__setattr__ (the class refuses assignment)

    def __init__(self, value: str):
        if isinstance(value, Secret):
            value = value.get()
        if not isinstance(value, str):
            raise TypeError("Secret holds a str")
        object.__setattr__(self, "_value", value)

    def get(self) -> str:
        """Return the secret value."""
        return self._value

    def __setattr__(self, name, value):
        raise AttributeError("Secret is immutable")

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self):
        raw = self._value.encode("utf-8")
        pad = os.urandom(len(raw))
        masked = bytes(a ^ b for a, b in zip(raw, pad))
        return (_unseal, (base64.b64encode(pad).decode(), base64.b64encode(masked).decode()))


def _unseal(pad: str, masked: str) -> Secret:
    p, m = base64.b64decode(pad), base64.b64decode(masked)
    return Secret(bytes(a ^ b for a, b in zip(m, p)).decode("utf-8"))


@dataclasses.dataclass(frozen=True)
class CacheStats:
    """Counters of a caching client since it was created.

    Parameters
    ----------
    hits : int
        Lookups answered from the cache (including cached "not found" answers).
    misses : int
        Lookups that were not in the cache.
    requests : int
        Calls made to the backing registry (one per miss that was not coalesced).
    errors : int
        Backing calls that raised.
    coalesced : int
        Misses that waited for another thread's in-flight request for the same key.
    """

    hits: int = 0
    misses: int = 0
    requests: int = 0
    errors: int = 0
    coalesced: int = 0
