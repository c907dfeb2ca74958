"""What the stand-in registry does to a schema as a real one does: parse it, store it reprinted,
compare parsed forms, refuse invalid ones (42201) and incompatible ones (409).

Measured against Karapace 3.16 (``connector.testing.KarapaceServer``):

* Avro and JSON Schema are stored as compact JSON, Avro with sorted keys; a look-up finds a schema
  whatever its key order or spacing (a ``doc`` that differs is another schema). Karapace sorts the
  keys of JSON Schema too, so a struct read from a JSON Schema registered there lists its
  properties alphabetically; the stand-in keeps their order, as Confluent's registry does.
* Protobuf is stored reprinted: nested messages and enums after the fields, one statement a line,
  so the text a client posted is never the text it gets back. Karapace keeps comments, which the
  stand-in drops.
* Invalid Avro (an undefined type name, text that is not JSON) is refused with 42201.
* Compatibility is checked for Avro only (Karapace checks every type); Avro references of the
  stand-in's own are allowed (Karapace 3.16 refuses Avro and JSON Schema references: 44302).

Standard library only, like the stand-in.
"""
from __future__ import annotations

import json
import re

__all__ = ["stored_text", "identity", "avro_problem", "compatibility_problem", "COMPATIBILITY_LEVELS"]

COMPATIBILITY_LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                        "FULL_TRANSITIVE")

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "error", "enum", "fixed"})
# writer type -> reader types that read it (Avro's schema resolution)
_PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
               "string": {"bytes"}, "bytes": {"string"}}


def stored_text(schema_type: str, text: str) -> str:
    """The text a registry stores (and answers) for ``text``: see the module docstring.

    Raises
    ------
    ValueError
        Avro or JSON Schema text that is not JSON; Protobuf whose braces do not balance.
    """
    if schema_type == "AVRO":
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    if schema_type == "JSON":
        return json.dumps(json.loads(text), separators=(",", ":"))
    if schema_type == "PROTOBUF":
        if _BASE64.match(text):  # a serialized FileDescriptorProto, which Confluent accepts too
            return text
        return _reprint_proto(text)
    return text


def identity(schema_type: str, stored: str) -> str:
    """What two stored schemas share when they are the same schema (JSON Schema: the parsed document,
    whatever its key order)."""
    if schema_type == "JSON":
        try:
            return json.dumps(json.loads(stored), sort_keys=True, separators=(",", ":"))
        except ValueError:
            return stored
    return stored


# -- Protobuf: reprinted ------------------------------------------------------------------------
_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z0-9_.+-]+|[{}\[\]()<>;=,:]',
                    re.S)
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+=*\s*$")
_NO_SPACE_BEFORE = frozenset({";", ",", ")", "]", ">"})
_NO_SPACE_AFTER = frozenset({"(", "[", "<"})


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"unexpected character {text[pos]!r} in .proto source")
        tok, pos = m.group(0), m.end()
        if not (tok[0].isspace() or tok.startswith(("//", "/*"))):
            out.append(tok)
    return out


def _block(tokens: list[str], i: int, depth: int) -> tuple[list, int]:
    """Statements up to the closing brace: ``(head tokens, None)`` or ``(head tokens, [children])``."""
    items: list = []
    head: list[str] = []
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == ";":
            if head:
                items.append((head + [";"], None))
            head = []
        elif tok == "{":
            body, i = _block(tokens, i, depth + 1)
            items.append((head, body))
            head = []
        elif tok == "}":
            if depth == 0:
                raise ValueError("unbalanced '}' in .proto source")
            if head:
                raise ValueError("statement without ';' in .proto source")
            return items, i
        else:
            head.append(tok)
    if depth or head:
        raise ValueError("unbalanced braces in .proto source")
    return items, i


