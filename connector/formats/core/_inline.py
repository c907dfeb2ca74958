"""Kernels assembled from their handlers' source: one compiled function, written as small functions.

A kernel reads best as small handlers (one per schema construct) that take the kernel's named
structures; it compiles best as one function. A numba call between functions passes every
field of every structure (an array is seven values): with handlers taking a program, a batch,
the column buffers and a scratch, numba's compile time doubled, and numba's own IR inlining
(``inline="always"``) deep-copies each callee's IR per call site, slower still. So a handler or
helper marked :func:`inline` is pasted into the kernel that calls it, from its source, once at
import (:func:`expand`): its parameters bound to the call's arguments (a parameter it does not
assign is the caller's variable itself), its locals renamed apart, each ``return`` an assignment
to the call's targets — early returns nested as ``if``/``else`` (what follows goes to the other
branch) or, where that would copy code into both branches, a ``break`` out of a loop run once.
The result is the kernel as one function, which ``core.kernels.kernel`` compiles (cached on disk
with the module that defines it); its source is kept as ``__kernel_source__`` for reading.

Rules a marked function follows (checked here; a clear error at import otherwise): it is called
as a statement (``x = f(...)``, ``a, b = f(...)``, ``f(...)`` or ``return f(...)``), with
positional arguments; it has no ``return`` inside a loop. Calls in expressions (``if f(x):``)
stay calls: those are ordinary compiled helpers (``core.kernels.helper``) with small arguments.

:func:`dispatch` writes an interpreter's dispatch from its one table of handlers (op → handler):
an inlined function of an ``if``/``elif`` chain, each branch one handler.
"""
from __future__ import annotations

import ast
import copy
import inspect
import itertools
import textwrap
from typing import Any, Callable

__all__ = ["inline", "expand", "dispatch"]

_MARK = "__kernel_inline__"
_SOURCE = "__kernel_source__"


def inline(fn: Callable) -> Callable:
    """Mark ``fn`` (a plain function) to be pasted into the kernels that call it."""
    setattr(fn, _MARK, True)
    return fn


_sources: dict = {}  # function → its source text (inspect.getsource tokenizes the file: slow)


def _source(fn: Callable) -> str:
    src = getattr(fn, _SOURCE, None)
    if src is None:
        src = _sources.get(fn)
        if src is None:
            src = _sources[fn] = textwrap.dedent(inspect.getsource(fn))
    return src


def _definition(fn: Callable) -> ast.FunctionDef:
    src = _source(fn)
    fdef = ast.parse(src).body[0]
    assert isinstance(fdef, ast.FunctionDef)
    fdef.decorator_list = []
    body = fdef.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        fdef.body = body[1:] or [ast.Pass()]  # the docstring
    return fdef


def _assigned(fdef: ast.FunctionDef) -> set[str]:
    """The names ``fdef``'s body assigns."""
    return {n.id for st in fdef.body for n in ast.walk(st)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _rename(stmts: list, names: dict[str, str]) -> None:
    """Rename, in place, every name of ``stmts`` that ``names`` maps."""
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, ast.Name):
                node.id = names.get(node.id, node.id)


def _returns_in_loops(stmts: list, in_loop: bool = False) -> bool:
    for st in stmts:
        if isinstance(st, ast.Return) and in_loop:
            return True
        loop = in_loop or isinstance(st, (ast.For, ast.While))
        for field in ("body", "orelse"):
            if _returns_in_loops(getattr(st, field, []), loop):
                return True
    return False


def _has_return(st: ast.stmt) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(st))


def _always_returns(stmts: list) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    return isinstance(last, ast.Return) or (
        isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse))


def _nest(stmts: list) -> list | None:
    """``stmts`` with every return last on its path: the statements after an ``if`` whose one
    branch returns move into its other branch (a final ``return`` alone into both). None where
    more would have to be copied into both branches."""
    out: list = []
    for i, st in enumerate(stmts):
        if isinstance(st, ast.Return):
            return out + [st]  # what follows is unreachable
        if isinstance(st, ast.If) and _has_return(st):
            rest = stmts[i + 1:]
            body_returns, else_returns = _always_returns(st.body), _always_returns(st.orelse)
            if rest and not body_returns and not else_returns and \
                    not (len(rest) == 1 and isinstance(rest[0], ast.Return)):
                return None  # a final return alone may go to both branches
            body = _nest(st.body if body_returns else st.body + copy.deepcopy(rest))
            orelse = _nest(st.orelse if else_returns else st.orelse + rest)
            if body is None or orelse is None:
                return None
            return out + [ast.If(test=st.test, body=body or [ast.Pass()], orelse=orelse)]
        out.append(st)
    return out


