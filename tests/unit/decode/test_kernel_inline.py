"""Kernels assembled from their handlers' source (``connector.formats.core._inline``): the pasted
function computes what the plain Python calls compute (random inputs), compiles with numba as
one function, and the rules a handler follows are checked at import with a clear error."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connector.formats.core._inline import dispatch, expand, inline
from connector.formats.core.kernels import kernel


class S(NamedTuple):
    out: np.ndarray
    reg: np.ndarray


@inline
def _bump(s, i):
    """A helper with a local named like the caller's loop variable (``j``) and an early return."""
    j = s.reg[0]
    if i < 0:
        return j, -1
    s.reg[0] = j + i
    return j + i, 0


@inline
def _write(s, at, v):
    s.out[at] = v


@inline
def _twice(s, i):
    total, err = _bump(s, i)  # nested: pasted with its own names
    if err:
        return total, err
    total, err = _bump(s, i)
    return total, err


@inline
def _neg(s, i):
    return _bump(s, -1)  # a return of an inlined call


_step = dispatch("_step", {0: _bump, 1: _twice, 2: _neg, 3: _twice}, "s, i", globals())


def _run(s, ops, xs):
    k = 0
    errs = 0
    for j in range(len(ops)):
        k, err = _step(ops[j], s, xs[j])
        errs += err
        _write(s, j, k)
    return k, errs


_compiled = kernel()(_run)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 50)), max_size=20))
def test_the_pasted_kernel_computes_what_the_python_calls_compute(steps):
    ops = np.array([o for o, _ in steps] or [0], np.int64)[:len(steps)]
    xs = np.array([x for _, x in steps] or [0], np.int64)[:len(steps)]
    want_s, got_s = S(np.zeros(20, np.int64), np.zeros(1, np.int64)), S(np.zeros(20, np.int64), np.zeros(1, np.int64))
    want = _run(want_s, ops, xs)  # the handlers called as Python functions
    assert _compiled(got_s, ops, xs) == want
    assert got_s.out.tolist() == want_s.out.tolist() and got_s.reg.tolist() == want_s.reg.tolist()


def test_the_kernel_is_one_function_with_each_call_pasted_in():
    src = _compiled.py_func.__kernel_source__
    assert "_bump(" not in src and "_step(" not in src and "_write(" not in src
    assert "_bump1_j = s.reg[0]" in src  # a handler's local, renamed apart from the caller's ``j``


@inline
def _in_a_loop(s, i):
    for j in range(i):
        if j > 3:
            return j
    return 0


def _uses_in_expression(s, i):
    return _bump(s, i)[0] + 1


def _uses_loop_return(s, i):
    k = _in_a_loop(s, i)
    return k


def test_the_rules_are_checked_at_import():
    with pytest.raises(TypeError, match="called as a statement"):
        expand(_uses_in_expression, globals())
    with pytest.raises(TypeError, match="returns outside loops only"):
        expand(_uses_loop_return, globals())
