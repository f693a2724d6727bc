"""Every wrong builder call raises the right ptxforge error, naming the op, the expected and
given types, and the caller's file:line."""

from __future__ import annotations

import re
import sys

import pytest

from ptxforge.dsl.builder import KernelBuilder, ModuleBuilder
from ptxforge.errors import BuildError, PtxforgeError, PtxTypeError, UnsupportedError
from ptxforge.ptx import ir
from ptxforge.ptx import types as T


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
    with pytest.raises(BuildError, match=r"atom\.cas takes value=\(compare, new\)"):
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


# --- refusals ptxas would otherwise report (or miscompile) ----------------------------------

HERE = re.escape(__file__.rsplit("/", 1)[-1])


# -- registers belong to the builder that made them ------------------------------------------

def _two():
    a, b = KernelBuilder("a"), KernelBuilder("b")
    return a, b, b.load_param(b.param_ptr("out", "u32"))


def test_a_register_from_another_kernel_is_refused_as_a_source():
    a, b, out = _two()
    x = a.mov(7, type="u32")
    with pytest.raises(BuildError, match=rf"add: register %r1 \.u32 .*belongs to another kernel "
                                         rf"or function, not b.* at .*{HERE}:\d+"):
        b.add(x, 1)


def test_a_same_named_register_of_another_kernel_is_refused_by_identity():
    a, b, out = _two()
    mine = b.mov(1, type="u32")
    theirs = a.mov(2, type="u32")
    assert mine == ir.Register(theirs.name, theirs.type)  # equal by value, not the same object
    with pytest.raises(BuildError, match="belongs to another kernel"):
        b.add(mine, theirs)


@pytest.mark.parametrize("use", ["inplace", "guard", "predicated", "address", "stored", "cvt"])
def test_foreign_registers_are_refused_in_every_operand_position(use):
    a, b, out = _two()
    x, p = a.mov(7, type="u32"), a.setp("eq", a.tid(), 0)
    ptr = a.load_param(a.param_ptr("q", "u32"))
    mine = b.mov(1, type="u32")
    with pytest.raises(BuildError, match="belongs to another kernel"):
        if use == "inplace":
            b.iadd(x, mine)
        elif use == "guard":
            b.st(out, mine, pred=p)
        elif use == "predicated":
            with b.predicated(p):
                b.st(out, mine)
        elif use == "address":
            b.st(ptr, mine)
        elif use == "stored":
            b.st(out, x)
        else:
            b.cvt(x, "f32")


def test_func_registers_stay_in_the_func_and_call_returns_the_kernels_own():
    mb = ModuleBuilder()
    f = mb.func("f", params=[("x", "u32")], returns=[("r", "u32")])
    fx = f.load_param("x")
    f.set_return("r", f.add(fx, 1))
    kb = mb.kernel("k")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    with pytest.raises(BuildError, match="register %r1 .* not k"):
        kb.st(out, fx)
    r = kb.call(f, 3)
    kb.st(out, kb.add(r, 1))  # the call's result is the kernel's register
    assert "add.u32" in mb.ptx()


# -- cvt forms ptxas rejects -------------------------------------------------------------
# A sweep of every cvt pair x rounding x sat x ftz on sm_80 and sm_90 (10368 calls) found 67
# the builder accepted and ptxas rejected: .sat on any conversion to or from .bf16, and
# cvt.ftz.f32.bf16 below sm_90 (test_builder_ops.py).  These are the distinct conversions
# behind them.

SAT_BF16 = [("f32", "bf16", None), ("f64", "bf16", None), ("f16", "bf16", None),
            ("u16", "bf16", None), ("u32", "bf16", "rz"), ("u64", "bf16", None),
            ("s16", "bf16", None), ("s32", "bf16", "rm"), ("s64", "bf16", "rp"),
            ("bf16", "f32", None), ("bf16", "f64", None), ("bf16", "f16", None),
            ("bf16", "bf16", "rni"), ("bf16", "s32", None)]


