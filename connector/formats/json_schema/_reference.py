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

The validator classes are the drafts' own, extended so that ``pattern``, ``patternProperties``
and ``additionalProperties`` (which reads ``patternProperties``) ask the one owner of pattern
matching (:mod:`~connector.formats.json_schema._pattern`: RE2, or a bounded engine) instead of
Python's backtracking ``re``, with ``re``'s meaning. A string whose check runs out of budget is
an invalid record with a reason that says so (never a pass: under ``not`` or ``oneOf`` a refusal
could turn into an acceptance, so the whole verdict is replaced). A schema python-jsonschema
cannot validate with (a ``$ref`` that resolves nowhere, a pattern that is not a regular
expression) raises :class:`~connector.errors.SchemaCompileError`: misconfiguration, not a bad
record.
"""
from __future__ import annotations

import re
import warnings
from typing import Any

from connector.errors import PatternBudgetError, SchemaCompileError

__all__ = ["Reference", "draft_of", "json_path", "LEGACY_REF", "validator_class", "check_patterns"]

#: Drafts whose ``$ref`` hides its sibling keywords (jsonschema's ``ignore_ref_siblings``).
LEGACY_REF = frozenset({"draft3", "draft4", "draft6", "draft7"})

_NAMES = {"Draft3Validator": "draft3", "Draft4Validator": "draft4", "Draft6Validator": "draft6",
          "Draft7Validator": "draft7", "Draft201909Validator": "draft2019-09",
          "Draft202012Validator": "draft2020-12"}


def _base_class(document: Any):
    from jsonschema.validators import Draft202012Validator, validator_for

    uri = document.get("$schema") if isinstance(document, dict) else None
    if uri is not None and not isinstance(uri, str):
        return Draft202012Validator
    with warnings.catch_warnings():  # an unknown $schema: jsonschema warns and takes the newest
        warnings.simplefilter("ignore", DeprecationWarning)
        return validator_for(document, default=Draft202012Validator) if uri is not None else Draft202012Validator


_EXTENDED: dict[Any, Any] = {}


def validator_class(document: Any):
    """The jsonschema validator class for ``document`` (see the module docstring): the draft's
    class, its pattern keywords bounded (:mod:`~connector.formats.json_schema._pattern`)."""
    base = _base_class(document)
    cls = _EXTENDED.get(base)
    if cls is None:
        from jsonschema.validators import extend

        cls = extend(base, {"pattern": _pattern, "patternProperties": _pattern_properties,
                            "additionalProperties": _additional_properties})
        cls.DRAFT = _NAMES.get(base.__name__, "draft2020-12")
        _EXTENDED[base] = cls
    return cls


def draft_of(document: Any) -> str:
    """``draft3`` … ``draft2020-12``: the draft python-jsonschema validates ``document`` with."""
    return validator_class(document).DRAFT


# -- the pattern keywords, as jsonschema's own (_keywords.py) but with bounded matching ------------
def _search(pattern: Any, s: str, keyword: str) -> bool:
    from connector.formats.json_schema._pattern import compile_pattern

    try:
        return compile_pattern(pattern).search(s)
    except PatternBudgetError as e:
        e.keyword = keyword
        raise


def _pattern(validator, patrn, instance, schema):
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(patrn, instance, "pattern"):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for k, v in instance.items():
            if _search(pattern, k, "patternProperties"):
                yield from validator.descend(v, subschema, path=k, schema_path=pattern)


def _additional_properties(validator, aP, instance, schema):
    from jsonschema._utils import extras_msg
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = "|".join(schema.get("patternProperties", {}))  # one pattern, as jsonschema joins them
    extras = {p for p in instance if p not in properties
              and not (patterns and _search(patterns, p, "additionalProperties"))}
    if validator.is_type(aP, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], aP, path=extra)
    elif not aP and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            error = "Additional properties are not allowed (%s %s unexpected)"
            yield ValidationError(error % extras_msg(sorted(extras, key=str)))


_VALUES = frozenset({"enum", "const", "default", "examples"})  # data, not schemas


def check_patterns(document: Any) -> None:
    """Compile every ``pattern`` and ``patternProperties`` name of ``document`` and resolve its
    local ``$ref``\\s, so a schema that cannot be validated with fails when it is loaded, naming
    the place (``SchemaCompileError``), rather than when a record reaches it."""
    from connector.formats.json_schema._pattern import compile_pattern

    nested_ids = False
    todo: list[tuple[Any, tuple]] = [(document, ())]
    refs: list[tuple[str, tuple]] = []
    while todo:
        node, path = todo.pop()
        if isinstance(node, list):
            todo.extend((v, path + (i,)) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if path and isinstance(node.get("$id", node.get("id")), str):
            nested_ids = True
        for k, v in node.items():
            where = path + (k,)
            try:
                if k == "pattern" and isinstance(v, str):
                    compile_pattern(v)
                elif k == "patternProperties" and isinstance(v, dict):
                    for name in v:
                        compile_pattern(name)
                    if len(v) > 1:
                        compile_pattern("|".join(v))  # additionalProperties reads them joined
            except SchemaCompileError as e:
                raise SchemaCompileError(f"the JSON Schema's {_doc_path(where)}: {e}") from e
            if k == "$ref" and isinstance(v, str) and v.startswith("#"):
                refs.append((v, where))
            if k not in _VALUES:
                todo.append((v, where))
    if nested_ids:
        return  # a $ref resolves against the nearest $id: left to jsonschema (and its error, below)
    for ref, where in refs:
        if ref.startswith("#/") or ref == "#":
            node = document
            for part in [p for p in ref[2:].split("/") if p] if ref != "#" else []:
                part = part.replace("~1", "/").replace("~0", "~")
                try:
                    node = node[int(part)] if isinstance(node, list) else node[part]
                except (KeyError, IndexError, ValueError, TypeError):
                    raise SchemaCompileError(f"the JSON Schema's {_doc_path(where)} {ref!r} resolves "
                                             "to nothing in the schema") from None


def _doc_path(parts: tuple) -> str:
    return "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts) or "(root)"


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
    SchemaCompileError
        The schema is not valid against its draft's meta-schema (as confluent-kafka's
        deserializer, which checks it first, would refuse it), or holds a ``$ref`` that resolves
        nowhere (:func:`check_patterns`).
    """

    def __init__(self, document: Any):
        from jsonschema import SchemaError
        from jsonschema.exceptions import best_match

        cls = validator_class(document)
        try:
            cls.check_schema(document)
        except SchemaError as e:
            raise SchemaCompileError(f"the JSON Schema is not valid under {draft_of(document)}: "
                                     f"{json_path(e.absolute_path)}: {e.message[:300]}") from e
        check_patterns(document)
        self.draft = draft_of(document)
        self.validator = cls(document)
        self._best = best_match

    def why(self, doc: Any) -> str | None:
        """None when ``doc`` (a decoded JSON document) is valid, else what is wrong first (the
        error jsonschema's ``validate`` would raise; a pattern check out of budget, said so).

        Raises
        ------
        SchemaCompileError
            The schema cannot be validated with (a ``$ref`` that resolves nowhere).
        """
        return why_invalid(self.validator, doc, self._best)


