"""Registry vendors: the one table of their spellings.

===============  ==========================================================================
vendor           spellings (any case)
===============  ==========================================================================
``confluent``    confluent, confluent-schema-registry, karapace, redpanda, apicurio-ccompat
                 (every registry that answers Confluent's REST API)
``apicurio``     apicurio, apicurio-registry, ibm (IBM Event Streams runs Apicurio)
``aws-glue``     aws-glue, glue, aws, aws-glue-schema-registry
``file``         file (a snapshot directory, ``file://`` URLs)
===============  ==========================================================================

The ``schema.registry.vendor`` option must be one of these (a typo is an error). A document's
``schemaRegistryVendor`` may name any vendor, as the Kafka bindings allow: an unknown one is
read as unset (Confluent's API) with a warning that names the document path and the option to
set, since documents are shared with tools this connector does not know.
"""
from __future__ import annotations

import enum
import logging

from registry.errors import RegistryConfigError

__all__ = ["Vendor"]

log = logging.getLogger("registry")


class Vendor(str, enum.Enum):
    """A registry vendor; values are the ``schema.registry.vendor`` spellings."""

    CONFLUENT = "confluent"
    APICURIO = "apicurio"
    AWS_GLUE = "aws-glue"
    FILE = "file"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def parse(cls, text: "str | Vendor") -> "Vendor":
        """The vendor spelled ``text`` (option value); :class:`RegistryConfigError` when unknown."""
        found = _ALIASES.get(str(text).strip().lower())
        if found is None:
            raise RegistryConfigError(f"unknown schema.registry.vendor {str(text)!r}; valid: "
                                      f"{', '.join(v.value for v in cls)} (also {', '.join(sorted(_OTHERS))})")
        return found

    @classmethod
    def from_document(cls, text: str | None, path: str = "") -> "Vendor | None":
        """A document's ``schemaRegistryVendor``: None when unset or unknown (logged)."""
        if text is None:
            return None
        found = _ALIASES.get(str(text).strip().lower())
        if found is None:
            log.warning("%s: schemaRegistryVendor %r is not a vendor this connector knows; the registry is "
                        "read through Confluent's REST API (set the option schema.registry.vendor to one of "
                        "%s to choose)", path or "document", text, ", ".join(v.value for v in cls))
        return found


_ALIASES: dict[str, Vendor] = {
    "confluent": Vendor.CONFLUENT, "confluent-schema-registry": Vendor.CONFLUENT, "karapace": Vendor.CONFLUENT,
    "redpanda": Vendor.CONFLUENT, "apicurio-ccompat": Vendor.CONFLUENT,
    "apicurio": Vendor.APICURIO, "apicurio-registry": Vendor.APICURIO, "ibm": Vendor.APICURIO,
    "aws-glue": Vendor.AWS_GLUE, "glue": Vendor.AWS_GLUE, "aws": Vendor.AWS_GLUE,
    "aws-glue-schema-registry": Vendor.AWS_GLUE,
    "file": Vendor.FILE,
}
_OTHERS = set(_ALIASES) - {v.value for v in Vendor}
