"""What a job asks of the schema layer, in one typed object for every path.

The source and the sink build it from their options (:meth:`SchemaRequest.from_options`), the
column functions from their arguments, the CLI from its flags; the layer's functions take
nothing else, so a setting that works on one path works on all of them.
"""
from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from wireformat import DEFAULT_LIMITS, Limits

from connector.errors import ConfigError
from connector.formats import DecodeOptions, EncodeOptions, EnumRepr, EvolutionMode
from connector.formats.core import OptionEnum
from connector.schema.rules import ContractSettings, KmsSettings

if TYPE_CHECKING:
    from connector.options import SourceOptions

__all__ = ["SchemaRequest", "Registration", "InlineSchema"]


class Registration(OptionEnum):
    """How a write finds the schema it encodes with and the id it frames with (confluent-kafka's
    serializer settings; see :mod:`connector.schema._writers`)."""

    #: default: the given schema must already be registered under the subject
    REGISTERED = "registered"
    #: ``auto.register.schemas``: register it if absent
    AUTO_REGISTER = "auto.register.schemas"
    #: ``use.latest.version``: the subject's latest (or given) version
    LATEST = "use.latest.version"
    #: ``use.schema.id``: one registered schema, by id (or GUID)
    SCHEMA_ID = "use.schema.id"
    #: ``use.latest.with.metadata``: the subject's latest version with these metadata properties
    LATEST_WITH_METADATA = "use.latest.with.metadata"


@dataclasses.dataclass(frozen=True)
class InlineSchema:
    """A schema given as text by the caller (``from_registry(schema=...)``): the shape
    :func:`connector.formats.build_decoder` reads. ``format`` is guessed when not given."""

    format: str
    text: str
    message_name: str | None = None

    @classmethod
    def of(cls, schema: str | dict, fmt: str | None = None) -> InlineSchema:
        text = schema if isinstance(schema, str) else json.dumps(schema)
        return cls((fmt or _guess_format(text)).lower(), text)


def _guess_format(text: str) -> str:
    try:
        doc = json.loads(text)
    except ValueError:
        return "protobuf"  # .proto source is not JSON
    if isinstance(doc, (str, list)) or (isinstance(doc, dict) and doc.get("type") in
                                        ("record", "enum", "fixed", "array", "map")
                                        and "properties" not in doc and "items" not in doc):
        return "avro"
    return "json"


@dataclasses.dataclass(frozen=True)
class SchemaRequest:
    """The schema a job reads or writes with, and how it decodes or encodes.

    Attributes
    ----------
    inline : InlineSchema or None
        A schema given as text; it wins over every other source.
    subject, version, schema_id : optional
        A registry schema pinned by subject (``version`` None: latest) or by id.
    message : str or None
        Protobuf: the message to read or write (``schema.message``, ``message=``).
    subject_strategy : str or None
        The subject name strategy; else the document binding's, else ``TopicNameStrategy``.
    registration : Registration
        Writes: how the writer schema and its wire id are found.
    use_schema_id : str or None
        With ``Registration.SCHEMA_ID``: the id (or GUID / Glue version UUID).
    normalize : bool
        Ask the registry to normalize a schema it registers.
    evolution, enum_repr, recursion_depth, limits, validate_json :
        How payloads decode (:class:`connector.formats.DecodeOptions`).
    fmt : str or None
        The payload format when neither the inline schema nor the registry says it.
    contract : connector.schema.rules.ContractSettings
        Data-contract settings: rules on or off, KMS credentials, the dead-letter topic.
    use_latest_with_metadata : tuple of (str, str)
        confluent-kafka's ``use.latest.with.metadata``: reads choose their reader, writes their
        schema, as the subject's latest version whose metadata properties hold these.
    """

    inline: InlineSchema | None = None
    subject: str | None = None
    version: int | None = None
    schema_id: int | None = None
    message: str | None = None
    subject_strategy: str | None = None
    registration: Registration = Registration.REGISTERED
    use_schema_id: str | None = None
    normalize: bool = False
    evolution: EvolutionMode = EvolutionMode.NONE
    enum_repr: EnumRepr = EnumRepr.STRING
    recursion_depth: int = 0
    limits: Limits = DEFAULT_LIMITS
    validate_json: bool = True
    fmt: str | None = None
    contract: ContractSettings = ContractSettings()
    use_latest_with_metadata: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.schema_id is not None and self.subject:
            raise ConfigError("a schema pinned by id and by subject at once: give one")

    @classmethod
    def from_options(cls, opts: SourceOptions) -> SchemaRequest:
        """The request of a source or sink job, or of a column function (its typed options or arguments:
        :func:`connector.options.parse_arguments`, which may give an inline schema)."""
        registration = (Registration.AUTO_REGISTER if opts.auto_register else
                        Registration.LATEST if opts.use_latest_version else
                        Registration.LATEST_WITH_METADATA if opts.use_latest_with_metadata else
                        Registration.SCHEMA_ID if opts.use_schema_id is not None else Registration.REGISTERED)
        version = None if opts.schema_version == "latest" else int(opts.schema_version)
        inline = InlineSchema.of(opts.inline_schema, opts.schema_format) if opts.inline_schema is not None else None
        return cls(inline=inline, fmt=opts.schema_format, subject=opts.schema_subject, version=version,
                   schema_id=opts.schema_id,
                   message=opts.schema_message, subject_strategy=opts.subject_strategy,
                   registration=registration, use_schema_id=opts.use_schema_id, normalize=opts.normalize_schemas,
                   evolution=opts.evolution_mode, enum_repr=opts.enum_repr, recursion_depth=opts.recursion_depth,
                   validate_json=opts.json_validation,
                   limits=Limits(max_record_bytes=opts.max_record_bytes,
                                 max_decompressed_bytes=opts.max_decompressed_bytes,
                                 max_collection_items=opts.max_collection_items),
                   contract=ContractSettings(enabled=opts.rules_enabled, kms=KmsSettings.of(opts.rule_settings()),
                                             dlq_topic=opts.dlq_topic),
                   use_latest_with_metadata=opts.use_latest_with_metadata)

    @property
    def pinned(self) -> bool:
        """The reader is a registry schema named by id or subject."""
        return self.schema_id is not None or bool(self.subject)

    def decode_options(self) -> DecodeOptions:
        return DecodeOptions(enum_as=self.enum_repr, max_recursion_depth=self.recursion_depth, limits=self.limits,
                             evolution=self.evolution, validate_json=self.validate_json)

    def encode_options(self) -> EncodeOptions:
        return EncodeOptions(max_recursion_depth=self.recursion_depth)
