"""Loop unrolling control: ``kb.loop(..., unroll=False)`` and ``kb.pragma``."""

import pytest

from ptxforge import BuildError, KernelBuilder, emit
from ptxforge.dsl import kernels
from ptxforge.ptx import types as T
from ptxforge.toolchain.compile import compile_ptx


def _sum_kernel(unroll: bool) -> str:
    kb = KernelBuilder("sum", target="sm_80")
    x = kb.load_param(kb.param_ptr("x", T.f32))
    n = kb.load_param(kb.param("n", T.u32))
    acc = kb.mov(0.0, type=T.f32)
    with kb.loop(0, n, 1, unroll=unroll) as i:
        kb.iadd(acc, kb.ld(kb.elem_ptr(x, i)))
    kb.st(x, acc)
    return kb.ptx()


def test_nounroll_pragma_sits_right_after_the_loop_head_label():
    lines = [line.strip() for line in _sum_kernel(unroll=False).splitlines()]
    pragma = lines.index('.pragma "nounroll";')
    assert lines[pragma - 1].endswith(":") and "loop" in lines[pragma - 1]
    assert '.pragma "nounroll";' not in _sum_kernel(unroll=True)


def test_pragma_is_emitted_verbatim_and_ptxas_accepts_it(ptxas_accepts):
    kb = KernelBuilder("k", target="sm_90")
    kb.pragma("nounroll")
    kb.ret()
    ptx = kb.ptx()
    assert '\t.pragma "nounroll";' in ptx.splitlines()
    ptxas_accepts(ptx, "sm_90")


@pytest.mark.parametrize("bad", ['no"quote', "two\nlines", 3])
def test_pragma_rejects_text_that_would_break_the_directive(bad):
    kb = KernelBuilder("k")
    with pytest.raises(BuildError, match="pragma: expected a one-line string"):
        kb.pragma(bad)


def test_rolled_k_loop_keeps_sgemm_tiled_near_the_cuda_cxx_register_count():
    # Same algorithm in CUDA C++ through NVRTC uses 32 registers on sm_80 (bench/bench_gpu.py);
    # with ptxas free to unroll the K loop the DSL kernel used 111.
    stats = compile_ptx(emit(kernels.sgemm_tiled(target="sm_80")), "sm_80")["sgemm_tiled"]
    assert stats.registers <= 40
    assert stats.spill_stores == 0
