"""Every wrong builder call raises the right ptxforge error, naming the op, the expected and
given types, and the caller's file:line."""

from __future__ import annotations

import sys

import pytest

from ptxforge.ptx import ir
from ptxforge.ptx import types as T
from ptxforge.dsl.builder import KernelBuilder, ModuleBuilder
from ptxforge.errors import BuildError, PtxforgeError, PtxTypeError, UnsupportedError


def line() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def where(n: int) -> str:
    return f"{__file__}:{n}"


@pytest.fixture
def kb():
    return KernelBuilder("k", target="sm_80")


def test_mismatched_types(kb):
    x, n = kb.mov(1.0, type=T.f32), kb.mov(1, type=T.u32)
    with pytest.raises(PtxTypeError) as err:
        at = line() + 1
        kb.add(x, n)
    msg = str(err.value)
    assert isinstance(err.value, TypeError) and isinstance(err.value, PtxforgeError)
    assert msg.startswith("add: ") and ".f32" in msg and ".u32 (%r1)" in msg and where(at) in msg


def test_signedness_mix_needs_explicit_type(kb):
    a, b = kb.mov(1, type=T.u32), kb.mov(1, type=T.s32)
    with pytest.raises(PtxTypeError, match=r"min: expected an operand of type \.u32, got \.s32"):
        kb.min(a, b)
    assert kb.min(a, b, type=T.s32).type is T.s32


def test_illegal_type_for_family(kb):
    x = kb.mov(1.0, type=T.f32)
    with pytest.raises(PtxTypeError) as err:
        at = line() + 1
        kb.and_(x, x)
    assert "and: expected operands of type one of .pred, .b16" in str(err.value)
    assert "got .f32 (%f1)" in str(err.value) and where(at) in str(err.value)
    with pytest.raises(PtxTypeError, match=r"sqrt: .* got \.u32"):
        kb.sqrt(kb.mov(4, type=T.u32))
    with pytest.raises(PtxTypeError, match=r"abs: .* got \.u32"):
        kb.abs(kb.mov(4, type=T.u32))


@pytest.mark.parametrize("ty,value", [(T.u32, -1), (T.u32, 2**32), (T.s16, 40000), (T.s32, -2**31 - 1),
                                      (T.u64, 2**64), (T.f32, 1e39)])
def test_immediate_out_of_range(kb, ty, value):
    r = kb.mov(0, type=ty) if not ty.is_float else kb.mov(0.0, type=ty)
    with pytest.raises(BuildError) as err:
        at = line() + 1
        kb.add(r, value)
    msg = str(err.value)
    assert "add: immediate" in msg and "out of range" in msg and ty.ptx in msg and where(at) in msg


def test_immediate_edges_are_accepted(kb):
    kb.add(kb.mov(0, type=T.u32), 2**32 - 1)
    kb.add(kb.mov(0, type=T.s32), -2**31)
    kb.and_(kb.mov(0, type=T.b32), -1)
    text = kb.ptx()
    assert "4294967295;" in text and "-2147483648;" in text


def test_float_immediate_for_integer_op(kb):
    with pytest.raises(BuildError, match=r"float immediate 1\.5 given where \.u32 needs an integer"):
        kb.add(kb.mov(0, type=T.u32), 1.5)


def test_half_immediates_need_mov(kb):
    h = kb.mov(1.0, type=T.f16)
    with pytest.raises(BuildError, match=r"no \.f16 immediates"):
        kb.add(h, 2.0)
    assert "mov.b16 %rs1, 15360;" in kb.ptx()  # 1.0 as IEEE half bits


def test_immediates_only_need_a_type(kb):
    with pytest.raises(PtxTypeError, match="cannot infer the operand type"):
        kb.add(1, 2)
    assert kb.add(1, 2, type="s32").type is T.s32


def test_undefined_label_at_build(kb):
    at = line() + 1
    kb.bra("nowhere")
    with pytest.raises(BuildError) as err:
        kb.build()
    assert "undefined label 'nowhere'" in str(err.value) and where(at) in str(err.value)


def test_label_placed_twice(kb):
    kb.label("top")
    with pytest.raises(BuildError, match="label 'top' placed twice"):
        kb.label("top")


