"""Property: every kernel the generator makes from the tensor-core and async-copy entries
(mixed with plain arithmetic and memory ops) is accepted by the whole-program ptxas executable
on sm_80, sm_90 and sm_90a, and its liveness sees one value per fragment register."""

from __future__ import annotations

from hypothesis import given, settings
from ptxas_exe import ptxas_stats

from ptxforge.analysis.pressure import analyze_pressure
from ptxforge.testing.strategies import modules, op_keys

import hypothesis_profiles  # noqa: F401  (registers and loads the profiles)
from hypothesis_profiles import examples

_TENSOR = ("mma.", "imma.", "ldmatrix.", "stmatrix.", "cp.async", "wgmma.", "setmaxnreg")
_PLAIN = ("add.f32", "add.u32", "fma.f32", "mov.b32", "st.global.f32")


def _wanted(key: str) -> bool:
    return key.startswith(_TENSOR) or key in _PLAIN


def test_the_generator_offers_every_tensor_entry_where_the_target_has_it():
    sm80, sm90a = set(op_keys("sm_80")), set(op_keys("sm_90a"))
    assert {"mma.m16n8k16.f32.f16", "imma.m8n8k4.f64.f64", "ldmatrix.x4.trans",
            "cp.async.cg.16"} <= sm80
    assert not {"stmatrix.x1", "wgmma.m64n8.f16", "setmaxnreg", "cp.async.bulk.g2s"} & sm80
    assert {"stmatrix.x4.trans", "wgmma.m64n8.f16", "setmaxnreg", "cp.async.bulk.s2g"} <= sm90a


def _check(gen, target):
    compiled = ptxas_stats(gen.ptx, target)
    assert sorted(k.name for k in compiled) == sorted(k.name for k in gen.module.entries)
    for kernel in gen.module.entries:
        report = analyze_pressure(kernel)
        assert report.peak.units >= 0
        for inst in kernel.instructions:
            if inst.family == "mma":          # every fragment register is its own value
                regs = [r for op in inst.operands for r in _regs(op)]
                assert len(inst.defs) + len(inst.uses) - (1 if inst.guard else 0) == len(regs)


def _regs(op):
    from ptxforge.ptx import ir

    return list(ir.registers_in(op))


@settings(max_examples=examples(0.125), deadline=None)
@given(modules("sm_80", ops=_wanted, max_ops=12, max_kernels=2, max_funcs=1))
def test_ptxas_accepts_generated_tensor_kernels_sm80(gen):
    _check(gen, "sm_80")


@settings(max_examples=examples(0.125), deadline=None)
@given(modules("sm_90a", ops=_wanted, max_ops=12, max_kernels=2, max_funcs=1))
def test_ptxas_accepts_generated_tensor_kernels_sm90a(gen):
    _check(gen, "sm_90a")
