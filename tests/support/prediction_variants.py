"""DSL variant families for the prediction tests: the same kernel with more values live, more
unrolling, a wider register tile (built with KernelBuilder), and whole-program ptxas 13.x's
register count for each."""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile

from ptxforge import KernelBuilder, emit
from ptxforge.ptx import types as T
from ptxforge.toolchain.ptxas_log import parse_ptxas_log

__all__ = ["FAMILIES", "live_values", "ptxas_registers", "register_tile", "unrolled_dot"]


def live_values(k: int, target: str = "sm_80"):
    """Load ``k`` floats, then combine them in reverse order: all ``k`` are live at once."""
    kb = KernelBuilder(f"live_{k}", target=target)
    x, out = (kb.load_param(kb.param_ptr(n, T.f32)) for n in ("x", "out"))
    i = kb.global_id()
    base = kb.elem_ptr(x, kb.mul(i, k))
    vals = [kb.ld(base, offset=4 * j) for j in range(k)]
    acc = vals[-1]
    for j, v in enumerate(reversed(vals[:-1])):
        acc = kb.fma(acc, v, vals[j]) if j % 2 else kb.add(acc, v)
    kb.st(kb.elem_ptr(out, i), acc)
    return kb.build()


def unrolled_dot(unroll: int, target: str = "sm_80"):
    """out[t] = X[t, :] . y with ``unroll`` columns per trip, every operand loaded first."""
    kb = KernelBuilder(f"dot_x{unroll}", target=target)
    x, y, out = (kb.load_param(kb.param_ptr(n, T.f32)) for n in ("X", "y", "out"))
    n = kb.load_param(kb.param("n", T.u32))
    row = kb.global_id()
    x_row = kb.elem_ptr(x, kb.mul(row, n))
    acc = kb.mov(0.0, type=T.f32)
    with kb.loop(0, n, unroll, unroll=False) as j:
        xs = [kb.ld(kb.elem_ptr(x_row, j), offset=4 * k) for k in range(unroll)]
        ys = [kb.ld(kb.elem_ptr(y, j), offset=4 * k) for k in range(unroll)]
        for xv, yv in zip(xs, ys):
            kb.ifma(acc, xv, yv)
    kb.st(kb.elem_ptr(out, row), acc)
    return kb.build()


def register_tile(width: int, target: str = "sm_80"):
    """A 1 x ``width`` register tile: ``width`` accumulators updated every trip of a loop."""
    kb = KernelBuilder(f"tile_{width}", target=target)
    a, b, c = (kb.load_param(kb.param_ptr(n, T.f32)) for n in ("a", "b", "c"))
    n = kb.load_param(kb.param("n", T.u32))
    i = kb.global_id()
    accs = [kb.mov(0.0, type=T.f32) for _ in range(width)]
    with kb.loop(0, n, 1, unroll=False) as k:
        av = kb.ld(kb.elem_ptr(a, kb.add(kb.mul(i, n), k)))
        brow = kb.elem_ptr(b, kb.mul(k, width))
        for t, acc in enumerate(accs):
            kb.ifma(acc, av, kb.ld(brow, offset=4 * t))
    crow = kb.elem_ptr(c, kb.mul(i, width))
    for t, acc in enumerate(accs):
        kb.st(crow, acc, offset=4 * t)
    return kb.build()


#: family name -> (builder, sizes in increasing order)
FAMILIES = {
    "live values": (live_values, (2, 4, 6, 8, 12, 16, 20, 24, 32, 40, 48)),
    "unrolling": (unrolled_dot, (1, 2, 4, 6, 8, 12, 16, 24)),
    "tile width": (register_tile, (1, 2, 4, 6, 8, 12, 16, 24, 32)),
}


@functools.cache
def _ptxas(ptx: str, arch: str) -> dict:
    from kernel_corpus import corpus_ptxas

    exe, _ = corpus_ptxas()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as fh:
            fh.write(ptx)
        res = subprocess.run([exe, f"-arch={arch}", "-v", src, "-o", os.devnull],
                             capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    log = parse_ptxas_log(res.stdout + res.stderr)
    return {f.name: f.registers for f in log.functions}


def ptxas_registers(module, arch: str = "sm_80") -> int:
    """Whole-program ptxas 13.x's register count for the module's one kernel."""
    return _ptxas(emit(module), arch)[module.kernels[-1].name]
