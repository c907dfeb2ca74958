"""CEL expressions that map onto Arrow compute, evaluated over a whole column at once.

The subset (anything else raises :class:`NotVectorizable` and the rule runs per record with
confluent-kafka's own CEL executor):

==========================  ===========================================================
CEL                         Arrow
==========================  ===========================================================
``message.a.b``, ``value``  struct field access (a null anywhere: not vectorized for that
                            batch, since CEL's null and missing-field semantics differ by
                            format)
int / double / string /     literals (no ``null``, no unsigned, no bytes literals)
bool literals
``== != < <= > >=``         same-type operands only (int with int, double with double ...)
``&& || !``                 Kleene logic: CEL's error absorption (``false && error`` is false)
``+ - *`` on ints           checked (an overflow, an error in CEL, falls back)
``+ - * /`` on doubles      IEEE, as CEL
``+`` on strings            concatenation
``c ? a : b``               ``if_else``
``size(x)`` / ``x.size()``  code points, bytes, list length
``startsWith endsWith       with a string literal argument
contains``
``name fullName typeName``  constants of the field (CEL_FIELD), folded before evaluation
==========================  ===========================================================

Ints are int8–int64 columns, doubles float32/float64, strings ``string``, bytes ``binary``;
other Arrow types (timestamps, decimals, dates, maps, Protobuf enums and unsigned ints, which
CEL sees as other types) are not vectorized. A condition passes where the result is true;
false or null (CEL: an error) fails the record, as both run the rule's ``onFailure``.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NotVectorizable", "CelProgram", "compile_cel", "split_guard"]


class NotVectorizable(Exception):
    """The expression (or this batch's data) is outside the vectorized subset."""


_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+|0x[0-9a-fA-F]+|\d+)(?P<suffix>[uU]?)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:.,()\[\]])
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
)""", re.VERBOSE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def _tokens(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise NotVectorizable(f"unsupported CEL syntax at {text[pos:pos + 10]!r}")
        pos = m.end()
        if m.group("num") is not None:
            if m.group("suffix"):
                raise NotVectorizable("unsigned literal")
            s = m.group("num")
            out.append(("lit", int(s, 16) if s.startswith("0x") else float(s) if any(c in s for c in ".eE")
                        else int(s)))
        elif m.group("str") is not None:
            body = m.group("str")[1:-1]
            if "\\" in body:
                if re.search(r"\\[^ntr\\'\"]", body):
                    raise NotVectorizable("string escape")
                body = re.sub(r"\\(.)", lambda e: _ESCAPES[e.group(1)], body)
            out.append(("lit", body))
        elif m.group("op") is not None:
            out.append(("op", m.group("op")))
        else:
            word = m.group("id")
            if word in ("true", "false"):
                out.append(("lit", word == "true"))
            elif word in ("null", "in"):
                raise NotVectorizable(f"'{word}'")
            else:
                out.append(("id", word))
    return out


class _Parser:
    """Recursive descent over CEL's precedence levels; builds a small tuple AST."""

    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, value: str | None = None) -> bool:
        if self.i >= len(self.toks):
            return False
        kind, v = self.toks[self.i]
        return kind == "op" and (value is None or v == value)

    def take(self, value: str) -> None:
        if not self.peek(value):
            raise NotVectorizable(f"expected {value!r}")
        self.i += 1

    def parse(self):
        node = self.expr()
        if self.i != len(self.toks):
            raise NotVectorizable("trailing tokens")
        return node

    def expr(self):
        cond = self.binary(0)
        if self.peek("?"):
            self.take("?")
            a = self.expr()
            self.take(":")
            b = self.expr()
            return ("?", cond, a, b)
        return cond

    _LEVELS = (("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int):
        if level == len(self._LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while self.i < len(self.toks) and self.toks[self.i][0] == "op" and self.toks[self.i][1] in self._LEVELS[level]:
            op = self.toks[self.i][1]
            self.i += 1
            node = (op, node, self.binary(level + 1))
            if level == 2 and self.i < len(self.toks) and self.toks[self.i][1] in self._LEVELS[2]:
                raise NotVectorizable("chained comparison")
        return node

    def unary(self):
        if self.peek("!"):
            self.take("!")
            return ("!", self.unary())
        if self.peek("-"):
            self.take("-")
            return ("neg", self.unary())
        return self.member()

    def member(self):
        node = self.primary()
        while self.peek(".") or self.peek("["):
            if self.peek("["):
                raise NotVectorizable("index access")
            self.take(".")
            kind, name = self.toks[self.i] if self.i < len(self.toks) else (None, None)
            if kind != "id" or not isinstance(name, str):
                raise NotVectorizable("expected a field name")
            self.i += 1
            if self.peek("("):
                _known(name)
                node = ("call", name, node, self.args())
            else:
                node = ("get", node, name)
        return node

    def args(self):
        self.take("(")
        out = []
        while not self.peek(")"):
            out.append(self.expr())
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        return out

    def primary(self):
        if self.i >= len(self.toks):
            raise NotVectorizable("unexpected end")
        kind, v = self.toks[self.i]
        self.i += 1
        if kind == "lit":
            return ("lit", v)
        if kind == "id":
            if self.peek("("):
                _known(v)
                return ("call", v, None, self.args())
            return ("id", v)
        if v == "(":
            node = self.expr()
            self.take(")")
            return node
        raise NotVectorizable(f"unexpected {v!r}")


_FUNCTIONS = frozenset({"size", "startsWith", "endsWith", "contains"})


def _known(name: str) -> None:
    if name not in _FUNCTIONS:
        raise NotVectorizable(f"function {name}")


def split_guard(expr: str) -> tuple[str | None, str]:
    """confluent-kafka's ``guard ; expression`` form: (guard or None, expression)."""
    if ";" in expr:
        guard, _, body = expr.partition(";")
        return (guard if guard.strip() else None), body
    return None, expr


# -- evaluation --------------------------------------------------------------------------------------
def _kind_of(t: pa.DataType) -> str:
    if pa.types.is_signed_integer(t):
        return "int"
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_list(t):
        return "list"
    raise NotVectorizable(f"Arrow type {t}")


def _lit_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        if not -(2 ** 63) <= v < 2 ** 63:
            raise NotVectorizable("int literal out of range")
        return "int"
    if isinstance(v, float):
        return "double"
    return "string"


@dataclasses.dataclass
class _Val:
    kind: str
    value: Any          # pa.Array, or a Python constant
    path: tuple = ()    # field path from the root binding (for leaf-type checks)
    const: bool = False


_ALLOWED_LEAF = frozenset({"STRING", "BYTES", "INT", "LONG", "FLOAT", "DOUBLE", "BOOLEAN"})


class CelProgram:
    """A compiled vectorizable CEL expression.

    Examples
    --------
    >>> import pyarrow as pa
    >>> msg = pa.array([{"age": 30, "name": "a"}, {"age": 12, "name": "bb"}])
    >>> compile_cel("message.age >= 18 && size(message.name) < 5").evaluate({"message": msg}).to_pylist()
    [True, False]
    """

    def __init__(self, text: str):
        self.text = text
        self.ast = _Parser(text).parse()

    def evaluate(self, env: dict[str, Any], leaf_types: dict[tuple, str] | None = None) -> pa.Array | Any:
        """Evaluate over ``env`` (name → Arrow array or Python constant).

        ``leaf_types`` (path from a binding → confluent field type) refuses fields CEL sees as
        another type (Protobuf enums, unsigned ints); None accepts every mapped Arrow type.
        Raises :class:`NotVectorizable` for data outside the subset (a null field, an overflow).
        """
        out = self._eval(self.ast, env, leaf_types)
        return out.value

    def _eval(self, node, env, leaf_types) -> _Val:
        op = node[0]
        if op == "lit":
            return _Val(_lit_kind(node[1]), node[1], const=True)
        if op == "id":
            if node[1] not in env:
                raise NotVectorizable(f"unknown identifier {node[1]!r}")
            v = env[node[1]]
            if isinstance(v, (pa.Array, pa.ChunkedArray)):
                return self._checked(_Val(_kind_of(v.type), v, (node[1],)), leaf_types)
            if isinstance(v, (str, bool, int, float)):
                return _Val(_lit_kind(v), v, const=True)
            raise NotVectorizable(f"identifier {node[1]!r}")
        if op == "get":
            base = self._eval(node[1], env, leaf_types)
            if base.kind != "struct":
                raise NotVectorizable("field access on a non-message")
            t = base.value.type
            if t.get_field_index(node[2]) < 0:
                raise NotVectorizable(f"no field {node[2]!r}")
            child = pc.struct_field(base.value, [node[2]])
            return self._checked(_Val(_kind_of(child.type), child, base.path + (node[2],)), leaf_types)
        if op == "call":
            return self._call(node, env, leaf_types)
        if op == "!":
            a = self._eval(node[1], env, leaf_types)
            _need(a, "bool")
            return _Val("bool", (not a.value) if a.const else pc.invert(a.value), const=a.const)
        if op == "neg":
            a = self._eval(node[1], env, leaf_types)
            if a.kind not in ("int", "double"):
                raise NotVectorizable("negation of a non-number")
            return _Val(a.kind, -a.value if a.const else pc.negate_checked(a.value), const=a.const)
        if op == "?":
            c = self._eval(node[1], env, leaf_types)
            _need(c, "bool")
            a, b = self._eval(node[2], env, leaf_types), self._eval(node[3], env, leaf_types)
            if a.kind != b.kind or a.kind in ("struct", "list"):
                raise NotVectorizable("branches of different types")
            if c.const:
                return a if c.value else b
            return _Val(a.kind, pc.if_else(c.value, _arr(a), _arr(b)))
        return self._binary(node, env, leaf_types)

    @staticmethod
    def _checked(v: _Val, leaf_types) -> _Val:
        if v.kind in ("struct", "list"):
            return v
        if leaf_types is not None and leaf_types.get(v.path) not in _ALLOWED_LEAF:
            raise NotVectorizable(f"field {'.'.join(v.path)} is not a plain CEL scalar")
        if v.value.null_count:
            raise NotVectorizable(f"field {'.'.join(v.path)} holds nulls")
        return v

    def _call(self, node, env, leaf_types) -> _Val:
        _, name, target, args = node
        vals = [self._eval(a, env, leaf_types) for a in args]
        if target is None:
            if name == "size" and len(vals) == 1:
                subject = vals[0]
            else:
                raise NotVectorizable(f"function {name}")
        else:
            subject = self._eval(target, env, leaf_types)
        if name == "size" and (target is None or not vals):
            if subject.const:
                if not isinstance(subject.value, str):
                    raise NotVectorizable("size of a constant")
                return _Val("int", len(subject.value), const=True)
            fn = {"string": pc.utf8_length, "bytes": pc.binary_length, "list": pc.list_value_length}.get(subject.kind)
            if fn is None:
                raise NotVectorizable(f"size of {subject.kind}")
            return _Val("int", fn(subject.value).cast(pa.int64()))
        if name in ("startsWith", "endsWith", "contains") and len(vals) == 1:
            _need(subject, "string")
            arg = vals[0]
            if not arg.const or arg.kind != "string":
                raise NotVectorizable(f"{name} with a non-literal argument")
            if subject.const:
                s = subject.value
                res = s.startswith(arg.value) if name == "startsWith" else s.endswith(arg.value) \
                    if name == "endsWith" else arg.value in s
                return _Val("bool", res, const=True)
            fn = {"startsWith": pc.starts_with, "endsWith": pc.ends_with, "contains": pc.match_substring}[name]
            return _Val("bool", fn(subject.value, pattern=arg.value))
        raise NotVectorizable(f"function {name}")

    def _binary(self, node, env, leaf_types) -> _Val:
        op = node[0]
        a, b = self._eval(node[1], env, leaf_types), self._eval(node[2], env, leaf_types)
        if op in ("&&", "||"):
            _need(a, "bool")
            _need(b, "bool")
            if a.const and b.const:
                return _Val("bool", (a.value and b.value) if op == "&&" else (a.value or b.value), const=True)
            fn = pc.and_kleene if op == "&&" else pc.or_kleene
            return _Val("bool", fn(_arr(a, b), _arr(b, a)))
        if a.kind != b.kind or a.kind in ("struct", "list"):
            raise NotVectorizable(f"{a.kind} {op} {b.kind}")
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if a.const and b.const:
                import operator
                fns = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
                       ">=": operator.ge}
                return _Val("bool", fns[op](a.value, b.value), const=True)
            if a.kind == "bytes" and op not in ("==", "!="):
                raise NotVectorizable("ordering of bytes")
            fn = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
                  ">=": pc.greater_equal}[op]
            return _Val("bool", fn(_side(a), _side(b)))
        if a.kind == "string" and op == "+":
            if a.const and b.const:
                return _Val("string", a.value + b.value, const=True)
            return _Val("string", pc.binary_join_element_wise(_side(a), _side(b), ""))
        if a.kind == "int" and op in ("+", "-", "*"):
            if a.const and b.const:
                raise NotVectorizable("constant arithmetic")
            fn = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[op]
            try:
                return _Val("int", fn(_side(a, pa.int64()), _side(b, pa.int64())))
            except pa.ArrowInvalid as e:  # overflow: an error in CEL, decided per record
                raise NotVectorizable("int overflow") from e
        if a.kind == "double" and op in ("+", "-", "*", "/"):
            if a.const and b.const:
                raise NotVectorizable("constant arithmetic")
            fn = {"+": pc.add, "-": pc.subtract, "*": pc.multiply, "/": pc.divide}[op]
            return _Val("double", fn(_side(a, pa.float64()), _side(b, pa.float64())))
        raise NotVectorizable(f"{a.kind} {op}")


def _need(v: _Val, kind: str) -> None:
    if v.kind != kind:
        raise NotVectorizable(f"expected {kind}, got {v.kind}")


def _side(v: _Val, cast: pa.DataType | None = None):
    if v.const:
        return pa.scalar(v.value, cast) if cast is not None else pa.scalar(v.value)
    if cast is not None and not v.value.type.equals(cast):
        return v.value.cast(cast)
    return v.value


def _arr(v: _Val, like: _Val | None = None) -> Any:
    if not v.const:
        return v.value
    n = len(like.value) if like is not None and not like.const else None
    if n is None:
        return pa.scalar(v.value)
    return pa.array([v.value] * n)


_CACHE: dict[str, CelProgram | NotVectorizable] = {}


def compile_cel(text: str) -> CelProgram:
    """A :class:`CelProgram` (cached); raises :class:`NotVectorizable` outside the subset."""
    hit = _CACHE.get(text)
    if hit is None:
        try:
            hit = CelProgram(text)
        except NotVectorizable as e:
            hit = e
        except RecursionError:
            hit = NotVectorizable("expression nests too deep")
        if len(_CACHE) < 4096:
            _CACHE[text] = hit
    if isinstance(hit, NotVectorizable):
        raise NotVectorizable(str(hit))
    return hit
