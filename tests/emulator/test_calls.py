"""Calls to ``.func`` device functions on the interpreter: NVRTC's ``__noinline__`` helpers
(tests/corpus/emu_calls.cu: scalar and struct arguments and returns, nested calls, a call
on one side of a divergent branch, a helper with a loop) and the builder's
``ModuleBuilder.func`` / ``kb.call``, against NumPy; recursion is refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.dsl.builder import ModuleBuilder
from ptxforge.emulator import EmulationError
from ptxforge.launch.loader import load
from ptxforge.ptx.parse import parse

from corpus_util import corpus_ptx

RNG = np.random.default_rng(23)


def _kernel(source, name):
    ptx = corpus_ptx(source, "sm_80", True)
    assert any(not k.is_entry for k in parse(ptx).kernels)          # the calls are still calls
    return load(ptx, device="emulator")[name]


def _poly3(x, a, b, c):
    x = x.astype(np.float64)
    return (a * x + b) * x + c


def _collatz(n):
    steps = 0
    while n > 1 and steps < 1000:
        n = 3 * n + 1 if n & 1 else n // 2
        steps += 1
    return steps


def test_nvrtc_scalar_calls_nested_and_divergent():
    n = 200
    x = RNG.integers(-8, 9, n).astype(np.float32) / 4        # exact in every fma
    y = np.full(n + 3, np.nan, np.float32)
    steps = np.zeros(n, np.uint32)
    _kernel("emu_calls", "calls_scalar")(x, y, steps, n, grid=2, block=128)
    odd = _poly3(x, 0.5, -1.0, 2.0) + _poly3(-x, 0.25, 1.0, -3.0)
    even = _poly3(x, 1.5, 0.0, -1.0)
    want = np.where(np.arange(n) & 1, odd, even).astype(np.float32)
    np.testing.assert_array_equal(y[:n], want)
    assert np.isnan(y[n:]).all()
    assert steps.tolist() == [_collatz(i + 1) for i in range(n)]


def test_nvrtc_struct_argument_and_return():
    n, m = 100, 7
    x = RNG.standard_normal(n * m).astype(np.float32)
    lo, hi = np.zeros(n, np.float32), np.zeros(n, np.float32)
    _kernel("emu_calls", "calls_struct")(x, lo, hi, n, m, grid=1, block=128)
    np.testing.assert_array_equal(lo, x.reshape(n, m).min(axis=1))
    np.testing.assert_array_equal(hi, x.reshape(n, m).max(axis=1))


def _dsl_module():
    """cube(x) = x * square(x); clamp_sum(x, k) loops k times; called under a branch."""
    mb = ModuleBuilder(target="sm_80")
    sq = mb.func("square", params=[("x", "f32")], returns=[("r", "f32")])
    x = sq.load_param("x")
    sq.set_return("r", sq.mul(x, x))
    cube = mb.func("cube", params=[("x", "f32")], returns=[("r", "f32")])
    x = cube.load_param("x")
    cube.set_return("r", cube.mul(x, cube.call(sq, x)))
    tri = mb.func("tri", params=[("k", "u32")], returns=[("r", "u32")])
    k = tri.load_param("k")
    acc = tri.mov(0, type="u32")
    with tri.loop(0, k) as j:
        tri.iadd(acc, j)
    tri.set_return("r", acc)
    kb = mb.kernel("k")
    px, py, pt = (kb.load_param(kb.param_ptr(nm, ty)) for nm, ty in
                  (("x", "f32"), ("y", "f32"), ("t", "u32")))
    i = kb.tid()
    v = kb.ld(kb.elem_ptr(px, i))
    out = kb.mov(-1.0, type="f32")
    with kb.if_(kb.setp("lt", i, 40)):
        kb.assign(out, kb.call(cube, v))
    kb.st(kb.elem_ptr(py, i), out)
    kb.st(kb.elem_ptr(pt, i), kb.add(kb.call(tri, i), kb.call(tri, kb.and_(i, 3))))
    return mb.build()


def test_builder_calls():
    n = 64
    x = RNG.integers(-5, 6, n).astype(np.float32)
    y, t = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    load(_dsl_module(), device="emulator")["k"](x, y, t, grid=1, block=n)
    i = np.arange(n)
    np.testing.assert_array_equal(y, np.where(i < 40, x ** 3, -1.0).astype(np.float32))
    np.testing.assert_array_equal(t, i * (i - 1) // 2 + (i & 3) * ((i & 3) - 1) // 2)


def test_recursion_is_refused():
    ptx = corpus_ptx("calls", "sm_80", True)
    name = next(k.name for k in parse(ptx).entries if "call_chain" in k.name)
    kernel = load(ptx, device="emulator")[name]
    x = np.zeros(8, np.float32)
    v = np.zeros(16, np.float64)
    with pytest.raises(EmulationError, match="recursive, indirect or to a function without"):
        kernel(x, v, x.copy(), np.zeros(8, np.int32), 8, grid=1, block=8)


def test_a_guarded_call_runs_only_where_its_predicate_holds():
    from ptxforge import emit

    mb = ModuleBuilder(target="sm_80")
    sq = mb.func("square", params=[("x", "f32")], returns=[("r", "f32")])
    x = sq.load_param("x")
    sq.set_return("r", sq.mul(x, x))
    kb = mb.kernel("k")
    px, py = kb.load_param(kb.param_ptr("x", "f32")), kb.load_param(kb.param_ptr("y", "f32"))
    i = kb.tid()
    p = kb.setp("lt", i, 10)
    kb.st(kb.elem_ptr(py, i), kb.call(sq, kb.ld(kb.elem_ptr(px, i))))
    text = emit(mb.build()).replace("call.uni", f"@{p.name} call.uni")
    assert text.count(f"@{p.name} call.uni") == 1
    xs = np.arange(1, 33, dtype=np.float32)
    y = np.zeros(32, np.float32)
    load(text, device="emulator")["k"](xs, y, grid=1, block=32)
    np.testing.assert_array_equal(y[:10], xs[:10] ** 2)
    assert not np.any(y[10:] == xs[10:] ** 2)