def test_store_through_non_pointer(kb):
    x = kb.mov(1.0, type=T.f32)
    with pytest.raises(PtxTypeError) as err:
        at = line() + 1
        kb.st(x, x)
    msg = str(err.value)
    assert msg.startswith("st: expected a pointer") and "got .f32 (%f1)" in msg and where(at) in msg
    with pytest.raises(PtxTypeError, match=r"st: expected a pointer .* got \.u32"):
        kb.st(kb.mov(0, type=T.u32), x)
    with pytest.raises(PtxTypeError, match=r"ld: expected a pointer"):
        kb.ld(kb.mov(0, type=T.s16), type=T.f32)


def test_store_of_wrong_element_type(kb):
    p = kb.load_param(kb.param_ptr("p", T.f32))
    with pytest.raises(PtxTypeError, match=r"st: expected a value of type \.f32 .* got \.u32"):
        kb.st(p, kb.mov(1, type=T.u32))


def test_untagged_pointer_needs_type(kb):
    raw = kb.load_param(kb.param("raw", T.u64))
    with pytest.raises(PtxTypeError, match="known element type, or type="):
        kb.ld(raw)
    assert kb.ld(raw, type=T.f64, space="global").type is T.f64


def test_store_to_const_is_refused(kb):
    table = kb.const_array("table", T.u32, [1, 2])
    with pytest.raises(BuildError, match="read-only"):
        kb.st(table.at(0), kb.mov(1, type=T.u32))
    with pytest.raises(BuildError, match=r"index 5 is outside const array table\[2\]"):
        table.at(5)


def test_inplace_on_register_of_another_type(kb):
    acc = kb.mov(0.0, type=T.f32)
    n = kb.mov(1, type=T.u32)
    with pytest.raises(PtxTypeError) as err:
        at = line() + 1
        kb.iadd(acc, n)
    msg = str(err.value)
    assert msg.startswith("iadd: expected an operand of type .f32") and "got .u32 (%r1)" in msg
    assert where(at) in msg
    with pytest.raises(PtxTypeError) as err:
        at = line() + 1
        kb.add_f32_inplace(n, acc)
    assert "add_f32_inplace: expected a .f32 destination register, got .u32 (%r1)" in str(err.value)
    assert where(at) in str(err.value)
    with pytest.raises(PtxTypeError, match=r"shr_u32_inplace: expected a \.u32 destination"):
        kb.shr_u32_inplace(acc, 1)
    with pytest.raises(PtxTypeError, match=r"ifma: expected an operand of type \.f32, got \.f64"):
        kb.ifma(acc, kb.mov(1.0, type=T.f64), acc)


def test_newer_target_needed():
    kb = KernelBuilder("k", target="sm_80")
    h = kb.mov(1.0, type=T.bf16)
    with pytest.raises(UnsupportedError) as err:
        at = line() + 1
        kb.add(h, h)
    msg = str(err.value)
    assert "add: add.bf16 needs sm_90 and PTX ISA 7.8" in msg and "targets sm_80" in msg
    assert where(at) in msg
    old = KernelBuilder("k", target="sm_75")
    with pytest.raises(UnsupportedError, match="minimum target sm_80"):
        old.redux_sync("add", old.tid())


def test_unknown_target():
    with pytest.raises(UnsupportedError, match="unknown target 'sm_81'"):
        KernelBuilder("k", target="sm_81")


def test_carry_in_without_carry_out(kb):
    a = kb.mov(1, type=T.u32)
    with pytest.raises(BuildError, match="addc reads the carry flag"):
        kb.addc(a, a)
    with pytest.raises(PtxTypeError, match=r"add_cc: expected operands of type .* got \.f32"):
        kb.add_cc(kb.mov(1.0, type=T.f32), 1.0)