@pytest.mark.parametrize("src,dst,rnd", SAT_BF16)
def test_cvt_sat_to_or_from_bf16_is_refused(src, dst, rnd, ptxas_accepts):
    kb = KernelBuilder("k", target="sm_90")
    x = kb.ld(kb.load_param(kb.param_ptr("x", src)))
    y = kb.load_param(kb.param_ptr("y", dst))
    with pytest.raises(BuildError, match=rf"cvt \.{src} -> \.{dst}: ptxas rejects \.sat on "
                                         rf"conversions to or from \.bf16 .* at .*{HERE}:\d+"):
        kb.cvt(x, dst, rnd=rnd, sat=True)
    kb.st(y, kb.cvt(x, dst, rnd=rnd))  # the same conversion without .sat is fine
    ptxas_accepts(kb.ptx(), "sm_90")


def test_cvt_sat_from_bf16_to_integer_is_refused_with_the_reason():
    kb = KernelBuilder("k", target="sm_90")
    h = kb.ld(kb.load_param(kb.param_ptr("x", "bf16")))
    with pytest.raises(BuildError, match=r"cvt \.bf16 -> \.s32: ptxas rejects \.sat"):
        kb.cvt(h, "s32", sat=True)
    assert kb.cvt(h, "s32").type.name == "s32"  # without .sat it is fine


# -- half-precision numbers out of range -----------------------------------------------

@pytest.mark.parametrize("value,ty", [(70000.0, "f16"), (65520.0, "f16"), (1e39, "bf16"),
                                      (3.4e38, "bf16"), (1e5, "f16x2"), (-1e39, "bf16x2")])
def test_half_numbers_too_large_are_build_errors(value, ty):
    kb = KernelBuilder("k", target="sm_90")
    with pytest.raises(BuildError, match=rf"mov: immediate {re.escape(repr(value))} is out of "
                                         rf"range for \.{ty} .* at .*{HERE}:\d+"):
        kb.mov(value, type=ty)


def test_assign_a_half_number_too_large_and_the_largest_that_fits():
    kb = KernelBuilder("k")
    h = kb.mov(1.0, type="f16")
    with pytest.raises(BuildError, match=r"assign: immediate 70000\.0 is out of range for \.f16"):
        kb.assign(h, 70000.0)
    kb.assign(h, 65519.0)  # rounds to 65504, the largest f16
    b = kb.mov(3.3895e38, type="bf16")
    ptx = kb.ptx()
    assert f"mov.b16 {h.name}, {0x7BFF};" in ptx and f"mov.b16 {b.name}, {0x7F7F};" in ptx


# -- parameters are read-only, barrier ids, reserved label prefix ----------------------

def test_storing_to_a_kernel_parameter_is_refused():
    kb = KernelBuilder("k")
    with pytest.raises(BuildError, match=rf"st: parameters are read-only.* at .*{HERE}:\d+"):
        kb.st(kb.param("q", "u32"), kb.mov(1, type="u32"))


def test_bar_sync_barrier_id_is_0_to_15_or_a_register(ptxas_accepts):
    kb = KernelBuilder("k")
    with pytest.raises(BuildError, match=r"bar_sync: barrier id must be 0\.\.15.*got 16"):
        kb.bar_sync(16)
    kb.bar_sync(15)
    kb.bar_sync(kb.and_(kb.tid(), 15))
    ptxas_accepts(kb.ptx(), "sm_80")


def test_labels_in_the_generated_prefix_are_reserved(ptxas_accepts):
    kb = KernelBuilder("k")
    with kb.if_(kb.setp("eq", kb.tid(), 0)):
        kb.bar_sync()
    with pytest.raises(BuildError, match=r"label '\$L__k_loop1'.* reserved"):
        kb.label("$L__k_loop1")
    with pytest.raises(BuildError, match="reserved"):
        kb.bra("$L__mine")
    done = kb.new_label("done")  # generated names are still placed with label()
    kb.bra(done)
    kb.label(done)
    ptxas_accepts(kb.ptx(), "sm_80")


