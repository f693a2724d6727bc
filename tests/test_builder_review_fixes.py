"""Fixes from the builder review: each mistake is refused by the builder, never met as a
ptxas error (or as wrong code)."""

import re

import pytest

from ptxforge import BuildError, KernelBuilder, ModuleBuilder, PtxTypeError
from ptxforge.ptx import ir
from ptxforge.errors import UnsupportedError

HERE = re.escape(__file__.rsplit("/", 1)[-1])


# -- 1. registers belong to the builder that made them ------------------------------------

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


# -- 2. cvt forms ptxas rejects -------------------------------------------------------------
# A sweep of every cvt pair x rounding x sat x ftz on sm_80 and sm_90 (10368 calls) found 67
# the builder accepted and ptxas rejected: .sat on any conversion to or from .bf16, and
# cvt.ftz.f32.bf16 below sm_90.  These are the distinct conversions behind them.

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


def test_cvt_ftz_bf16_to_f32_needs_sm90(ptxas_accepts):
    for target in ("sm_80", "sm_90"):
        kb = KernelBuilder("k", target=target)
        x = kb.ld(kb.load_param(kb.param_ptr("x", "bf16")))
        y = kb.load_param(kb.param_ptr("y", "f32"))
        if target == "sm_80":
            with pytest.raises(UnsupportedError, match=r"cvt\.ftz\.f32\.bf16 needs sm_90 .*"
                                                       r"minimum target sm_90"):
                kb.cvt(x, "f32", ftz=True)
            kb.st(y, kb.cvt(x, "f32"))
        else:
            kb.st(y, kb.cvt(x, "f32", ftz=True))
        ptxas_accepts(kb.ptx(), target)


# -- 3. half-precision numbers out of range -----------------------------------------------

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


# -- 4. parameters are read-only, barrier ids, reserved label prefix ----------------------

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


# -- 5. vector accesses need N * size alignment --------------------------------------------

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


# -- 6. float const tables, messages name the real operand --------------------------------

def test_const_array_of_floats_is_exact(ptxas_accepts):
    kb = KernelBuilder("k")
    c = kb.const_array("c", "f32", [1.0, 0.1, -2])
    d = kb.const_array("d", "f64", [0.1])
    out = kb.load_param(kb.param_ptr("out", "f32"))
    kb.st(out, kb.add(kb.ld(c.at(1)), kb.cvt(kb.ld(d.at(0)), "f32")))
    ptx = kb.ptx()
    assert ".const .align 4 .f32 c[3] = {0f3F800000, 0f3DCCCCCD, 0fC0000000};" in ptx
    assert ".const .align 8 .f64 d[1] = {0d3FB999999999999A};" in ptx
    ptxas_accepts(ptx, "sm_80")
    with pytest.raises(BuildError, match="out of range for .f32"):
        kb.const_array("e", "f32", [1e39])


def test_cvt_type_errors_name_the_real_operand_not_a_placeholder():
    kb = KernelBuilder("k")
    p = kb.setp("eq", kb.tid(), 0)
    with pytest.raises(PtxTypeError) as e1:
        kb.cvt(p, "f32")
    with pytest.raises(PtxTypeError) as e2:
        kb.cvt(kb.tid(), "pred")
    assert f".pred ({p.name})" in str(e1.value) and "destination type .pred" in str(e2.value)
    assert "<type>" not in str(e1.value) + str(e2.value)


# -- 7. float max, bools, directives, descending loops -------------------------------------

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


def _run_u32(ptx: str) -> list:
    """Interpret the straight-line u32 subset of a kernel body; return the values stored."""
    lines = [l.strip().rstrip(";") for l in ptx.split("{", 1)[1].splitlines()]
    lines = [l for l in lines if l and not l.startswith((".reg", "}", "//"))]
    labels = {l[:-1]: i for i, l in enumerate(lines) if l.endswith(":")}
    regs, stored, pc = {}, [], 0

    def val(tok):
        return regs[tok] if tok.startswith("%") else int(tok) % 2 ** 32

    for _ in range(10_000):
        line = lines[pc]
        pc += 1
        guard = None
        if line.startswith("@"):
            guard, line = line.split(None, 1)
        if guard and not regs[guard[1:]]:
            continue
        op, _, rest = line.partition(" ")
        args = [a.strip() for a in rest.split(",")]
        if op in ("bra", "bra.uni"):
            pc = labels[args[0]]
        elif op == "ret":
            return stored
        elif op == "mov.u32":
            regs[args[0]] = val(args[1])
        elif op.startswith("setp."):
            a, b = val(args[1]), val(args[2])
            regs[args[0]] = {"le": a <= b, "lt": a < b, "ge": a >= b}[op.split(".")[1]]
        elif op in ("add.u32", "sub.u32"):
            a, b = val(args[1]), val(args[2])
            regs[args[0]] = (a + b if op == "add.u32" else a - b) % 2 ** 32
        elif op.startswith("st."):
            stored.append(val(args[1]))
    raise AssertionError("the loop does not terminate")


@pytest.mark.parametrize("start,stop,step", [(10, 0, -3), (10, 1, -3), (9, 0, -3), (3, 0, -7),
                                             (0, 5, -1), (5, 0, -1), (0, 10, 3)])
def test_a_u32_loop_with_a_negative_step_runs_the_range(start, stop, step, ptxas_accepts):
    kb = KernelBuilder("k")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    with kb.loop(start, stop, step) as i:
        kb.st(out, i)
    ptx = kb.ptx()
    assert "-" not in ptx.split(".entry", 1)[1]  # no negative u32 immediate
    assert _run_u32(ptx) == list(range(start, stop, step))
    ptxas_accepts(ptx, "sm_80")