def test_bad_modifiers(kb):
    x = kb.mov(1.0, type=T.f32)
    with pytest.raises(BuildError, match="mode 'wide' is not valid for div"):
        kb.div(x, x, mode="wide")
    with pytest.raises(BuildError, match="rounding 'rn' needs a float type"):
        kb.add(kb.mov(1, type=T.u32), 1, rnd="rn")
    with pytest.raises(BuildError, match="approximate only"):
        kb.sin(x, rnd="rn")
    with pytest.raises(BuildError, match=r"\.sat applies"):
        kb.add(kb.mov(1, type=T.u64), 1, sat=True)
    with pytest.raises(BuildError, match="comparison 'lo' is not valid for .f32"):
        kb.setp("lo", x, x)
    with pytest.raises(BuildError, match="rounding 'rn' is not valid"):
        kb.cvt(x, T.s32, rnd="rn")
    with pytest.raises(BuildError, match=".sat needs a conversion that can go out of range"):
        kb.cvt(kb.mov(1, type=T.u8), T.u32, sat=True)
    with pytest.raises(PtxTypeError, match="cvt: expected a numeric destination type"):
        kb.cvt(x, T.pred)


def test_structured_blocks_misuse(kb):
    p = kb.setp("eq", kb.tid(), 0)
    with pytest.raises(BuildError, match="must directly follow"):
        with kb.else_():
            pass
    with kb.predicated(p):
        with pytest.raises(BuildError, match="cannot nest"):
            with kb.predicated(p):
                pass
        with pytest.raises(BuildError, match="cannot be used inside kb.predicated"):
            with kb.if_(p):
                pass
    with pytest.raises(PtxTypeError, match=r"if_: expected a \.pred register, got \.u32"):
        with kb.if_(kb.tid()):
            pass


def test_open_block_at_build():
    kb = KernelBuilder("k")
    loop = kb.loop(0, 4)
    loop.__enter__()
    with pytest.raises(BuildError, match="kb.loop block opened at .* is still open"):
        kb.build()


def test_loop_needs_integer_counter(kb):
    with pytest.raises(PtxTypeError, match="loop: expected an integer counter type"):
        with kb.loop(0.0, 1.0, type=T.f32):
            pass
    with pytest.raises(BuildError, match="step must not be 0"):
        with kb.loop(0, 4, 0):
            pass


def test_names_and_declarations(kb):
    kb.param("n", T.u32)
    with pytest.raises(BuildError, match="clashes with the parameter"):
        kb.shared_array("n", T.f32, 4)
    with pytest.raises(BuildError, match="is not a PTX identifier"):
        kb.param("2x", T.u32)
    with pytest.raises(BuildError, match="align must be a power of two"):
        kb.shared_array("s", T.f32, 4, align=6)
    with pytest.raises(BuildError, match="values must be positive ints"):
        kb.maxntid(0)


def test_calls_check_arguments():
    mb = ModuleBuilder()
    f = mb.func("f", params=[("x", T.f32)])
    kb = mb.kernel("k")
    with pytest.raises(BuildError, match="expected 1 argument"):
        kb.call(f)
    with pytest.raises(PtxTypeError, match=r"call f: expected an operand of type \.f32, got \.u32"):
        kb.call(f, kb.tid())
    other = ModuleBuilder().func("g")
    with pytest.raises(BuildError, match="belongs to another module"):
        kb.call(other)
    with pytest.raises(BuildError, match="already exists"):
        mb.kernel("k")


def test_atomics_check_types(kb):
    g = kb.load_param(kb.param_ptr("g", T.f32))
    with pytest.raises(PtxTypeError, match=r"atom\.and: expected a value of type one of \.b32, \.b64"):
        kb.atom("and", g, kb.mov(1.0, type=T.f32))
    with pytest.raises(BuildError, match="atom.cas needs compare"):
        kb.atom("cas", g, kb.mov(1.0, type=T.f32))
    with pytest.raises(BuildError, match="unknown operation 'exch'"):
        kb.red("exch", g, kb.mov(1.0, type=T.f32))


def test_negated_guard_and_predicate_checks(kb):
    x = kb.mov(1, type=T.u32)
    with pytest.raises(PtxTypeError, match=r"pred=: expected a \.pred register"):
        kb.add(x, 1, pred=x)
    p = kb.setp("eq", x, 1)
    kb.add(x, 1, pred=ir.Negated(p))
    assert f"@!{p.name} add.u32" in kb.ptx()