def _join(tokens: list[str]) -> str:
    out, previous = "", ""
    for tok in tokens:
        if out and tok not in _NO_SPACE_BEFORE and out[-1] not in _NO_SPACE_AFTER \
                and not (tok == "<" and previous == "map"):
            out += " "
        out += tok
        previous = tok
    return out


def _print(items: list, indent: str, lines: list[str], top: bool) -> None:
    def kind(item) -> str:
        return item[0][0] if item[0] else ""

    if top:  # syntax, package, imports, options, then the declarations (as Karapace prints them)
        rank = {"syntax": 0, "edition": 0, "package": 1, "import": 2, "option": 3}
        groups = {"edition": "syntax", "package": "syntax"}
        items = sorted(items, key=lambda it: rank.get(kind(it), 4))
    else:  # nested types after the fields
        groups = {}
        items = ([it for it in items if kind(it) not in ("message", "enum")]
                 + [it for it in items if kind(it) in ("message", "enum")])
    previous = None
    for item in items:
        head, body = item
        group = groups.get(kind(item), kind(item)) if top else \
            ("types" if kind(item) in ("message", "enum") else "fields")
        if previous is not None and (group != previous or body is not None and top):
            lines.append("")
        previous = group
        if body is None:
            lines.append(indent + _join(head))
        else:
            lines.append(indent + _join(head) + " {")
            _print(body, indent + "  ", lines, False)
            lines.append(indent + "}")


def _reprint_proto(text: str) -> str:
    items, _ = _block(_tokens(text), 0, 0)
    lines: list[str] = []
    _print(items, "", lines, True)
    return "\n".join(lines) + "\n"


