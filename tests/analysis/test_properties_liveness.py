"""Properties of the liveness analysis and the pressure estimate on generated kernels.

Footprint of an instruction (32-bit units, predicates counted apart): the registers it reads
must all be in registers just before it, and the registers it writes plus the sources it
reads that are read again later in its block (with no unguarded redefinition in between) must
all be in registers at once just after it; so ``footprint(i) = max(units(uses(i)),
units(defs(i) ∪ survivors(i)))``.  (The plain union ``defs ∪ uses`` is *not* a lower bound:
a source that dies at ``i`` may share its register with the result.)
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from ptxforge.analysis.interference import build_interference, greedy_coloring, verify_coloring
from ptxforge.analysis.liveness import CLASS_NAMES, analyze_liveness
from ptxforge.analysis.pressure import analyze_pressure
from ptxforge.arch.ptxas_model import CALL_FLOOR
from ptxforge.ptx import ir
from ptxforge.testing.strategies import (
    KernelRecipe,
    ModuleRecipe,
    generated,
    module_recipes,
    modules,
)
from ptxforge.toolchain.compile import compile_ptx

import hypothesis_profiles  # noqa: F401  (registers and loads the profiles)

_SHAPE = dict(max_ops=24, max_kernels=2, max_funcs=1)


def _units(regs, pred: bool) -> int:
    """Units of distinct general registers, or the count of distinct predicates."""
    seen = {r.name: r for r in regs}
    if pred:
        return sum(1 for r in seen.values() if r.reg_class.is_pred)
    return sum(r.units for r in seen.values() if not r.reg_class.is_pred)


def footprints(kernel: ir.Kernel, pred: bool = False) -> list:
    """Per instruction (in CFG order): the footprint defined in the module docstring."""
    lv = analyze_liveness(kernel)
    insts = lv.cfg.instructions
    out = []
    for blk in lv.cfg.blocks:
        for i in range(blk.start, blk.end):
            inst = insts[i]
            survivors = []
            for r in inst.uses:
                if any(d.name == r.name for d in inst.defs):
                    continue
                for j in range(i + 1, blk.end):
                    if any(u.name == r.name for u in insts[j].uses):
                        survivors.append(r)
                        break
                    if insts[j].guard is None and any(d.name == r.name for d in insts[j].defs):
                        break
            out.append(max(_units(inst.uses, pred), _units(list(inst.defs) + survivors, pred)))
    return out


@given(modules("sm_80", **_SHAPE))
@example(generated(ModuleRecipe(target="sm_80", funcs=(), kernels=(
    KernelRecipe(steps=(("op", "fma.f64", (0, 1, 2, 3), None),)),))))
def test_peak_is_at_least_every_instruction_footprint(gen):
    for kernel in gen.module.kernels:
        lv = analyze_liveness(kernel)
        general, preds = lv.series("at"), lv.series("at", "pred")
        for i, (need, needp) in enumerate(zip(footprints(kernel), footprints(kernel, pred=True))):
            assert max(general) >= need, (kernel.name, i, need, max(general))
            assert max(preds) >= needp, (kernel.name, i, needp, max(preds))
        # and the report agrees with the series it is built from
        assert analyze_pressure(kernel, liveness=lv).peak.units == max(general, default=0)


def _with_use_at_end(kernel: ir.Kernel, reg: ir.Register) -> ir.Kernel:
    """The kernel with ``st.global [data], reg`` inserted before its final instruction."""
    body = list(kernel.body)
    last = max(k for k, s in enumerate(body) if isinstance(s, ir.Instruction))
    decl = reg.reg_class.decl if not reg.reg_class.is_pred else "u32"
    use = ir.Instruction(f"st.global.{decl}", (ir.Address(ir.Symbol("data")), reg), 0)
    body.insert(last, use)
    return ir.Kernel(kernel.name, kernel.params, tuple(body), kernel.reg_decls, kernel.is_entry,
                     kernel.linkage, kernel.returns, kernel.directives, kernel.attributes)


@given(modules("sm_80", **_SHAPE), st.integers(0, 10**6))
def test_adding_a_use_at_the_end_never_lowers_pressure(gen, pick):
    for kernel in gen.module.kernels:
        lv = analyze_liveness(kernel)
        if not lv.registers:
            continue
        reg = lv.registers[pick % len(lv.registers)]
        more = analyze_liveness(_with_use_at_end(kernel, reg))
        n = lv.n_instructions
        assert more.n_instructions == n + 1
        # instructions keep their index except the final one, which moves one down
        for i in range(n):
            j = i if i < n - 1 else n
            for cls in CLASS_NAMES:
                old = lv.counts(i)[cls]
                new = more.counts(j)[cls]
                assert new >= old, (kernel.name, reg.name, i, cls, old, new)
        assert max(more.series("at")) >= max(lv.series("at"))


@given(modules("sm_80", ssa_only=True, **_SHAPE))
@example(generated(ModuleRecipe(target="sm_80", funcs=(), kernels=(KernelRecipe(steps=(
    ("if", 0, False, (("op", "add.f32", (0, 1, 2, 3), None),), (("op", "mul.f32", (1, 2, 3, 4), None),)),
    ("op", "unpack.b128.4xu32", (0, 0, 0, 0), None))),))))
def test_ssa_smallest_last_colouring_is_valid_and_optimal(gen):
    for kernel in gen.module.kernels:
        lv = analyze_liveness(kernel)
        ig = build_interference(lv)
        assert not ig.truncated
        coloring = greedy_coloring(ig)
        assert verify_coloring(ig, coloring) == []
        peaks = lv.class_peaks()
        for cls in CLASS_NAMES:
            assert coloring.count(cls) == peaks[cls][0], (kernel.name, cls, coloring.count(cls), peaks[cls])


# --- estimate vs ptxas, on controlled pairs ----------------------------------------------

_SCALAR32 = lambda key: key.split(".")[-1] in ("f32", "u32", "s32", "b32") and not key.startswith(  # noqa: E731
    ("ld.v", "st.v", "pack", "unpack", "shared", "local", "cvta", "elem_ptr", "call"))


@given(module_recipes("sm_80", max_ops=24, max_kernels=1, max_funcs=0, ops=_SCALAR32),
       st.integers(0, 32))
# found by hypothesis: a shfl under an if, built relocatable, calls __cuda_sm70_shflsync_down
# and sits at the call floor (24) with or without 8 more values (whole-program: 8 and 24)
@example(ModuleRecipe(target="sm_80", funcs=(), kernels=(KernelRecipe(steps=(
    ("if", 1, False, (("op", "add.u32", (0, 0, 0, 0), None),
                      ("op", "shfl.down.u32", (0, 0, 0, 0), None)), None),)),)), 8)
def test_estimate_and_ptxas_rise_together_on_controlled_pairs(recipe, k):
    """k more .f32 values live across the kernel (loaded before a bar.sync at the start,
    stored after one at the end): the estimate rises by exactly k; for k >= 8 ptxas's
    register count rises too, unless a helper call holds both at the call floor (nvJitLink
    builds relocatable code, where the warp-sync helpers are called through the ABI).  Base
    and variant are compiled in one ptxas call."""
    steps = recipe.kernels[0].steps
    pair = ModuleRecipe(target="sm_80", funcs=(),
                        kernels=(KernelRecipe(steps=steps, directives=0, live_across=0),
                                 KernelRecipe(steps=steps, directives=0, live_across=k)))
    gen = generated(pair)
    base, variant = gen.module.kernels
    est = [analyze_pressure(kern).peak.units for kern in (base, variant)]
    assert est[1] - est[0] == k, (est, k)
    compiled = compile_ptx(gen.ptx, "sm_80", backend="nvjitlink")
    regs = compiled["k0"].registers, compiled["k1"].registers
    at_floor = bool(compiled["k0"].callees) and regs[1] <= CALL_FLOOR
    if k >= 8 and not at_floor:
        assert regs[1] > regs[0], (regs, k)
    if at_floor:
        assert regs[0] == CALL_FLOOR, (regs, compiled["k0"].callees)