class _Expander:
    def __init__(self, module: dict):
        self.module = module
        self.count = itertools.count()

    def macro(self, node: Any) -> Callable | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = self.module.get(node.func.id)
            if fn is not None and getattr(fn, _MARK, False):
                return fn
        return None

    def block(self, stmts: list) -> list:
        out: list = []
        for st in stmts:
            out.extend(self.stmt(st))
        return out

    def stmt(self, st: ast.stmt) -> list:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Call) \
                and (fn := self.macro(st.value)):
            return self.paste(fn, st.value, st.targets[0])
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and (fn := self.macro(st.value)):
            return self.paste(fn, st.value, None)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(st, field, None), list):
                setattr(st, field, self.block(getattr(st, field)))
        # this statement's own expressions (its blocks checked themselves above)
        own = [v for f, v in ast.iter_fields(st) if f not in ("body", "orelse", "finalbody")]
        for node in (n for v in own for x in (v if isinstance(v, list) else [v])
                     if isinstance(x, ast.AST) for n in ast.walk(x)):
            if self.macro(node):
                where = ast.unparse(ast.fix_missing_locations(ast.Module(body=[st], type_ignores=[])))
                raise TypeError(f"{where.splitlines()[0][:100]!r}: an inlined function is "
                                "called as a statement (x = f(...), f(...), return f(...)), not in an expression")
        return [st]

    def paste(self, fn: Callable, call: ast.Call, target: ast.expr | None) -> list:
        """The statements of ``target = fn(*call.args)``."""
        fdef = _definition(fn)
        params = [a.arg for a in fdef.args.args]
        if call.keywords or len(call.args) != len(params) or fdef.args.vararg or fdef.args.kwonlyargs:
            raise TypeError(f"{fn.__name__}: inlined calls pass exactly its positional parameters")
        if _returns_in_loops(fdef.body):
            raise TypeError(f"{fn.__name__}: an inlined function returns outside loops only")
        prefix = f"_{fn.__name__.strip('_')}{next(self.count)}_"
        assigned = _assigned(fdef)
        names = {n: prefix + n for n in assigned | set(params)}  # its locals, renamed apart
        binds: list = []
        for p, a in zip(params, call.args):
            if isinstance(a, ast.Name) and p not in assigned:
                names[p] = a.id  # read only: the caller's variable itself
            else:
                binds.append(ast.Assign(targets=[ast.Name(names[p], ast.Store())], value=a))
        body: list = fdef.body
        _rename(body, names)
        nested = _nest(body)  # early returns as if/else: what follows a return goes to the else
        if nested is not None:
            body = self.returns(nested, target, False)
        else:  # a return in a branch that does not always return: a loop run once, returns break
            body = self.returns(body, target, True)
            end = [] if body and isinstance(body[-1], ast.Break) else [ast.Break()]
            body = [ast.While(test=ast.Constant(True), body=body + end, orelse=[])]
        return self.block(binds + body)

    def returns(self, stmts: list, target: ast.expr | None, wrap: bool) -> list:
        out: list = []
        for st in stmts:
            if isinstance(st, ast.Return):
                if st.value is not None and target is not None:
                    out.append(ast.Assign(targets=[copy.deepcopy(target)], value=st.value))
                elif st.value is not None and isinstance(st.value, ast.Call):
                    out.append(ast.Expr(st.value))
                if wrap:
                    out.append(ast.Break())
                continue
            if not isinstance(st, (ast.For, ast.While)):
                for field in ("body", "orelse"):
                    if getattr(st, field, None):
                        setattr(st, field, self.returns(getattr(st, field), target, wrap) or
                                ([ast.Pass()] if field == "body" else []))
            out.append(st)
        return out


def expand(fn: Callable, module: dict) -> Callable:
    """``fn`` with every call to an :func:`inline` function pasted in, defined again in
    ``module`` (the kernel's module's globals; its file names the code, so numba caches it
    with that file)."""
    fdef = _definition(fn)
    fdef.body = _Expander(module).block(fdef.body)
    tree = ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))
    src = ast.unparse(tree)
    code = compile(src + "\n", module["__file__"], "exec")
    namespace: dict = {}
    exec(code, module, namespace)
    out = namespace[fdef.name]
    out.__doc__ = fn.__doc__
    setattr(out, _SOURCE, src)
    return out


def dispatch(name: str, table: dict, params: str, module: dict) -> Callable:
    """An interpreter's dispatch, generated from its one table of handlers (op → handler, most
    frequent first; ops sharing a handler are tested together): the inlined function
    ``name(op, <params>)`` returning ``table[op](<params>)``, the last handler also taking any
    op not in the table. The handlers are globals of ``module``, where the function is defined."""
    by_handler: dict = {}
    for op, fn in table.items():
        assert module.get(fn.__name__) is fn, f"{fn.__name__} is not a global of the kernel's module"
        by_handler.setdefault(fn, []).append(op)
    lines = [f"def {name}(op, {params}):"]
    for i, (fn, ops) in enumerate(by_handler.items()):
        if i < len(by_handler) - 1:
            test = " or ".join(f"op == {int(op)}" for op in ops)
            lines.append(f"    {'if' if i == 0 else 'elif'} {test}:  # {', '.join(str(op) for op in ops)}")
            lines.append(f"        return {fn.__name__}({params})")
        else:
            lines.append(f"    return {fn.__name__}({params})  # {', '.join(str(op) for op in ops)} and others")
    src = "\n".join(lines) + "\n"
    namespace: dict = {}
    exec(compile(src, module["__file__"], "exec"), module, namespace)
    fn = namespace[name]
    setattr(fn, _SOURCE, src)
    return inline(fn)