def why_invalid(validator: Any, doc: Any, best: Any = None) -> str | None:
    """What :meth:`Reference.why` says, for any validator of :func:`validator_class` (a part
    of a schema, for the writer's checks)."""
    from referencing.exceptions import Unresolvable

    if best is None:
        from jsonschema.exceptions import best_match as best
    try:
        err = best(validator.iter_errors(doc))
    except PatternBudgetError as e:
        keyword = getattr(e, "keyword", "pattern")
        return f"{json_path(_where(doc, e.value, keyword != 'pattern'))}: '{keyword}' — {e}"
    except Unresolvable as e:
        raise SchemaCompileError(f"the JSON Schema cannot be validated with: {type(e).__name__}: {str(e)[:300]}") from e
    return None if err is None else _describe(err)


def _where(doc: Any, s: str, key: bool) -> list:
    """The path of the first string ``s`` in ``doc`` (a member name when ``key``)."""
    todo: list[tuple[Any, list]] = [(doc, [])]
    while todo:
        node, path = todo.pop(0)
        if isinstance(node, dict):
            for k, v in node.items():
                if key and k == s:
                    return path + [k]
                todo.append((v, path + [k]))
        elif isinstance(node, list):
            todo.extend((v, path + [i]) for i, v in enumerate(node))
        elif not key and node == s:
            return path
    return []