def test_func_refuses_a_predicate_parameter():
    with pytest.raises(BuildError, match=r"func f: parameter or return 'a' is \.pred"):
        ModuleBuilder("sm_80").func("f", params=[("a", "pred")])


# -- vector accesses need N * size alignment --------------------------------------------

def test_vector_access_of_an_under_aligned_array_says_which_align_to_pass():
    kb = KernelBuilder("k")
    s = kb.shared_array("s", "f32", 8)
    with pytest.raises(BuildError, match=rf"ld: \.v4\.f32 needs 16-byte alignment, but shared "
                                         rf"array s is declared with align 4; declare it with "
                                         rf"align=16 at .*{HERE}:\d+"):
        kb.ld(s, vec=4)


def test_vector_access_at_a_misaligned_offset_is_refused(ptxas_accepts):
    kb = KernelBuilder("k")
    s = kb.shared_array("s", "f32", 8, align=16)
    g = kb.load_param(kb.param_ptr("g", "f32"))
    a = kb.ld(s, vec=4)
    with pytest.raises(BuildError, match=r"st: \.v4\.f32 needs 16-byte alignment, but the offset 4"):
        kb.st(s, a, offset=4)
    with pytest.raises(BuildError, match=r"offset 4 is not a multiple of 8"):
        kb.ld(s.at(1), vec=2)
    with pytest.raises(BuildError, match=r"ld: \.v2\.f32 .* offset 12"):
        kb.ld(g, vec=2, offset=12)
    kb.st(s, a, offset=16)
    kb.st(g, kb.ld(g, vec=2, offset=8))
    ptxas_accepts(kb.ptx(), "sm_80")


# -- messages name the real operand; float and bool immediates; directive values ----------
def test_cvt_type_errors_name_the_real_operand_not_a_placeholder():
    kb = KernelBuilder("k")
    p = kb.setp("eq", kb.tid(), 0)
    with pytest.raises(PtxTypeError) as e1:
        kb.cvt(p, "f32")
    with pytest.raises(PtxTypeError) as e2:
        kb.cvt(kb.tid(), "pred")
    assert f".pred ({p.name})" in str(e1.value) and "destination type .pred" in str(e2.value)
    assert "<type>" not in str(e1.value) + str(e2.value)


def test_float_immediates_are_range_checked_after_rounding(ptxas_accepts):
    kb = KernelBuilder("k")
    out = kb.load_param(kb.param_ptr("out", "f32"))
    kb.st(out, kb.add(kb.ld(out), 3.4028235e38))  # numpy's float32 max: rounds to FLT_MAX
    assert "0f7F7FFFFF" in kb.ptx()
    ptxas_accepts(kb.ptx(), "sm_80")
    with pytest.raises(BuildError, match="out of range for .f32"):
        kb.add(kb.ld(out), 3.5e38)


def test_bools_are_not_immediates():
    kb = KernelBuilder("k")
    with pytest.raises(PtxTypeError, match=rf"add: expected a \.u32 register or a number.* got "
                                           rf"bool True at .*{HERE}:\d+"):
        kb.add(kb.tid(), True)


@pytest.mark.parametrize("call,match", [
    (lambda kb: kb.maxnreg(1000), "at most 255 registers"),
    (lambda kb: kb.maxnreg(0), "positive"),
    (lambda kb: kb.reqntid(2048), "at most 1024 threads"),
    (lambda kb: kb.maxntid(32, 32, 2), "at most 1024 threads"),
    (lambda kb: kb.minnctapersm(0), "positive"),
])
def test_directive_values_are_range_checked(call, match):
    with pytest.raises(BuildError, match=match):
        call(KernelBuilder("k"))
