"""What is a valid JSON record: python-jsonschema decides, for reads and writes alike.

The reference is the validator class ``jsonschema.validators.validator_for`` picks from the
document's ``$schema`` (the newest draft, 2020-12, when there is none or jsonschema does not
know it), built on the whole (bundled) schema with no format checker. That is how
confluent-kafka's ``JSONSerializer``/``JSONDeserializer`` validate, and what a user who checks a
record with python-jsonschema gets: ``format`` is an annotation (jsonschema asserts it only when
given a ``format_checker``), so a string that is not a date-time is valid against
``{"type": "string", "format": "date-time"}`` (the reader still needs a date-time to fill a
timestamp column: such a record is a row error that says so, not a validation error).

:func:`draft_of` is the one place the draft is read (the type mapping asks it whether ``2.0`` is
an integer). :class:`Reference` validates one decoded document and says why it is invalid:
``$.items[3].sku: 'required' — 'sku' is a required property`` (the JSON path, the keyword, and
jsonschema's message; for ``required`` the path names the missing member).
"""
from __future__ import annotations

import re
import warnings
from typing import Any

from connector.errors import SchemaMappingError

__all__ = ["Reference", "draft_of", "json_path", "LEGACY_REF"]

#: Drafts whose ``$ref`` hides its sibling keywords (jsonschema's ``ignore_ref_siblings``).
LEGACY_REF = frozenset({"draft3", "draft4", "draft6", "draft7"})

_NAMES = {"Draft3Validator": "draft3", "Draft4Validator": "draft4", "Draft6Validator": "draft6",
          "Draft7Validator": "draft7", "Draft201909Validator": "draft2019-09",
          "Draft202012Validator": "draft2020-12"}


def validator_class(document: Any):
    """The jsonschema validator class for ``document`` (see the module docstring)."""
    from jsonschema.validators import Draft202012Validator, validator_for

    uri = document.get("$schema") if isinstance(document, dict) else None
    if uri is not None and not isinstance(uri, str):
        return Draft202012Validator
    with warnings.catch_warnings():  # an unknown $schema: jsonschema warns and takes the newest
        warnings.simplefilter("ignore", DeprecationWarning)
        return validator_for(document, default=Draft202012Validator) if uri is not None else Draft202012Validator


def draft_of(document: Any) -> str:
    """``draft3`` … ``draft2020-12``: the draft python-jsonschema validates ``document`` with."""
    return _NAMES.get(validator_class(document).__name__, "draft2020-12")


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def json_path(parts) -> str:
    """``$.a.b[3]['odd key']`` for a jsonschema path (``deque`` of names and indexes)."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT.match(p):
            out += f".{p}"
        else:
            out += f"[{p!r}]"
    return out


def _describe(err) -> str:
    path = list(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [p for p in err.validator_value if p not in err.instance]
        if missing:
            path.append(missing[0])
    msg = err.message if len(err.message) <= 300 else err.message[:297] + "..."
    keyword = "false" if err.validator is None else err.validator  # the schema false refuses everything
    return f"{json_path(path)}: '{keyword}' — {msg}"


class Reference:
    """python-jsonschema's validator of one schema document, built once per schema and process.

    Raises
    ------
    SchemaMappingError
        The schema is not valid against its draft's meta-schema (as confluent-kafka's
        deserializer, which checks it first, would refuse it).
    """

    def __init__(self, document: Any):
        from jsonschema import SchemaError
        from jsonschema.exceptions import best_match

        cls = validator_class(document)
        try:
            cls.check_schema(document)
        except SchemaError as e:
            raise SchemaMappingError(f"the JSON Schema is not valid under {draft_of(document)}: "
                                     f"{json_path(e.absolute_path)}: {e.message[:300]}") from e
        self.draft = draft_of(document)
        self.validator = cls(document)
        self._best = best_match

    def why(self, doc: Any) -> str | None:
        """None when ``doc`` (a decoded JSON document) is valid, else what is wrong first (the
        error jsonschema's ``validate`` would raise)."""
        err = self._best(self.validator.iter_errors(doc))
        return None if err is None else _describe(err)
