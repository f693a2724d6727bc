"""The bit-twiddling ops (prmt, lop3, shf, dp4a/dp2a, sad, bfind, fns, mul24/mad24, szext, bmsk,
copysign, testp): every form x legal type x modifier accepted by real ptxas (nvJitLink) for
sm_80 and sm_90; lop3's table from a function; golden text; liveness and the parser handle
them.  Errors and ISA minimums: test_builder_bits_errors.py; what they compute:
test_builder_bits_semantics.py."""

from __future__ import annotations

import doctest
import itertools
import pathlib
import re
import textwrap

import pytest

from ptxforge.analysis.liveness import analyze_liveness
from ptxforge.analysis.pressure import analyze_pressure
from ptxforge.dsl import bits as builder_bits
from ptxforge.dsl.builder import KernelBuilder, lop3_lut
from ptxforge.errors import BuildError
from ptxforge.ptx import types as T
from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse

from bits_kit import line, val, where

ARCHS = ("sm_80", "sm_90")
I32 = (T.u32, T.s32)
INTS = (T.u16, T.u32, T.u64, T.s16, T.s32, T.s64)


def accepted(ptxas_accepts, kb, arch, expected):
    """Every expected text is in the PTX, and ptxas accepts it; returns the PTX."""
    ptx = kb.ptx()
    for text in expected:
        assert text in ptx, f"{text!r} missing from:\n{ptx}"
    ptxas_accepts(ptx, arch)
    return ptx


# -- every form, compiled ---------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("mode", (None,) + builder_bits.PRMT_MODES)
@pytest.mark.parametrize("ty", (T.b32, T.u32, T.s32), ids=lambda t: t.name)
def test_prmt(ptxas_accepts, arch, mode, ty):
    kb = KernelBuilder("k", target=arch)
    a, b, sel = val(kb, ty, 0x11), val(kb, ty, 0x22), val(kb, T.u32, 1)
    by_reg = kb.prmt(a, b, sel, mode=mode)
    by_imm = kb.prmt(a, b, 0x3210 if mode is None else 3, mode=mode)
    with_imm_source = kb.prmt(a, 7, 0 if mode else 0x4444, mode=mode)
    assert by_reg.type is ty and by_imm.type is ty and with_imm_source.type is ty
    op = "prmt.b32" + (f".{mode}" if mode else "")
    imm = "0x3210" if mode is None else "3"
    accepted(ptxas_accepts, kb, arch, [f"{op} {by_reg.name}, {a.name}, {b.name}, {sel.name};",
                                       f"{op} {by_imm.name}, {a.name}, {b.name}, {imm};",
                                       f"{op} {with_imm_source.name}, {a.name}, 7, "])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.b32, T.u32, T.s32), ids=lambda t: t.name)
