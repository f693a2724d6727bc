"""Property: whatever the KernelBuilder accepts, ptxas accepts (nvJitLink for sm_80/sm_90, the
ptxas executable for sm_70).  Each example is one module of up to four kernels and two device
functions, compiled in one ptxas call per target."""

from __future__ import annotations

import pytest
from hypothesis import example, given

from ptxforge.dsl.builder import KernelBuilder, ModuleBuilder
from ptxforge.errors import BackendUnavailableError, BuildError, CompileError, PtxforgeError
from ptxforge.ptx import isa
from ptxforge.testing.strategies import (
    FuncRecipe,
    KernelRecipe,
    ModuleRecipe,
    excluded_ops,
    generated,
    modules,
    op_keys,
)
from ptxforge.toolchain.compile import compile_ptx, get_backend

import hypothesis_profiles  # noqa: F401  (registers and loads the profiles)

_SHAPE = dict(max_ops=20, max_kernels=4, max_funcs=2)


def _accepts(gen, target: str, backend: str) -> None:
    """Compile with ptxas; the stats must name every kernel of the module."""
    try:
        compiled = compile_ptx(gen.ptx, target, backend=backend)
    except CompileError as exc:
        raise AssertionError(f"ptxas rejected builder output for {target}:\n{exc}\n{gen!r}") from None
    assert sorted(k.name for k in compiled) == sorted(k.name for k in gen.module.entries)
    assert all(k.registers >= 1 for k in compiled)


@given(modules("sm_80", **_SHAPE))
@example(generated(ModuleRecipe(target="sm_80", funcs=(), kernels=(KernelRecipe(steps=()),))))
def test_ptxas_accepts_generated_sm80(gen):
    _accepts(gen, "sm_80", "nvjitlink")


@given(modules("sm_90", **_SHAPE))
@example(generated(ModuleRecipe(target="sm_90", funcs=(), kernels=(KernelRecipe(steps=(
    ("loop", 1, 0, (("op", "add.bf16", (0, 1, 2, 3), None),)),
    ("if", 3, True, (("op", "atom.global.add.bf16x2", (0, 0, 0, 0), 4),), None))),))))
def test_ptxas_accepts_generated_sm90(gen):
    _accepts(gen, "sm_90", "nvjitlink")


def _sm70_reason():
    try:
        ok, why = get_backend("ptxas").status()
    except PtxforgeError as exc:  # pragma: no cover
        return str(exc)
    if not ok:
        return why
    try:
        compile_ptx(KernelBuilder("k", target="sm_70").ptx(), "sm_70", backend="ptxas")
    except (BackendUnavailableError, CompileError) as exc:
        return f"no installed ptxas targets sm_70: {str(exc).splitlines()[0]}"
    return None


_SM70 = _sm70_reason()


@pytest.mark.skipif(_SM70 is not None, reason=f"sm_70 ptxas executable: {_SM70}")
@given(modules("sm_70", **_SHAPE))
def test_ptxas_executable_accepts_generated_sm70(gen):
    _accepts(gen, "sm_70", "ptxas")


def test_catalogue_covers_every_op_family():
    """The generator reaches every instruction family of the opcode table on sm_90a (wgmma
    and setmaxnreg exist only on the architecture-specific targets)."""
    families = set()
    for key in op_keys("sm_90a"):
        families.add(key.split(".")[0])
    emitted = set()
    for key in op_keys("sm_90a"):
        kernel = KernelRecipe(steps=(("op", key, (0, 1, 2, 3), None),))
        recipe = ModuleRecipe(target="sm_90a", funcs=(), kernels=(kernel,))
        for k in generated(recipe).module.kernels:
            emitted.update(i.family for i in k.instructions)
    func = FuncRecipe(params=("f32",), returns=("f32",), steps=())
    recipe = ModuleRecipe(target="sm_90a", funcs=(func,), kernels=(KernelRecipe(steps=(
        ("if", 0, False, (("op", "call", (0, 0, 0, 0), None),), ()),)),))
    emitted.update(i.family for k in generated(recipe).module.kernels for i in k.instructions)
    missing = set(isa.OPS) - emitted - {"exit"}   # exit: the generator never ends threads early
    assert not missing, f"families the generator never emits: {sorted(missing)}"
    assert len(op_keys("sm_90")) >= 750
    # what the builder refuses on sm_90 is deliberate (and explained): half/bf16 conversions,
    # and the forms that exist only on sm_90a (wgmma, setmaxnreg)
    assert all(("bf16" in k or "f16x2" in k or "sm_90a" in why)
               for k, why in excluded_ops("sm_90")), excluded_ops("sm_90")


# --- regressions: builder-accepted forms ptxas rejected (found by these properties) ----------



def _u16_param():
    mb = ModuleBuilder(target="sm_80")
    f = mb.func("f", params=[("a", "u16")], returns=[("r", "u32")])
    f.set_return("r", f.cvt(f.load_param("a"), "u32"))
    kb = mb.kernel("k")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    kb.st(out, kb.call(f, kb.mov(1, type="u16")))
    return mb.ptx()


def _cvt_sat_bf16():
    kb = KernelBuilder("k", target="sm_90")
    p = kb.load_param(kb.param_ptr("x", "bf16"))
    kb.st(p, kb.cvt(kb.ld(p), "s32", sat=True), type="s32", offset=64)
    return kb.ptx()


def test_regression_16bit_func_param():
    """The builder declares a 16-bit .func parameter as .b16 (ptxas refuses .u16 there), and
    ptxas compiles the result."""
    ptx = _u16_param()
    assert "\t.param .b16 a" in ptx.splitlines() and ".param .u16 a" not in ptx
    compiled = compile_ptx(ptx, "sm_80", backend="nvjitlink")
    assert compiled["k"].registers > 0


def test_regression_cvt_sat_from_bf16():
    """ptxas rejects .sat on conversions from .bf16: the builder refuses it first, naming the
    form and the user's line, and ptxas indeed rejects the form the builder refuses."""
    with pytest.raises(BuildError, match=r"\.sat on conversions to or from \.bf16.*"
                                         r"cvt\.rzi\.sat\.s32\.bf16"):
        _cvt_sat_bf16()
    ptx = (".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 x)\n"
           "{\n.reg .b16 %rs<2>;\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"
           "ld.param.u64 %rd1, [x];\nld.global.b16 %rs1, [%rd1];\n"
           "cvt.rzi.sat.s32.bf16 %r1, %rs1;\nst.global.s32 [%rd1+64], %r1;\nret;\n}\n")
    with pytest.raises(CompileError):
        compile_ptx(ptx, "sm_90", backend="nvjitlink")
