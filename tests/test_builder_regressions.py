"""Builder bugs the hypothesis properties found, pinned with direct tests."""

import pytest

from ptxforge import BuildError, KernelBuilder, ModuleBuilder


@pytest.mark.parametrize("ty", ["u16", "s16", "u8", "s8", "f16", "bf16"])
def test_func_passes_narrow_values_as_bits_params_ptxas_accepts(ty, ptxas_accepts):
    mb = ModuleBuilder("sm_90")
    f = mb.func("f", params=[("a", ty)], returns=[("r", ty)])
    f.set_return("r", f.load_param("a"))
    kb = mb.kernel("k")
    p = kb.load_param(kb.param_ptr("x", ty))
    kb.st(p, kb.call(f, kb.ld(p)))
    ptx = mb.ptx()
    width = 8 if ty.endswith("8") else 16
    assert f".param .b{width} a" in ptx and f".param .b{width} r" in ptx
    ptxas_accepts(ptx, "sm_90")


def test_func_refuses_a_predicate_parameter():
    with pytest.raises(BuildError, match=r"func f: parameter or return 'a' is \.pred"):
        ModuleBuilder("sm_80").func("f", params=[("a", "pred")])


def test_cvt_sat_from_bf16_to_integer_is_refused_with_the_reason():
    kb = KernelBuilder("k", target="sm_90")
    h = kb.ld(kb.load_param(kb.param_ptr("x", "bf16")))
    with pytest.raises(BuildError, match=r"cvt \.bf16 -> \.s32: ptxas rejects \.sat"):
        kb.cvt(h, "s32", sat=True)
    assert kb.cvt(h, "s32").type.name == "s32"  # without .sat it is fine


@pytest.mark.parametrize("ty,bits", [("f16x2", 0x3F003F00), ("bf16x2", 0x3FE03FE0)])
def test_mov_of_packed_halves_from_a_number_and_a_register(ty, bits, ptxas_accepts):
    kb = KernelBuilder("k", target="sm_90")
    p = kb.load_param(kb.param_ptr("x", ty))
    h = kb.mov(1.75, type=ty)          # 1.75 in both halves
    copy = kb.mov(kb.ld(p))
    kb.st(p, h)
    kb.st(p, copy, offset=4)
    ptx = kb.ptx()
    assert f"mov.b32 {h.name}, {bits};" in ptx
    assert copy.type.name == ty
    ptxas_accepts(ptx, "sm_90")