# -- Avro: validity ----------------------------------------------------------------------------------
def _fullname(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def avro_problem(text: str, reference_names=()) -> str | None:
    """Why ``text`` is not a valid Avro schema (None: it is). ``reference_names``: the full names
    its references define."""
    try:
        root = json.loads(text)
    except ValueError as e:
        return f"Invalid AVRO schema. Error: {e}"
    defined = set(reference_names)
    problems: list[str] = []

    def walk(node, namespace: str | None, depth: int) -> None:
        if depth > 200 or problems:
            return
        if isinstance(node, str):
            if node not in _PRIMITIVES and _fullname(node, namespace) not in defined and node not in defined:
                problems.append(f"Invalid AVRO schema. Error: Undefined type: {node}")
        elif isinstance(node, list):
            for branch in node:
                walk(branch, namespace, depth + 1)
        elif isinstance(node, dict):
            t = node.get("type")
            if t in _NAMED:
                if not isinstance(node.get("name"), str):
                    problems.append("Invalid AVRO schema. Error: a named type needs a name")
                    return
                ns = node.get("namespace", namespace) if "." not in node["name"] else node["name"].rpartition(".")[0]
                defined.add(_fullname(node["name"], ns))
                for f in node.get("fields", ()) if t in ("record", "error") else ():
                    walk(f.get("type") if isinstance(f, dict) else None, ns, depth + 1)
            elif t == "array":
                walk(node.get("items"), namespace, depth + 1)
            elif t == "map":
                walk(node.get("values"), namespace, depth + 1)
            else:
                walk(t, namespace, depth + 1)
        else:
            problems.append("Invalid AVRO schema. Error: not a schema")

    walk(root, None, 0)
    return problems[0] if problems else None


# -- Avro: compatibility ------------------------------------------------------------------------------
def _names(node, namespace: str | None, out: dict) -> dict:
    if isinstance(node, list):
        for b in node:
            _names(b, namespace, out)
    elif isinstance(node, dict):
        t = node.get("type")
        if t in _NAMED and isinstance(node.get("name"), str):
            ns = node.get("namespace", namespace)
            out.setdefault(_fullname(node["name"], ns), node)
            out.setdefault(node["name"].rpartition(".")[2], node)
            for f in node.get("fields", ()) if t in ("record", "error") else ():
                _names(f.get("type"), ns, out)
        elif t == "array":
            _names(node.get("items"), namespace, out)
        elif t == "map":
            _names(node.get("values"), namespace, out)
        elif isinstance(t, (dict, list)):
            _names(t, namespace, out)
    return out


def _reads(reader, writer, rn: dict, wn: dict, seen: set) -> str | None:
    """Why data written with ``writer`` cannot be read with ``reader`` (None: it can)."""
    def kind(node, names):
        if isinstance(node, str):
            return names.get(node, node) if node not in _PRIMITIVES else node
        if isinstance(node, dict) and isinstance(node.get("type"), (str, list, dict)) and \
                node["type"] not in _NAMED and node["type"] not in ("array", "map"):
            return kind(node["type"], names)
        return node

    r, w = kind(reader, rn), kind(writer, wn)
    if isinstance(w, list):
        for branch in w:
            why = _reads(r, branch, rn, wn, seen)
            if why:
                return why
        return None
    if isinstance(r, list):
        if any(_reads(b, w, rn, wn, seen) is None for b in r):
            return None
        return f"no branch of the reader union reads {_label(w)}"
    if isinstance(r, str) or isinstance(w, str):
        if r == w or (isinstance(r, str) and isinstance(w, str) and r in _PROMOTIONS.get(w, ())):
            return None
        return f"reader type {_label(r)} does not read writer type {_label(w)}"
    rt, wt = r.get("type"), w.get("type")
    if rt != wt and not (rt in ("record", "error") and wt in ("record", "error")):
        return f"reader type {_label(r)} does not read writer type {_label(w)}"
    if rt == "array":
        return _reads(r.get("items"), w.get("items"), rn, wn, seen)
    if rt == "map":
        return _reads(r.get("values"), w.get("values"), rn, wn, seen)
    if str(r.get("name", "")).rpartition(".")[2] != str(w.get("name", "")).rpartition(".")[2]:
        return f"name {r.get('name')!r} does not match {w.get('name')!r}"
    key = (id(r), id(w))
    if key in seen:
        return None
    seen.add(key)
    if rt == "fixed":
        return None if r.get("size") == w.get("size") else f"fixed {r.get('name')!r} changed size"
    if rt == "enum":
        missing = [s for s in w.get("symbols", ()) if s not in r.get("symbols", ())]
        return None if not missing or "default" in r else f"enum {r.get('name')!r} lost symbols {missing}"
    written = {f.get("name"): f for f in w.get("fields", ())}
    for f in r.get("fields", ()):
        old = written.get(f.get("name"))
        if old is None:
            if "default" not in f:
                return f"reader field {f.get('name')!r} has no default and the writer lacks it"
            continue
        why = _reads(f.get("type"), old.get("type"), rn, wn, seen)
        if why:
            return f"field {f.get('name')!r}: {why}"
    return None


def _label(node) -> str:
    if isinstance(node, dict):
        return str(node.get("name") or node.get("type"))
    return json.dumps(node) if isinstance(node, list) else str(node)


def compatibility_problem(level: str, schema_type: str, new: str, olds: list[str]) -> str | None:
    """Why ``new`` may not follow ``olds`` (oldest first) under ``level`` (None: it may). Avro
    only; other types pass (a difference from Karapace, named in the module docstring)."""
    if level == "NONE" or schema_type != "AVRO" or not olds:
        return None
    against = olds if level.endswith("_TRANSITIVE") else olds[-1:]
    base = level.removesuffix("_TRANSITIVE")
    n = json.loads(new)
    nn = _names(n, None, {})
    for old_text in reversed(against):
        o = json.loads(old_text)
        on = _names(o, None, {})
        if base in ("BACKWARD", "FULL"):
            why = _reads(n, o, nn, on, set())
            if why:
                return f"{why} (compatibility_mode={level})"
        if base in ("FORWARD", "FULL"):
            why = _reads(o, n, on, nn, set())
            if why:
                return f"{why} (compatibility_mode={level})"
    return None