def test_lop3(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b, c = val(kb, ty, 1), val(kb, ty, 2), val(kb, ty, 3)
    d = kb.lop3(a, b, c, 0x96)
    e = kb.lop3(d, b, c, lambda x, y, z: (x & y) | (~x & z))
    f = kb.lop3(a, 0xFF00, e, 0)
    assert d.type is e.type is f.type is ty
    accepted(ptxas_accepts, kb, arch, [f"lop3.b32 {d.name}, {a.name}, {b.name}, {c.name}, 0x96;",
                                       f"lop3.b32 {e.name}, {d.name}, {b.name}, {c.name}, 0xca;",
                                       f"lop3.b32 {f.name}, {a.name}, 65280, {e.name}, 0x00;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("direction", ("l", "r"))
@pytest.mark.parametrize("mode", ("clamp", "wrap"))
def test_shf(ptxas_accepts, arch, direction, mode):
    kb = KernelBuilder("k", target=arch)
    lo, hi, n = val(kb, T.u32, 5), val(kb, T.b32, 9), val(kb, T.u32, 4)
    fn = kb.shf_l if direction == "l" else kb.shf_r
    by_reg = fn(lo, hi, n, mode=mode)
    top = 32 if mode == "clamp" else 31
    by_imm = fn(lo, hi, top, mode=mode)
    zero = fn(hi, lo, 0, mode=mode)
    assert by_reg.type is T.u32 and zero.type is T.b32
    op = f"shf.{direction}.{mode}.b32"
    accepted(ptxas_accepts, kb, arch, [f"{op} {by_reg.name}, {lo.name}, {hi.name}, {n.name};",
                                       f"{op} {by_imm.name}, {lo.name}, {hi.name}, {top};",
                                       f"{op} {zero.name}, {hi.name}, {lo.name}, 0;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("at,bt", list(itertools.product(I32, I32)), ids=lambda t: t.name)
def test_dp4a_dp2a(ptxas_accepts, arch, at, bt):
    kb = KernelBuilder("k", target=arch)
    acc_t = T.u32 if (at, bt) == (T.u32, T.u32) else T.s32
    a, b, c = val(kb, at, 0x01020304), val(kb, bt, 0x05060708), val(kb, acc_t, 10)
    d4 = kb.dp4a(a, b, c)
    lo, hi = kb.dp2a(a, b, c), kb.dp2a(a, b, c, mode="hi")
    imm = kb.dp4a(a, 0x01010101, 5, btype=bt.name)
    assert {d4.type, lo.type, hi.type, imm.type} == {acc_t}
    assert kb.idp4a(d4, a, b) is d4 and kb.idp2a(lo, a, b, mode="hi") is lo
    types = f"{at.name}.{bt.name}"
    accepted(ptxas_accepts, kb, arch, [
        f"dp4a.{types} {d4.name}, {a.name}, {b.name}, {c.name};",
        f"dp2a.lo.{types} {lo.name}, {a.name}, {b.name}, {c.name};",
        f"dp2a.hi.{types} {hi.name}, {a.name}, {b.name}, {c.name};",
        f"dp4a.{types} {imm.name}, {a.name}, 16843009, 5;",
        f"dp4a.{types} {d4.name}, {a.name}, {b.name}, {d4.name};",
        f"dp2a.hi.{types} {lo.name}, {a.name}, {b.name}, {lo.name};"])


def test_dp4a_types_from_keywords_reinterpret_b32(ptxas_accepts):
    kb = KernelBuilder("k", target="sm_80")
    a, b = val(kb, T.b32, 7), val(kb, T.b32, 9)
    d = kb.dp4a(a, b, 0, atype="s32", btype="u32")
    assert d.type is T.s32
    accepted(ptxas_accepts, kb, "sm_80", [f"dp4a.s32.u32 {d.name}, {a.name}, {b.name}, 0;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", INTS, ids=lambda t: t.name)
def test_sad(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b, c = val(kb, ty, 9), val(kb, ty, 4), val(kb, ty, 1)
    d = kb.sad(a, b, c)
    assert d.type is ty and kb.isad(d, a, 2) is d
    accepted(ptxas_accepts, kb, arch, [f"sad.{ty.name} {d.name}, {a.name}, {b.name}, {c.name};",
                                       f"sad.{ty.name} {d.name}, {a.name}, 2, {d.name};"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.u32, T.s32, T.u64, T.s64), ids=lambda t: t.name)
def test_bfind(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a = val(kb, ty, 1000)
    d, s = kb.bfind(a), kb.bfind(a, shiftamt=True)
    assert d.type is T.u32 and s.type is T.u32
    accepted(ptxas_accepts, kb, arch, [f"bfind.{ty.name} {d.name}, {a.name};",
                                       f"bfind.shiftamt.{ty.name} {s.name}, {a.name};"])


@pytest.mark.parametrize("arch", ARCHS)
def test_fns(ptxas_accepts, arch):
    kb = KernelBuilder("k", target=arch)
    mask, base, off = val(kb, T.u32, 0xAAAA), val(kb, T.u32, 2), val(kb, T.s32, -1)
    d = kb.fns(mask, base, off)
    e = kb.fns(mask, 31, -3)
    f = kb.fns(val(kb, T.b32, 5), 0, 1)
    assert d.type is e.type is f.type is T.u32
    accepted(ptxas_accepts, kb, arch, [f"fns.b32 {d.name}, {mask.name}, {base.name}, {off.name};",
                                       f"fns.b32 {e.name}, {mask.name}, 31, -3;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", I32, ids=lambda t: t.name)
@pytest.mark.parametrize("mode", ("lo", "hi"))
def test_mul24_mad24(ptxas_accepts, arch, ty, mode):
    kb = KernelBuilder("k", target=arch)
    a, b, c = val(kb, ty, 1 << 20), val(kb, ty, 300), val(kb, ty, 7)
    m = kb.mul24(a, b, mode=mode)
    d = kb.mad24(a, b, c, mode=mode)
    assert m.type is d.type is ty and kb.imad24(d, a, b, mode=mode) is d
    expected = [f"mul24.{mode}.{ty.name} {m.name}, {a.name}, {b.name};",
                f"mad24.{mode}.{ty.name} {d.name}, {a.name}, {b.name}, {c.name};",
                f"mad24.{mode}.{ty.name} {d.name}, {a.name}, {b.name}, {d.name};"]
    if mode == "hi" and ty is T.s32:
        s = kb.mad24(a, b, -5, mode="hi", sat=True)
        expected.append(f"mad24.hi.sat.s32 {s.name}, {a.name}, {b.name}, -5;")
    accepted(ptxas_accepts, kb, arch, expected)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", I32, ids=lambda t: t.name)
@pytest.mark.parametrize("mode", ("clamp", "wrap"))
def test_szext(ptxas_accepts, arch, ty, mode):
    kb = KernelBuilder("k", target=arch)
    a, n = val(kb, ty, 0x800), val(kb, T.u32, 12)
    d, e = kb.szext(a, n, mode=mode), kb.szext(a, 8, mode=mode)
    assert d.type is e.type is ty
    assert kb.build().version == ("7.6" if arch == "sm_80" else "7.8")
    accepted(ptxas_accepts, kb, arch, [f"szext.{mode}.{ty.name} {d.name}, {a.name}, {n.name};",
                                       f"szext.{mode}.{ty.name} {e.name}, {a.name}, 8;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("mode", ("clamp", "wrap"))
def test_bmsk(ptxas_accepts, arch, mode):
    kb = KernelBuilder("k", target=arch)
    pos, width = val(kb, T.u32, 4), val(kb, T.s32, 8)
    d, e = kb.bmsk(pos, width, mode=mode), kb.bmsk(1, 2, mode=mode)
    assert d.type is e.type is T.b32
    accepted(ptxas_accepts, kb, arch, [f"bmsk.{mode}.b32 {d.name}, {pos.name}, {width.name};",
                                       f"bmsk.{mode}.b32 {e.name}, 1, 2;"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("ty", (T.f32, T.f64), ids=lambda t: t.name)
def test_copysign_testp(ptxas_accepts, arch, ty):
    kb = KernelBuilder("k", target=arch)
    a, b = val(kb, ty, -1.5), val(kb, ty, 2.0)
    c = kb.copysign(a, b)
    d = kb.copysign(-1.0, c)
    assert c.type is d.type is ty
    preds = [kb.testp(cls, d) for cls in builder_bits.TESTP_CLASSES]
    assert all(p.type is T.pred for p in preds)
    imm = "0fBF800000" if ty is T.f32 else "0dBFF0000000000000"
    accepted(ptxas_accepts, kb, arch, [f"copysign.{ty.name} {c.name}, {a.name}, {b.name};",
                                       f"copysign.{ty.name} {d.name}, {imm}, {c.name};"]
             + [f"testp.{cls}.{ty.name} {p.name}, {d.name};"
                for cls, p in zip(builder_bits.TESTP_CLASSES, preds)])


def test_guarded_forms(ptxas_accepts):
    kb = KernelBuilder("k", target="sm_80")
    a = val(kb, T.u32, 5)
    p = kb.testp("finite", val(kb, T.f32, 1.0))
    d = kb.lop3(a, a, a, 0xE8, pred=p)
    with kb.predicated(p, negate=True):
        kb.isad(d, a, 1)
    accepted(ptxas_accepts, kb, "sm_80", [f"@{p.name} lop3.b32 {d.name}", f"@!{p.name} sad.u32"])


@pytest.fixture
def kb():
    return KernelBuilder("k", target="sm_80")


# -- lop3's truth table -----------------------------------------------------------------------

@pytest.mark.parametrize("fn,lut", [
    (lambda a, b, c: a & b & c, 0x80), (lambda a, b, c: a ^ b ^ c, 0x96),
    (lambda a, b, c: (a & b) | (~a & c), 0xCA), (lambda a, b, c: a | b | c, 0xFE),
    (lambda a, b, c: a & b & ~c, 0x40), (lambda a, b, c: (a & b | c) ^ a, 0x1A),
    (lambda a, b, c: (a & b) | (a & c) | (b & c), 0xE8), (lambda a, b, c: ~a, 0x0F),
    (lambda a, b, c: a, 0xF0), (lambda a, b, c: b, 0xCC), (lambda a, b, c: c, 0xAA),
    (lambda a, b, c: 0, 0x00), (lambda a, b, c: ~0, 0xFF), (lambda a, b, c: a ^ ~b, 0xC3),
])
def test_lop3_lut_from_function(fn, lut):
    assert lop3_lut(fn) == lut
    kb = KernelBuilder("k")
    a = val(kb, T.u32)
    kb.lop3(a, a, a, fn)
    assert f"lop3.b32 %r2, %r1, %r1, %r1, 0x{lut:02x};" in kb.ptx()


@pytest.mark.parametrize("fn", [lambda a, b, c: a and b, lambda a, b, c: a + b,
                                lambda a, b, c: 1, lambda a, b, c: a | (b or c)],
                         ids=["and-keyword", "plus", "constant-1", "or-keyword"])
def test_lop3_refuses_functions_that_are_not_bitwise(kb, fn):
    a = val(kb, T.u32)
    with pytest.raises(BuildError) as err:
        at = line() + 1
        kb.lop3(a, a, a, fn)
    msg = str(err.value)
    assert msg.startswith("lop3: expected a bitwise function") and "bit by bit" in msg
    assert where(at) in msg


def test_lop3_function_must_return_an_int(kb):
    a = val(kb, T.u32)
    with pytest.raises(BuildError, match=r"lop3: expected the LUT function to return an int, got "
                                         r"float 1\.5"):
        kb.lop3(a, a, a, lambda x, y, z: 1.5)
    with pytest.raises(BuildError, match=r"return an int, got bool False"):
        kb.lop3(a, a, a, lambda x, y, z: not x)


# -- golden text ------------------------------------------------------------------------------

def test_golden_shift_left_64():
    kb = KernelBuilder("shl64", target="sm_80")
    x = kb.load_param(kb.param_ptr("x", "u32"))
    n = kb.load_param(kb.param("n", "u32"))
    lo, hi = kb.ld(x), kb.ld(x, offset=4)
    kb.st(x, kb.shl(lo, n))
    kb.st(x, kb.shf_l(lo, hi, n), offset=4)
    assert kb.ptx() == textwrap.dedent("""\
        //
        // Generated by ptxforge
        //

        .version 7.0
        .target sm_80
        .address_size 64

        .visible .entry shl64(
        \t.param .u64 .ptr.global.align 4 x,
        \t.param .u32 n
        )
        {
        \t.reg .b32 %r<6>;
        \t.reg .b64 %rd<3>;

        \tld.param.u64 %rd1, [x];
        \tcvta.to.global.u64 %rd2, %rd1;
        \tld.param.u32 %r1, [n];
        \tld.global.u32 %r2, [%rd2];
        \tld.global.u32 %r3, [%rd2+4];
        \tshl.b32 %r4, %r2, %r1;
        \tst.global.u32 [%rd2], %r4;
        \tshf.l.clamp.b32 %r5, %r2, %r3, %r1;
        \tst.global.u32 [%rd2+4], %r5;
        \tret;
        }
        """)


def test_golden_byte_and_logic_ops():
    kb = KernelBuilder("bytes", target="sm_90")
    a, b = kb.tid(), kb.ctaid()
    swapped = kb.prmt(a, 0, 0x0123)
    mux = kb.lop3(swapped, a, b, lambda s, x, y: (s & x) | (~s & y))
    low = kb.szext(mux, 12, mode="wrap")
    ok = kb.testp("finite", kb.copysign(kb.cvt(low, "f32"), 1.0))
    kb.exit(pred=ok)
    body = kb.ptx().split("{\n", 1)[1]
    assert body == textwrap.dedent("""\
        \t.reg .pred %p<2>;
        \t.reg .b32 %r<6>;
        \t.reg .f32 %f<3>;

        \tmov.u32 %r1, %tid.x;
        \tmov.u32 %r2, %ctaid.x;
        \tprmt.b32 %r3, %r1, 0, 0x0123;
        \tlop3.b32 %r4, %r3, %r1, %r2, 0xca;
        \tszext.wrap.u32 %r5, %r4, 12;
        \tcvt.rn.f32.u32 %f1, %r5;
        \tcopysign.f32 %f2, %f1, 0f3F800000;
        \ttestp.finite.f32 %p1, %f2;
        \t@%p1 exit;
        \tret;
        }
        """)
    assert ".version 7.8" in kb.ptx()


# -- liveness and the parser ------------------------------------------------------------------

def _pressure_kernel():
    kb = KernelBuilder("live", target="sm_80")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    a, b, c = kb.ld(out), kb.ld(out, offset=4), kb.ld(out, offset=8)
    d = kb.lop3(a, b, c, 0x96)          # a, b, c all live on
    e = kb.prmt(d, a, c)                # selector from a register; d dies
    f = kb.shf_r(e, b, c)               # e and b die
    kb.isad(f, a, c)                    # f = f + |a - c|: reads and writes f; a and c die
    kb.st(out, f)
    return kb


def test_liveness_of_the_new_ops_is_exact():
    kernel = _pressure_kernel().build().kernels[0]
    lv = analyze_liveness(kernel)
    # ld.param, cvta, 3 x ld, lop3, prmt, shf, sad, st, ret (the pointer is 2 units)
    assert lv.series("at") == [2, 2, 3, 4, 5, 6, 6, 5, 3, 0, 0]
    report = analyze_pressure(kernel)
    assert report.peak.units == 6 and report.peak.index == 5
    assert sorted(v.name for v in report.peak.values) == ["%r1", "%r2", "%r3", "%r4", "%rd2"]
    sad = kernel.instructions[8]
    assert sad.opcode == "sad.u32" and [r.name for r in sad.defs] == ["%r6"]
    assert sorted(r.name for r in sad.uses) == ["%r1", "%r3", "%r6"]


def _every_new_op():
    kb = KernelBuilder("every", target="sm_80")
    out = kb.load_param(kb.param_ptr("out", "u32"))
    a, b, c = kb.ld(out), kb.ld(out, offset=4), kb.ld(out, offset=8)
    s = kb.cvt(a, "s32")
    x = kb.cvt(a, "f64")
    vals = [kb.prmt(a, b, c), kb.prmt(a, b, 2, mode="b4e"), kb.lop3(a, b, c, 0x1A),
            kb.shf_l(a, b, c, mode="wrap"), kb.shf_r(a, b, 31, mode="wrap"), kb.dp4a(a, s, s),
            kb.dp2a(s, b, 9, mode="hi"), kb.sad(a, b, c), kb.bfind(s, shiftamt=True),
            kb.fns(a, 3, -2), kb.mul24(s, -7, mode="hi"), kb.mad24(s, s, s, mode="hi", sat=True),
            kb.szext(s, c), kb.bmsk(c, 5), kb.selp(1, 0, kb.testp("subnormal", kb.copysign(x, -0.5)),
                                                    type="u32")]
    acc = kb.mov(0, type="u32")
    for v in vals:
        kb.ixor(acc, v)
    kb.idp4a(acc, a, b)
    kb.st(out, acc)
    return kb


def test_parser_round_trips_every_new_op(ptxas_accepts):
    kb = _every_new_op()
    once = kb.ptx()
    module = parse(once)
    assert emit(module) == once
    built, parsed = kb.build().kernels[0], module.kernels[0]
    assert [i.opcode for i in parsed.instructions] == [i.opcode for i in built.instructions]
    assert [i.ndefs for i in parsed.instructions] == [i.ndefs for i in built.instructions]
    assert analyze_liveness(parsed).series("at") == analyze_liveness(built).series("at")
    ptxas_accepts(once, "sm_80")


def test_builder_bits_doctests():
    assert doctest.testmod(builder_bits).failed == 0


def test_docs_lop3_example(ptxas_accepts):
    """The builder.md lop3 block runs as written and makes the tables it says."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "builder.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "lop3" in b)
    namespace: dict = {}
    exec(compile(block, "docs/builder.md", "exec"), namespace)
    ptx = namespace["kb"].ptx()
    assert "lop3.b32 %r4, %r1, %r2, %r3, 0xca;" in ptx and "lop3.b32 %r5, %r1, %r2, %r3, 0xe8;" in ptx
    ptxas_accepts(ptx, "sm_80")
